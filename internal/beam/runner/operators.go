package runner

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"

	"github.com/sluice/sluice/internal/beam/fnapi"
	"github.com/sluice/sluice/internal/beam/translate"
	"github.com/sluice/sluice/internal/beam/trigger"
	"github.com/sluice/sluice/internal/beam/wire"
	"github.com/sluice/sluice/internal/runtime/core"
)

// stage runs its records through an SDK harness in bundles: of
// bundleSize elements, and at each watermark and the end of input.
//
// A stage with side inputs reads them on its second input and holds its
// main input (and the watermark) until they are complete — the end of
// input, the only completeness it knows so far — then serves them to the
// harness's state requests.
type stage struct {
	h       Harness
	sides   *sideInputs
	user    *userState
	timers  *timerStore
	source  string
	sinks   map[string]string // sink transform -> PCollection (side output tag)
	sinkIDs []string
	// residualSinks are the sinks of the descriptor feeding residuals to
	// each transform that takes them.
	residualSinks map[string][]string
	windows       map[string]wire.WindowKind
	bundleSize    int

	buf  []byte
	n    int
	held [][]byte
}

func (s *stage) ProcessElement(ctx *core.Context, input int, r core.Record, _ int64) error {
	if input == 1 {
		if err := s.sides.add(r.Bytes()); err != nil {
			return fmt.Errorf("beam stage %s: %w", ctx.OperatorName(), err)
		}
		return nil
	}
	if s.sides != nil {
		s.held = append(s.held, r.Bytes())
		return nil
	}
	s.buf = append(s.buf, r.Bytes()...)
	s.n++
	if s.n >= s.bundleSize {
		return s.flush(ctx)
	}
	return nil
}

// release sends the held main input in bundles.
func (s *stage) release(ctx *core.Context) error {
	for _, b := range s.held {
		s.buf = append(s.buf, b...)
		s.n++
		if s.n >= s.bundleSize {
			if err := s.flush(ctx); err != nil {
				return err
			}
		}
	}
	s.held = nil
	return s.flush(ctx)
}

func (s *stage) flush(ctx *core.Context) error {
	if s.timers != nil {
		return s.flushTimers(ctx, core.NoWatermark, false)
	}
	return s.bundle(ctx, nil)
}

// flushTimers runs the buffered input, then the timers due at wm (all of
// them when final) — the input before the watermark's timers, as Beam
// orders them — then the timers those bundles set that are due too,
// until none is (at most maxTimerRounds rounds: a timer that keeps
// setting itself at the end of input is an error, not a hang).
func (s *stage) flushTimers(ctx *core.Context, wm int64, final bool) error {
	if s.n > 0 {
		if err := s.timerBundle(ctx, nil); err != nil {
			return err
		}
	}
	for round := 0; ; round++ {
		in, n := s.timers.due(wm, final)
		if n == 0 {
			return nil
		}
		if round == maxTimerRounds {
			return fmt.Errorf("beam stage %s: timers still set themselves after %d rounds of firing at watermark %d", ctx.OperatorName(), round, wm)
		}
		if err := s.timerBundle(ctx, in); err != nil {
			return err
		}
	}
}

const maxTimerRounds = 10000

// timerBundle runs a bundle of the buffered input and the timers in, and
// records the timers it set.
func (s *stage) timerBundle(ctx *core.Context, in map[[2]string][]byte) error {
	t := &fnapi.Timers{Families: s.timers.families(), In: in}
	if err := s.bundle(ctx, t); err != nil {
		return err
	}
	if err := s.timers.set(t.Out); err != nil {
		return fmt.Errorf("beam stage %s: %w", ctx.OperatorName(), err)
	}
	return nil
}

