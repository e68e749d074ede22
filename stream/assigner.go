package stream

import (
	"github.com/sluice/sluice/internal/runtime/task"
	"github.com/sluice/sluice/internal/typed"
)

// AssignTimestampsAndWatermarks gives the records of in event timestamps
// (with the strategy's timestamp assigner, if any) and generates watermarks
// from them after the source, for streams whose timestamps are only known
// after some processing. Each subtask runs one watermark generator; its
// periodic emission runs every pipeline.auto-watermark-interval of
// processing time (WithAutoWatermarkInterval), and watermarks a generator
// emits from OnEvent go out at once. Watermarks from upstream are dropped,
// except the final one that ends event time, as in Flink. WithIdleness
// marks the subtask's output idle after that much processing time without
// records.
//
// As in Flink, the operator takes its input's parallelism (not the
// environment's default) and chains to it, so each watermark generator sees
// exactly one upstream subtask's records in their order. SetParallelism on
// the result changes that, and records are then redistributed.
//
// In BATCH mode only timestamps are assigned: event time ends with the
// final watermark at the end of the input.
func AssignTimestampsAndWatermarks[T any](in DataStream[T], strategy WatermarkStrategy[T]) DataStream[T] {
	out := procOneInput(in, "timestamps-watermarks", "Timestamps/Watermarks", typed.NewProcFactory(func(env *procEnv, out task.Output[T], _ map[string]any) (task.Operator, []any, error) {
		op := &assignerOp[T]{env: env, out: out, strategy: strategy}
		return op, []any{op}, nil
	}))
	out.node.AssignsWatermarks = strategy.generatesWatermarks()
	out.node.Parallelism = in.node.Parallelism
	return out
}

type assignerOp[T any] struct {
	env      *procEnv
	out      task.Output[T]
	strategy WatermarkStrategy[T]
	mux      *wmMultiplexer[T]
	tr       *wmTracker[T]
	// progressive is set when watermarks are generated (STREAMING mode
	// with a generator).
	progressive bool
	cancel      func()
	ended       bool // the final watermark passed
}

func (a *assignerOp[T]) Open() error {
	a.mux = newWMMultiplexer(a.strategy)
	a.tr = a.mux.add("", a.env.Clock.NowMillis())
	a.progressive = !a.env.Batch && a.strategy.generatesWatermarks()
	if a.progressive {
		a.schedule()
	}
	return nil
}

func (a *assignerOp[T]) schedule() {
	interval := a.env.AutoWatermark
	if interval <= 0 {
		interval = 200
	}
	a.cancel = a.env.Schedule(a.env.Clock.NowMillis()+interval, func(now int64) error {
		a.cancel = nil
		if a.ended {
			return nil
		}
		wm, adv, idle, idleChanged := a.mux.periodic(now)
		if err := a.emit(wm, adv, idle, idleChanged); err != nil {
			return err
		}
		a.schedule()
		return nil
	})
}

// emit forwards a combined watermark and idleness change: idleness goes
// out before the watermark that follows activity, as for sources.
func (a *assignerOp[T]) emit(wm int64, adv, idle, idleChanged bool) error {
	if idleChanged && idle {
		if err := a.env.EmitIdle(true); err != nil {
			return err
		}
	}
	if idleChanged && !idle {
		if err := a.env.EmitIdle(false); err != nil {
			return err
		}
	}
	if adv {
		return a.out.EmitWatermark(wm)
	}
	return nil
}

func (a *assignerOp[T]) ProcessElement(v T, ts int64) error {
	if a.strategy.assigner != nil {
		ts = int64(a.strategy.assigner(v, Timestamp(ts)))
	}
	if err := a.out.Collect(v, ts); err != nil {
		return err
	}
	if !a.progressive || a.ended {
		return nil
	}
	a.mux.onEvent(a.tr, v, ts)
	wasIdle := a.tr.idle
	a.tr.idle = false // activity ends idleness at once
	if !wasIdle && a.tr.wm <= a.mux.emitted {
		return nil // the common case: nothing to emit
	}
	// Watermarks the generator emitted from OnEvent (punctuated) go out now.
	wm, adv, idle, idleChanged := a.mux.combine()
	return a.emit(wm, adv, idle, idleChanged)
}

// ProcessWatermark drops upstream watermarks except the final one.
func (a *assignerOp[T]) ProcessWatermark(wm int64) error {
	if wm != maxWatermark || a.ended {
		return nil
	}
	a.ended = true
	if a.cancel != nil {
		a.cancel()
		a.cancel = nil
	}
	if a.progressive && a.mux.idle {
		if err := a.env.EmitIdle(false); err != nil {
			return err
		}
	}
	return a.out.EmitWatermark(maxWatermark)
}

func (a *assignerOp[T]) Finish() error { return nil }

func (a *assignerOp[T]) Close() error {
	if a.cancel != nil {
		a.cancel()
		a.cancel = nil
	}
	return nil
}
