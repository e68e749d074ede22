package avro_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/sluice/sluice/formats"
	"github.com/sluice/sluice/formats/avro"
	"github.com/sluice/sluice/formats/registry"
)

// Three versions of one record, each compatible with the one before (and,
// the registry's BACKWARD rule, readable by the one after).
const (
	userV1 = `{"type":"record","name":"User","namespace":"sluice.test","fields":[
		{"name":"id","type":"string"},
		{"name":"age","type":"int"}]}`
	userV2 = `{"type":"record","name":"User","namespace":"sluice.test","fields":[
		{"name":"id","type":"string"},
		{"name":"age","type":"long"},
		{"name":"email","type":["null","string"],"default":null}]}`
	userV3 = `{"type":"record","name":"User","namespace":"sluice.test","fields":[
		{"name":"id","type":"string"},
		{"name":"age","type":"long"},
		{"name":"email","type":["null","string"],"default":null},
		{"name":"country","type":"string","default":"NO"}]}`
)

type UserV1 struct {
	ID  string `avro:"id"`
	Age int32  `avro:"age"`
}

type UserV2 struct {
	ID    string  `avro:"id"`
	Age   int64   `avro:"age"`
	Email *string `avro:"email"`
}

type UserV3 struct {
	ID      string  `avro:"id"`
	Age     int64   `avro:"age"`
	Email   *string `avro:"email"`
	Country string  `avro:"country"`
}

