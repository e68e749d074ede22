// Package protobuf is the Protobuf format (google.golang.org/protobuf) in
// the schema registry's wire format: the magic byte, the schema id, the
// message indexes (the path of the message in its .proto file; [0], the
// first top-level message, is written as one 0 byte), then the message.
//
// Messages are generated types (New) or dynamic messages of a descriptor
// the program has (NewDynamic, e.g. from a descriptor set written by
// protoc --descriptor_set_out). The schema registered for a writer is the
// .proto source, printed from the message's file descriptor (ProtoSource)
// when none is given.
//
// Evolution is Protobuf's own: fields are matched by number, so a reader
// reads records of older and newer writers; fields it does not know are
// kept as unknown fields (and written again by Serialize). The registry
// decides at registration whether a new .proto is compatible. A reader
// checks that each record's schema id is a Protobuf schema the registry
// holds (once per id); it reads the payload as its own message whatever the
// message indexes say.
package protobuf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/sluice/sluice/formats"
	"github.com/sluice/sluice/formats/registry"
)

// Options configure the format.
type Options struct {
	// Subject overrides the subject. Default "<topic>-value".
	Subject string
	// WriteMode says whether Serialize registers the schema. Default
	// registry.RegisterOnWrite.
	WriteMode registry.WriteMode
	// Schema is the .proto source to register. Default: printed from the
	// message's file descriptor by ProtoSource.
	Schema string
}

// Format reads and writes T, a Protobuf message, in the registry's wire
// format. It is safe for concurrent use.
type Format[T proto.Message] struct {
	reg   *registry.Client
	opts  Options
	newFn func() T
	index []int // the message's path in its file

	mu      sync.Mutex
	known   atomic.Pointer[map[int]error]     // schema id → nil when a Protobuf schema
	headers atomic.Pointer[map[string][]byte] // topic → header
	hdr     sr.ConfluentHeader
}

const name = "protobuf"

// New is the format of a generated message type, e.g. New[*pb.User].
func New[T proto.Message](reg *registry.Client, opts Options) (*Format[T], error) {
	var zero T
	mt := zero.ProtoReflect().Type()
	return newFormat(reg, opts, mt.Descriptor(), func() T { return mt.New().Interface().(T) })
}

// NewDynamic is the format of dynamic messages of md.
func NewDynamic(reg *registry.Client, md protoreflect.MessageDescriptor, opts Options) (*Format[*dynamicpb.Message], error) {
	return newFormat(reg, opts, md, func() *dynamicpb.Message { return dynamicpb.NewMessage(md) })
}

func newFormat[T proto.Message](reg *registry.Client, opts Options, md protoreflect.MessageDescriptor, newFn func() T) (*Format[T], error) {
	if reg == nil {
		return nil, fmt.Errorf("protobuf: no registry client")
	}
	if opts.Schema == "" {
		s, err := ProtoSource(md.ParentFile())
		if err != nil {
			return nil, err
		}
		opts.Schema = s
	}
	f := &Format[T]{reg: reg, opts: opts, newFn: newFn, index: MessageIndex(md)}
	f.known.Store(&map[int]error{})
	f.headers.Store(&map[string][]byte{})
	return f, nil
}

// MessageIndex is the path of md in its file: the index of each enclosing
// message, outermost first, then md's.
func MessageIndex(md protoreflect.MessageDescriptor) []int {
	var idx []int
	for d := protoreflect.Descriptor(md); d != nil; d = d.Parent() {
		if m, ok := d.(protoreflect.MessageDescriptor); ok {
			idx = append([]int{m.Index()}, idx...)
		}
	}
	return idx
}

// Deserialize implements formats.Deserializer.
func (f *Format[T]) Deserialize(_ string, data []byte) (T, error) {
	var zero T
	id, rest, err := registry.SplitHeader(name, data)
	if err != nil {
		if e, ok := err.(*formats.Error); ok && e.Kind == formats.ErrNoValue {
			e.Kind = formats.ErrSkip
		}
		return zero, err
	}
	err, ok := (*f.known.Load())[id]
	if !ok {
		err = f.check(id)
	}
	if err != nil {
		return zero, err
	}
	payload, err := skipIndex(rest)
	if err != nil {
		return zero, &formats.Error{Format: name, Op: "decode", SchemaID: id, Kind: formats.ErrMalformed,
			Reason: "invalid message indexes after the schema id", Err: err}
	}
	m := f.newFn()
	if err := proto.Unmarshal(payload, m); err != nil {
		return zero, &formats.Error{Format: name, Op: "decode", SchemaID: id, Kind: formats.ErrMalformed,
			Reason: fmt.Sprintf("invalid %s: %v", m.ProtoReflect().Descriptor().FullName(), err), Err: err}
	}
	return m, nil
}

// check asks the registry for id once.
func (f *Format[T]) check(id int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err, ok := (*f.known.Load())[id]; ok {
		return err
	}
	ss, err := f.reg.SchemaByID(context.Background(), id)
	if err != nil {
		return err // not cached: the registry may answer later
	}
	if ss.Type != sr.TypeProtobuf {
		err = &formats.Error{Format: name, Op: "decode", SchemaID: id, Kind: formats.ErrMalformed,
			Reason: fmt.Sprintf("schema id %d is a %s schema, not Protobuf", id, ss.Type)}
	}
	next := make(map[int]error, len(*f.known.Load())+1)
	for k, v := range *f.known.Load() {
		next[k] = v
	}
	next[id] = err
	f.known.Store(&next)
	return err
}

// Serialize implements formats.Serializer.
func (f *Format[T]) Serialize(topic string, m T) ([]byte, error) {
	hdr, ok := (*f.headers.Load())[topic]
	if !ok {
		var err error
		if hdr, err = f.writerHeader(topic); err != nil {
			return nil, err
		}
	}
	b := make([]byte, len(hdr), len(hdr)+proto.Size(m))
	copy(b, hdr)
	b, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(b, m)
	if err != nil {
		id, _, _ := registry.SplitHeader(name, hdr)
		return nil, &formats.Error{Format: name, Op: "encode", SchemaID: id, Kind: formats.ErrEncode,
			Reason: fmt.Sprintf("%s: %v", m.ProtoReflect().Descriptor().FullName(), err), Err: err}
	}
	return b, nil
}

// writerHeader is the header of topic's records: the magic byte, the id
// under topic's subject and the message indexes.
func (f *Format[T]) writerHeader(topic string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if hdr, ok := (*f.headers.Load())[topic]; ok {
		return hdr, nil
	}
	id, err := f.reg.ID(context.Background(), registry.Subject(topic, f.opts.Subject), sr.Schema{Schema: f.opts.Schema, Type: sr.TypeProtobuf}, f.opts.WriteMode)
	if err != nil {
		return nil, err
	}
	hdr, _ := f.hdr.AppendEncode(nil, id, f.index)
	next := make(map[string][]byte, len(*f.headers.Load())+1)
	for k, v := range *f.headers.Load() {
		next[k] = v
	}
	next[topic] = hdr
	f.headers.Store(&next)
	return hdr, nil
}

// skipIndex returns b after its message indexes: one 0 byte for [0], else
// a zigzag varint count and as many zigzag varint indexes.
func skipIndex(b []byte) ([]byte, error) {
	n, k := binary.Varint(b)
	if k <= 0 || n < 0 || n > 64 {
		return nil, errors.New("bad message index count")
	}
	b = b[k:]
	for range n {
		if _, k = binary.Varint(b); k <= 0 {
			return nil, errors.New("bad message index")
		}
		b = b[k:]
	}
	return b, nil
}
