package typed

import (
	"math"
)

// WMGenerator is one split's watermark generator; it emits into the
// tracker it was made for.
type WMGenerator[T any] interface {
	OnEvent(v T, ts int64)
	OnPeriodicEmit()
}

// WMStrategy says how records get event timestamps and how watermarks
// are generated, per split (stream's WatermarkStrategy, run).
type WMStrategy[T any] struct {
	// NewGenerator makes the generator of a split (nil: no watermarks).
	NewGenerator func(t *WMTracker[T]) WMGenerator[T]
	// Assigner extracts event timestamps (nil: records keep theirs).
	Assigner func(v T, recordTs int64) int64
	// IdlenessMs marks a split idle after that much processing time
	// without records (0: never).
	IdlenessMs int64
}

// GeneratesWatermarks reports whether the strategy produces watermarks.
func (s WMStrategy[T]) GeneratesWatermarks() bool { return s.NewGenerator != nil }

// WMTracker holds the watermark state of one split (or subtask).
type WMTracker[T any] struct {
	gen          WMGenerator[T]
	WM           int64 // generator's latest watermark
	Idle         bool
	lastActivity int64 // processing time of the last record
	active       bool  // a record arrived since the last periodic check
}

// EmitWatermark takes a watermark of the split's generator.
func (t *WMTracker[T]) EmitWatermark(wm int64) {
	if wm > t.WM {
		t.WM = wm
	}
}

// WMMultiplexer combines the watermarks of a subtask's splits: the minimum
// over non-idle splits, never going backwards.
type WMMultiplexer[T any] struct {
	strategy WMStrategy[T]
	splits   map[string]*WMTracker[T]
	order    []string
	Emitted  int64 // the combined watermark emitted last
	Idle     bool  // every split is idle
}

func NewWMMultiplexer[T any](s WMStrategy[T]) *WMMultiplexer[T] {
	return &WMMultiplexer[T]{strategy: s, splits: map[string]*WMTracker[T]{}, Emitted: math.MinInt64}
}

func (m *WMMultiplexer[T]) Add(id string, now int64) *WMTracker[T] {
	if t, ok := m.splits[id]; ok {
		return t
	}
	t := &WMTracker[T]{WM: math.MinInt64, lastActivity: now}
	if m.strategy.NewGenerator != nil {
		t.gen = m.strategy.NewGenerator(t)
	}
	m.splits[id] = t
	m.order = append(m.order, id)
	return t
}

func (m *WMMultiplexer[T]) Remove(id string) {
	delete(m.splits, id)
	for i, s := range m.order {
		if s == id {
			m.order = append(m.order[:i], m.order[i+1:]...)
			break
		}
	}
}

// OnEvent records a record of split t.
func (m *WMMultiplexer[T]) OnEvent(t *WMTracker[T], v T, ts int64) {
	t.active = true
	if t.gen != nil {
		t.gen.OnEvent(v, ts)
	}
}

// Periodic runs the generators and idleness detection; it returns the new
// combined watermark (advanced reports a change) and idleness changes.
func (m *WMMultiplexer[T]) Periodic(now int64) (wm int64, advanced bool, idle, idleChanged bool) {
	for _, id := range m.order {
		t := m.splits[id]
		if t.active {
			t.active, t.Idle, t.lastActivity = false, false, now
		} else if m.strategy.IdlenessMs > 0 && now-t.lastActivity >= m.strategy.IdlenessMs {
			t.Idle = true
		}
		if t.gen != nil {
			t.gen.OnPeriodicEmit()
		}
	}
	return m.Combine()
}

func (m *WMMultiplexer[T]) Combine() (wm int64, advanced bool, idle, idleChanged bool) {
	min := int64(math.MaxInt64)
	anyActive := false
	for _, id := range m.order {
		t := m.splits[id]
		if t.Idle {
			continue
		}
		anyActive = true
		if t.WM < min {
			min = t.WM
		}
	}
	allIdle := !anyActive // a subtask without splits never holds the watermark back
	if allIdle != m.Idle {
		m.Idle, idleChanged = allIdle, true
	}
	if anyActive && min > m.Emitted && min != math.MinInt64 {
		m.Emitted = min
		return min, true, m.Idle, idleChanged
	}
	return m.Emitted, false, m.Idle, idleChanged
}
