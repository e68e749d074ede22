// Package local runs a job plan in-process: every subtask of every chain is
// a goroutine, and exchanges are in-process channels with credits. It is
// the embedded mini cluster behind running a job binary directly.
package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sluice/sluice/runtime/clock"
	"github.com/sluice/sluice/runtime/exchange"
	"github.com/sluice/sluice/runtime/graph"
	"github.com/sluice/sluice/runtime/task"
)

// Options configure a local execution.
type Options struct {
	// Clock is the processing-time clock (default: the system clock).
	Clock clock.Clock
	// Log receives the runtime's logs (default: discarded).
	Log *slog.Logger
	// Mode is STREAMING or BATCH.
	Mode task.RuntimeMode
	// BatchSize is records per exchange buffer (default task.DefaultBatchSize).
	BatchSize int
	// Credits is buffers in flight per channel (default 4).
	Credits int
	// BufferTimeout flushes partly filled buffers (default 100 ms; Flink's
	// execution.buffer-timeout.interval).
	BufferTimeout time.Duration
	// AutoWatermarkInterval is the periodic watermark interval in ms
	// (default 200; Flink's pipeline.auto-watermark-interval).
	AutoWatermarkInterval int64
}

// SubtaskMetrics are the final metrics of one subtask.
type SubtaskMetrics struct {
	Vertex  string
	Subtask int
	*task.Metrics
}

// Result describes a finished execution.
type Result struct {
	Duration time.Duration
	Subtasks []SubtaskMetrics
}

// Execute runs the plan until all tasks end, one fails, or ctx ends. The
// first failure cancels every other task and is returned.
func Execute(ctx context.Context, plan *graph.Plan, opts Options) (*Result, error) {
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Credits <= 0 {
		opts.Credits = 4
	}
	if opts.BufferTimeout == 0 {
		opts.BufferTimeout = 100 * time.Millisecond
	}
	if opts.AutoWatermarkInterval <= 0 {
		opts.AutoWatermarkInterval = 200
	}
	g := plan.Graph
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	coords := map[graph.NodeID]task.Coordinator{}
	defer func() {
		for _, c := range coords {
			c.Close()
		}
	}()
	for _, n := range g.Nodes {
		if c, ok := n.Impl.(task.Coordinated); ok {
			co, err := c.NewCoordinator(n.Parallelism)
			if err != nil {
				return nil, fmt.Errorf("local: starting the coordinator of %s: %w", n.Label(), err)
			}
			coords[n.ID] = co
		}
	}

	// Wire the inboxes: one per (chain, subtask), channels ordered by the
	// head's in-edges, then by upstream subtask.
	type key struct{ chain, subtask int }
	inboxes := map[key]exchange.Inbox{}
	nchans := map[key]int{}
	outputs := map[key]map[*graph.Edge][]exchange.Sender{}
	for _, c := range plan.Chains {
		for s := 0; s < c.Parallelism; s++ {
			outputs[key{c.ID, s}] = map[*graph.Edge][]exchange.Sender{}
		}
	}
	for _, c := range plan.Chains {
		head := c.Nodes[0]
		in := g.InEdges(head)
		for s := 0; s < c.Parallelism; s++ {
			gate := exchange.NewLocalGate(opts.Credits)
			type from struct {
				e       *graph.Edge
				subtask int
				ch      int
			}
			var froms []from
			for _, e := range in {
				up := plan.Chains[plan.ChainOf[e.From]]
				if e.Partitioning == graph.Forward {
					froms = append(froms, from{e, s, gate.AddChannel(e.Input)})
					continue
				}
				for u := 0; u < up.Parallelism; u++ {
					froms = append(froms, from{e, u, gate.AddChannel(e.Input)})
				}
			}
			inbox, chans := gate.Build()
			inboxes[key{c.ID, s}] = inbox
			nchans[key{c.ID, s}] = len(chans)
			for _, f := range froms {
				upKey := key{plan.ChainOf[f.e.From], f.subtask}
				senders := outputs[upKey][f.e]
				if f.e.Partitioning == graph.Forward {
					senders = []exchange.Sender{chans[f.ch]}
				} else {
					if senders == nil {
						senders = make([]exchange.Sender, c.Parallelism)
					}
					senders[s] = chans[f.ch]
				}
				outputs[upKey][f.e] = senders
			}
		}
	}

	var tasks []*task.Task
	var res Result
	for _, c := range plan.Chains {
		for s := 0; s < c.Parallelism; s++ {
			k := key{c.ID, s}
			t, err := task.New(ctx, task.Spec{
				Job: g.Name, Plan: plan, Chain: c, Subtask: s, Mode: opts.Mode,
				Clock: opts.Clock, Log: opts.Log,
				Inbox: inboxes[k], Channels: nchans[k], Outputs: outputs[k],
				Coordinators: coords, BatchSize: opts.BatchSize,
				BufferTimeout: opts.BufferTimeout, AutoWatermarkInterval: opts.AutoWatermarkInterval,
			})
			if err != nil {
				return nil, err
			}
			tasks = append(tasks, t)
			res.Subtasks = append(res.Subtasks, SubtaskMetrics{Vertex: c.Name, Subtask: s, Metrics: t.Metrics()})
		}
	}

	start := time.Now()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for _, t := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := t.Run(); err != nil {
				mu.Lock()
				if firstErr == nil || (errors.Is(firstErr, context.Canceled) && !errors.Is(err, context.Canceled)) {
					firstErr = err
				}
				mu.Unlock()
				cancel()
			}
		}()
	}
	wg.Wait()
	res.Duration = time.Since(start)
	if firstErr != nil {
		if ctx.Err() != nil && errors.Is(firstErr, context.Canceled) && context.Cause(ctx) != nil {
			return &res, firstErr
		}
		return &res, firstErr
	}
	return &res, nil
}
