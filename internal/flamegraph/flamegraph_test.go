package flamegraph

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/pprof/profile"
)

// prof builds a profile from samples written leaf first as
// "func@file:line" frames, with labels.
type sampleSpec struct {
	frames []string // leaf first: function names; file and line derive from them
	value  int64
	labels map[string][]string
}

func prof(specs ...sampleSpec) *profile.Profile {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}}}
	fns := map[string]*profile.Function{}
	for _, s := range specs {
		var locs []*profile.Location
		for _, f := range s.frames {
			fn := fns[f]
			if fn == nil {
				fn = &profile.Function{ID: uint64(len(fns) + 1), Name: f, Filename: "/src/" + f + ".go"}
				fns[f] = fn
				p.Function = append(p.Function, fn)
			}
			loc := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn, Line: int64(len(f))}}}
			p.Location = append(p.Location, loc)
			locs = append(locs, loc)
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: locs, Value: []int64{s.value}, Label: s.labels})
	}
	return p
}

func task(vertex, subtask string) map[string][]string {
	return map[string][]string{"job": {"j1"}, "vertex": {vertex}, "subtask": {subtask}}
}

func TestStacksKeepTheSamplesWhoseLabelsMatch(t *testing.T) {
	p := prof(
		sampleSpec{[]string{"user.Map", "task.run", "runtime.goexit"}, 3, task("1", "0")},
		sampleSpec{[]string{"user.Map", "task.run", "runtime.goexit"}, 2, task("1", "1")},
		sampleSpec{[]string{"user.Sink", "task.run", "runtime.goexit"}, 5, task("2", "0")},
		// A running goroutine stopped for a goroutine profile: the
		// preemption frames go, the stack is user.Sink's.
		sampleSpec{[]string{"runtime.asyncPreempt2", "runtime.asyncPreempt", "user.Sink", "task.run", "runtime.goexit"}, 1, task("2", "0")},
		sampleSpec{[]string{"main.main", "runtime.main"}, 7, nil},
		sampleSpec{[]string{"runtime.gopark", "runtime.chanrecv", "user.Map", "task.run"}, 4, task("1", "0")},
		sampleSpec{[]string{"user.Map"}, 0, task("1", "0")}, // no samples: dropped
	)
	for _, tc := range []struct {
		name  string
		match Match
		want  []Stack
	}{
		{"one subtask", Match{"job": {"j1"}, "vertex": {"1"}, "subtask": {"0"}}, []Stack{
			{Frames: []string{"runtime.goexit (runtime.goexit.go:14)", "task.run (task.run.go:8)", "user.Map (user.Map.go:8)"}, Count: 3},
			{Frames: []string{"task.run (task.run.go:8)", "user.Map (user.Map.go:8)", "runtime.chanrecv (runtime.chanrecv.go:16)", "runtime.gopark (runtime.gopark.go:14)"}, Count: 4, OffCPU: true},
		}},
		{"every subtask of a vertex, equal stacks merged", Match{"job": {"j1"}, "vertex": {"1"}}, []Stack{
			{Frames: []string{"runtime.goexit (runtime.goexit.go:14)", "task.run (task.run.go:8)", "user.Map (user.Map.go:8)"}, Count: 5},
			{Frames: []string{"task.run (task.run.go:8)", "user.Map (user.Map.go:8)", "runtime.chanrecv (runtime.chanrecv.go:16)", "runtime.gopark (runtime.gopark.go:14)"}, Count: 4, OffCPU: true},
		}},
		{"some subtasks of a vertex", Match{"job": {"j1"}, "vertex": {"1"}, "subtask": {"1", "5"}}, []Stack{
			{Frames: []string{"runtime.goexit (runtime.goexit.go:14)", "task.run (task.run.go:8)", "user.Map (user.Map.go:8)"}, Count: 2},
		}},
		{"another vertex", Match{"vertex": {"2"}}, []Stack{
			{Frames: []string{"runtime.goexit (runtime.goexit.go:14)", "task.run (task.run.go:8)", "user.Sink (user.Sink.go:9)"}, Count: 6},
		}},
		{"another job", Match{"job": {"j2"}}, nil},
		{"a label no sample has", Match{"job": {"j1"}, "operator": {"x"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Stacks(p, tc.match, 0); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Stacks(%v) =\n%+v\nwant\n%+v", tc.match, got, tc.want)
			}
		})
	}
}

