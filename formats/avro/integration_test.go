//go:build integration

package avro_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sluice/sluice/formats"
	"github.com/sluice/sluice/formats/avro"
	"github.com/sluice/sluice/formats/internal/registryserver"
	"github.com/sluice/sluice/formats/registry"
	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
)

// Against a real registry (Apicurio, the Confluent API): its compatibility
// rules refuse a breaking schema at registration, with its message, and
// three versions of a schema in one topic are read by one job.
func TestRealRegistry(t *testing.T) {
	url := registryserver.Start(t)
	reg, err := registry.New(registry.Config{URLs: []string{url}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	const (
		base = `{"type":"record","name":"R","fields":[{"name":"a","type":"string"},{"name":"b","type":"int","default":0}]}`
		// Adds c without a default: old records cannot be read by it (not BACKWARD).
		addNoDefault = `{"type":"record","name":"R","fields":[{"name":"a","type":"string"},{"name":"b","type":"int","default":0},{"name":"c","type":"string"}]}`
		// Removes a, which has no default: old readers cannot read new records (not FORWARD).
		removeNoDefault = `{"type":"record","name":"R","fields":[{"name":"b","type":"int","default":0}]}`
		// Adds c with a default: compatible every way.
		addDefault = `{"type":"record","name":"R","fields":[{"name":"a","type":"string"},{"name":"b","type":"int","default":0},{"name":"c","type":"string","default":"x"}]}`
	)
	type R struct {
		A string `avro:"a"`
		B int32  `avro:"b"`
	}
	for _, tc := range []struct {
		level   string
		refused []string // schemas the rule refuses after base
		allowed []string
	}{
		{"BACKWARD", []string{addNoDefault}, []string{removeNoDefault}},
		{"FORWARD", []string{removeNoDefault}, []string{addNoDefault}},
		{"FULL", []string{addNoDefault, removeNoDefault}, []string{addDefault}},
	} {
		t.Run(tc.level, func(t *testing.T) {
			topic := "compat-" + strings.ToLower(tc.level)
			subject := topic + "-value"
			first := must1(avro.New[R](reg, base, avro.Options{}))
			if _, err := first.Serialize(topic, R{"x", 1}); err != nil {
				t.Fatalf("registering the first version: %v", err)
			}
			if err := reg.SetCompatibility(ctx, subject, tc.level); err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.refused {
				f := must1(avro.New[R](reg, s, avro.Options{}))
				_, err := f.Serialize(topic, R{"x", 1})
				var fe *formats.Error
				if !errors.Is(err, formats.ErrIncompatible) || !errors.As(err, &fe) || fe.Subject != subject {
					t.Fatalf("%s let %s be registered: %v", tc.level, s, err)
				}
				if !strings.Contains(err.Error(), "Incompatible") {
					t.Fatalf("error %q does not carry the registry's message", err)
				}
				t.Logf("%s refused, as the registry says: %v", tc.level, err)
			}
			for _, s := range tc.allowed {
				// A schema the rule allows is registered (a writer of the removing
				// schema has no field a: R's a is ignored by hamba's encoder).
				if _, err := reg.ID(ctx, subject, registrySchema(s), registry.RegisterOnWrite); err != nil {
					t.Fatalf("%s refused the compatible %s: %v", tc.level, s, err)
				}
			}
		})
	}

	t.Run("ThreeVersionsOneTopicOneJob", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "people"))
		if err != nil {
			t.Fatal(err)
		}
		defer kc.Close()
		addrs := kc.ListenAddrs()
		// BACKWARD (the registry's default rule) for the subject, set explicitly.
		v1 := must1(avro.New[UserV1](reg, userV1, avro.Options{}))
		if _, err := v1.Serialize("people", UserV1{"warm", 0}); err != nil {
			t.Fatal(err)
		}
		if err := reg.SetCompatibility(ctx, "people-value", "BACKWARD"); err != nil {
			t.Fatal(err)
		}
		mail := "m@x"
		write := func(name string, build func(env *stream.Environment, addrs []string)) {
			env := stream.NewEnvironment(stream.WithParallelism(1))
			build(env, addrs)
			if _, err := env.ExecuteContext(ctx, name); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		write("v1", func(env *stream.Environment, addrs []string) {
			sink, _ := kafka.NewSink(kafka.FormatSerializer("people", v1), kafka.BootstrapServers(addrs...))
			stream.SinkTo(stream.FromSlice(env, []UserV1{{"a", 1}}), sink)
		})
		write("v2", func(env *stream.Environment, addrs []string) {
			sink, _ := kafka.NewSink(kafka.FormatSerializer("people", must1(avro.New[UserV2](reg, userV2, avro.Options{}))), kafka.BootstrapServers(addrs...))
			stream.SinkTo(stream.FromSlice(env, []UserV2{{"b", 2, &mail}}), sink)
		})
		write("v3", func(env *stream.Environment, addrs []string) {
			sink, _ := kafka.NewSink(kafka.FormatSerializer("people", must1(avro.New[UserV3](reg, userV3, avro.Options{}))), kafka.BootstrapServers(addrs...))
			stream.SinkTo(stream.FromSlice(env, []UserV3{{"c", 3, nil, "SE"}}), sink)
		})
		src, err := kafka.NewSource(kafka.FormatValues(must1(avro.New[UserV3](reg, userV3, avro.Options{WriteMode: registry.LookupOnly}))),
			kafka.BootstrapServers(addrs...), kafka.Topics("people"), kafka.Bounded(kafka.Latest()))
		if err != nil {
			t.Fatal(err)
		}
		env := stream.NewEnvironment(stream.WithParallelism(1))
		res := stream.Collect(stream.Map(stream.FromSource[UserV3, kafka.PartitionSplit](env, src, stream.NoWatermarks[UserV3](), "people"),
			func(u UserV3) string { return u.ID + "/" + strconv.FormatInt(u.Age, 10) + "/" + u.Country }))
		if _, err := env.ExecuteContext(ctx, "read"); err != nil {
			t.Fatal(err)
		}
		if got, want := res.Values(), []string{"a/1/NO", "b/2/NO", "c/3/SE"}; !slices.Equal(got, want) {
			t.Fatalf("read %v, want %v", got, want)
		}
	})
}

func registrySchema(s string) sr.Schema { return sr.Schema{Schema: s, Type: sr.TypeAvro} }