// bundle runs the buffered input (and timers) as one bundle.
func (s *stage) bundle(ctx *core.Context, timers *fnapi.Timers) error {
	if s.n == 0 && timers == nil {
		return nil
	}
	var state fnapi.StateFunc
	switch {
	case s.sides != nil:
		state = s.sides.serve
	case s.user != nil:
		state = s.user.serve
	}
	out, residuals, err := s.h.ProcessBundle(ctx.Task().Ctx(), "", s.source, s.buf, s.sinkIDs, state, timers)
	s.buf, s.n = s.buf[:0], 0
	if err != nil {
		return fmt.Errorf("beam stage %s: %w", ctx.OperatorName(), err)
	}
	if err := s.emit(ctx, out, s.sinkIDs); err != nil {
		return err
	}
	// What the harness checkpointed runs again until nothing is left
	// (no splitting or delays yet: at once, one bundle per transform).
	for len(residuals) > 0 {
		byTransform := map[string][]byte{}
		var order []string
		for _, r := range residuals {
			tid := r.GetApplication().GetTransformId()
			if _, ok := s.residualSinks[tid]; !ok {
				return fmt.Errorf("beam stage %s: the harness returned a residual for transform %s, which takes none", ctx.OperatorName(), tid)
			}
			if _, ok := byTransform[tid]; !ok {
				order = append(order, tid)
			}
			byTransform[tid] = append(byTransform[tid], r.GetApplication().GetElement()...)
		}
		// The harness may ask to be called back later (a deferred
		// splittable DoFn such as PeriodicImpulse): wait the shortest
		// delay asked for, at most a second, on the task's clock.
		if delay := minDelay(residuals); delay > 0 {
			c := ctx.Clock()
			ch, stop := c.AfterMillis(c.NowMillis() + min(delay, 1000))
			select {
			case <-ch:
			case <-ctx.Task().Done():
			}
			stop()
		}
		residuals = nil
		for _, tid := range order {
			out, more, err := s.h.ProcessBundle(ctx.Task().Ctx(), tid, s.source, byTransform[tid], s.residualSinks[tid], state, nil)
			if err != nil {
				return fmt.Errorf("beam stage %s: residuals of %s: %w", ctx.OperatorName(), tid, err)
			}
			if err := s.emit(ctx, out, s.residualSinks[tid]); err != nil {
				return err
			}
			residuals = append(residuals, more...)
		}
	}
	return nil
}

// minDelay is the shortest time delay (ms) the residuals ask for; 0 when
// one asks for none.
func minDelay(rs []*fnpb.DelayedBundleApplication) int64 {
	var d int64 = -1
	for _, r := range rs {
		ms := r.GetRequestedTimeDelay().AsDuration().Milliseconds()
		if d < 0 || ms < d {
			d = ms
		}
	}
	return max(d, 0)
}

