package window

import "errors"

// ErrNotInFlight is returned when a window that is not in a merging set
// is retired.
var ErrNotInFlight = errors.New("window: window is not in the in-flight window set")

// Pair maps an in-flight window to its state window: the window whose
// namespace holds the merged window's contents. When windows merge, the
// result keeps the state window of one of them, so the contents of the
// others are merged into it and never moved.
type Pair[W comparable] struct {
	Window W
	State  W
}

// MergeFunc finds the windows that must merge among windows and calls
// merge once per group of two or more distinct windows with the group and
// the window that results. It may reorder windows; members is valid only
// during the call.
type MergeFunc[W comparable] func(windows []W, merge func(members []W, result W))

// Merge is called when windows merge: result replaces merged (the
// in-flight windows that disappear, not including a new window), whose
// state windows mergedStates must be merged into stateResult. Both slices
// are valid only during the call.
type Merge[W comparable] func(result W, merged []W, stateResult W, mergedStates []W) error

// Set is the merging window set of one key: its in-flight windows and
// their state windows (Flink's MergingWindowSet). The zero value is an
// empty set.
type Set[W comparable] struct {
	Pairs []Pair[W]
}

// Scratch holds reusable buffers for Set.Add, so that adding a window
// allocates nothing once the buffers have grown. One per operator.
type Scratch[W comparable] struct {
	windows []W
	members []W
	states  []W
	groups  []group[W]
	collect func(members []W, result W)
}

type group[W comparable] struct {
	result   W
	from, to int // members[from:to]
}

// Len is the number of in-flight windows.
func (s *Set[W]) Len() int { return len(s.Pairs) }

// StateWindow returns the state window of the in-flight window w.
func (s *Set[W]) StateWindow(w W) (W, bool) {
	for _, p := range s.Pairs {
		if p.Window == w {
			return p.State, true
		}
	}
	var zero W
	return zero, false
}

// Retire removes w from the set (its state has been dropped).
func (s *Set[W]) Retire(w W) error {
	if _, ok := s.remove(w); !ok {
		return ErrNotInFlight
	}
	return nil
}

func (s *Set[W]) remove(w W) (W, bool) {
	for i, p := range s.Pairs {
		if p.Window == w {
			s.Pairs = append(s.Pairs[:i], s.Pairs[i+1:]...)
			return p.State, true
		}
	}
	var zero W
	return zero, false
}

func (s *Set[W]) put(w, state W) {
	for i := range s.Pairs {
		if s.Pairs[i].Window == w {
			s.Pairs[i].State = state
			return
		}
	}
	s.Pairs = append(s.Pairs, Pair[W]{Window: w, State: state})
}

// Add adds the window of a new element and merges it with the in-flight
// windows it intersects. It returns the window the element belongs to: w
// itself, or the window w was merged into. For every merge that affects
// windows already in flight, onMerge is called, after the set has been
// updated, so it can merge their state and triggers.
func (s *Set[W]) Add(w W, mergeWindows MergeFunc[W], sc *Scratch[W], onMerge Merge[W]) (W, error) {
	sc.windows = sc.windows[:0]
	for _, p := range s.Pairs {
		sc.windows = append(sc.windows, p.Window)
	}
	sc.windows = append(sc.windows, w)
	sc.members, sc.groups = sc.members[:0], sc.groups[:0]
	if sc.collect == nil {
		sc.collect = func(members []W, result W) {
			from := len(sc.members)
			sc.members = append(sc.members, members...)
			sc.groups = append(sc.groups, group[W]{result: result, from: from, to: len(sc.members)})
		}
	}
	mergeWindows(sc.windows, sc.collect)

	_, inFlight := s.StateWindow(w)
	result, mergedNew := w, false
	for _, g := range sc.groups {
		merged := sc.members[g.from:g.to]
		if i := indexOf(merged, w); i >= 0 {
			mergedNew = true
			result = g.result
			// A new window never had state of its own: it is not merged.
			if !inFlight {
				merged = append(merged[:i], merged[i+1:]...)
			}
		}
		if len(merged) == 0 {
			continue
		}
		// The result keeps the state window of one merged window (the
		// earliest); the others' states are merged into it.
		stateResult, _ := s.StateWindow(merged[0])
		sc.states = sc.states[:0]
		for _, m := range merged {
			if st, ok := s.remove(m); ok && st != stateResult {
				sc.states = append(sc.states, st)
			}
		}
		s.put(g.result, stateResult)
		// A window merged only into itself, without growing, changes nothing.
		if len(merged) == 1 && merged[0] == g.result {
			continue
		}
		if err := onMerge(g.result, merged, stateResult, sc.states); err != nil {
			return result, err
		}
	}
	if !mergedNew && !inFlight {
		// A new, self-contained window.
		s.put(w, w)
	}
	return result, nil
}

func indexOf[W comparable](ws []W, w W) int {
	for i, x := range ws {
		if x == w {
			return i
		}
	}
	return -1
}
