//go:build integration

package registryserver_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/formats/avro"
	"github.com/sluice/sluice/formats/internal/formatsbench/benchpb"
	"github.com/sluice/sluice/formats/internal/registryserver"
	"github.com/sluice/sluice/formats/json"
	"github.com/sluice/sluice/formats/jsonschema"
	"github.com/sluice/sluice/formats/protobuf"
	"github.com/sluice/sluice/formats/registry"
	"github.com/sluice/sluice/integration/kafkabroker"
	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
)

func TestMain(m *testing.M) { os.Exit(kafkabroker.RunMain(m)) }

// format is what a round trip needs of a format.
type format[T any] interface {
	Serialize(topic string, v T) ([]byte, error)
	Deserialize(topic string, data []byte) (T, error)
}

// Each format round trip on a real Kafka broker and the real registry: a
// job writes values with the Kafka sink, another reads them with the
// Kafka source, and the values read are those written, in order.
func TestRoundTripsOnARealBroker(t *testing.T) {
	b := kafkabroker.Shared(t)
	reg, err := registry.New(registry.Config{URLs: []string{registryserver.Start(t)}})
	if err != nil {
		t.Fatal(err)
	}
	type user struct {
		ID    string  `json:"id" avro:"id"`
		Age   int64   `json:"age" avro:"age"`
		Email *string `json:"email" avro:"email"`
	}
	mail := "m@x"
	users := []user{{"a", 1, nil}, {"b", -2, &mail}, {"ü", 1 << 40, nil}}
	eqUser := func(a, b user) bool {
		return a.ID == b.ID && a.Age == b.Age && (a.Email == nil) == (b.Email == nil) && (a.Email == nil || *a.Email == *b.Email)
	}
	t.Run("json", func(t *testing.T) {
		roundTrip(t, b.Addr, json.MustNew[user](json.Options{FailOnMissingField: true}), users, eqUser)
	})
	t.Run("avro", func(t *testing.T) {
		f, err := avro.New[user](reg, `{"type":"record","name":"User","fields":[{"name":"id","type":"string"},
			{"name":"age","type":"long"},{"name":"email","type":["null","string"],"default":null}]}`, avro.Options{})
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, b.Addr, f, users, eqUser)
	})
	t.Run("avro-plain", func(t *testing.T) {
		f, err := avro.Plain[user](`{"type":"record","name":"User","fields":[{"name":"id","type":"string"},
			{"name":"age","type":"long"},{"name":"email","type":["null","string"],"default":null}]}`)
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, b.Addr, f, users, eqUser)
	})
	t.Run("json-schema", func(t *testing.T) {
		f, err := jsonschema.New[user](reg, `{"type":"object","properties":{"id":{"type":"string"},"age":{"type":"integer"},
			"email":{"type":["string","null"]}},"required":["id","age"]}`, jsonschema.Options{})
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, b.Addr, f, users, eqUser)
	})
	t.Run("protobuf", func(t *testing.T) {
		f, err := protobuf.New[*benchpb.Record20](reg, protobuf.Options{})
		if err != nil {
			t.Fatal(err)
		}
		in := []*benchpb.Record20{{S1: "a", L1: 7, D1: 1.5, B1: true, I3: -2}, {S2: "ü", L4: -1 << 50}, {}}
		roundTrip(t, b.Addr, f, in, func(a, b *benchpb.Record20) bool { return proto.Equal(a, b) })
	})
}

func roundTrip[T any](t *testing.T, addr string, f format[T], in []T, eq func(a, b T) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic := fmt.Sprintf("roundtrip-%s-%d", t.Name()[len("TestRoundTripsOnARealBroker/"):], time.Now().UnixNano())
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating topic %s: %v", topic, err)
	}
	sink, err := kafka.NewSink(kafka.FormatSerializer(topic, f), kafka.BootstrapServers(addr))
	if err != nil {
		t.Fatal(err)
	}
	env := stream.NewEnvironment(stream.WithParallelism(1))
	stream.SinkTo(stream.FromSlice(env, in), sink)
	if _, err := env.ExecuteContext(ctx, "write"); err != nil {
		t.Fatalf("writing: %v", err)
	}
	src, err := kafka.NewSource(kafka.FormatValues(f), kafka.BootstrapServers(addr), kafka.Topics(topic),
		kafka.StartingOffsets(kafka.Earliest()), kafka.Bounded(kafka.Latest()))
	if err != nil {
		t.Fatal(err)
	}
	env = stream.NewEnvironment(stream.WithParallelism(1))
	res := stream.Collect(stream.FromSource[T, kafka.PartitionSplit](env, src, stream.NoWatermarks[T](), "read"))
	if _, err := env.ExecuteContext(ctx, "read"); err != nil {
		t.Fatalf("reading: %v", err)
	}
	got := res.Values()
	if !slices.EqualFunc(got, in, eq) {
		t.Fatalf("read %v, want %v", got, in)
	}
	if m := src.Metrics().Malformed.Load(); m != 0 {
		t.Fatalf("%d malformed records", m)
	}
}
