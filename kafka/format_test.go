package kafka_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/formats/json"
	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
)

// A format's ignore-parse-errors skips a record that is not JSON (counted
// as skipped, not malformed) and zeroes a field of the wrong type; without
// it, the malformed record goes to the dead-letter topic with an error
// text that does not quote the payload.
func TestFormatValuesPolicies(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "orders", 1)
	c.createTopic(t, "orders-dlq", 1)
	c.produce(t,
		&kgo.Record{Topic: "orders", Value: []byte(`{"id":"p1","amount":1.5}`)},
		&kgo.Record{Topic: "orders", Value: []byte(`{"id":"secret-card-4111`)},
		&kgo.Record{Topic: "orders", Value: []byte(`{"id":"p3","amount":"4111"}`)},
		&kgo.Record{Topic: "orders", Value: []byte(`{"id":"p4","amount":4}`)},
	)
	run := func(opts json.Options, extra ...kafka.SourceOpt) ([]purchase, *kafka.Source[purchase]) {
		t.Helper()
		src := mustSource(t, kafka.FormatValues(json.MustNew[purchase](opts)), append([]kafka.SourceOpt{kafka.BootstrapServers(c.addrs...),
			kafka.Topics("orders"), kafka.Bounded(kafka.Latest()), kafka.WithLogger(testLogger(t))}, extra...)...)
		env := newEnv(t, 1)
		res := stream.Collect(stream.FromSource[purchase, kafka.PartitionSplit](env, src, stream.NoWatermarks[purchase](), "kafka"))
		if _, err := env.ExecuteContext(ctxT(t), t.Name()); err != nil {
			t.Fatal(err)
		}
		return res.Values(), src
	}

	got, src := run(json.Options{IgnoreParseErrors: true})
	if want := []purchase{{"p1", 1.5}, {"p3", 0}, {"p4", 4}}; !slices.Equal(got, want) {
		t.Fatalf("ignore-parse-errors: %v, want %v", got, want)
	}
	if s, m := src.Metrics().Skipped.Load(), src.Metrics().Malformed.Load(); s != 1 || m != 0 {
		t.Fatalf("ignore-parse-errors: skipped %d, malformed %d; want 1 and 0", s, m)
	}

	got, src = run(json.Options{}, kafka.DeadLetterTopic("orders-dlq"))
	if want := []purchase{{"p1", 1.5}, {"p4", 4}}; !slices.Equal(got, want) {
		t.Fatalf("dead-letter policy: %v, want %v", got, want)
	}
	if m := src.Metrics().Malformed.Load(); m != 2 {
		t.Fatalf("malformed %d, want 2", m)
	}
	var errs []string
	for _, r := range c.consume(t, "orders-dlq", false) {
		for _, h := range r.Headers {
			if h.Key == kafka.HeaderDLQSchemaID {
				t.Errorf("a JSON record without a schema got header %s = %s", h.Key, h.Value)
			}
			if h.Key == kafka.HeaderDLQError {
				errs = append(errs, string(h.Value))
			}
		}
	}
	want := []string{"formats: json decode: invalid JSON at byte offset 23",
		`formats: json decode: field "amount": a JSON string cannot be read into Go float64`}
	if !slices.Equal(errs, want) {
		t.Fatalf("dead-letter error texts\n got %q\nwant %q", errs, want)
	}
	for _, e := range errs {
		if strings.Contains(e, "secret") || strings.Contains(e, "4111") {
			t.Fatalf("dead-letter error text %q quotes the payload", e)
		}
	}
}

func TestFormatSerializer(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "out", 1)
	sink := mustSink(t, kafka.FormatSerializer("out", json.MustNew[purchase](json.Options{})), kafka.BootstrapServers(c.addrs...))
	env := newEnv(t, 1)
	stream.SinkTo(stream.FromSlice(env, []purchase{{"a", 1}, {"b", 2}}), sink)
	if _, err := env.ExecuteContext(ctxT(t), t.Name()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range c.consume(t, "out", false) {
		got = append(got, string(r.Value))
	}
	if want := []string{`{"id":"a","amount":1}`, `{"id":"b","amount":2}`}; !slices.Equal(got, want) {
		t.Fatalf("records %q, want %q", got, want)
	}
}
