package typed

import "github.com/sluice/sluice/internal/runtime/task"

// Assigner is the timestamps/watermarks operator: it gives records event
// timestamps with the strategy's assigner and runs one watermark
// generator per subtask, periodically every auto-watermark interval and
// at once for watermarks emitted from OnEvent. Upstream watermarks are
// dropped except the final one. In BATCH mode only timestamps are
// assigned.
func Assigner[T any](strategy WMStrategy[T]) *ProcFactory[T] {
	return NewProcFactory(func(env *Env, out task.Output[T], _ map[string]any) (task.Operator, []any, error) {
		return Single(&assignerOp[T]{env: env, out: out, strategy: strategy})
	})
}

type assignerOp[T any] struct {
	env      *Env
	out      task.Output[T]
	strategy WMStrategy[T]
	mux      *WMMultiplexer[T]
	tr       *WMTracker[T]
	// progressive is set when watermarks are generated (STREAMING mode
	// with a generator).
	progressive bool
	cancel      func()
	ended       bool // the final watermark passed
}

func (a *assignerOp[T]) Open() error {
	a.mux = NewWMMultiplexer(a.strategy)
	a.tr = a.mux.Add("", a.env.Clock.NowMillis())
	a.progressive = !a.env.Batch && a.strategy.GeneratesWatermarks()
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
		wm, adv, idle, idleChanged := a.mux.Periodic(now)
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
	if a.strategy.Assigner != nil {
		ts = a.strategy.Assigner(v, ts)
	}
	if err := a.out.Collect(v, ts); err != nil {
		return err
	}
	if !a.progressive || a.ended {
		return nil
	}
	a.mux.OnEvent(a.tr, v, ts)
	wasIdle := a.tr.Idle
	a.tr.Idle = false // activity ends idleness at once
	if !wasIdle && a.tr.WM <= a.mux.Emitted {
		return nil // the common case: nothing to emit
	}
	// Watermarks the generator emitted from OnEvent (punctuated) go out now.
	wm, adv, idle, idleChanged := a.mux.Combine()
	return a.emit(wm, adv, idle, idleChanged)
}

// ProcessWatermark drops upstream watermarks except the final one.
func (a *assignerOp[T]) ProcessWatermark(wm int64) error {
	if wm != MaxWatermark || a.ended {
		return nil
	}
	a.ended = true
	if a.cancel != nil {
		a.cancel()
		a.cancel = nil
	}
	if a.progressive && a.mux.Idle {
		if err := a.env.EmitIdle(false); err != nil {
			return err
		}
	}
	return a.out.EmitWatermark(MaxWatermark)
}

func (a *assignerOp[T]) Finish() error { return nil }

func (a *assignerOp[T]) Close() error {
	if a.cancel != nil {
		a.cancel()
		a.cancel = nil
	}
	return nil
}