func newRegistry(t *testing.T) *registry.Client {
	t.Helper()
	fake := srfake.New()
	t.Cleanup(fake.Close)
	c, err := registry.New(registry.Config{URLs: []string{fake.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPlainRoundTrip(t *testing.T) {
	f, err := avro.Plain[UserV1](userV1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Serialize("users", UserV1{"u1", 42})
	if err != nil {
		t.Fatal(err)
	}
	if want := "\x04u1\x54"; string(b) != want { // zigzag varints: len 2, 42
		t.Fatalf("encoding %q, want %q", b, want)
	}
	got, err := f.Deserialize("users", b)
	if err != nil || got != (UserV1{"u1", 42}) {
		t.Fatalf("Deserialize = %+v, %v", got, err)
	}
	if _, err := f.Deserialize("users", []byte{0x7f}); !errors.Is(err, formats.ErrMalformed) {
		t.Fatalf("truncated record: %v, want ErrMalformed", err)
	}
}

func TestWireFormatRoundTrip(t *testing.T) {
	reg := newRegistry(t)
	f, err := avro.New[UserV1](reg, userV1, avro.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Serialize("users", UserV1{"u1", 42})
	if err != nil {
		t.Fatal(err)
	}
	id, payload, err := registry.SplitHeader("avro", b)
	if err != nil || id < 1 || string(payload) != "\x04u1\x54" {
		t.Fatalf("record %q: id %d payload %q, %v", b, id, payload, err)
	}
	got, err := f.Deserialize("users", b)
	if err != nil || got != (UserV1{"u1", 42}) {
		t.Fatalf("Deserialize = %+v, %v", got, err)
	}
	g, _ := avro.Generic(reg, avro.Options{})
	m, err := g.Deserialize("users", b)
	if err != nil || m["id"] != "u1" || m["age"] != 42 {
		t.Fatalf("generic = %#v, %v", m, err)
	}
	if _, err := g.Serialize("users", m); !errors.Is(err, formats.ErrEncode) {
		t.Fatalf("generic Serialize: %v, want ErrEncode", err)
	}
}

// A reader on each version reads records of all three: defaults for the
// fields its writer lacked, widened ints, fields it does not know skipped.
func TestEvolutionReaderVsWriter(t *testing.T) {
	reg := newRegistry(t)
	w1, _ := avro.New[UserV1](reg, userV1, avro.Options{})
	w2, _ := avro.New[UserV2](reg, userV2, avro.Options{})
	w3, _ := avro.New[UserV3](reg, userV3, avro.Options{})
	mail := "a@b"
	r1 := must(w1.Serialize("users", UserV1{"a", 1}))
	r2 := must(w2.Serialize("users", UserV2{"b", 2, &mail}))
	r3 := must(w3.Serialize("users", UserV3{"c", 3, &mail, "SE"}))
	ids := map[int]bool{}
	for _, r := range [][]byte{r1, r2, r3} {
		id, _, _ := registry.SplitHeader("avro", r)
		ids[id] = true
	}
	if len(ids) != 3 {
		t.Fatalf("three versions got ids %v", ids)
	}

	var got []UserV3
	for _, r := range [][]byte{r1, r2, r3} {
		u, err := w3.Deserialize("users", r)
		if err != nil {
			t.Fatalf("v3 reading: %v", err)
		}
		got = append(got, u)
	}
	want := []UserV3{{"a", 1, nil, "NO"}, {"b", 2, &mail, "NO"}, {"c", 3, &mail, "SE"}}
	for i := range want {
		if got[i].ID != want[i].ID || got[i].Age != want[i].Age || got[i].Country != want[i].Country || (got[i].Email == nil) != (want[i].Email == nil) {
			t.Fatalf("v3 reader: record %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	// The oldest reader reads the newest record, dropping what it does not know...
	if u, err := w2.Deserialize("users", r3); err != nil || u.ID != "c" || u.Age != 3 || u.Email == nil {
		t.Fatalf("v2 reading v3: %+v, %v", u, err)
	}
	// ...but a long cannot narrow to v1's int: Avro refuses, with the schema id.
	_, err := w1.Deserialize("users", r2)
	var fe *formats.Error
	if !errors.Is(err, formats.ErrIncompatible) || !errors.As(err, &fe) || fe.SchemaID == 0 || !strings.Contains(err.Error(), "schema id") {
		t.Fatalf("v1 reading v2: %v, want ErrIncompatible naming the schema id", err)
	}
}

func TestUnknownSchemaIDAndForeignBytes(t *testing.T) {
	reg := newRegistry(t)
	f, _ := avro.New[UserV1](reg, userV1, avro.Options{})
	_, err := f.Deserialize("users", append(registry.AppendHeader(nil, 4242), "\x04u1\x54"...))
	var fe *formats.Error
	if !errors.Is(err, formats.ErrUnknownSchema) || !errors.As(err, &fe) || fe.SchemaID != 4242 {
		t.Fatalf("unknown id: %v", err)
	}
	if _, err := f.Deserialize("users", []byte(`{"id":"u1"}`)); !errors.Is(err, formats.ErrNoMagicByte) {
		t.Fatalf("JSON bytes: %v, want ErrNoMagicByte", err)
	}
	if _, err := f.Deserialize("users", nil); !errors.Is(err, formats.ErrSkip) {
		t.Fatalf("tombstone: %v, want ErrSkip", err)
	}
	lookup, _ := avro.New[UserV2](reg, userV2, avro.Options{WriteMode: registry.LookupOnly})
	if _, err := lookup.Serialize("users", UserV2{ID: "x"}); !errors.Is(err, formats.ErrUnknownSchema) {
		t.Fatalf("lookup-only of an unregistered schema: %v", err)
	}
	custom, _ := avro.New[UserV1](reg, userV1, avro.Options{Subject: "people"})
	b := must(custom.Serialize("users", UserV1{"x", 1}))
	id, _, _ := registry.SplitHeader("avro", b)
	if ss, err := reg.SR().SchemaByVersion(t.Context(), "people", -1); err != nil || ss.ID != id || ss.Type != sr.TypeAvro {
		t.Fatalf("subject people: %+v, %v; want id %d", ss, err, id)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// A reader whose record has another name than the writer's reads it only
// with AnyRecordName (Flink's avro-confluent reader schema is always
// org.apache.flink.avro.generated.record, and Avro's Java resolver does
// not compare the names).
func TestAnyRecordName(t *testing.T) {
	reg := newRegistry(t)
	w := must1(avro.New[UserV1](reg, userV1, avro.Options{}))
	rec := must(w.Serialize("t", UserV1{"a", 7}))
	const flinkReader = `{"type":"record","name":"record","namespace":"org.apache.flink.avro.generated","fields":[
		{"name":"id","type":["null","string"],"default":null},
		{"name":"age","type":["null","long"],"default":null},
		{"name":"country","type":["null","string"],"default":null}]}`
	strict := must1(avro.New[map[string]any](reg, flinkReader, avro.Options{}))
	if _, err := strict.Deserialize("t", rec); !errors.Is(err, formats.ErrIncompatible) || !strings.Contains(err.Error(), "names do not match") {
		t.Fatalf("strict reader: %v, want ErrIncompatible naming the names", err)
	}
	loose := must1(avro.New[map[string]any](reg, flinkReader, avro.Options{AnyRecordName: true}))
	got, err := loose.Deserialize("t", rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["id"] != "a" || got["age"] != int64(7) || got["country"] != nil {
		t.Fatalf("read %#v, want id a, age 7, country nil", got)
	}
}
