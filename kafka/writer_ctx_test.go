package kafka_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
)

// TestWriterFollowsTheSubtasksContext: a flush waiting for acknowledgements
// that never come returns when the context the sink passes is cancelled,
// not after the delivery timeout.
func TestWriterFollowsTheSubtasksContext(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "slow", 1)
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return nil, errors.New("dropping produce requests"), true
	})
	sink := mustSink(t, kafka.StringSerializer("slow"), kafka.BootstrapServers(c.addrs...),
		kafka.Guarantee(kafka.AtLeastOnce), kafka.WithLogger(testLogger(t)))
	w, err := sink.CreateWriter(sinkCtx{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	if err := w.Write(ctx, "x", stream.NoTimestamp); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Flush(ctx, false) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("flush returned %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second): // the delivery timeout is 2 min
		t.Fatal("flush did not return when the subtask's context was cancelled")
	}
}
