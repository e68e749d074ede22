package scheduler

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// held builds a Held map from "id:priority:phase" triples, phase being
// s(tarting), r(unning) or x (releasing).
func held(entries ...string) map[string]HeldContainer {
	m := make(map[string]HeldContainer, len(entries))
	for _, e := range entries {
		var id string
		var p int32
		var ph rune
		if _, err := fmt.Sscanf(e, "%s %d %c", &id, &p, &ph); err != nil {
			panic("bad held entry " + e + ": " + err.Error())
		}
		phase := map[rune]ContainerPhase{'s': ContainerStarting, 'r': ContainerRunning, 'x': ContainerReleasing}[ph]
		if phase == 0 {
			panic("bad phase in " + e)
		}
		m[id] = HeldContainer{Priority: p, Phase: phase}
	}
	return m
}

func alloc(p int32, ids ...string) []AllocatedContainer {
	var out []AllocatedContainer
	for _, id := range ids {
		out = append(out, AllocatedContainer{ID: id, Priority: p})
	}
	return out
}

func TestPlanContainers(t *testing.T) {
	req := func(n int) map[int32]int { return map[int32]int{1: n} }
	tests := []struct {
		name     string
		cur      Containers
		ev       ContainerEvents
		want     ContainerPlan
		wantNext Containers
	}{
		{
			name:     "nothing required, nothing held",
			ev:       ContainerEvents{},
			want:     ContainerPlan{},
			wantNext: Containers{Pending: map[int32]int{}, Held: held()},
		},
		{
			name:     "fresh demand asks for all and heartbeats fast",
			ev:       ContainerEvents{Required: req(3)},
			want:     ContainerPlan{Asks: map[int32]int{1: 3}, FastHeartbeat: true},
			wantNext: Containers{Pending: map[int32]int{1: 3}, Held: held()},
		},
		{
			name:     "unchanged demand sends no ask but keeps heartbeating fast",
			cur:      Containers{Pending: map[int32]int{1: 3}},
			ev:       ContainerEvents{Required: req(3)},
			want:     ContainerPlan{FastHeartbeat: true},
			wantNext: Containers{Pending: map[int32]int{1: 3}, Held: held()},
		},
		{
			name: "partial allocation launches, lowers pending, re-asks nothing",
			cur:  Containers{Pending: map[int32]int{1: 3}},
			ev:   ContainerEvents{Required: req(3), Allocated: alloc(1, "c1", "c2")},
			want: ContainerPlan{Launch: alloc(1, "c1", "c2"), FastHeartbeat: true},
			wantNext: Containers{Pending: map[int32]int{1: 1},
				Held: held("c1 1 s", "c2 1 s")},
		},
		{
			name:     "full allocation ends the fast heartbeat without an ask",
			cur:      Containers{Pending: map[int32]int{1: 1}, Held: held("c1 1 r", "c2 1 s")},
			ev:       ContainerEvents{Required: req(3), Allocated: alloc(1, "c3")},
			want:     ContainerPlan{Launch: alloc(1, "c3")},
			wantNext: Containers{Pending: map[int32]int{}, Held: held("c1 1 r", "c2 1 s", "c3 1 s")},
		},
		{
			name:     "allocations beyond demand are surplus and released",
			cur:      Containers{Pending: map[int32]int{1: 1}, Held: held("c1 1 r")},
			ev:       ContainerEvents{Required: req(2), Allocated: alloc(1, "c2", "c3", "c4")},
			want:     ContainerPlan{Launch: alloc(1, "c2"), Release: []string{"c3", "c4"}},
			wantNext: Containers{Pending: map[int32]int{}, Held: held("c1 1 r", "c2 1 s", "c3 1 x", "c4 1 x")},
		},
		{
			name:     "an allocation at a priority no spec uses is released",
			cur:      Containers{Pending: map[int32]int{1: 1}},
			ev:       ContainerEvents{Required: req(1), Allocated: alloc(7, "old")},
			want:     ContainerPlan{Release: []string{"old"}, FastHeartbeat: true},
			wantNext: Containers{Pending: map[int32]int{1: 1}, Held: held("old 7 x")},
		},
		{
			name:     "a duplicate allocation is ignored",
			cur:      Containers{Pending: map[int32]int{1: 1}, Held: held("c1 1 s")},
			ev:       ContainerEvents{Required: req(2), Allocated: alloc(1, "c1")},
			want:     ContainerPlan{FastHeartbeat: true},
			wantNext: Containers{Pending: map[int32]int{1: 1}, Held: held("c1 1 s")},
		},
		{
			name:     "launched containers become running",
			cur:      Containers{Held: held("c1 1 s", "c2 1 s")},
			ev:       ContainerEvents{Required: req(2), Launched: []string{"c1", "nope"}},
			want:     ContainerPlan{},
			wantNext: Containers{Pending: map[int32]int{}, Held: held("c1 1 r", "c2 1 s")},
		},
		{
			name:     "a completed running container is reported and replaced",
			cur:      Containers{Held: held("c1 1 r", "c2 1 r")},
			ev:       ContainerEvents{Required: req(2), Completed: []string{"c2"}},
			want:     ContainerPlan{Stopped: []string{"c2"}, Asks: map[int32]int{1: 1}, FastHeartbeat: true},
			wantNext: Containers{Pending: map[int32]int{1: 1}, Held: held("c1 1 r")},
		},
		{
			name:     "a completed starting container is reported too",
			cur:      Containers{Held: held("c1 1 s")},
			ev:       ContainerEvents{Required: req(1), Completed: []string{"c1"}},
			want:     ContainerPlan{Stopped: []string{"c1"}, Asks: map[int32]int{1: 1}, FastHeartbeat: true},
			wantNext: Containers{Pending: map[int32]int{1: 1}, Held: held()},
		},
		{
			name:     "a completed released container is forgotten silently",
			cur:      Containers{Held: held("c1 1 r", "c9 1 x")},
			ev:       ContainerEvents{Required: req(1), Completed: []string{"c9", "unknown"}},
			want:     ContainerPlan{},
			wantNext: Containers{Pending: map[int32]int{}, Held: held("c1 1 r")},
		},
		{
			name:     "stopping a TaskManager with lowered demand releases it and asks nothing",
			cur:      Containers{Held: held("c1 1 r", "c2 1 r")},
			ev:       ContainerEvents{Required: req(1), Stop: []string{"c2"}},
			want:     ContainerPlan{Release: []string{"c2"}},
			wantNext: Containers{Pending: map[int32]int{}, Held: held("c1 1 r", "c2 1 x")},
		},
		{
			name:     "stopping a TaskManager that is still required asks for a replacement",
			cur:      Containers{Held: held("c1 1 r")},
			ev:       ContainerEvents{Required: req(1), Stop: []string{"c1", "c1", "unknown"}},
			want:     ContainerPlan{Release: []string{"c1"}, Asks: map[int32]int{1: 1}, FastHeartbeat: true},
			wantNext: Containers{Pending: map[int32]int{1: 1}, Held: held("c1 1 x")},
		},
		{
			name:     "a failed launch is released and replaced",
			cur:      Containers{Held: held("c1 1 s", "c2 1 r")},
			ev:       ContainerEvents{Required: req(2), LaunchFailed: []string{"c1", "c2"}},
			want:     ContainerPlan{Release: []string{"c1"}, Asks: map[int32]int{1: 1}, FastHeartbeat: true},
			wantNext: Containers{Pending: map[int32]int{1: 1}, Held: held("c1 1 x", "c2 1 r")},
		},
		{
			name:     "lowered demand withdraws pending containers",
			cur:      Containers{Pending: map[int32]int{1: 2}, Held: held("c1 1 r")},
			ev:       ContainerEvents{Required: req(1)},
			want:     ContainerPlan{Asks: map[int32]int{1: 0}},
			wantNext: Containers{Pending: map[int32]int{}, Held: held("c1 1 r")},
		},
		{
			name:     "demand below the running count does not stop running containers",
			cur:      Containers{Held: held("c1 1 r", "c2 1 r", "c3 1 s")},
			ev:       ContainerEvents{Required: req(1)},
			want:     ContainerPlan{},
			wantNext: Containers{Pending: map[int32]int{}, Held: held("c1 1 r", "c2 1 r", "c3 1 s")},
		},
		{
			name:     "a spec no longer required has its ask withdrawn",
			cur:      Containers{Pending: map[int32]int{1: 2}},
			ev:       ContainerEvents{Required: map[int32]int{2: 1}},
			want:     ContainerPlan{Asks: map[int32]int{1: 0, 2: 1}, FastHeartbeat: true},
			wantNext: Containers{Pending: map[int32]int{2: 1}, Held: held()},
		},
		{
			name: "priorities are matched separately",
			cur:  Containers{Pending: map[int32]int{1: 1, 2: 2}},
			ev: ContainerEvents{Required: map[int32]int{1: 1, 2: 2},
				Allocated: append(alloc(2, "a", "b"), alloc(1, "c", "d")...)},
			want: ContainerPlan{Launch: append(alloc(2, "a", "b"), alloc(1, "c")...), Release: []string{"d"}},
			wantNext: Containers{Pending: map[int32]int{},
				Held: held("a 2 s", "b 2 s", "c 1 s", "d 1 x")},
		},
		{
			name:     "after a resync every ask is sent again",
			cur:      Containers{Pending: map[int32]int{1: 2}, Held: held("c1 1 r")},
			ev:       ContainerEvents{Required: req(3), Resynced: true},
			want:     ContainerPlan{Asks: map[int32]int{1: 2}, FastHeartbeat: true},
			wantNext: Containers{Pending: map[int32]int{1: 2}, Held: held("c1 1 r")},
		},
		{
			name: "completion, stop, launch and allocation in one heartbeat",
			cur:  Containers{Pending: map[int32]int{1: 1}, Held: held("c1 1 r", "c2 1 r", "c3 1 s")},
			ev: ContainerEvents{Required: req(3), Completed: []string{"c1"}, Stop: []string{"c2"},
				Launched: []string{"c3"}, Allocated: alloc(1, "c4")},
			want: ContainerPlan{Stopped: []string{"c1"}, Release: []string{"c2"}, Launch: alloc(1, "c4"),
				Asks: map[int32]int{1: 1}, FastHeartbeat: true},
			wantNext: Containers{Pending: map[int32]int{1: 1}, Held: held("c2 1 x", "c3 1 r", "c4 1 s")},
		},
		{
			name:     "held asks do not grow for a new requirement",
			cur:      Containers{Pending: map[int32]int{1: 1}, Held: held("c1 1 r")},
			ev:       ContainerEvents{Required: req(4), HoldAsks: true},
			want:     ContainerPlan{FastHeartbeat: true},
			wantNext: Containers{Pending: map[int32]int{1: 1}, Held: held("c1 1 r")},
		},
		{
			name:     "held asks do not replace a completed container",
			cur:      Containers{Held: held("c1 1 r", "c2 1 s")},
			ev:       ContainerEvents{Required: req(2), Completed: []string{"c2"}, HoldAsks: true},
			want:     ContainerPlan{Stopped: []string{"c2"}},
			wantNext: Containers{Pending: map[int32]int{}, Held: held("c1 1 r")},
		},
		{
			name:     "held asks still shrink",
			cur:      Containers{Pending: map[int32]int{1: 3}},
			ev:       ContainerEvents{Required: req(1), HoldAsks: true},
			want:     ContainerPlan{Asks: map[int32]int{1: 1}, FastHeartbeat: true},
			wantNext: Containers{Pending: map[int32]int{1: 1}, Held: held()},
		},
		{
			name:     "the first plan after a hold asks for what is missing",
			cur:      Containers{Held: held("c1 1 r")},
			ev:       ContainerEvents{Required: req(2)},
			want:     ContainerPlan{Asks: map[int32]int{1: 1}, FastHeartbeat: true},
			wantNext: Containers{Pending: map[int32]int{1: 1}, Held: held("c1 1 r")},
		},
		{
			name:     "held asks still launch what is allocated",
			cur:      Containers{Pending: map[int32]int{1: 1}},
			ev:       ContainerEvents{Required: req(2), Allocated: alloc(1, "c1"), HoldAsks: true},
			want:     ContainerPlan{Launch: alloc(1, "c1")},
			wantNext: Containers{Pending: map[int32]int{}, Held: held("c1 1 s")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.cur.clone()
			next, plan := PlanContainers(tt.cur, tt.ev)
			if !reflect.DeepEqual(plan, tt.want) {
				t.Errorf("plan:\n got  %+v\n want %+v", plan, tt.want)
			}
			if !reflect.DeepEqual(next, tt.wantNext) {
				t.Errorf("next:\n got  %+v\n want %+v", next, tt.wantNext)
			}
			if !reflect.DeepEqual(tt.cur.clone(), before) {
				t.Errorf("PlanContainers modified its input: %+v, was %+v", tt.cur, before)
			}
		})
	}
}

