package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
	"github.com/twmb/franz-go/pkg/kgo"
)

// decliningSink counts the records it is given and, while decline is set,
// fails its flush at every barrier: the checkpoint or savepoint is declined
// after the other sinks of the job have pre-committed for it, as when a
// savepoint fails after its barrier.
type decliningSink struct {
	seen    atomic.Int64
	decline atomic.Bool
}

func (s *decliningSink) CreateWriter(stream.SinkContext) (stream.SinkWriter[string], error) {
	return decliningWriter{s}, nil
}

type decliningWriter struct{ s *decliningSink }

func (w decliningWriter) Write(context.Context, string, stream.Timestamp) error {
	w.s.seen.Add(1)
	return nil
}

func (w decliningWriter) Flush(_ context.Context, endOfInput bool) error {
	if !endOfInput && w.s.decline.Load() {
		return errors.New("declined by the test")
	}
	return nil
}

func (decliningWriter) Close() error { return nil }

// Savepoints that fail after their barrier keep their pre-committed
// transactions until a later one completes. More of them in a row than
// the transactional id pool holds (the default: 3) no longer fail the
// job: the pool grows, the next savepoint commits them all, and the
// output holds every record exactly once.
func TestFailedSavepointsInARowKeepTheJobRunning(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "in", 1)
	c.createTopic(t, "out", 1)
	ckpt := t.TempDir()
	env := newEnv(t, 1, stream.WithCheckpointing(10*time.Minute, "file://"+ckpt), stream.WithRestartStrategy(stream.FixedDelayRestart(3, 0)))
	src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics("in"), kafka.WithLogger(quietLogger()))
	sink := mustSink(t, kafka.StringSerializer("out"), kafka.BootstrapServers(c.addrs...), kafka.Guarantee(kafka.ExactlyOnce),
		kafka.TransactionalIDPrefix("sp"), kafka.Checkpointing(env.Configuration()), kafka.WithLogger(quietLogger()))
	declining := &decliningSink{}
	in := stream.FromSource(env, src, stream.NoWatermarks[string](), "in")
	stream.SinkToCommitting(in, sink)
	stream.SinkTo(in, declining)
	job, err := env.ExecuteAsync(ctxT(t), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	defer once.Do(job.Cancel)

	var want []string
	batch := func(round int) {
		t.Helper()
		var recs []*kgo.Record
		for i := 0; i < 5; i++ {
			v := fmt.Sprintf("r%d-%d", round, i)
			want = append(want, v)
			recs = append(recs, &kgo.Record{Topic: "in", Value: []byte(v)})
		}
		c.produce(t, recs...)
		testwait.Eventually(t, 30*time.Second, fmt.Sprintf("batch %d to reach the sinks", round), func() bool { return declining.seen.Load() == int64(len(want)) })
	}
	declining.decline.Store(true)
	for round := 0; round < 5; round++ {
		batch(round)
		if p, err := job.TriggerSavepoint(filepath.Join(ckpt, "savepoints")); err == nil {
			t.Fatalf("savepoint %d completed (%s), want it declined", round, p)
		}
	}
	declining.decline.Store(false)
	batch(5)
	if _, err := job.StopWithSavepoint(filepath.Join(ckpt, "savepoints"), true); err != nil {
		t.Fatalf("stop with savepoint: %v", err)
	}
	res, err := job.Wait()
	if err != nil {
		t.Fatalf("the job failed: %v", err)
	}
	if res.Restarts != 0 {
		t.Errorf("%d restarts, want none", res.Restarts)
	}
	got := values(c.consume(t, "out", true))
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("committed output: %s", diff(got, want))
	}
}
