// Package avro is the Avro format on github.com/hamba/avro/v2: records in
// Avro's binary encoding, either plain (Flink's format = 'avro': every
// record written with one schema) or in the schema registry's wire format
// (Flink's 'avro-confluent': each record names its writer schema's id).
//
// Values are Go structs (fields matched by their `avro` tags) or generic:
// map[string]any for a record, with Generic reading each record with its
// own writer schema.
//
// Files hold Avro as object container files (OCFWriter, OCFReader): a
// header with the writer schema and the codec, then blocks of records; the
// file connector writes and reads them as a bulk format (file.ForBulkFormat,
// file.ReadBulk), which this package meets by its method sets without
// importing it.
//
// # Schema evolution
//
// A reader reads with its own schema (the reader schema) records written
// with any writer schema the registry holds, by Avro's resolution rules: a
// field the writer lacks takes the reader's default, a field the reader
// lacks is skipped, ints widen to longs, floats and doubles. Each writer
// schema is resolved against the reader schema once and cached by id. A
// writer schema that cannot be resolved (a field added without a default,
// a type changed) fails the record with formats.ErrIncompatible.
//
// Whether a new schema may be registered at all is the registry's
// decision: its compatibility rule (BACKWARD by default, FORWARD, FULL...)
// refuses a breaking schema at registration, and the writer's record fails
// with formats.ErrIncompatible and the registry's message.
package avro

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sluice/sluice/formats"
	"github.com/sluice/sluice/formats/registry"
)

// Options configure a format of the registry's wire format.
type Options struct {
	// Subject overrides the subject (avro-confluent.subject). Default
	// "<topic>-value".
	Subject string
	// WriteMode says whether Serialize registers the schema. Default
	// registry.RegisterOnWrite (Confluent's auto.register.schemas=true).
	WriteMode registry.WriteMode
	// AnyRecordName lets the reader schema's top-level record read a
	// writer's record of another name, as Avro's Java resolver (and with
	// it Flink's avro-confluent format, whose reader schema is always
	// named org.apache.flink.avro.generated.record) does. Default false:
	// the names must match, as the Avro specification says.
	AnyRecordName bool
}

// Format reads and writes T in Avro. It is safe for concurrent use.
type Format[T any] struct {
	name   string // "avro" or "avro-confluent"
	reg    *registry.Client
	opts   Options
	schema hamba.Schema // the reader and writer schema; nil for Generic
	text   string

	mu       sync.Mutex                     // serialises cache misses
	readers  atomic.Pointer[map[int]read]   // writer schema id → how to read it
	writeIDs atomic.Pointer[map[string]int] // topic → writer schema id
	pool     sync.Pool                      // *hamba.Writer
}

type read struct {
	schema hamba.Schema // the resolved schema, nil when the id failed
	err    error
}

// Plain is Flink's 'avro' format: every record is the binary encoding of
// schema, without a header.
func Plain[T any](schema string) (*Format[T], error) {
	s, err := parse(schema)
	if err != nil {
		return nil, err
	}
	return newFormat[T]("avro", nil, s, schema, Options{}), nil
}

// New is the registry's wire format with schema as the reader schema and,
// when writing, the writer schema.
func New[T any](reg *registry.Client, schema string, opts Options) (*Format[T], error) {
	if reg == nil {
		return nil, errors.New("avro: no registry client (use Plain for records without the registry's header)")
	}
	s, err := parse(schema)
	if err != nil {
		return nil, err
	}
	return newFormat[T]("avro-confluent", reg, s, schema, opts), nil
}

// Generic reads each record with its own writer schema into a
// map[string]any (Avro's generic records: unions as map[string]any of one
// branch, named by type). It cannot write.
func Generic(reg *registry.Client, opts Options) (*Format[map[string]any], error) {
	if reg == nil {
		return nil, errors.New("avro: no registry client")
	}
	return newFormat[map[string]any]("avro-confluent", reg, nil, "", opts), nil
}

func newFormat[T any](name string, reg *registry.Client, s hamba.Schema, text string, opts Options) *Format[T] {
	f := &Format[T]{name: name, reg: reg, opts: opts, schema: s, text: text}
	f.readers.Store(&map[int]read{})
	f.writeIDs.Store(&map[string]int{})
	f.pool.New = func() any { return hamba.NewWriter(nil, 256) }
	return f
}

// parse parses with a cache of its own: hamba's default cache keeps one
// schema per name, and a writer's version of a record shares the reader's
// name.
func parse(schema string) (hamba.Schema, error) {
	s, err := hamba.ParseWithCache(schema, "", &hamba.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("avro: parsing the schema: %w", err)
	}
	return s, nil
}

// Schema is the format's schema (nil for Generic).
func (f *Format[T]) Schema() hamba.Schema { return f.schema }

// Deserialize implements formats.Deserializer.
func (f *Format[T]) Deserialize(_ string, data []byte) (T, error) {
	var v T
	if f.reg == nil {
		if len(data) == 0 {
			return v, &formats.Error{Format: f.name, Op: "decode", Reason: "record has no value", Kind: formats.ErrSkip}
		}
		if err := hamba.Unmarshal(f.schema, data, &v); err != nil {
			return v, f.decodeError(0, err)
		}
		return v, nil
	}
	id, payload, err := registry.SplitHeader(f.name, data)
	if err != nil {
		if errors.Is(err, formats.ErrNoValue) {
			err.(*formats.Error).Kind = formats.ErrSkip // a tombstone, as Flink skips a null message
		}
		return v, err
	}
	r, ok := (*f.readers.Load())[id]
	if !ok {
		r = f.resolve(id)
	}
	if r.err != nil {
		return v, r.err
	}
	if err := hamba.Unmarshal(r.schema, payload, &v); err != nil {
		return v, f.decodeError(id, err)
	}
	return v, nil
}