// fakeRM is a ResourceManager as the AM sees it, to drive PlanContainers
// through many heartbeats: it keeps an absolute outstanding count per
// priority, allocates some of it per heartbeat, sometimes one more than
// asked (the race between an ask and allocations in flight), and kills
// random running containers.
type fakeRM struct {
	rng         *rand.Rand
	outstanding map[int32]int
	live        map[string]int32 // allocated and not completed
	seq         int
}

func TestPlanContainersConverges(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rm := &fakeRM{rng: rand.New(rand.NewPCG(seed, 7)), outstanding: map[int32]int{}, live: map[string]int32{}}
			required := map[int32]int{1: 1 + rm.rng.IntN(6), 2: rm.rng.IntN(3)}
			var cur Containers
			var ev ContainerEvents
			for hb := 0; hb < 400; hb++ {
				if hb == 100 { // demand changes mid-way
					required[1] = rm.rng.IntN(5)
				}
				ev.Required = required
				var plan ContainerPlan
				cur, plan = PlanContainers(cur, ev)
				ev = ContainerEvents{}
				// The AM's side: launches succeed, except sometimes.
				for _, l := range plan.Launch {
					if rm.rng.IntN(10) == 0 {
						ev.LaunchFailed = append(ev.LaunchFailed, l.ID)
					} else {
						ev.Launched = append(ev.Launched, l.ID)
					}
				}
				// The RM's side.
				maps.Copy(rm.outstanding, plan.Asks)
				for _, id := range plan.Release {
					if _, ok := rm.live[id]; ok {
						delete(rm.live, id)
						ev.Completed = append(ev.Completed, id)
					}
				}
				if hb < 300 { // chaos, then calm to converge
					for _, id := range slices.Sorted(maps.Keys(rm.live)) {
						if rm.rng.IntN(40) == 0 {
							delete(rm.live, id)
							ev.Completed = append(ev.Completed, id)
						}
					}
				}
				for _, p := range slices.Sorted(maps.Keys(rm.outstanding)) {
					n := rm.rng.IntN(rm.outstanding[p] + 1)
					if n > 0 && hb < 300 && rm.rng.IntN(5) == 0 {
						n++ // over-allocation
					}
					for range n {
						rm.seq++
						id := fmt.Sprintf("c%d", rm.seq)
						rm.live[id] = p
						ev.Allocated = append(ev.Allocated, AllocatedContainer{ID: id, Priority: p})
					}
					rm.outstanding[p] = max(0, rm.outstanding[p]-n)
				}
				// Sluice's ResourceManager stops TaskManagers beyond demand
				// (PlanContainers never stops running ones by itself).
				for _, p := range slices.Sorted(maps.Keys(required)) {
					excess := cur.Active(p) - required[p]
					for _, id := range slices.Sorted(maps.Keys(cur.Held)) {
						if h := cur.Held[id]; excess > 0 && h.Priority == p && h.Phase == ContainerRunning {
							ev.Stop = append(ev.Stop, id)
							excess--
						}
					}
				}
			}
			for p, n := range required {
				if a := cur.Active(p); a != n {
					t.Errorf("after calm: %d active at priority %d, want %d (state %+v)", a, p, n, cur)
				}
				if got := cur.Pending[p]; got != rm.outstanding[p] {
					t.Errorf("priority %d: AM thinks %d pending, RM holds %d", p, got, rm.outstanding[p])
				}
			}
			for id, h := range cur.Held {
				if h.Phase == ContainerReleasing {
					continue
				}
				if _, ok := rm.live[id]; !ok {
					t.Errorf("AM holds %s (%v) which the RM completed", id, h.Phase)
				}
			}
		})
	}
}
