package kafka_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/sluice/sluice/kafka"
	"github.com/twmb/franz-go/pkg/kgo"
)

type purchase struct {
	ID     string  `json:"id"`
	Amount float64 `json:"amount"`
}

func TestDeserializerHelpers(t *testing.T) {
	rec := &kgo.Record{Topic: "t", Partition: 2, Offset: 7, Key: []byte("k"), Value: []byte(`{"id":"p1","amount":2.5,"extra":true}`)}
	p, err := kafka.JSONValues[purchase]().Deserialize(rec)
	if err != nil || p != (purchase{"p1", 2.5}) {
		t.Fatalf("JSON: %+v, %v", p, err)
	}
	if _, err := kafka.JSONValues[purchase]().Deserialize(&kgo.Record{}); !errors.Is(err, kafka.ErrNoValue) {
		t.Fatalf("JSON of a tombstone: %v, want ErrNoValue", err)
	}
	var se *json.SyntaxError
	if _, err := kafka.JSONValues[purchase]().Deserialize(&kgo.Record{Value: []byte("{")}); !errors.As(err, &se) {
		t.Fatalf("JSON of bad input: %v, want a json.SyntaxError", err)
	}
	if s, _ := kafka.StringValues().Deserialize(rec); s != string(rec.Value) {
		t.Fatalf("String: %q", s)
	}
	where := kafka.RecordDeserializer(func(r *kgo.Record) (string, error) {
		return r.Topic + "/" + string(r.Key), nil
	})
	if s, _ := where.Deserialize(rec); s != "t/k" {
		t.Fatalf("record deserializer: %q", s)
	}
}

func TestSerializerHelpers(t *testing.T) {
	r, err := kafka.JSONSerializer[purchase]("out").Serialize(purchase{"p", 1}, 5)
	if err != nil || r.Topic != "out" || string(r.Value) != `{"id":"p","amount":1}` || r.Key != nil {
		t.Fatalf("JSON serializer: %+v, %v", r, err)
	}
	r, _ = kafka.StringSerializer("s").Serialize("x", 5)
	if r.Topic != "s" || string(r.Value) != "x" {
		t.Fatalf("string serializer: %+v", r)
	}
}

// FuzzJSONValues: the JSON helper decodes record values off the wire; it
// never panics, and what it accepts round-trips.
func FuzzJSONValues(f *testing.F) {
	for _, s := range []string{`{"id":"a","amount":1}`, `{`, `null`, `[]`, `{"amount":"x"}`, "\xff", `{"id":"\u0000"}`} {
		f.Add([]byte(s))
	}
	d := kafka.JSONValues[purchase]()
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := d.Deserialize(&kgo.Record{Value: b})
		if err != nil {
			return
		}
		again, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("re-encoding %+v: %v", p, err)
		}
		q, err := d.Deserialize(&kgo.Record{Value: again})
		if err != nil || q != p {
			t.Fatalf("%+v re-encoded as %s decodes as %+v, %v", p, again, q, err)
		}
	})
}
