package jsonschema_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/sluice/sluice/formats"
	"github.com/sluice/sluice/formats/jsonschema"
	"github.com/sluice/sluice/formats/registry"
)

const orderSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "id": {"type": "string", "pattern": "^o[0-9]+$"},
    "amount": {"type": "number", "minimum": 0}
  },
  "required": ["id", "amount"]
}`

type order struct {
	ID     string  `json:"id"`
	Amount float64 `json:"amount"`
}

func newFormat(t *testing.T) (*jsonschema.Format[order], *registry.Client) {
	t.Helper()
	fake := srfake.New()
	t.Cleanup(fake.Close)
	reg, err := registry.New(registry.Config{URLs: []string{fake.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := jsonschema.New[order](reg, orderSchema, jsonschema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return f, reg
}

func TestRoundTripAndValidation(t *testing.T) {
	f, _ := newFormat(t)
	b, err := f.Serialize("orders", order{"o1", 2.5})
	if err != nil {
		t.Fatal(err)
	}
	id, payload, err := registry.SplitHeader("json-schema", b)
	if err != nil || id < 1 || string(payload) != `{"id":"o1","amount":2.5}` {
		t.Fatalf("record %q: id %d, payload %q, %v", b, id, payload, err)
	}
	got, err := f.Deserialize("orders", b)
	if err != nil || got != (order{"o1", 2.5}) {
		t.Fatalf("Deserialize = %+v, %v", got, err)
	}

	// A writer refuses a value its schema refuses, without quoting it.
	_, err = f.Serialize("orders", order{"secret-id", -1})
	if !errors.Is(err, formats.ErrInvalid) || strings.Contains(err.Error(), "secret") {
		t.Fatalf("invalid value: %v, want ErrInvalid without the value", err)
	}
	for _, want := range []string{"/id fails pattern", "/amount fails minimum"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	// A reader validates against the writer's schema, found by id.
	for _, tc := range []struct {
		payload string
		kind    error
	}{
		{`{"id":"o2"}`, formats.ErrInvalid},
		{`{"id":"o2","amount":"secret"}`, formats.ErrInvalid},
		{`{"id":"secret`, formats.ErrMalformed},
	} {
		_, err := f.Deserialize("orders", append(registry.AppendHeader(nil, id), tc.payload...))
		var fe *formats.Error
		if !errors.Is(err, tc.kind) || !errors.As(err, &fe) || fe.SchemaID != id || strings.Contains(err.Error(), "secret") {
			t.Errorf("reading %s: %v, want %v naming schema id %d and no value", tc.payload, err, tc.kind, id)
		}
	}
	if _, err := f.Deserialize("orders", []byte(`{"id":"o1","amount":1}`)); !errors.Is(err, formats.ErrNoMagicByte) {
		t.Errorf("plain JSON: %v, want ErrNoMagicByte", err)
	}
}

func TestExternalReferencesAreNotLoaded(t *testing.T) {
	fake := srfake.New()
	defer fake.Close()
	reg, _ := registry.New(registry.Config{URLs: []string{fake.URL()}})
	_, err := jsonschema.New[order](reg, `{"$ref":"https://example.com/schema.json"}`, jsonschema.Options{})
	if err == nil || !strings.Contains(err.Error(), "not loaded") {
		t.Fatalf("external $ref: %v, want a refusal to load it", err)
	}
}