// emit splits a bundle's outputs into records for the side outputs.
func (s *stage) emit(ctx *core.Context, out map[string][]byte, sinkIDs []string) error {
	for _, sink := range sinkIDs {
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
	if s.sides != nil {
		if wm < core.MaxWatermark {
			// Held with the main input until the side inputs are complete.
			return nil
		}
		s.sides.complete = true
		if err := s.release(ctx); err != nil {
			return err
		}
	}
	if s.timers != nil {
		if err := s.flushTimers(ctx, wm, wm == core.MaxWatermark); err != nil {
			return err
		}
		return ctx.EmitWatermark(wm)
	}
	if err := s.flush(ctx); err != nil {
		return err
	}
	return ctx.EmitWatermark(wm)
}

func (s *stage) Finish(ctx *core.Context) error {
	if s.timers != nil {
		return s.flushTimers(ctx, core.MaxWatermark, true)
	}
	if s.sides != nil {
		s.sides.complete = true
		return s.release(ctx)
	}
	return s.flush(ctx)
}

// sideInputs holds a stage's side inputs by window: each window's
// elements as the concatenation of their length-prefixed encodings, what
// an iterable side input's state request returns.
type sideInputs struct {
	specs []translate.SideInput
	wires []translate.Wire
	index map[[2]string]int
	data  []map[string][]byte // side input -> window -> elements
	// A multimap side input's values by window and encoded key, and its
	// keys by window (each key's encoding once, concatenated).
	values   []map[string]map[string][]byte
	keys     []map[string][]byte
	complete bool
}

func newSideInputs(specs []translate.SideInput, wires []translate.Wire) *sideInputs {
	si := &sideInputs{specs: specs, wires: wires, index: map[[2]string]int{}, data: make([]map[string][]byte, len(specs)),
		values: make([]map[string]map[string][]byte, len(specs)), keys: make([]map[string][]byte, len(specs))}
	for i, s := range specs {
		si.index[[2]string{s.Transform, s.Tag}] = i
		si.data[i] = map[string][]byte{}
		si.values[i] = map[string]map[string][]byte{}
		si.keys[i] = map[string][]byte{}
	}
	return si
}

func (si *sideInputs) add(b []byte) error {
	i, n := binary.Uvarint(b)
	if n <= 0 || i >= uint64(len(si.specs)) {
		return fmt.Errorf("side input record with bad tag %x", b[:min(len(b), 10)])
	}
	e, err := wire.Record(b[n:], si.wires[i].Window, !si.wires[i].Grouped)
	if err != nil {
		return fmt.Errorf("side input %s: %w", si.specs[i].Tag, err)
	}
	if si.specs[i].Multimap {
		k, v, err := wire.KV(e.Payload)
		if err != nil {
			return fmt.Errorf("side input %s: %w", si.specs[i].Tag, err)
		}
		for _, w := range e.Windows {
			byKey := si.values[i][string(w)]
			if byKey == nil {
				byKey = map[string][]byte{}
				si.values[i][string(w)] = byKey
			}
			if _, ok := byKey[string(k)]; !ok {
				si.keys[i][string(w)] = append(si.keys[i][string(w)], k...)
			}
			byKey[string(k)] = append(byKey[string(k)], v...)
		}
		return nil
	}
	for _, w := range e.Windows {
		d := si.data[i][string(w)]
		if si.specs[i].Unframed || si.wires[i].Grouped {
			// The element coder the harness reads it in (the wire's
			// own) delimits it.
			si.data[i][string(w)] = append(d, e.Payload...)
			continue
		}
		d = binary.AppendUvarint(d, uint64(len(e.Payload)))
		si.data[i][string(w)] = append(d, e.Payload...)
	}
	return nil
}

// serve answers the harness's iterable side input requests. The maps are
// complete and no longer written while bundles run.
func (si *sideInputs) serve(r *fnpb.StateRequest) *fnpb.StateResponse {
	if r.GetGet() == nil {
		return &fnpb.StateResponse{Error: fmt.Sprintf("beam runner: unsupported state request %T on a side input", r.GetRequest())}
	}
	lookup := func(transform, id string) (int, *fnpb.StateResponse) {
		i, ok := si.index[[2]string{transform, id}]
		if !ok {
			return 0, &fnpb.StateResponse{Error: fmt.Sprintf("beam runner: no side input %s of transform %s in this stage", id, transform)}
		}
		return i, nil
	}
	get := func(data []byte) *fnpb.StateResponse {
		return &fnpb.StateResponse{Response: &fnpb.StateResponse_Get{Get: &fnpb.StateGetResponse{Data: data}}}
	}
	switch k := r.GetStateKey().GetType().(type) {
	case *fnpb.StateKey_IterableSideInput_:
		i, bad := lookup(k.IterableSideInput.GetTransformId(), k.IterableSideInput.GetSideInputId())
		if bad != nil {
			return bad
		}
		return get(si.data[i][string(k.IterableSideInput.GetWindow())])
	case *fnpb.StateKey_MultimapSideInput_:
		m := k.MultimapSideInput
		i, bad := lookup(m.GetTransformId(), m.GetSideInputId())
		if bad != nil {
			return bad
		}
		return get(si.values[i][string(m.GetWindow())][string(m.GetKey())])
	case *fnpb.StateKey_MultimapKeysSideInput_:
		m := k.MultimapKeysSideInput
		i, bad := lookup(m.GetTransformId(), m.GetSideInputId())
		if bad != nil {
			return bad
		}
		return get(si.keys[i][string(m.GetWindow())])
	}
	return &fnpb.StateResponse{Error: fmt.Sprintf("beam runner: unsupported side input state key %T", r.GetStateKey().GetType())}
}

// groupByKey groups values by encoded key and window in keyed list state
// (namespace: the window's encoding) and fires each window as its
// trigger says (package trigger; the window's trigger state is keyed
// value state under the same namespace): at least when the watermark
// passes the window's maximum timestamp, and a last time when it passes
// its garbage-collection time (maximum timestamp plus allowed lateness),
// when the window's state is dropped. Elements of windows past their
// garbage-collection time are dropped. Panes carry their PaneInfo and
// the window's maximum timestamp (Beam's END_OF_WINDOW).
//
// With merging (session) windows it keeps each value with its window
// under one namespace, with an event-time timer at each window's maximum
// timestamp; when one fires it merges the key's overlapping windows and
// emits a group per merged window the watermark has passed, keeping the
// rest. An element whose own window the watermark has passed is dropped
// (default trigger, no allowed lateness: translate refuses the rest).
type groupByKey struct {
	window    wire.WindowKind
	merging   bool
	windowing translate.Windowing
	// batch: a bounded pipeline, whose triggers see each window's
	// elements at once when the watermark moves (trigger.Event.Deferred).
	batch    bool
	values   *core.ListState
	triggers *core.ValueState
}

// mergeNS is the namespace of a merging GroupByKey's values.
const mergeNS = "merging"

func (g *groupByKey) Open(ctx *core.Context) error {
	var err error
	if g.values, err = ctx.ListState("values"); err != nil {
		return err
	}
	g.triggers, err = ctx.ValueState("trigger")
	return err
}

// gcTime is the garbage-collection time of a window of maximum timestamp
// maxTs.
func (g *groupByKey) gcTime(maxTs int64) int64 {
	if g.windowing.AllowedLateness > wire.MaxTimestamp-maxTs {
		return wire.MaxTimestamp
	}
	return maxTs + g.windowing.AllowedLateness
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
	wm := ctx.CurrentWatermark()
	if g.merging {
		for _, w := range e.Windows {
			_, end, err := wire.Interval(w)
			if err != nil {
				return fmt.Errorf("beam group-by-key %s: %w", ctx.OperatorName(), err)
			}
			if wm != core.NoWatermark && end-1 <= wm {
				// Expired: its session was emitted (no allowed lateness).
				continue
			}
			entry := binary.AppendUvarint(nil, uint64(len(w)))
			if err := g.values.Add(mergeNS, append(append(entry, w...), v...)); err != nil {
				return err
			}
			if err := ctx.RegisterEventTimer(mergeNS, end-1); err != nil {
				return err
			}
		}
		return nil
	}
	key, _ := ctx.CurrentKey()
	for _, w := range e.Windows {
		maxTs, err := wire.MaxTimestampOf(g.window, w)
		if err != nil {
			return fmt.Errorf("beam group-by-key %s: %w", ctx.OperatorName(), err)
		}
		gc := g.gcTime(maxTs)
		if wm != core.NoWatermark && gc <= wm {
			// Expired: later than the allowed lateness.
			continue
		}
		ns := string(w)
		st, prev, err := g.loadTrigger(ns)
		if err != nil {
			return fmt.Errorf("beam group-by-key %s: window state: %w", ctx.OperatorName(), err)
		}
		found := prev != nil
		next, d := trigger.Step(g.windowing.Trigger, st, trigger.Event{Element: true, EndOfWindow: wm != core.NoWatermark && wm >= maxTs, Deferred: g.batch})
		if !d.Drop {
			if err := g.values.Add(ns, slices.Clone(v)); err != nil {
				return err
			}
		}
		if !found {
			if err := ctx.RegisterEventTimer(ns, maxTs); err != nil {
				return err
			}
			if gc != maxTs {
				if err := ctx.RegisterEventTimer(ns, gc); err != nil {
					return err
				}
			}
		}
		if err := g.apply(ctx, key, ns, maxTs, prev, next, d); err != nil {
			return err
		}
	}
	return nil
}

// loadTrigger reads a window's trigger state and its encoding (nil: the
// window has none).
func (g *groupByKey) loadTrigger(ns string) (trigger.Window, []byte, error) {
	b, ok, err := g.triggers.Get(ns)
	if err != nil || !ok {
		return trigger.Window{}, nil, err
	}
	w, err := trigger.Decode(b)
	return w, b, err
}

// apply carries out a trigger decision for window ns and stores its next
// state (unless it is prev, its stored encoding, unchanged).
func (g *groupByKey) apply(ctx *core.Context, key, ns string, maxTs int64, prev []byte, next trigger.Window, d trigger.Decision) error {
	if d.Emit {
		vs, err := g.values.Get(ns)
		if err != nil {
			return err
		}
		enc := wire.AppendGroupedElement(nil, maxTs, [][]byte{[]byte(ns)}, d.Pane.Encode(nil), []byte(key), vs)
		if err := ctx.Emit(core.BytesRecord(enc), maxTs); err != nil {
			return err
		}
	}
	if d.Clear {
		if err := g.values.Clear(ns); err != nil {
			return err
		}
	}
	if d.Done {
		return g.triggers.Delete(ns)
	}
	enc := next.Encode(nil)
	if prev != nil && string(enc) == string(prev) {
		return nil
	}
	return g.triggers.Put(ns, enc)
}

func (g *groupByKey) OnTimer(ctx *core.Context, t core.Timer) error {
	if g.merging {
		vs, err := g.values.Get(t.Namespace)
		if err != nil || len(vs) == 0 {
			return err
		}
		rest, err := g.emitMerged(ctx, t.Key, vs, max(ctx.CurrentWatermark(), t.Time))
		if err != nil {
			return fmt.Errorf("beam group-by-key %s: %w", ctx.OperatorName(), err)
		}
		if len(rest) == len(vs) {
			return nil
		}
		return g.values.Update(t.Namespace, rest)
	}
	st, prev, err := g.loadTrigger(t.Namespace)
	if err != nil {
		return fmt.Errorf("beam group-by-key %s: window state: %w", ctx.OperatorName(), err)
	}
	if prev == nil {
		return nil // garbage-collected already
	}
	maxTs, err := wire.MaxTimestampOf(g.window, []byte(t.Namespace))
	if err != nil {
		return fmt.Errorf("beam group-by-key %s: %w", ctx.OperatorName(), err)
	}
	wm := max(ctx.CurrentWatermark(), t.Time)
	next, d := trigger.Step(g.windowing.Trigger, st, trigger.Event{EndOfWindow: wm >= maxTs, Expired: wm >= g.gcTime(maxTs)})
	return g.apply(ctx, t.Key, t.Namespace, maxTs, prev, next, d)
}

// userState keeps a stateful stage's user state, by state key (the
// transform, state ID, window and key the harness names): bags (also what
// the SDKs build combining and read-modify-write state from) and
// multimaps (the Go SDK's map and set state: values by map key, the map
// keys in the order they were first written). It lives in the subtask's
// memory only: not yet in checkpoints. The subtask's input is partitioned
// by key, so a key's state is always here.
type userState struct {
	mu    sync.Mutex
	bags  map[string][]byte
	multi map[string]*multimap
}

type multimap struct {
	keys   []string // encoded map keys, first written first
	values map[string][]byte
}

func newUserState() *userState {
	return &userState{bags: map[string][]byte{}, multi: map[string]*multimap{}}
}

func stateKey(parts ...[]byte) string {
	var b []byte
	for _, part := range parts {
		b = binary.AppendUvarint(b, uint64(len(part)))
		b = append(b, part...)
	}
	return string(b)
}

func getResponse(data []byte) *fnpb.StateResponse {
	return &fnpb.StateResponse{Response: &fnpb.StateResponse_Get{Get: &fnpb.StateGetResponse{Data: data}}}
}

var (
	appendResponse = &fnpb.StateResponse{Response: &fnpb.StateResponse_Append{Append: &fnpb.StateAppendResponse{}}}
	clearResponse  = &fnpb.StateResponse{Response: &fnpb.StateResponse_Clear{Clear: &fnpb.StateClearResponse{}}}
)

func (u *userState) serve(r *fnpb.StateRequest) *fnpb.StateResponse {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch k := r.GetStateKey().GetType().(type) {
	case *fnpb.StateKey_BagUserState_:
		b := k.BagUserState
		return u.serveBagLocked(r, stateKey([]byte(b.GetTransformId()), []byte(b.GetUserStateId()), b.GetWindow(), b.GetKey()))
	case *fnpb.StateKey_MultimapUserState_:
		m := k.MultimapUserState
		return u.serveMultimapLocked(r, stateKey([]byte(m.GetTransformId()), []byte(m.GetUserStateId()), m.GetWindow(), m.GetKey()), m.GetMapKey())
	case *fnpb.StateKey_MultimapKeysUserState_:
		m := k.MultimapKeysUserState
		return u.serveMultimapKeysLocked(r, stateKey([]byte(m.GetTransformId()), []byte(m.GetUserStateId()), m.GetWindow(), m.GetKey()))
	}
	return &fnpb.StateResponse{Error: fmt.Sprintf("beam runner: unsupported state key %T (bag and multimap user state only)", r.GetStateKey().GetType())}
}

// REQUIRES: u.mu held.
func (u *userState) serveBagLocked(r *fnpb.StateRequest, k string) *fnpb.StateResponse {
	switch req := r.GetRequest().(type) {
	case *fnpb.StateRequest_Get:
		return getResponse(slices.Clone(u.bags[k]))
	case *fnpb.StateRequest_Append:
		u.bags[k] = append(u.bags[k], req.Append.GetData()...)
		return appendResponse
	case *fnpb.StateRequest_Clear:
		delete(u.bags, k)
		return clearResponse
	}
	return &fnpb.StateResponse{Error: fmt.Sprintf("beam runner: unsupported bag state request %T", r.GetRequest())}
}

// REQUIRES: u.mu held.
func (u *userState) serveMultimapLocked(r *fnpb.StateRequest, k string, mapKey []byte) *fnpb.StateResponse {
	m := u.multi[k]
	switch req := r.GetRequest().(type) {
	case *fnpb.StateRequest_Get:
		if m == nil {
			return getResponse(nil)
		}
		return getResponse(slices.Clone(m.values[string(mapKey)]))
	case *fnpb.StateRequest_Append:
		if m == nil {
			m = &multimap{values: map[string][]byte{}}
			u.multi[k] = m
		}
		if _, ok := m.values[string(mapKey)]; !ok {
			m.keys = append(m.keys, string(mapKey))
		}
		m.values[string(mapKey)] = append(m.values[string(mapKey)], req.Append.GetData()...)
		return appendResponse
	case *fnpb.StateRequest_Clear:
		if m != nil {
			if _, ok := m.values[string(mapKey)]; ok {
				delete(m.values, string(mapKey))
				m.keys = slices.DeleteFunc(m.keys, func(s string) bool { return s == string(mapKey) })
			}
		}
		return clearResponse
	}
	return &fnpb.StateResponse{Error: fmt.Sprintf("beam runner: unsupported multimap state request %T", r.GetRequest())}
}

// REQUIRES: u.mu held.
func (u *userState) serveMultimapKeysLocked(r *fnpb.StateRequest, k string) *fnpb.StateResponse {
	switch r.GetRequest().(type) {
	case *fnpb.StateRequest_Get:
		var keys []byte
		if m := u.multi[k]; m != nil {
			for _, mk := range m.keys {
				keys = append(keys, mk...)
			}
		}
		return getResponse(keys)
	case *fnpb.StateRequest_Clear:
		delete(u.multi, k)
		return clearResponse
	}
	return &fnpb.StateResponse{Error: fmt.Sprintf("beam runner: unsupported multimap keys state request %T", r.GetRequest())}
}

// emitMerged merges a key's interval windows where they overlap, emits
// one group per merged window the watermark wm has passed (at its
// maximum timestamp), and returns the entries of the others.
func (g *groupByKey) emitMerged(ctx *core.Context, key string, entries [][]byte, wm int64) ([][]byte, error) {
	type item struct {
		start, end int64
		value      []byte
		entry      []byte
	}
	items := make([]item, 0, len(entries))
	for _, e := range entries {
		n, k := binary.Uvarint(e)
		if k <= 0 || uint64(len(e)-k) < n {
			return nil, fmt.Errorf("%w: merging entry", wire.ErrCorrupt)
		}
		start, end, err := wire.Interval(e[k : k+int(n)])
		if err != nil {
			return nil, err
		}
		items = append(items, item{start, end, e[k+int(n):], e})
	}
	slices.SortStableFunc(items, func(a, b item) int { return cmp.Compare(a.start, b.start) })
	var rest [][]byte
	for i := 0; i < len(items); {
		start, end := items[i].start, items[i].end
		j := i
		var values [][]byte
		for ; j < len(items) && items[j].start < end; j++ {
			end = max(end, items[j].end)
			values = append(values, items[j].value)
		}
		if end-1 > wm {
			for _, it := range items[i:j] {
				rest = append(rest, it.entry)
			}
			i = j
			continue
		}
		w := wire.AppendInterval(nil, start, end)
		enc := wire.AppendGroupedElement(nil, end-1, [][]byte{w}, wire.PaneOnTime, []byte(key), values)
		if err := ctx.Emit(core.BytesRecord(enc), end-1); err != nil {
			return nil, err
		}
		i = j
	}
	return rest, nil
}

// timerStore keeps a stateful stage's timers, the latest setting of each
// (family, key, tag, windows), in the subtask's memory (not yet in
// checkpoints). Event-time timers fire when the watermark reaches them,
// processing-time ones at the end of input.
type timerStore struct {
	specs []translate.TimerFamily
	index map[[2]string]int
	byID  map[string]storedTimer
}

type storedTimer struct {
	family int
	fire   int64
	enc    []byte
}

func newTimerStore(specs []translate.TimerFamily) *timerStore {
	ts := &timerStore{specs: specs, index: map[[2]string]int{}, byID: map[string]storedTimer{}}
	for i, s := range specs {
		ts.index[[2]string{s.Transform, s.Family}] = i
	}
	return ts
}

func (ts *timerStore) families() [][2]string {
	out := make([][2]string, len(ts.specs))
	for i, s := range ts.specs {
		out[i] = [2]string{s.Transform, s.Family}
	}
	return out
}

// due removes and returns the timers due at wm (all when final), in
// firing order, by family, and how many there are.
func (ts *timerStore) due(wm int64, final bool) (map[[2]string][]byte, int) {
	var ids []string
	for id, t := range ts.byID {
		if final || (ts.specs[t.family].EventTime && t.fire <= wm) {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int {
		if c := cmp.Compare(ts.byID[a].fire, ts.byID[b].fire); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	in := map[[2]string][]byte{}
	for _, id := range ids {
		t := ts.byID[id]
		tf := [2]string{ts.specs[t.family].Transform, ts.specs[t.family].Family}
		in[tf] = append(in[tf], t.enc...)
		delete(ts.byID, id)
	}
	return in, len(ids)
}

// set records the timers a bundle set or cleared.
func (ts *timerStore) set(out map[[2]string][]byte) error {
	for tf, data := range out {
		f, ok := ts.index[tf]
		if !ok {
			return fmt.Errorf("timers of an unknown family %s/%s", tf[0], tf[1])
		}
		for len(data) > 0 {
			t, rest, err := wire.NextTimer(data, ts.specs[f].Window)
			if err != nil {
				return fmt.Errorf("timer family %s: %w", tf[1], err)
			}
			id := binary.AppendUvarint(nil, uint64(f))
			id = append(id, t.Key...)
			id = binary.AppendUvarint(id, uint64(len(t.Tag)))
			id = append(id, t.Tag...)
			for _, w := range t.Windows {
				id = append(id, w...)
			}
			if t.Clear {
				delete(ts.byID, string(id))
			} else {
				ts.byID[string(id)] = storedTimer{family: f, fire: t.Fire, enc: slices.Clone(data[:len(data)-len(rest)])}
			}
			data = rest
		}
	}
	return nil
}
