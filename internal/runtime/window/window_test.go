package window

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func TestStartWithOffset(t *testing.T) {
	tests := []struct {
		ts, offset, size, want int64
	}{
		{0, 0, 10, 0},
		{9, 0, 10, 0},
		{10, 0, 10, 10},
		{-1, 0, 10, -10},
		{-10, 0, 10, -10},
		{-11, 0, 10, -20},
		{-15, 0, 10, -20}, // the pre-1.13 formula ts-(ts-offset+size)%size gets -10 here
		{-25, 0, 10, -30},
		{7, 3, 10, 3},
		{2, 3, 10, -7},
		{-8, 3, 10, -17},
		{12, -3, 10, 7},
		{1_700_000_123_456, 0, 60_000, 1_700_000_100_000},
		{1_700_000_123_456, 3_600_000 - 60_000*0, 86_400_000, 1_699_923_600_000},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("ts=%d/off=%d/size=%d", tt.ts, tt.offset, tt.size), func(t *testing.T) {
			got := StartWithOffset(tt.ts, tt.offset, tt.size)
			if got != tt.want {
				t.Fatalf("StartWithOffset = %d, want %d", got, tt.want)
			}
			if got > tt.ts || tt.ts >= got+tt.size {
				t.Fatalf("window [%d, %d) does not contain %d", got, got+tt.size, tt.ts)
			}
		})
	}
}

func TestTumblingAndSession(t *testing.T) {
	if got, want := Tumbling(-15, 10, 0), (TimeWindow{-20, -10}); got != want {
		t.Fatalf("Tumbling(-15) = %v, want %v", got, want)
	}
	if got, want := Tumbling(1999, 1000, 0).MaxTimestamp(), int64(1999); got != want {
		t.Fatalf("MaxTimestamp = %d, want %d", got, want)
	}
	if got, want := Session(5, 10), (TimeWindow{5, 15}); got != want {
		t.Fatalf("Session = %v, want %v", got, want)
	}
	if got := (GlobalWindow{}).MaxTimestamp(); got != math.MaxInt64 {
		t.Fatalf("GlobalWindow.MaxTimestamp = %d", got)
	}
}

func TestSliding(t *testing.T) {
	tests := []struct {
		ts, size, slide, offset int64
		want                    []TimeWindow
	}{
		{0, 10, 5, 0, []TimeWindow{{0, 10}, {-5, 5}}},
		{7, 10, 5, 0, []TimeWindow{{5, 15}, {0, 10}}},
		{-3, 10, 5, 0, []TimeWindow{{-5, 5}, {-10, 0}}},
		{14, 15, 5, 0, []TimeWindow{{10, 25}, {5, 20}, {0, 15}}},
		{14, 10, 3, 1, []TimeWindow{{13, 23}, {10, 20}, {7, 17}}},
		{4, 10, 10, 0, []TimeWindow{{0, 10}}}, // slide == size: tumbling
		{4, 5, 10, 0, []TimeWindow{{0, 5}}},   // gaps between windows
		{7, 5, 10, 0, nil},                    // in a gap: no window
	}
	for _, tt := range tests {
		got := Sliding(nil, tt.ts, tt.size, tt.slide, tt.offset)
		if !slices.Equal(got, tt.want) {
			t.Errorf("Sliding(ts=%d, size=%d, slide=%d, off=%d) = %v, want %v", tt.ts, tt.size, tt.slide, tt.offset, got, tt.want)
		}
		for _, w := range got {
			if w.Start > tt.ts || tt.ts >= w.End {
				t.Errorf("window %v does not contain %d", w, tt.ts)
			}
		}
	}
}

