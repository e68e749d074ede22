package stream_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sluice/sluice/stream"
)

func TestManualClock(t *testing.T) {
	start := time.UnixMilli(1_000)
	c := stream.NewManualClock(start)
	if !c.Now().Equal(start) || c.NowMillis() != 1_000 {
		t.Fatalf("the clock stands at %v (%d), want %v", c.Now(), c.NowMillis(), start)
	}
	fired, stop := c.AfterMillis(1_500)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := c.Armed(); !slices.Equal(got, []int64{1_500}) {
		t.Fatalf("armed %v, want [1500]", got)
	}
	c.Advance(499 * time.Millisecond)
	select {
	case <-fired:
		t.Fatal("the timer fired at 1499, before its deadline")
	default:
	}
	c.Set(time.UnixMilli(1_500))
	select {
	case <-fired:
	default:
		t.Fatal("the timer did not fire at its deadline")
	}
	if len(c.Armed()) != 0 {
		t.Fatalf("armed %v after the timer fired", c.Armed())
	}
}