// resolve fetches the writer schema of id and resolves it against the
// reader schema. An unknown id is not cached (the registry may be
// unreachable for a while); an unresolvable schema is.
func (f *Format[T]) resolve(id int) read {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := (*f.readers.Load())[id]; ok {
		return r
	}
	ss, err := f.reg.SchemaByID(context.Background(), id)
	if err != nil {
		return read{err: err}
	}
	var r read
	if ss.Type != sr.TypeAvro {
		r.err = &formats.Error{Format: f.name, Op: "decode", SchemaID: id, Kind: formats.ErrMalformed,
			Reason: fmt.Sprintf("schema id %d is a %s schema, not Avro", id, ss.Type)}
	} else if writer, err := parse(ss.Schema); err != nil {
		r.err = &formats.Error{Format: f.name, Op: "decode", SchemaID: id, Kind: formats.ErrMalformed, Reason: err.Error(), Err: err}
	} else if f.schema == nil || f.text == ss.Schema {
		r.schema = writer
		if f.schema != nil {
			r.schema = f.schema
		}
	} else if resolved, err := hamba.NewSchemaCompatibility().Resolve(f.readerFor(writer), writer); err != nil {
		r.err = &formats.Error{Format: f.name, Op: "decode", SchemaID: id, Kind: formats.ErrIncompatible,
			Reason: "the reader schema cannot read the writer schema: " + err.Error(), Err: err}
	} else {
		r.schema = resolved
	}
	next := make(map[int]read, len(*f.readers.Load())+1)
	for k, v := range *f.readers.Load() {
		next[k] = v
	}
	next[id] = r
	f.readers.Store(&next)
	return r
}

// readerFor is the reader schema to resolve writer with: with
// AnyRecordName, the reader's top-level record renamed to the writer's.
func (f *Format[T]) readerFor(writer hamba.Schema) hamba.Schema {
	r, ok := f.schema.(*hamba.RecordSchema)
	w, wok := writer.(*hamba.RecordSchema)
	if !f.opts.AnyRecordName || !ok || !wok || r.FullName() == w.FullName() {
		return f.schema
	}
	renamed, err := hamba.NewRecordSchema(w.Name(), w.Namespace(), r.Fields(), hamba.WithAliases(r.Aliases()), hamba.WithDoc(r.Doc()))
	if err != nil {
		return f.schema // the writer's name is valid (it parsed): the resolution below says what is wrong
	}
	return renamed
}

func (f *Format[T]) decodeError(id int, err error) *formats.Error {
	// hamba's decode errors name the schema's types and lengths, not values.
	return &formats.Error{Format: f.name, Op: "decode", SchemaID: id, Kind: formats.ErrMalformed,
		Reason: "invalid Avro binary for the schema: " + err.Error(), Err: err}
}

// Serialize implements formats.Serializer.
func (f *Format[T]) Serialize(topic string, v T) ([]byte, error) {
	if f.schema == nil {
		return nil, &formats.Error{Format: f.name, Op: "encode", Kind: formats.ErrEncode, Reason: "a Generic format has no schema to write with"}
	}
	w := f.pool.Get().(*hamba.Writer)
	defer f.pool.Put(w)
	w.Reset(nil)
	id := 0
	if f.reg != nil {
		var ok bool
		if id, ok = (*f.writeIDs.Load())[topic]; !ok {
			var err error
			if id, err = f.writerID(topic); err != nil {
				return nil, err
			}
		}
		var hdr [5]byte
		_, _ = w.Write(registry.AppendHeader(hdr[:0], id))
	}
	w.WriteVal(f.schema, v)
	if w.Error != nil {
		// The error's text may quote the value (an enum symbol): only its type is named.
		return nil, &formats.Error{Format: f.name, Op: "encode", SchemaID: id, Kind: formats.ErrEncode, Err: w.Error,
			Reason: fmt.Sprintf("a Go %T does not match the schema %s", v, schemaName(f.schema))}
	}
	return append([]byte(nil), w.Buffer()...), nil
}

// writerID is the id of the schema under topic's subject, cached by topic.
func (f *Format[T]) writerID(topic string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id, ok := (*f.writeIDs.Load())[topic]; ok {
		return id, nil
	}
	id, err := f.reg.ID(context.Background(), registry.Subject(topic, f.opts.Subject), sr.Schema{Schema: f.text, Type: sr.TypeAvro}, f.opts.WriteMode)
	if err != nil {
		return 0, err
	}
	next := make(map[string]int, len(*f.writeIDs.Load())+1)
	for k, v := range *f.writeIDs.Load() {
		next[k] = v
	}
	next[topic] = id
	f.writeIDs.Store(&next)
	return id, nil
}

func schemaName(s hamba.Schema) string {
	if n, ok := s.(hamba.NamedSchema); ok {
		return n.FullName()
	}
	return string(s.Type())
}
