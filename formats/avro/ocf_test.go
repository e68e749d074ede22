package avro_test

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice/sluice/formats"
	"github.com/sluice/sluice/formats/avro"
)

func writeContainer[T any](t *testing.T, schema string, vs []T, opts ...avro.OCFOption) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := avro.NewOCFWriter[T](schema, &buf, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if err := w.AddElement(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readContainer[T any](t *testing.T, schema string, b []byte) []T {
	t.Helper()
	r, err := avro.NewOCFReader[T](schema, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	for {
		v, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
}

// A container file written with an older schema is read with a newer one
// by Avro's resolution (ints widen, missing fields take their defaults), in
// every codec; a reader schema that cannot read the writer's is refused.
func TestOCFSchemaResolution(t *testing.T) {
	in := []UserV1{{"a", 1}, {"b", -2}, {"ü", 1 << 30}}
	for _, codec := range []avro.Codec{avro.Null, avro.Deflate, avro.Snappy} {
		t.Run(string(codec), func(t *testing.T) {
			b := writeContainer(t, userV1, in, avro.WithCodec(codec), avro.WithBlockLength(2))
			if got := readContainer[UserV1](t, userV1, b); !reflect.DeepEqual(got, in) {
				t.Fatalf("read with the writer schema: %+v, want %+v", got, in)
			}
			want := []UserV3{{"a", 1, nil, "NO"}, {"b", -2, nil, "NO"}, {"ü", 1 << 30, nil, "NO"}}
			if got := readContainer[UserV3](t, userV3, b); !reflect.DeepEqual(got, want) {
				t.Fatalf("read with userV3: %+v, want %+v", got, want)
			}
		})
	}
	b := writeContainer(t, userV1, in)
	const needsEmail = `{"type":"record","name":"User","namespace":"sluice.test","fields":[
		{"name":"id","type":"string"},{"name":"email","type":"string"}]}`
	_, err := avro.NewOCFReader[map[string]any](needsEmail, bytes.NewReader(b))
	if !errors.Is(err, formats.ErrIncompatible) {
		t.Fatalf("error %v, want formats.ErrIncompatible", err)
	}
}

// Generic maps are written, and read with the file's writer schema when
// the reader gives none.
func TestOCFGenericMaps(t *testing.T) {
	in := []map[string]any{
		{"id": "a", "age": int64(1), "email": nil},
		{"id": "b", "age": int64(-2), "email": "m@x"},
	}
	b := writeContainer(t, userV2, in)
	r, err := avro.NewOCFReader[map[string]any]("", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.WriterSchema().(interface{ FullName() string }).FullName(); got != "sluice.test.User" {
		t.Fatalf("writer schema %s, want sluice.test.User", got)
	}
	got := readContainer[map[string]any](t, "", b)
	want := []map[string]any{
		{"id": "a", "age": int64(1), "email": nil},
		{"id": "b", "age": int64(-2), "email": "m@x"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read %#v, want %#v", got, want)
	}
}

// A value that does not match the schema fails naming its Go type, not
// its content; the writer then refuses further use; bad options are
// reported together.
func TestOCFWriterErrors(t *testing.T) {
	type wrong struct {
		ID string `avro:"id"`
	}
	w, err := avro.NewOCFWriter[wrong](userV1, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	err = w.AddElement(wrong{ID: "secret-id"})
	if !errors.Is(err, formats.ErrEncode) || strings.Contains(err.Error(), "secret-id") || !strings.Contains(err.Error(), "avro_test.wrong") {
		t.Fatalf("error %v, want formats.ErrEncode naming avro_test.wrong and not the value", err)
	}
	if err2 := w.Finish(); err2 != err {
		t.Fatalf("Finish after a failure: %v, want %v", err2, err)
	}
	_, err = avro.NewOCFWriter[UserV1](`{"type":"nope"}`, io.Discard, avro.WithCodec("lz4"), avro.WithBlockLength(-1))
	for _, want := range []string{`unknown codec "lz4"`, "block length must not be negative", "parsing the schema"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want it to say %q", err, want)
		}
	}
}

// A file of no records (a header alone) is complete; one cut inside its
// last block is malformed, not a file ending early.
func TestOCFEmptyAndTruncatedFiles(t *testing.T) {
	if got := readContainer[UserV1](t, userV1, writeContainer[UserV1](t, userV1, nil)); len(got) != 0 {
		t.Fatalf("read %+v from an empty file", got)
	}
	b := writeContainer(t, userV1, []UserV1{{"a", 1}, {"b", 2}, {"c", 3}}, avro.WithBlockLength(2))
	for cut := 1; cut <= 20; cut++ { // the last block is 21 bytes
		r, err := avro.NewOCFReader[UserV1](userV1, bytes.NewReader(b[:len(b)-cut]))
		if err != nil {
			t.Fatal(err)
		}
		var n int
		for {
			_, err = r.Read()
			if err != nil {
				break
			}
			n++
		}
		if !errors.Is(err, formats.ErrMalformed) || n != 2 {
			t.Fatalf("cut by %d: %d records, then %v; want 2, then a malformed file", cut, n, err)
		}
	}
}
