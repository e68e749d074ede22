// Package sample takes the profiles flame graphs are built from, in the
// process whose goroutines they show: a CPU profile for a while
// (runtime/pprof.StartCPUProfile) or goroutine profiles at intervals
// (pprof.Lookup("goroutine"), whose samples carry the goroutines' labels),
// keeping the stacks of the goroutines whose pprof labels match.
package sample

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/flamegraph"
)

// ErrCPUBusy is wrapped by the error of a CPU profile asked for while
// another one runs in the process: Go runs at most one at a time.
var ErrCPUBusy = errors.New("sample: a CPU profile is already being taken in this process (Go runs one at a time); ask again when it is done")

// Sampler takes a process's profiles. Its CPU profiles are serialized:
// one asked for while another runs fails at once with ErrCPUBusy (as does
// one while code outside the Sampler profiles the CPU). Goroutine samples
// may be taken at any time. The zero value uses the system clock.
type Sampler struct {
	// Clock times the profiles. Default: the system clock.
	Clock clock.Clock
	cpu   sync.Mutex
}

func (s *Sampler) clock() clock.Clock {
	if s.Clock == nil {
		return clock.System{}
	}
	return s.Clock
}

// CPU profiles the process for d (or until ctx ends, then returning its
// error) and returns the stacks of the samples whose labels match m, at
// most depth frames each (0: all).
func (s *Sampler) CPU(ctx context.Context, d time.Duration, m flamegraph.Match, depth int) ([]flamegraph.Stack, error) {
	if !s.cpu.TryLock() {
		return nil, ErrCPUBusy
	}
	defer s.cpu.Unlock()
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCPUBusy, err)
	}
	done, stop := clock.After(s.clock(), d)
	defer stop()
	select {
	case <-done:
	case <-ctx.Done():
	}
	pprof.StopCPUProfile()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		return nil, fmt.Errorf("sample: reading the CPU profile: %w", err)
	}
	return flamegraph.Stacks(p, m, depth), nil
}

// Goroutines takes n goroutine profiles, delay apart, and returns the
// stacks of the goroutines whose labels match m over all of them, each
// counted once per profile it was in, at most depth frames each (0: all).
// It stops early, with ctx's error, when ctx ends.
func (s *Sampler) Goroutines(ctx context.Context, n int, delay time.Duration, m flamegraph.Match, depth int) ([]flamegraph.Stack, error) {
	var out []flamegraph.Stack
	for i := range max(n, 1) {
		if i > 0 {
			next, stop := clock.After(s.clock(), delay)
			select {
			case <-next:
			case <-ctx.Done():
			}
			stop()
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		if err := pprof.Lookup("goroutine").WriteTo(&buf, 0); err != nil {
			return nil, fmt.Errorf("sample: taking a goroutine profile: %w", err)
		}
		p, err := profile.Parse(&buf)
		if err != nil {
			return nil, fmt.Errorf("sample: reading a goroutine profile: %w", err)
		}
		out = flamegraph.Merge(out, flamegraph.Stacks(p, m, depth))
	}
	return out, nil
}
