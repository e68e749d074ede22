// Package trigger is the Beam trigger state machine of the runner's
// GroupByKey: a pure function of a window's state and an event (an
// element arrived, the watermark reached the end of the window or its
// garbage-collection time) to the window's next state and whether to emit
// a pane, with its PaneInfo. It does no I/O and reads no clock: the
// runner keeps the state it returns in Sluice keyed state (so checkpoints
// carry it) and applies the decisions.
//
// The semantics follow Beam's model (the Java and Python SDKs' trigger
// state machines): a trigger tree of Default, AfterEndOfWindow with early
// and late firings (each implicitly repeated, as both SDKs wrap them),
// AfterCount, Repeatedly, AfterEach, AfterAny, AfterAll, OrFinally,
// Never and Always; a pane is emitted when the trigger fires and elements
// arrived since the last pane (or, on time, always under FIRE_ALWAYS); at
// garbage-collection time a final pane takes what is left.
// Processing-time triggers are not supported (FromProto refuses them).
package trigger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// Kind is a trigger node's kind.
type Kind int

// Trigger kinds.
const (
	Default Kind = iota
	Never
	Always
	AfterCount
	AfterEndOfWindow
	Repeatedly
	AfterEach
	AfterAny
	AfterAll
	OrFinally
)

// Spec is a trigger tree.
type Spec struct {
	Kind Kind
	// Count is AfterCount's element count.
	Count int64
	// Early and Late are AfterEndOfWindow's firings before and after the
	// end of the window (nil: none), each a Repeatedly.
	Early, Late *Spec
	// Subs are Repeatedly's one trigger, AfterEach's, AfterAny's and
	// AfterAll's triggers, OrFinally's main trigger and its until.
	Subs []*Spec
}

func (s *Spec) String() string {
	var b strings.Builder
	s.format(&b)
	return b.String()
}

func (s *Spec) format(b *strings.Builder) {
	name := [...]string{"Default", "Never", "Always", "AfterCount", "AfterEndOfWindow", "Repeatedly", "AfterEach", "AfterAny", "AfterAll", "OrFinally"}[s.Kind]
	b.WriteString(name)
	switch s.Kind {
	case AfterCount:
		fmt.Fprintf(b, "(%d)", s.Count)
	case AfterEndOfWindow:
		if s.Early == nil && s.Late == nil {
			return
		}
		b.WriteString("(")
		if s.Early != nil {
			b.WriteString("early=")
			s.Early.format(b)
		}
		if s.Late != nil {
			if s.Early != nil {
				b.WriteString(", ")
			}
			b.WriteString("late=")
			s.Late.format(b)
		}
		b.WriteString(")")
	case Repeatedly, AfterEach, AfterAny, AfterAll, OrFinally:
		b.WriteString("(")
		for i, sub := range s.Subs {
			if i > 0 {
				b.WriteString(", ")
			}
			sub.format(b)
		}
		b.WriteString(")")
	}
}

// UnsupportedError is a trigger the runner cannot run.
type UnsupportedError struct {
	// Trigger names the unsupported (sub)trigger.
	Trigger string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("beam trigger: %s is not supported yet", e.Trigger)
}

