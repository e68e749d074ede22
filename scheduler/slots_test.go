package scheduler

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// tms builds TaskManagers from a compact form: "a:..x. b:...." where each
// character after the colon is a slot, '.' free, any other letter the job
// holding it.
func tms(spec string) []TaskManager {
	var out []TaskManager
	for f := range strings.FieldsSeq(spec) {
		id, slots, _ := strings.Cut(f, ":")
		tm := TaskManager{ID: id}
		for _, c := range slots {
			if c == '.' {
				tm.Slots = append(tm.Slots, Slot{})
			} else {
				tm.Slots = append(tm.Slots, Slot{JobID: string(c)})
			}
		}
		out = append(out, tm)
	}
	return out
}

func demands(spec string) []Demand {
	var out []Demand
	for f := range strings.FieldsSeq(spec) {
		job, n, _ := strings.Cut(f, "=")
		var slots int
		fmt.Sscan(n, &slots)
		out = append(out, Demand{JobID: job, Slots: slots})
	}
	return out
}

// apply renders the TaskManagers after the assignments, in the form of tms.
func apply(in []TaskManager, as []Assignment) string {
	byID := make(map[string]TaskManager)
	var ids []string
	for _, tm := range in {
		tm.Slots = slices.Clone(tm.Slots)
		byID[tm.ID] = tm
		ids = append(ids, tm.ID)
	}
	for _, a := range as {
		s := &byID[a.TaskManagerID].Slots[a.Index]
		if s.JobID != "" {
			return fmt.Sprintf("assignment %+v takes a slot held by %s", a, s.JobID)
		}
		s.JobID = a.JobID
	}
	slices.Sort(ids)
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(id + ":")
		for _, s := range byID[id].Slots {
			if s.JobID == "" {
				b.WriteByte('.')
			} else {
				b.WriteString(s.JobID)
			}
		}
	}
	return b.String()
}

func TestMatchSlots(t *testing.T) {
	tests := []struct {
		name     string
		tms      string
		demands  string
		strategy Strategy
		want     string // TaskManagers after the assignments
	}{
		{"nothing registered", "", "x=2", Pack, ""},
		{"no demand", "a:.. b:..", "", Pack, "a:.. b:.."},
		{"pack fills one TaskManager first", "a:... b:... c:...", "x=4", Pack, "a:xxx b:x.. c:..."},
		{"spread over TaskManagers", "a:... b:... c:...", "x=4", Spread, "a:xx. b:x.. c:x.."},
		{"pack prefers the fullest", "a:... b:y.. c:yy.", "x=1", Pack, "a:... b:y.. c:yyx"},
		{"pack then moves on by fewest free", "a:... b:y.. c:yy.", "x=3", Pack, "a:... b:yxx c:yyx"},
		{"spread prefers the least utilised", "a:yy.. b:y... c:....", "x=2", Spread, "a:yy.. b:yx.. c:x..."},
		{"spread balances the job before utilisation", "a:x... b:....", "x=3", Spread, "a:xx.. b:x..."},
		{"spread compares utilisation across sizes", "a:y. b:y...", "x=1", Spread, "a:y. b:yx.."},
		{"held slots count", "a:xx.. b:....", "x=3", Pack, "a:xxx. b:...."},
		{"demand already met", "a:xx.. b:....", "x=2", Pack, "a:xx.. b:...."},
		{"held beyond demand is kept", "a:xxx. b:....", "x=1", Pack, "a:xxx. b:...."},
		{"zero demand", "a:x...", "x=0", Pack, "a:x..."},
		{"short: the first job is served fully", "a:... b:..", "x=4 y=3", Pack, "a:xxy b:xx"},
		{"short: order of demands decides", "a:... b:..", "y=3 x=4", Pack, "a:yxx b:yy"},
		{"several jobs spread", "a:.... b:....", "x=3 y=3", Spread, "a:xxy. b:xyy."},
		{"free slots in the middle", "a:x.x. b:....", "x=4", Pack, "a:xxxx b:...."},
		{"TaskManager without slots", "a: b:..", "x=1", Pack, "a: b:x."},
		{"not enough slots anywhere", "a:yy", "x=1", Pack, "a:yy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tms(tt.tms)
			got := MatchSlots(demands(tt.demands), in, tt.strategy)
			if s := apply(in, got); s != tt.want {
				t.Errorf("after %v:\n got  %s\n want %s", got, s, tt.want)
			}
		})
	}
}

