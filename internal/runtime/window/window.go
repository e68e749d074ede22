// Package window holds the type-agnostic parts of windowing: the window
// types, the arithmetic that assigns timestamps to time windows, and the
// merging window set that session windows keep per key.
//
// Everything here is pure: no state backend, no timers, no clock. The
// window operator (package stream) drives it and keeps its results in keyed
// state. The semantics are Apache Flink's, so a job gets the same windows
// as it would there.
package window

import (
	"fmt"
	"math"
	"slices"
)

// TimeWindow is the half-open interval [Start, End) of event or processing
// time, in epoch milliseconds.
type TimeWindow struct {
	Start int64
	End   int64
}

// MaxTimestamp is the largest timestamp that belongs to the window (End-1).
func (w TimeWindow) MaxTimestamp() int64 { return w.End - 1 }

// Intersects reports whether w overlaps o or touches it (one ends where the
// other starts): such windows merge.
func (w TimeWindow) Intersects(o TimeWindow) bool { return w.Start <= o.End && w.End >= o.Start }

// Cover is the smallest window that contains both w and o.
func (w TimeWindow) Cover(o TimeWindow) TimeWindow {
	return TimeWindow{Start: min(w.Start, o.Start), End: max(w.End, o.End)}
}

func (w TimeWindow) String() string {
	return fmt.Sprintf("TimeWindow{start=%d, end=%d}", w.Start, w.End)
}

// GlobalWindow is the single window that holds every element of a key.
type GlobalWindow struct{}

// MaxTimestamp is the end of time: a global window never ends by itself.
func (GlobalWindow) MaxTimestamp() int64 { return math.MaxInt64 }

func (GlobalWindow) String() string { return "GlobalWindow" }

// StartWithOffset returns the start of the window of the given size
// (shifted by offset) that contains ts. It is correct for negative
// timestamps too: the start is the largest offset + k*size <= ts.
func StartWithOffset(ts, offset, size int64) int64 {
	rem := (ts - offset) % size
	if rem < 0 {
		return ts - (rem + size)
	}
	return ts - rem
}

// Tumbling returns the tumbling window of the given size and offset that
// contains ts.
func Tumbling(ts, size, offset int64) TimeWindow {
	start := StartWithOffset(ts, offset, size)
	return TimeWindow{Start: start, End: start + size}
}

// Sliding appends to dst the sliding windows of the given size, sliding
// every slide and shifted by offset, that contain ts: the latest window
// first, as Flink lists them.
func Sliding(dst []TimeWindow, ts, size, slide, offset int64) []TimeWindow {
	last := StartWithOffset(ts, offset, slide)
	for start := last; start > ts-size; start -= slide {
		dst = append(dst, TimeWindow{Start: start, End: start + size})
	}
	return dst
}

// Session returns the session window a timestamp opens: [ts, ts+gap).
func Session(ts, gap int64) TimeWindow { return TimeWindow{Start: ts, End: ts + gap} }

// MergeTimeWindows finds the groups of windows that intersect (directly or
// through other windows of the group) and calls merge once for every group
// of two or more distinct windows, with the group's members and the
// window covering them all, in order of start.
//
// windows is sorted and compacted in place; members is a sub-slice of it,
// valid only during the call.
func MergeTimeWindows(windows []TimeWindow, merge func(members []TimeWindow, result TimeWindow)) {
	slices.SortStableFunc(windows, func(a, b TimeWindow) int {
		switch {
		case a.Start < b.Start:
			return -1
		case a.Start > b.Start:
			return 1
		}
		return 0
	})
	i := 0
	for i < len(windows) {
		cover := windows[i]
		j := i + 1
		for j < len(windows) && cover.Intersects(windows[j]) {
			cover = cover.Cover(windows[j])
			j++
		}
		group := dedupe(windows[i:j])
		if len(group) > 1 {
			merge(group, cover)
		}
		i = j
	}
}

// dedupe moves the distinct windows of g to its front, keeping their
// order, and returns them.
func dedupe(g []TimeWindow) []TimeWindow {
	n := 0
outer:
	for _, w := range g {
		for _, seen := range g[:n] {
			if seen == w {
				continue outer
			}
		}
		g[n] = w
		n++
	}
	return g[:n]
}
