package formatsbench_test

import (
	"bytes"
	stdjson "encoding/json"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"
	js "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/formats"
	"github.com/sluice/sluice/formats/avro"
	"github.com/sluice/sluice/formats/internal/formatsbench/benchpb"
	"github.com/sluice/sluice/formats/json"
	"github.com/sluice/sluice/formats/jsonschema"
	"github.com/sluice/sluice/formats/protobuf"
	"github.com/sluice/sluice/formats/registry"
)

// Record20 is a record of 20 fields: 5 strings, 5 longs, 4 doubles, 3
// booleans, 3 ints.
type Record20 struct {
	S1 string  `json:"s1" avro:"s1"`
	S2 string  `json:"s2" avro:"s2"`
	S3 string  `json:"s3" avro:"s3"`
	S4 string  `json:"s4" avro:"s4"`
	S5 string  `json:"s5" avro:"s5"`
	L1 int64   `json:"l1" avro:"l1"`
	L2 int64   `json:"l2" avro:"l2"`
	L3 int64   `json:"l3" avro:"l3"`
	L4 int64   `json:"l4" avro:"l4"`
	L5 int64   `json:"l5" avro:"l5"`
	D1 float64 `json:"d1" avro:"d1"`
	D2 float64 `json:"d2" avro:"d2"`
	D3 float64 `json:"d3" avro:"d3"`
	D4 float64 `json:"d4" avro:"d4"`
	B1 bool    `json:"b1" avro:"b1"`
	B2 bool    `json:"b2" avro:"b2"`
	B3 bool    `json:"b3" avro:"b3"`
	I1 int32   `json:"i1" avro:"i1"`
	I2 int32   `json:"i2" avro:"i2"`
	I3 int32   `json:"i3" avro:"i3"`
}

var rec = Record20{"order-000123", "customer-42", "Oslo", "NO", "card", 1234567, 42, 1700000000000, 7, 99,
	12.5, 0.25, 3.14159, 1e6, true, false, true, 17, 2048, -5}

var pbRec = &benchpb.Record20{S1: rec.S1, S2: rec.S2, S3: rec.S3, S4: rec.S4, S5: rec.S5, L1: rec.L1, L2: rec.L2, L3: rec.L3,
	L4: rec.L4, L5: rec.L5, D1: rec.D1, D2: rec.D2, D3: rec.D3, D4: rec.D4, B1: rec.B1, B2: rec.B2, B3: rec.B3, I1: rec.I1, I2: rec.I2, I3: rec.I3}

func avroSchema() string {
	var f []string
	add := func(typ string, names ...string) {
		for _, n := range names {
			f = append(f, `{"name":"`+n+`","type":"`+typ+`"}`)
		}
	}
	add("string", "s1", "s2", "s3", "s4", "s5")
	add("long", "l1", "l2", "l3", "l4", "l5")
	add("double", "d1", "d2", "d3", "d4")
	add("boolean", "b1", "b2", "b3")
	add("int", "i1", "i2", "i3")
	return `{"type":"record","name":"Record20","fields":[` + strings.Join(f, ",") + `]}`
}

func jsonSchema() string {
	props := map[string]string{}
	for _, n := range []string{"s1", "s2", "s3", "s4", "s5"} {
		props[n] = "string"
	}
	for _, n := range []string{"l1", "l2", "l3", "l4", "l5", "i1", "i2", "i3"} {
		props[n] = "integer"
	}
	for _, n := range []string{"d1", "d2", "d3", "d4"} {
		props[n] = "number"
	}
	for _, n := range []string{"b1", "b2", "b3"} {
		props[n] = "boolean"
	}
	var p, req []string
	for n, t := range props {
		p = append(p, `"`+n+`":{"type":"`+t+`"}`)
		req = append(req, `"`+n+`"`)
	}
	return `{"type":"object","properties":{` + strings.Join(p, ",") + `},"required":[` + strings.Join(req, ",") + `]}`
}

