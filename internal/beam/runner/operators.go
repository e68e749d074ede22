package runner

import (
	"fmt"
	"slices"

	"github.com/sluice/sluice/internal/beam/wire"
	"github.com/sluice/sluice/internal/runtime/core"
)

// stage runs its records through an SDK harness in bundles: of
// bundleSize elements, and at each watermark and the end of input.
type stage struct {
	h          Harness
	source     string
	sinks      map[string]string // sink transform -> PCollection (side output tag)
	sinkIDs    []string
	windows    map[string]wire.WindowKind
	bundleSize int

	buf []byte
	n   int
}

func (s *stage) ProcessElement(ctx *core.Context, _ int, r core.Record, _ int64) error {
	s.buf = append(s.buf, r.Bytes()...)
	s.n++
	if s.n >= s.bundleSize {
		return s.flush(ctx)
	}
	return nil
}

func (s *stage) flush(ctx *core.Context) error {
	if s.n == 0 {
		return nil
	}
	out, err := s.h.ProcessBundle(ctx.Task().Ctx(), s.source, s.buf, s.sinkIDs)
	s.buf, s.n = s.buf[:0], 0
	if err != nil {
		return fmt.Errorf("beam stage %s: %w", ctx.OperatorName(), err)
	}
	for _, sink := range s.sinkIDs {
		pc := s.sinks[sink]
		err := wire.Split(out[sink], s.windows[pc], func(enc []byte, e wire.Element) error {
			return ctx.EmitSide(pc, core.BytesRecord(enc), e.Timestamp)
		})
		if err != nil {
			return fmt.Errorf("beam stage %s: output %s: %w", ctx.OperatorName(), pc, err)
		}
	}
	return nil
}

func (s *stage) ProcessWatermark(ctx *core.Context, wm int64) error {
	if err := s.flush(ctx); err != nil {
		return err
	}
	return ctx.EmitWatermark(wm)
}

func (s *stage) Finish(ctx *core.Context) error { return s.flush(ctx) }

// groupByKey groups values by encoded key and window in keyed list state
// (namespace: the window's encoding) and emits each group when the
// watermark passes the window's maximum timestamp.
type groupByKey struct {
	window wire.WindowKind
	values *core.ListState
}

func (g *groupByKey) Open(ctx *core.Context) error {
	var err error
	g.values, err = ctx.ListState("values")
	return err
}

func (g *groupByKey) ProcessElement(ctx *core.Context, _ int, r core.Record, _ int64) error {
	e, _, err := wire.Next(r.Bytes(), g.window)
	if err != nil {
		return fmt.Errorf("beam group-by-key %s: %w", ctx.OperatorName(), err)
	}
	_, v, err := wire.KV(e.Payload)
	if err != nil {
		return fmt.Errorf("beam group-by-key %s: %w", ctx.OperatorName(), err)
	}
	for _, w := range e.Windows {
		maxTs, err := wire.MaxTimestampOf(g.window, w)
		if err != nil {
			return fmt.Errorf("beam group-by-key %s: %w", ctx.OperatorName(), err)
		}
		if maxTs <= ctx.CurrentWatermark() && ctx.CurrentWatermark() != core.NoWatermark {
			// Late: the window was emitted (no allowed lateness yet).
			continue
		}
		ns := string(w)
		if err := g.values.Add(ns, slices.Clone(v)); err != nil {
			return err
		}
		if err := ctx.RegisterEventTimer(ns, maxTs); err != nil {
			return err
		}
	}
	return nil
}

func (g *groupByKey) OnTimer(ctx *core.Context, t core.Timer) error {
	vs, err := g.values.Get(t.Namespace)
	if err != nil || len(vs) == 0 {
		return err
	}
	payload := wire.AppendGrouped(nil, []byte(t.Key), vs)
	enc := wire.AppendElement(nil, t.Time, [][]byte{[]byte(t.Namespace)}, wire.PaneOnTime, payload)
	if err := ctx.Emit(core.BytesRecord(enc), t.Time); err != nil {
		return err
	}
	return g.values.Clear(t.Namespace)
}
