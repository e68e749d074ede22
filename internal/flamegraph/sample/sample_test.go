package sample

import (
	"context"
	"errors"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/flamegraph"
)

// spinLabelled burns CPU in spinForFlameGraph on a goroutine labelled
// subtask=n until stop is closed; it returns once the goroutine runs
// with its labels.
func spinLabelled(wg *sync.WaitGroup, n string, stop <-chan struct{}, sink *atomic.Int64) {
	started := make(chan struct{})
	wg.Add(1)
	go pprof.Do(context.Background(), pprof.Labels("test", "sample", "subtask", n), func(context.Context) {
		defer wg.Done()
		close(started)
		spinForFlameGraph(stop, sink)
	})
	<-started
}

//go:noinline
func spinForFlameGraph(stop <-chan struct{}, sink *atomic.Int64) {
	x := int64(1)
	for {
		select {
		case <-stop:
			sink.Add(x)
			return
		default:
		}
		for i := range 10000 {
			x = x*31 + int64(i)
		}
	}
}

//go:noinline
func parkForFlameGraph(stop <-chan struct{}) { <-stop }

func hasFrame(stacks []flamegraph.Stack, fn string, offCPU bool) bool {
	for _, s := range stacks {
		for _, f := range s.Frames {
			if strings.HasPrefix(f, fn+" (") && s.OffCPU == offCPU {
				return true
			}
		}
	}
	return false
}

func TestCPUKeepsTheLabelledGoroutinesSamples(t *testing.T) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sink atomic.Int64
	spinLabelled(&wg, "0", stop, &sink)
	spinLabelled(&wg, "1", stop, &sink)
	defer func() { close(stop); wg.Wait() }()

	var s Sampler
	for _, tc := range []struct {
		match flamegraph.Match
		want  bool
	}{
		{flamegraph.Match{"test": {"sample"}, "subtask": {"0"}}, true},
		{flamegraph.Match{"test": {"sample"}, "subtask": {"7"}}, false},
	} {
		stacks, err := s.CPU(context.Background(), 400*time.Millisecond, tc.match, 0)
		if err != nil {
			t.Fatal(err)
		}
		fn := "github.com/sluice/sluice/internal/flamegraph/sample.spinForFlameGraph"
		if got := hasFrame(stacks, fn, false); got != tc.want {
			t.Errorf("CPU(%v): a frame of %s: %v, want %v; stacks %+v", tc.match, fn, got, tc.want, stacks)
		}
		if !tc.want && len(stacks) != 0 {
			t.Errorf("CPU(%v) kept samples of other goroutines: %+v", tc.match, stacks)
		}
	}
}

func TestOneCPUProfileAtATime(t *testing.T) {
	clk := clock.NewManual(0)
	s := Sampler{Clock: clk}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first := make(chan error, 1)
	go func() {
		_, err := s.CPU(ctx, time.Second, nil, 0)
		first <- err
	}()
	// The first profiles until its second has passed on the manual clock;
	// meanwhile another fails at once, from this Sampler and from another.
	if err := clk.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for name, other := range map[string]*Sampler{"the same Sampler": &s, "another Sampler": {}} {
		if _, err := other.CPU(ctx, time.Millisecond, nil, 0); !errors.Is(err, ErrCPUBusy) {
			t.Errorf("a second CPU profile from %s: %v, want ErrCPUBusy", name, err)
		}
	}
	clk.AdvanceBy(time.Second)
	if err := <-first; err != nil {
		t.Errorf("the first profile: %v", err)
	}
	if _, err := (&Sampler{}).CPU(ctx, 10*time.Millisecond, nil, 0); err != nil {
		t.Errorf("a CPU profile after the first ended: %v", err)
	}
	// A profile whose context ends returns its error.
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	if _, err := s.CPU(cctx, time.Minute, nil, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled profile: %v, want context.Canceled", err)
	}
}

func TestGoroutinesSeeParkedAndRunningStacks(t *testing.T) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sink atomic.Int64
	spinLabelled(&wg, "0", stop, &sink)
	parked := make(chan struct{})
	wg.Add(1)
	go pprof.Do(context.Background(), pprof.Labels("test", "sample", "subtask", "0"), func(context.Context) {
		defer wg.Done()
		close(parked)
		parkForFlameGraph(stop)
	})
	defer func() { close(stop); wg.Wait() }()
	<-parked

	var s Sampler
	stacks, err := s.Goroutines(context.Background(), 5, 10*time.Millisecond, flamegraph.Match{"test": {"sample"}, "subtask": {"0"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	const pkg = "github.com/sluice/sluice/internal/flamegraph/sample."
	if !hasFrame(stacks, pkg+"parkForFlameGraph", true) {
		t.Errorf("no parked stack of parkForFlameGraph in %+v", stacks)
	}
	var total int64
	for _, st := range stacks {
		total += st.Count
		for _, f := range st.Frames {
			if strings.HasPrefix(f, pkg+"TestGoroutinesSeeParkedAndRunningStacks (") {
				t.Errorf("kept the unlabelled test goroutine's stack: %q", st.Frames)
			}
		}
	}
	if total != 10 { // two goroutines in each of 5 profiles
		t.Errorf("%d goroutine samples, want 10: %+v", total, stacks)
	}
	tree := flamegraph.Tree(flamegraph.OffCPU, stacks)
	if tree.Value != 5 {
		t.Errorf("OFF_CPU tree value %d, want the parked goroutine's 5 samples", tree.Value)
	}
}