func newRegistry(b *testing.B) *registry.Client {
	fake := srfake.New()
	b.Cleanup(fake.Close)
	c, err := registry.New(registry.Config{URLs: []string{fake.URL()}})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func report(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// rusageThread is Linux's RUSAGE_THREAD: the calling thread's CPU time.
const rusageThread = 1

// threadCPU is the calling OS thread's user and system CPU time; ok is
// false where the system cannot say.
func threadCPU() (d time.Duration, ok bool) {
	var ru syscall.Rusage
	if runtime.GOOS != "linux" || syscall.Getrusage(rusageThread, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// loop runs fn b.N times on one locked OS thread and reports, besides
// ns/op (wall time, which other processes on a loaded machine inflate),
// records/s and cpu-ns/op: that thread's CPU time per record, which they
// inflate far less (the garbage collector's work on other threads is not
// in it; allocations per record are reported apart).
func loop(b *testing.B, fn func() error) {
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, ok := threadCPU()
	for b.Loop() {
		if err := fn(); err != nil {
			b.Fatal(err)
		}
	}
	if end, ok2 := threadCPU(); ok && ok2 {
		b.ReportMetric(float64((end-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
	report(b)
}

func decode[T any](b *testing.B, f formats.Deserializer[T], data []byte) {
	loop(b, func() error { _, err := f.Deserialize("t", data); return err })
}

func encode[T any](b *testing.B, f formats.Serializer[T], v T) {
	loop(b, func() error { _, err := f.Serialize("t", v); return err })
}

func BenchmarkJSON(b *testing.B) {
	f := json.MustNew[Record20](json.Options{})
	strict := json.MustNew[Record20](json.Options{FailOnMissingField: true})
	data, _ := stdjson.Marshal(rec)
	b.Run("decode/raw", func(b *testing.B) {
		loop(b, func() error { var v Record20; return stdjson.Unmarshal(data, &v) })
	})
	b.Run("decode/format", func(b *testing.B) { decode(b, f, data) })
	b.Run("decode/format-fail-on-missing-field", func(b *testing.B) { decode(b, strict, data) })
	b.Run("encode/raw", func(b *testing.B) { loop(b, func() error { _, err := stdjson.Marshal(rec); return err }) })
	b.Run("encode/format", func(b *testing.B) { encode(b, f, rec) })
}

func BenchmarkAvro(b *testing.B) {
	reg := newRegistry(b)
	f, err := avro.New[Record20](reg, avroSchema(), avro.Options{})
	if err != nil {
		b.Fatal(err)
	}
	schema := f.Schema()
	data, err := f.Serialize("t", rec) // registers, and warms the cache
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.Deserialize("t", data); err != nil {
		b.Fatal(err)
	}
	payload := data[5:]
	b.Run("decode/raw", func(b *testing.B) {
		loop(b, func() error { var v Record20; return hamba.Unmarshal(schema, payload, &v) })
	})
	b.Run("decode/format", func(b *testing.B) { decode(b, f, data) })
	b.Run("encode/raw", func(b *testing.B) { loop(b, func() error { _, err := hamba.Marshal(schema, rec); return err }) })
	b.Run("encode/format", func(b *testing.B) { encode(b, f, rec) })
}

func BenchmarkProtobuf(b *testing.B) {
	reg := newRegistry(b)
	f, err := protobuf.New[*benchpb.Record20](reg, protobuf.Options{})
	if err != nil {
		b.Fatal(err)
	}
	data, err := f.Serialize("t", pbRec)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.Deserialize("t", data); err != nil {
		b.Fatal(err)
	}
	payload := data[6:] // header and the one-byte index [0]
	b.Run("decode/raw", func(b *testing.B) {
		loop(b, func() error { return proto.Unmarshal(payload, &benchpb.Record20{}) })
	})
	b.Run("decode/format", func(b *testing.B) { decode(b, f, data) })
	b.Run("encode/raw", func(b *testing.B) { loop(b, func() error { _, err := proto.Marshal(pbRec); return err }) })
	b.Run("encode/format", func(b *testing.B) { encode(b, f, pbRec) })
}

func BenchmarkJSONSchema(b *testing.B) {
	reg := newRegistry(b)
	text := jsonSchema()
	f, err := jsonschema.New[Record20](reg, text, jsonschema.Options{})
	if err != nil {
		b.Fatal(err)
	}
	data, err := f.Serialize("t", rec)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.Deserialize("t", data); err != nil {
		b.Fatal(err)
	}
	payload := data[5:]
	c := js.NewCompiler()
	doc, _ := js.UnmarshalJSON(strings.NewReader(text))
	if err := c.AddResource("mem:///s.json", doc); err != nil {
		b.Fatal(err)
	}
	sch := c.MustCompile("mem:///s.json")
	// The raw calls: the validator on the parsed document, then encoding/json.
	b.Run("decode/raw", func(b *testing.B) {
		loop(b, func() error {
			inst, err := js.UnmarshalJSON(bytes.NewReader(payload))
			if err != nil {
				return err
			}
			if err := sch.Validate(inst); err != nil {
				return err
			}
			var v Record20
			return stdjson.Unmarshal(payload, &v)
		})
	})
	b.Run("decode/format", func(b *testing.B) { decode(b, f, data) })
	b.Run("encode/raw", func(b *testing.B) {
		loop(b, func() error {
			out, err := stdjson.Marshal(rec)
			if err != nil {
				return err
			}
			inst, err := js.UnmarshalJSON(bytes.NewReader(out))
			if err != nil {
				return err
			}
			return sch.Validate(inst)
		})
	})
	b.Run("encode/format", func(b *testing.B) { encode(b, f, rec) })
}
