package stream_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/stream"
)

// TestAssignerTakesItsInputsParallelism: as in Flink, the watermark
// assigner runs at its input's parallelism and chains to it, so one
// generator sees the source's records in order whatever the environment's
// default parallelism. Rebalanced over several generators, the watermark
// was the minimum over generators that saw different records, and the late
// record below was counted (or not) depending on where it went.
func TestAssignerTakesItsInputsParallelism(t *testing.T) {
	env := newEnv(4, stream.Streaming)
	src := stream.FromSlice(env, []ev{e("a", 1, 1000), wm(5000), e("a", 1, 2000), e("a", 1, 5500)}).
		SetParallelism(1).Name("src")
	stamped := stream.AssignTimestampsAndWatermarks(src, punctuatedStrategy).Name("assign")
	// Markers are dropped at the same parallelism: rebalanced over several
	// subtasks, the record after a marker could overtake its watermark.
	events := stream.Filter(stamped, func(v ev) bool { return !v.WM }).SetParallelism(1)
	keyed := stream.KeyBy(events, func(v ev) string { return v.Key })
	out := stream.Collect(asSum(stream.Window(keyed, stream.TumblingEventTimeWindows(time.Second)).Reduce(sumByKey)))

	g := stream.GraphOf(env, t.Name())
	for _, n := range g.Nodes {
		if n.Name != "assign" {
			continue
		}
		if n.Parallelism != 1 {
			t.Errorf("assigner parallelism %d, want its input's (1)", n.Parallelism)
		}
		for _, ed := range g.InEdges(n.ID) {
			if ed.Partitioning != graph.Forward {
				t.Errorf("assigner input edge %s, want FORWARD (chained)", ed.Partitioning)
			}
		}
	}
	execute(t, env)
	// The watermark 5000 fires [1000,2000) and makes the record at 2000 late.
	assertEqual(t, "windows", sortedRecs(out), []string{"a=1@1999", "a=1@5999"})
}

// TestMissingWatermarksHintNamesTheAPI: the error for an event-time
// operator without watermarks points at functions that exist.
func TestMissingWatermarksHintNamesTheAPI(t *testing.T) {
	env := newEnv(1, stream.Streaming)
	keyed := stream.KeyBy(stream.FromElements(env, e("a", 1, 1)), func(v ev) string { return v.Key })
	stream.Discard(stream.Window(keyed, stream.TumblingEventTimeWindows(10*time.Millisecond)).Reduce(sumByKey))
	_, err := env.Execute(t.Name())
	if err == nil {
		t.Fatal("an event-time window without watermarks validated")
	}
	for _, name := range []string{"FromSource", "DataGenWithWatermarks", "AssignTimestampsAndWatermarks"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
	if regexp.MustCompile(`\bWithWatermarks\b`).MatchString(err.Error()) {
		t.Errorf("error %q names WithWatermarks, which does not exist", err)
	}
}