func TestMergeTimeWindows(t *testing.T) {
	type call struct {
		members []TimeWindow
		result  TimeWindow
	}
	tests := []struct {
		name string
		in   []TimeWindow
		want []call
	}{
		{"disjoint", []TimeWindow{{0, 10}, {20, 30}}, nil},
		{"touching merge", []TimeWindow{{10, 20}, {0, 10}}, []call{{[]TimeWindow{{0, 10}, {10, 20}}, TimeWindow{0, 20}}}},
		{"chain", []TimeWindow{{0, 10}, {25, 35}, {8, 18}, {17, 26}}, []call{{[]TimeWindow{{0, 10}, {8, 18}, {17, 26}, {25, 35}}, TimeWindow{0, 35}}}},
		{"two groups", []TimeWindow{{0, 5}, {40, 50}, {3, 8}, {45, 46}}, []call{
			{[]TimeWindow{{0, 5}, {3, 8}}, TimeWindow{0, 8}},
			{[]TimeWindow{{40, 50}, {45, 46}}, TimeWindow{40, 50}},
		}},
		{"contained", []TimeWindow{{0, 100}, {10, 20}}, []call{{[]TimeWindow{{0, 100}, {10, 20}}, TimeWindow{0, 100}}}},
		{"duplicates only", []TimeWindow{{0, 10}, {0, 10}}, nil},
		{"duplicates dropped", []TimeWindow{{0, 10}, {5, 12}, {0, 10}}, []call{{[]TimeWindow{{0, 10}, {5, 12}}, TimeWindow{0, 12}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []call
			MergeTimeWindows(slices.Clone(tt.in), func(m []TimeWindow, r TimeWindow) {
				got = append(got, call{slices.Clone(m), r})
			})
			if len(got) != len(tt.want) {
				t.Fatalf("got %d merges %v, want %v", len(got), got, tt.want)
			}
			for i := range got {
				if got[i].result != tt.want[i].result || !slices.Equal(got[i].members, tt.want[i].members) {
					t.Fatalf("merge %d = %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// mergeRecord is what a Merge callback saw.
type mergeRecord struct {
	result       TimeWindow
	merged       []TimeWindow
	stateResult  TimeWindow
	mergedStates []TimeWindow
}

func TestSetAdd(t *testing.T) {
	w := func(s, e int64) TimeWindow { return TimeWindow{s, e} }
	type step struct {
		add        TimeWindow
		wantResult TimeWindow
		wantMerges []mergeRecord
		wantPairs  []Pair[TimeWindow]
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"new windows stay apart", []step{
			{w(0, 10), w(0, 10), nil, []Pair[TimeWindow]{{w(0, 10), w(0, 10)}}},
			{w(20, 30), w(20, 30), nil, []Pair[TimeWindow]{{w(0, 10), w(0, 10)}, {w(20, 30), w(20, 30)}}},
		}},
		{"new window extends one", []step{
			{w(0, 10), w(0, 10), nil, nil},
			{w(5, 15), w(0, 15), []mergeRecord{{w(0, 15), []TimeWindow{w(0, 10)}, w(0, 10), nil}}, []Pair[TimeWindow]{{w(0, 15), w(0, 10)}}},
			{w(12, 22), w(0, 22), []mergeRecord{{w(0, 22), []TimeWindow{w(0, 15)}, w(0, 10), nil}}, []Pair[TimeWindow]{{w(0, 22), w(0, 10)}}},
		}},
		{"new window inside one", []step{
			{w(0, 10), w(0, 10), nil, nil},
			{w(0, 5), w(0, 10), nil, []Pair[TimeWindow]{{w(0, 10), w(0, 10)}}},
		}},
		{"new window bridges two", []step{
			{w(0, 10), w(0, 10), nil, nil},
			{w(15, 25), w(15, 25), nil, nil},
			{w(8, 18), w(0, 25), []mergeRecord{{w(0, 25), []TimeWindow{w(0, 10), w(15, 25)}, w(0, 10), []TimeWindow{w(15, 25)}}},
				[]Pair[TimeWindow]{{w(0, 25), w(0, 10)}}},
		}},
		{"equal window joins the in-flight one", []step{
			{w(0, 10), w(0, 10), nil, nil},
			{w(5, 15), w(0, 15), []mergeRecord{{w(0, 15), []TimeWindow{w(0, 10)}, w(0, 10), nil}}, nil},
			{w(0, 15), w(0, 15), nil, []Pair[TimeWindow]{{w(0, 15), w(0, 10)}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Set[TimeWindow]
			var sc Scratch[TimeWindow]
			for i, st := range tt.steps {
				var merges []mergeRecord
				got, err := s.Add(st.add, MergeTimeWindows, &sc, func(r TimeWindow, merged []TimeWindow, sr TimeWindow, ms []TimeWindow) error {
					merges = append(merges, mergeRecord{r, slices.Clone(merged), sr, slices.Clone(ms)})
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if got != st.wantResult {
					t.Fatalf("step %d: Add(%v) = %v, want %v", i, st.add, got, st.wantResult)
				}
				if fmt.Sprint(merges) != fmt.Sprint(st.wantMerges) {
					t.Fatalf("step %d: merges %v, want %v", i, merges, st.wantMerges)
				}
				if st.wantPairs != nil && !slices.Equal(s.Pairs, st.wantPairs) {
					t.Fatalf("step %d: pairs %v, want %v", i, s.Pairs, st.wantPairs)
				}
			}
		})
	}
}

func TestSetRetire(t *testing.T) {
	var s Set[TimeWindow]
	var sc Scratch[TimeWindow]
	noMerge := func(TimeWindow, []TimeWindow, TimeWindow, []TimeWindow) error { return nil }
	for _, w := range []TimeWindow{{0, 10}, {20, 30}} {
		if _, err := s.Add(w, MergeTimeWindows, &sc, noMerge); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Retire(TimeWindow{0, 10}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.StateWindow(TimeWindow{0, 10}); ok || s.Len() != 1 {
		t.Fatalf("retired window still in flight: %v", s.Pairs)
	}
	if err := s.Retire(TimeWindow{0, 10}); err != ErrNotInFlight {
		t.Fatalf("second Retire = %v, want ErrNotInFlight", err)
	}
}

func TestSetAddDoesNotAllocate(t *testing.T) {
	var s Set[TimeWindow]
	var sc Scratch[TimeWindow]
	onMerge := func(TimeWindow, []TimeWindow, TimeWindow, []TimeWindow) error { return nil }
	ts := int64(0)
	// Warm up the buffers, then a session that keeps growing.
	for i := 0; i < 10; i++ {
		s.Add(Session(ts, 10), MergeTimeWindows, &sc, onMerge)
		ts += 5
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := s.Add(Session(ts, 10), MergeTimeWindows, &sc, onMerge); err != nil {
			t.Fatal(err)
		}
		ts += 5
	})
	if allocs != 0 {
		t.Fatalf("Set.Add allocated %.1f times per call", allocs)
	}
}