func TestStacksUnfoldInlinedFramesAndCutAtDepth(t *testing.T) {
	inner := &profile.Function{ID: 1, Name: "user.inlined", Filename: "/a/b/op.go"}
	outer := &profile.Function{ID: 2, Name: "user.Map", Filename: "/a/b/op.go"}
	run := &profile.Function{ID: 3, Name: "task.run", Filename: "/r/task.go"}
	p := &profile.Profile{Sample: []*profile.Sample{{
		Location: []*profile.Location{
			{ID: 1, Line: []profile.Line{{Function: inner, Line: 10}, {Function: outer, Line: 20}}},
			{ID: 2, Line: []profile.Line{{Function: run, Line: 30}}},
		},
		Value: []int64{1},
	}}}
	for _, tc := range []struct {
		depth int
		want  []string
	}{
		{0, []string{"task.run (task.go:30)", "user.Map (op.go:20)", "user.inlined (op.go:10)"}},
		{2, []string{"user.Map (op.go:20)", "user.inlined (op.go:10)"}}, // the top of the stack, as Flink's stack-depth
	} {
		got := Stacks(p, nil, tc.depth)
		if len(got) != 1 || !reflect.DeepEqual(got[0].Frames, tc.want) {
			t.Errorf("depth %d: %+v, want frames %q", tc.depth, got, tc.want)
		}
	}
}

func TestTree(t *testing.T) {
	stacks := []Stack{
		{Frames: []string{"main", "run", "map"}, Count: 3},
		{Frames: []string{"main", "run", "sink"}, Count: 1},
		{Frames: []string{"main", "run", "map", "gopark"}, Count: 2, OffCPU: true},
		{Frames: []string{"other"}, Count: 1, OffCPU: true},
	}
	leaf := func(name string, v int64) Node { return Node{Name: name, Value: v, Children: []Node{}} }
	for _, tc := range []struct {
		typ  Type
		in   []Stack
		want Node
	}{
		{Full, stacks, Node{Name: "root", Value: 7, Children: []Node{
			{Name: "main", Value: 6, Children: []Node{
				{Name: "run", Value: 6, Children: []Node{
					{Name: "map", Value: 5, Children: []Node{leaf("gopark", 2)}},
					leaf("sink", 1),
				}},
			}},
			leaf("other", 1),
		}}},
		{OnCPU, stacks[:2], Node{Name: "root", Value: 4, Children: []Node{
			{Name: "main", Value: 4, Children: []Node{
				{Name: "run", Value: 4, Children: []Node{leaf("map", 3), leaf("sink", 1)}},
			}},
		}}},
		{OffCPU, stacks, Node{Name: "root", Value: 3, Children: []Node{
			{Name: "main", Value: 2, Children: []Node{
				{Name: "run", Value: 2, Children: []Node{{Name: "map", Value: 2, Children: []Node{leaf("gopark", 2)}}}},
			}},
			leaf("other", 1),
		}}},
		{Full, nil, leaf("root", 0)},
	} {
		t.Run(string(tc.typ), func(t *testing.T) {
			if got := Tree(tc.typ, tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Tree =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestTreeJSONIsFlinksShape(t *testing.T) {
	b, err := json.Marshal(Tree(Full, []Stack{{Frames: []string{"a (a.go:1)"}, Count: 2}}))
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"name":"root","value":2,"children":[{"name":"a (a.go:1)","value":2,"children":[]}]}`
	if string(b) != want {
		t.Errorf("JSON %s, want %s", b, want)
	}
}

func TestMerge(t *testing.T) {
	a := []Stack{{Frames: []string{"x", "y"}, Count: 1}, {Frames: []string{"x", "y"}, Count: 2, OffCPU: true}}
	b := []Stack{{Frames: []string{"x", "y"}, Count: 4}, {Frames: []string{"z"}, Count: 1}}
	want := []Stack{{Frames: []string{"x", "y"}, Count: 5}, {Frames: []string{"x", "y"}, Count: 2, OffCPU: true}, {Frames: []string{"z"}, Count: 1}}
	if got := Merge(a, b); !reflect.DeepEqual(got, want) {
		t.Errorf("Merge = %+v, want %+v", got, want)
	}
}

func TestParseType(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Type
		ok   bool
	}{{"", Full, true}, {"FULL", Full, true}, {"on_cpu", OnCPU, true}, {"OFF_CPU", OffCPU, true}, {"CPU", "", false}} {
		got, err := ParseType(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseType(%q) = %q, %v", tc.in, got, err)
		}
	}
}