// TestMatchSlotsDeterministic checks that the order of TaskManagers does
// not change the decision, and that the input is not modified.
func TestMatchSlotsDeterministic(t *testing.T) {
	in := tms("a:.y.. b:.... c:yy.. d:x... e:..")
	ds := demands("x=5 y=4 z=3")
	for _, s := range []Strategy{Pack, Spread} {
		want := MatchSlots(ds, in, s)
		before := apply(in, nil)
		rng := rand.New(rand.NewPCG(1, 2))
		for range 20 {
			shuffled := slices.Clone(in)
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			if got := MatchSlots(ds, shuffled, s); !slices.Equal(got, want) {
				t.Fatalf("%v: shuffled TaskManagers gave %v, want %v", s, got, want)
			}
		}
		if after := apply(in, nil); after != before {
			t.Fatalf("MatchSlots modified its input: %s -> %s", before, after)
		}
	}
}

// TestMatchSlotsProperties checks, on random inputs, that assignments take
// only free slots, never exceed a demand, and leave no demand unmet while a
// slot is free.
func TestMatchSlotsProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	jobs := []string{"p", "q", "r", "s"}
	for i := range 500 {
		var in []TaskManager
		for k := range rng.IntN(5) {
			tm := TaskManager{ID: fmt.Sprintf("tm%d", k)}
			for range rng.IntN(5) {
				var s Slot
				if rng.IntN(3) == 0 {
					s.JobID = jobs[rng.IntN(len(jobs))]
				}
				tm.Slots = append(tm.Slots, s)
			}
			in = append(in, tm)
		}
		var ds []Demand
		for _, j := range jobs[:rng.IntN(len(jobs)+1)] {
			ds = append(ds, Demand{JobID: j, Slots: rng.IntN(8)})
		}
		strategy := Strategy(rng.IntN(2))
		got := MatchSlots(ds, in, strategy)
		after := apply(in, got)
		if strings.Contains(after, "assignment") {
			t.Fatalf("case %d: %s", i, after)
		}
		held, free := map[string]int{}, 0
		for _, tm := range in {
			for _, s := range tm.Slots {
				if s.JobID == "" {
					free++
				} else {
					held[s.JobID]++
				}
			}
		}
		given := map[string]int{}
		for _, a := range got {
			given[a.JobID]++
		}
		for _, d := range ds {
			if given[d.JobID] > 0 && held[d.JobID]+given[d.JobID] > d.Slots {
				t.Fatalf("case %d: job %s demands %d, held %d, given %d", i, d.JobID, d.Slots, held[d.JobID], given[d.JobID])
			}
			if held[d.JobID]+given[d.JobID] < d.Slots && len(got) < free {
				t.Fatalf("case %d: job %s left short while %d of %d free slots stay free", i, d.JobID, free-len(got), free)
			}
		}
	}
}

func TestPlanCapacity(t *testing.T) {
	tests := []struct {
		name         string
		tms          string
		demands      string
		slotsPerTM   int
		wantRequired int
		wantSurplus  []string
	}{
		{"nothing", "", "", 2, 0, nil},
		{"fresh cluster", "", "x=5", 2, 3, nil},
		{"exact fit", "", "x=4", 2, 2, nil},
		{"registered idle ones are used first", "a:.. b:..", "x=3", 2, 2, nil},
		{"idle beyond the demand are surplus", "a:.. b:.. c:..", "x=2", 2, 1, []string{"b", "c"}},
		{"busy TaskManagers stay", "a:x. b:.. c:..", "x=1", 2, 1, []string{"b", "c"}},
		{"free slots of busy ones absorb demand", "a:x. b:y.", "x=2 y=2", 2, 2, nil},
		{"more needed beyond busy ones", "a:xx b:yy", "x=4 y=2", 2, 3, nil},
		{"held beyond demand keeps its TaskManager", "a:xx b:..", "x=1", 2, 1, []string{"b"}},
		{"demand ended: all idle", "a:.. b:..", "x=0", 2, 0, []string{"a", "b"}},
		{"several jobs", "a:x.", "x=3 y=3 z=0", 3, 3, nil},
		{"slots per TaskManager below 1 counts as 1", "", "x=2", 0, 2, nil},
		{"idle TaskManager without slots is surplus", "a: b:..", "x=1", 2, 1, []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanCapacity(demands(tt.demands), tms(tt.tms), tt.slotsPerTM)
			if got.Required != tt.wantRequired || !slices.Equal(got.Surplus, tt.wantSurplus) {
				t.Errorf("got %+v, want Required %d Surplus %v", got, tt.wantRequired, tt.wantSurplus)
			}
		})
	}
}