// FromProto converts a windowing strategy's trigger (nil: the default).
func FromProto(t *pipepb.Trigger) (*Spec, error) {
	if t == nil {
		return &Spec{Kind: Default}, nil
	}
	subs := func(ts []*pipepb.Trigger) ([]*Spec, error) {
		out := make([]*Spec, 0, len(ts))
		for _, sub := range ts {
			s, err := FromProto(sub)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		if len(out) == 0 {
			return nil, &UnsupportedError{Trigger: "a composite trigger without subtriggers"}
		}
		return out, nil
	}
	repeated := func(sub *pipepb.Trigger) (*Spec, error) {
		if sub == nil {
			return nil, nil
		}
		s, err := FromProto(sub)
		if err != nil || s.Kind == Repeatedly {
			return s, err
		}
		return &Spec{Kind: Repeatedly, Subs: []*Spec{s}}, nil
	}
	switch k := t.GetTrigger().(type) {
	case *pipepb.Trigger_Default_:
		return &Spec{Kind: Default}, nil
	case *pipepb.Trigger_Never_:
		return &Spec{Kind: Never}, nil
	case *pipepb.Trigger_Always_:
		return &Spec{Kind: Always}, nil
	case *pipepb.Trigger_ElementCount_:
		n := k.ElementCount.GetElementCount()
		if n < 1 {
			n = 1
		}
		return &Spec{Kind: AfterCount, Count: int64(n)}, nil
	case *pipepb.Trigger_AfterEndOfWindow_:
		early, err := repeated(k.AfterEndOfWindow.GetEarlyFirings())
		if err != nil {
			return nil, err
		}
		late, err := repeated(k.AfterEndOfWindow.GetLateFirings())
		if err != nil {
			return nil, err
		}
		return &Spec{Kind: AfterEndOfWindow, Early: early, Late: late}, nil
	case *pipepb.Trigger_Repeat_:
		s, err := FromProto(k.Repeat.GetSubtrigger())
		if err != nil {
			return nil, err
		}
		return &Spec{Kind: Repeatedly, Subs: []*Spec{s}}, nil
	case *pipepb.Trigger_AfterEach_:
		ss, err := subs(k.AfterEach.GetSubtriggers())
		return &Spec{Kind: AfterEach, Subs: ss}, err
	case *pipepb.Trigger_AfterAny_:
		ss, err := subs(k.AfterAny.GetSubtriggers())
		return &Spec{Kind: AfterAny, Subs: ss}, err
	case *pipepb.Trigger_AfterAll_:
		ss, err := subs(k.AfterAll.GetSubtriggers())
		return &Spec{Kind: AfterAll, Subs: ss}, err
	case *pipepb.Trigger_OrFinally_:
		ss, err := subs([]*pipepb.Trigger{k.OrFinally.GetMain(), k.OrFinally.GetFinally()})
		return &Spec{Kind: OrFinally, Subs: ss}, err
	case *pipepb.Trigger_AfterProcessingTime_:
		return nil, &UnsupportedError{Trigger: "AfterProcessingTime (processing-time triggers)"}
	case *pipepb.Trigger_AfterSynchronizedProcessingTime_:
		return nil, &UnsupportedError{Trigger: "AfterSynchronizedProcessingTime (processing-time triggers)"}
	}
	return nil, &UnsupportedError{Trigger: fmt.Sprintf("trigger %T", t.GetTrigger())}
}

// Mode is the accumulation mode.
type Mode int

// Accumulation modes.
const (
	// Discarding: a pane holds the elements since the last pane.
	Discarding Mode = iota
	// Accumulating: a pane holds every element of the window so far.
	Accumulating
)

// Options are a windowing strategy's trigger settings.
type Options struct {
	Trigger *Spec
	Mode    Mode
	// FireAlwaysOnTime: emit the on-time pane even when no element
	// arrived since the last pane (OnTimeBehavior FIRE_ALWAYS).
	FireAlwaysOnTime bool
}

// Timing is a pane's timing.
type Timing int

// Pane timings, numbered as Beam's PaneInfo encodes them.
const (
	Early Timing = iota
	OnTime
	Late
)

func (t Timing) String() string { return [...]string{"EARLY", "ON_TIME", "LATE"}[t] }

// Pane is a pane's PaneInfo.
type Pane struct {
	First, Last bool
	Timing      Timing
	Index       int64
	// NonSpeculative is the index among ON_TIME and LATE panes; -1 for
	// an EARLY pane.
	NonSpeculative int64
}

// Encode appends Beam's encoding of the pane (as in a windowed value).
func (p Pane) Encode(dst []byte) []byte {
	b := byte(p.Timing) << 2
	if p.First {
		b |= 1
	}
	if p.Last {
		b |= 2
	}
	switch {
	case p.Index == 0 && p.NonSpeculative == 0:
		return append(dst, b)
	case p.Index == p.NonSpeculative || p.Timing == Early:
		return binary.AppendUvarint(append(dst, b|0x10), uint64(p.Index))
	}
	dst = binary.AppendUvarint(append(dst, b|0x20), uint64(p.Index))
	return binary.AppendUvarint(dst, uint64(p.NonSpeculative))
}

func (p Pane) String() string {
	return fmt.Sprintf("pane{first=%t last=%t %s index=%d nonspec=%d}", p.First, p.Last, p.Timing, p.Index, p.NonSpeculative)
}

// node is the state of one trigger node (in preorder).
type node struct {
	finished bool
	// fired: AfterEndOfWindow fired its on-time pane.
	fired bool
	count int64
}

// Window is the trigger state of one key's window.
type Window struct {
	nodes []node
	// closed: the trigger finished; later elements are dropped.
	closed bool
	// pending: elements arrived since the last pane.
	pending bool
	// panes and nonSpec count the panes emitted, all and ON_TIME/LATE.
	panes, nonSpec int64
}

// Closed reports whether the window's trigger finished (its later
// elements are dropped until it is garbage-collected).
func (w Window) Closed() bool { return w.closed }

// Event is what happened to a window.
type Event struct {
	// Element: an element arrived (otherwise the watermark moved).
	Element bool
	// Deferred: the element is one of a batch the trigger sees at once
	// (a bounded pipeline: Beam evaluates triggers per bundle, and the
	// runner's bounded input is all there before the watermark moves):
	// it is counted, and the trigger evaluated at the next watermark
	// event.
	Deferred bool
	// EndOfWindow: the input watermark has reached the window's maximum
	// timestamp.
	EndOfWindow bool
	// Expired: the input watermark has reached the window's garbage
	// collection time (maximum timestamp plus allowed lateness): its
	// last pane.
	Expired bool
}

// Decision is what the runner does for an event.
type Decision struct {
	// Drop: the element is not added (the window is closed).
	Drop bool
	// Emit: emit a pane of the buffered elements, with Pane.
	Emit bool
	Pane Pane
	// Clear: clear the buffered elements after emitting (discarding
	// mode, or the window is done).
	Clear bool
	// Done: the window is garbage-collected: drop all its state.
	Done bool
}

// Step is the state machine: the window's next state and the decision
// for ev. An element's window must not be expired (the runner drops
// elements behind the garbage-collection time before).
func Step(o Options, w Window, ev Event) (Window, Decision) {
	w.nodes = append([]node(nil), w.nodes...)
	if len(w.nodes) == 0 {
		w.nodes = make([]node, size(o.Trigger))
	}
	m := machine{nodes: w.nodes}
	if ev.Element {
		if w.closed {
			return w, Decision{Drop: true}
		}
		w.pending = true
		m.onElement(o.Trigger, 0, ev.EndOfWindow)
		if ev.Deferred {
			return w, Decision{}
		}
	}
	if w.closed {
		// Closed before its garbage-collection time: nothing to emit.
		return w, Decision{Done: ev.Expired, Clear: ev.Expired}
	}
	fire := m.shouldFire(o.Trigger, 0, ev.EndOfWindow)
	if !fire && !ev.Expired {
		return w, Decision{}
	}
	var finished bool
	if fire {
		finished = m.onFire(o.Trigger, 0, ev.EndOfWindow)
	}
	finished = finished || ev.Expired
	timing := Early
	switch {
	case !ev.EndOfWindow:
	case w.nonSpec == 0:
		timing = OnTime
	default:
		timing = Late
	}
	d := Decision{Clear: o.Mode == Discarding || finished, Done: ev.Expired}
	if w.pending || (timing == OnTime && o.FireAlwaysOnTime) {
		d.Emit = true
		d.Pane = Pane{First: w.panes == 0, Last: finished, Timing: timing, Index: w.panes, NonSpeculative: -1}
		if timing != Early {
			d.Pane.NonSpeculative = w.nonSpec
			w.nonSpec++
		}
		w.panes++
	}
	w.pending = false
	w.closed = finished
	return w, d
}

// size is the number of nodes of s's tree.
func size(s *Spec) int {
	n := 1
	if s.Early != nil {
		n += size(s.Early)
	}
	if s.Late != nil {
		n += size(s.Late)
	}
	for _, sub := range s.Subs {
		n += size(sub)
	}
	return n
}

// machine evaluates a trigger tree over its nodes' states, in preorder:
// a node at i, then its Early, Late and Subs subtrees.
type machine struct{ nodes []node }

// children returns the indices of s's children, where s is at i.
func children(s *Spec, i int) (early, late int, subs []int) {
	next := i + 1
	early, late = -1, -1
	if s.Early != nil {
		early = next
		next += size(s.Early)
	}
	if s.Late != nil {
		late = next
		next += size(s.Late)
	}
	for _, sub := range s.Subs {
		subs = append(subs, next)
		next += size(sub)
	}
	return early, late, subs
}

func (m machine) reset(s *Spec, i int) {
	clear(m.nodes[i : i+size(s)])
}

func (m machine) onElement(s *Spec, i int, eow bool) {
	if m.nodes[i].finished {
		return
	}
	early, late, subs := children(s, i)
	switch s.Kind {
	case AfterCount:
		m.nodes[i].count++
	case AfterEndOfWindow:
		if !m.nodes[i].fired && early >= 0 {
			m.onElement(s.Early, early, eow)
		} else if m.nodes[i].fired && late >= 0 {
			m.onElement(s.Late, late, eow)
		}
	case AfterEach:
		for j, sub := range s.Subs {
			if !m.nodes[subs[j]].finished {
				m.onElement(sub, subs[j], eow)
				break
			}
		}
	case Repeatedly, AfterAny, AfterAll, OrFinally:
		for j, sub := range s.Subs {
			m.onElement(sub, subs[j], eow)
		}
	}
}

func (m machine) shouldFire(s *Spec, i int, eow bool) bool {
	if m.nodes[i].finished {
		return false
	}
	early, late, subs := children(s, i)
	switch s.Kind {
	case Default:
		return eow
	case Never:
		return false
	case Always:
		return true
	case AfterCount:
		return m.nodes[i].count >= s.Count
	case AfterEndOfWindow:
		if !m.nodes[i].fired {
			return eow || (early >= 0 && m.shouldFire(s.Early, early, eow))
		}
		return late >= 0 && m.shouldFire(s.Late, late, eow)
	case Repeatedly:
		return m.shouldFire(s.Subs[0], subs[0], eow)
	case AfterEach:
		for j, sub := range s.Subs {
			if !m.nodes[subs[j]].finished {
				return m.shouldFire(sub, subs[j], eow)
			}
		}
		return false
	case AfterAny, OrFinally:
		for j, sub := range s.Subs {
			if m.shouldFire(sub, subs[j], eow) {
				return true
			}
		}
		return false
	case AfterAll:
		for j, sub := range s.Subs {
			if !m.nodes[subs[j]].finished && !m.shouldFire(sub, subs[j], eow) {
				return false
			}
		}
		return true
	}
	return false
}

// onFire fires s (whose shouldFire holds) and reports whether it
// finished.
func (m machine) onFire(s *Spec, i int, eow bool) bool {
	early, late, subs := children(s, i)
	finished := false
	switch s.Kind {
	case Default, Always, Never:
	case AfterCount:
		finished = true
	case AfterEndOfWindow:
		switch {
		case !m.nodes[i].fired && eow:
			m.nodes[i].fired = true
			finished = late < 0
		case !m.nodes[i].fired:
			m.onFire(s.Early, early, eow)
		default:
			m.onFire(s.Late, late, eow)
		}
	case Repeatedly:
		if m.onFire(s.Subs[0], subs[0], eow) {
			m.reset(s.Subs[0], subs[0])
		}
	case AfterEach:
		for j, sub := range s.Subs {
			if !m.nodes[subs[j]].finished {
				m.nodes[subs[j]].finished = m.onFire(sub, subs[j], eow)
				break
			}
		}
		finished = true
		for _, j := range subs {
			finished = finished && m.nodes[j].finished
		}
	case AfterAny, AfterAll:
		for j, sub := range s.Subs {
			if m.shouldFire(sub, subs[j], eow) {
				m.nodes[subs[j]].finished = m.onFire(sub, subs[j], eow)
			}
		}
		finished = true
	case OrFinally:
		if m.shouldFire(s.Subs[1], subs[1], eow) {
			finished = true
			break
		}
		finished = m.onFire(s.Subs[0], subs[0], eow)
	}
	if finished {
		m.nodes[i].finished = true
	}
	return finished
}

// ErrCorrupt is wrapped by the errors of decoding a malformed state.
var ErrCorrupt = errors.New("beam trigger: corrupt window state")

// Encode appends w's encoding (what the runner keeps in keyed state).
func (w Window) Encode(dst []byte) []byte {
	var flags byte
	if w.closed {
		flags |= 1
	}
	if w.pending {
		flags |= 2
	}
	dst = append(dst, flags)
	dst = binary.AppendUvarint(dst, uint64(w.panes))
	dst = binary.AppendUvarint(dst, uint64(w.nonSpec))
	dst = binary.AppendUvarint(dst, uint64(len(w.nodes)))
	for _, n := range w.nodes {
		var f byte
		if n.finished {
			f |= 1
		}
		if n.fired {
			f |= 2
		}
		dst = append(dst, f)
		dst = binary.AppendUvarint(dst, uint64(n.count))
	}
	return dst
}

// Decode reads a window state Encode wrote.
func Decode(b []byte) (Window, error) {
	var w Window
	if len(b) == 0 {
		return w, fmt.Errorf("%w: empty", ErrCorrupt)
	}
	w.closed, w.pending = b[0]&1 != 0, b[0]&2 != 0
	b = b[1:]
	next := func() (uint64, error) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, fmt.Errorf("%w: bad varint", ErrCorrupt)
		}
		b = b[n:]
		return v, nil
	}
	var vals [3]uint64
	for i := range vals {
		v, err := next()
		if err != nil {
			return w, err
		}
		vals[i] = v
	}
	w.panes, w.nonSpec = int64(vals[0]), int64(vals[1])
	if vals[2] > uint64(len(b)) {
		return w, fmt.Errorf("%w: %d nodes in %d bytes", ErrCorrupt, vals[2], len(b))
	}
	w.nodes = make([]node, vals[2])
	for i := range w.nodes {
		if len(b) == 0 {
			return w, fmt.Errorf("%w: truncated", ErrCorrupt)
		}
		w.nodes[i].finished, w.nodes[i].fired = b[0]&1 != 0, b[0]&2 != 0
		b = b[1:]
		c, err := next()
		if err != nil {
			return w, err
		}
		w.nodes[i].count = int64(c)
	}
	if len(b) != 0 {
		return w, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(b))
	}
	return w, nil
}
