package avro_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/sluice/sluice/formats/avro"
	"github.com/sluice/sluice/formats/registry"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
)

// Three schema versions in one topic, read by one job before and after a
// savepoint restore, on kfake and franz-go's registry (the integration
// test runs the same on a real broker and registry).
func TestThreeVersionsAcrossASavepointRestore(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "people"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	fake := srfake.New()
	defer fake.Close()
	evolutionAcrossSavepoint(t, kc.ListenAddrs(), fake.URL(), "people")
}

// seenSink keeps what a job wrote, for a test to read while the job runs.
type seenSink struct {
	mu   sync.Mutex
	vals []string
}

func (s *seenSink) CreateWriter(stream.SinkContext) (stream.SinkWriter[string], error) { return s, nil }
func (s *seenSink) Write(_ context.Context, v string, _ stream.Timestamp) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vals = append(s.vals, v)
	return nil
}
func (s *seenSink) Flush(context.Context, bool) error { return nil }
func (s *seenSink) Close() error                      { return nil }
func (s *seenSink) values() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.vals)
}

// evolutionAcrossSavepoint writes records of schema versions 1, 2 and 3 to
// topic (the first written "months ago": their timestamps are 180
// days old), reads them with one job whose reader schema is version 3,
// stops it with a savepoint, writes one more record of each version (an
// old producer still writes version 1), and restores the job from the
// savepoint in a fresh registry client (every writer schema resolved
// again by id): it reads the new records, each once, and none of the old.
func evolutionAcrossSavepoint(t *testing.T, addrs []string, registryURL, topic string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	newClient := func() *registry.Client { return must1(registry.New(registry.Config{URLs: []string{registryURL}})) }
	writers := newClient()
	v1 := must1(avro.New[UserV1](writers, userV1, avro.Options{}))
	v2 := must1(avro.New[UserV2](writers, userV2, avro.Options{}))
	v3 := must1(avro.New[UserV3](writers, userV3, avro.Options{}))
	monthsAgo := time.Now().Add(-180 * 24 * time.Hour)
	write := func(data []byte, at time.Time) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: data, Timestamp: at}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	mail := "m@x"
	write(must(v1.Serialize(topic, UserV1{"a", 1})), monthsAgo)
	// The registry's BACKWARD rule (its default), set for the subject: each
	// version is registered under it because the one before can be read by it.
	if err := writers.SetCompatibility(ctx, topic+"-value", "BACKWARD"); err != nil {
		t.Fatal(err)
	}
	write(must(v2.Serialize(topic, UserV2{"b", 2, &mail})), monthsAgo.Add(time.Hour))
	write(must(v3.Serialize(topic, UserV3{"c", 3, nil, "SE"})), time.Now())

	dir := t.TempDir()
	run := func(name string, opts ...stream.Option) (*stream.JobClient, *seenSink) {
		t.Helper()
		env := stream.NewEnvironment(append([]stream.Option{stream.WithParallelism(1),
			stream.WithCheckpointing(10*time.Minute, "file://"+filepath.Join(dir, "checkpoints"))}, opts...)...)
		// A fresh registry client per job: the restored job resolves every
		// writer schema by id again, as a new process does.
		src, err := kafka.NewSource(kafka.FormatValues(must1(avro.New[UserV3](newClient(), userV3, avro.Options{WriteMode: registry.LookupOnly}))),
			kafka.BootstrapServers(addrs...), kafka.Topics(topic), kafka.StartingOffsets(kafka.Earliest()))
		if err != nil {
			t.Fatal(err)
		}
		seen := &seenSink{}
		stream.SinkTo(stream.Map(stream.FromSource[UserV3, kafka.PartitionSplit](env, src, stream.NoWatermarks[UserV3](), topic).UID("people"),
			func(u UserV3) string {
				e := "-"
				if u.Email != nil {
					e = *u.Email
				}
				return u.ID + "/" + strconv.FormatInt(u.Age, 10) + "/" + e + "/" + u.Country
			}), seen)
		job, err := env.ExecuteAsync(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return job, seen
	}
	waitFor := func(seen *seenSink, want []string) {
		t.Helper()
		testwait.Eventually(t, time.Minute, fmt.Sprintf("the job to read %v", want), func() bool { return len(seen.values()) >= len(want) })
		if got := seen.values(); !slices.Equal(got, want) {
			t.Fatalf("read %v, want %v", got, want)
		}
	}

	job, seen := run("before")
	waitFor(seen, []string{"a/1/-/NO", "b/2/m@x/NO", "c/3/-/SE"})
	sp, err := job.StopWithSavepoint(filepath.Join(dir, "savepoints"), false)
	if err != nil {
		t.Fatalf("stop with savepoint: %v", err)
	}
	if _, err := job.Wait(); err != nil {
		t.Fatalf("the job before the savepoint: %v", err)
	}

	write(must(v1.Serialize(topic, UserV1{"d", 4})), monthsAgo.Add(2*time.Hour))
	write(must(v2.Serialize(topic, UserV2{"e", 5, nil})), time.Now())
	write(must(v3.Serialize(topic, UserV3{"f", 6, &mail, "DK"})), time.Now())
	job, seen = run("after", stream.WithSavepoint(sp, false))
	defer job.Cancel()
	waitFor(seen, []string{"d/4/-/NO", "e/5/-/NO", "f/6/m@x/DK"})
	// Nothing more comes: records before the savepoint's offsets are not
	// read again. A marker written last is the next record the job reads.
	write(must(v3.Serialize(topic, UserV3{"z", 0, nil, "ZZ"})), time.Now())
	waitFor(seen, []string{"d/4/-/NO", "e/5/-/NO", "f/6/m@x/DK", "z/0/-/ZZ"})
}
