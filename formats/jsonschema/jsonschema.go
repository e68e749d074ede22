// Package jsonschema is the JSON Schema format (the registry's JSON
// schema type): JSON records validated against a JSON Schema, in the schema
// registry's wire format, into Go values with encoding/json's rules.
//
// A writer validates each value against its own schema before writing it
// (registering the schema on write, or looking it up only); a reader
// validates each record against its writer schema, found by the record's
// schema id, as Confluent's deserialiser does. Validation is
// github.com/santhosh-tekuri/jsonschema/v6 (drafts 4 to 2020-12); schemas
// are compiled once per id and never load anything from the network.
//
// A record that does not validate fails with formats.ErrInvalid; the error
// names the failing locations and keywords, never the values.
package jsonschema

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	js "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/sr"

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
}

// Format reads and writes T as JSON validated against a JSON Schema. It
// is safe for concurrent use.
type Format[T any] struct {
	reg    *registry.Client
	opts   Options
	text   string
	schema *js.Schema

	mu       sync.Mutex
	readers  atomic.Pointer[map[int]compiled]
	writeIDs atomic.Pointer[map[string]int]
}

type compiled struct {
	schema *js.Schema
	err    error
}

const name = "json-schema"

// New returns the format with schema (a JSON Schema document) as the
// writer's schema.
func New[T any](reg *registry.Client, schema string, opts Options) (*Format[T], error) {
	if reg == nil {
		return nil, errors.New("jsonschema: no registry client")
	}
	s, err := compile(schema)
	if err != nil {
		return nil, err
	}
	f := &Format[T]{reg: reg, opts: opts, text: schema, schema: s}
	f.readers.Store(&map[int]compiled{})
	f.writeIDs.Store(&map[string]int{})
	return f, nil
}

func compile(schema string) (*js.Schema, error) {
	doc, err := js.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("jsonschema: parsing the schema: %w", err)
	}
	c := js.NewCompiler()
	c.UseLoader(noLoader{})
	const loc = "sluice:///schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("jsonschema: %w", err)
	}
	s, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("jsonschema: compiling the schema: %w", err)
	}
	return s, nil
}

// noLoader refuses every external reference: a schema is compiled from
// the registry's text alone.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("jsonschema: external reference %s is not loaded", url)
}

// Deserialize implements formats.Deserializer.
func (f *Format[T]) Deserialize(_ string, data []byte) (T, error) {
	var v T
	id, payload, err := registry.SplitHeader(name, data)
	if err != nil {
		if errors.Is(err, formats.ErrNoValue) {
			err.(*formats.Error).Kind = formats.ErrSkip
		}
		return v, err
	}
	c, ok := (*f.readers.Load())[id]
	if !ok {
		c = f.resolve(id)
	}
	if c.err != nil {
		return v, c.err
	}
	if err := validate(c.schema, payload, id, "decode"); err != nil {
		return v, err
	}
	if err := stdjson.Unmarshal(payload, &v); err != nil {
		return v, &formats.Error{Format: name, Op: "decode", SchemaID: id, Kind: formats.ErrMalformed,
			Reason: "valid JSON that does not fit the Go type", Err: err}
	}
	return v, nil
}

func (f *Format[T]) resolve(id int) compiled {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := (*f.readers.Load())[id]; ok {
		return c
	}
	ss, err := f.reg.SchemaByID(context.Background(), id)
	if err != nil {
		return compiled{err: err}
	}
	var c compiled
	if ss.Type != sr.TypeJSON {
		c.err = &formats.Error{Format: name, Op: "decode", SchemaID: id, Kind: formats.ErrMalformed,
			Reason: fmt.Sprintf("schema id %d is a %s schema, not JSON", id, ss.Type)}
	} else if ss.Schema == f.text {
		c.schema = f.schema
	} else if s, err := compile(ss.Schema); err != nil {
		c.err = &formats.Error{Format: name, Op: "decode", SchemaID: id, Kind: formats.ErrMalformed, Reason: err.Error(), Err: err}
	} else {
		c.schema = s
	}
	next := make(map[int]compiled, len(*f.readers.Load())+1)
	for k, v := range *f.readers.Load() {
		next[k] = v
	}
	next[id] = c
	f.readers.Store(&next)
	return c
}

// validate checks the JSON document b against s.
func validate(s *js.Schema, b []byte, id int, op string) error {
	doc, err := js.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		reason := "invalid JSON"
		var se *stdjson.SyntaxError
		if errors.As(err, &se) {
			reason = fmt.Sprintf("invalid JSON at byte offset %d", se.Offset)
		}
		return &formats.Error{Format: name, Op: op, SchemaID: id, Kind: formats.ErrMalformed, Reason: reason, Err: err}
	}
	if err := s.Validate(doc); err != nil {
		return &formats.Error{Format: name, Op: op, SchemaID: id, Kind: formats.ErrInvalid, Reason: describe(err), Err: err}
	}
	return nil
}

// describe lists where and by which keyword a document failed, without
// the validator's messages (they quote the values).
func describe(err error) string {
	var ve *js.ValidationError
	if !errors.As(err, &ve) {
		return "does not validate"
	}
	var leaves []string
	var walk func(e *js.ValidationError)
	walk = func(e *js.ValidationError) {
		if len(e.Causes) == 0 {
			where := "/" + strings.Join(e.InstanceLocation, "/")
			leaves = append(leaves, fmt.Sprintf("%s fails %s", where, strings.Join(e.ErrorKind.KeywordPath(), "/")))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.Sort(leaves)
	leaves = slices.Compact(leaves)
	return "does not validate against the schema: " + strings.Join(leaves, "; ")
}

// Serialize implements formats.Serializer: the value is validated against
// the writer's schema first.
func (f *Format[T]) Serialize(topic string, v T) ([]byte, error) {
	id, ok := (*f.writeIDs.Load())[topic]
	if !ok {
		var err error
		if id, err = f.writerID(topic); err != nil {
			return nil, err
		}
	}
	b, err := stdjson.Marshal(v)
	if err != nil {
		return nil, &formats.Error{Format: name, Op: "encode", SchemaID: id, Kind: formats.ErrEncode,
			Reason: fmt.Sprintf("a Go %T cannot be written as JSON", v), Err: err}
	}
	if err := validate(f.schema, b, id, "encode"); err != nil {
		return nil, err
	}
	out := make([]byte, 0, 5+len(b))
	return append(registry.AppendHeader(out, id), b...), nil
}

// writerID is the id of the schema under topic's subject, cached by topic.
func (f *Format[T]) writerID(topic string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id, ok := (*f.writeIDs.Load())[topic]; ok {
		return id, nil
	}
	id, err := f.reg.ID(context.Background(), registry.Subject(topic, f.opts.Subject), sr.Schema{Schema: f.text, Type: sr.TypeJSON}, f.opts.WriteMode)
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
