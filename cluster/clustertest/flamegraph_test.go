package clustertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testwait"
)

// flameNode is Flink's flame-graph node.
type flameNode struct {
	Name     string      `json:"name"`
	Value    int64       `json:"value"`
	Children []flameNode `json:"children"`
}

type flameGraph struct {
	EndTimestamp int64      `json:"endTimestamp"`
	Data         *flameNode `json:"data"`
}

// find reports whether a node of the tree is a frame of fn, with the
// value through it.
func (n *flameNode) find(fn string) (int64, bool) {
	if strings.HasPrefix(n.Name, fn+" (") {
		return n.Value, true
	}
	var total int64
	found := false
	for i := range n.Children {
		if v, ok := n.Children[i].find(fn); ok {
			total, found = total+v, true
		}
	}
	return total, found
}

// flameGraphOf polls GET .../flamegraph until it answers a sampled graph
// (not Flink's waiting marker), decoding it strictly: only Flink's members.
func flameGraphOf(t *testing.T, c *cluster, job, vertex, query string) *flameNode {
	t.Helper()
	path := "/jobs/" + job + "/vertices/" + vertex + "/flamegraph" + query
	var fg flameGraph
	testwait.Eventually(t, 60*time.Second, "the flame graph of "+path, func() bool {
		b, err := c.get(path)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		fg = flameGraph{}
		if err := dec.Decode(&fg); err != nil {
			t.Fatalf("GET %s: %v in %.300s", path, err, b)
		}
		if fg.EndTimestamp == -3 {
			return false // sampling
		}
		if fg.EndTimestamp <= 0 || fg.Data == nil {
			t.Fatalf("GET %s: %.300s, want a flame graph", path, b)
		}
		return true
	})
	if fg.Data.Name != "root" {
		t.Errorf("GET %s: the root is %q, want \"root\"", path, fg.Data.Name)
	}
	return fg.Data
}

// TestFlameGraph runs a busy job on a standalone cluster (a JobManager and
// two TaskManagers as processes, each TaskManager's share of the job in
// one worker process) and reads its flame graphs: the vertex whose Map
// spends its time in the user function spinWork shows it, with nonzero
// samples, ON_CPU (a CPU profile of the workers) and FULL (goroutine
// samples), for the vertex and for one subtask; the source vertex, whose
// goroutines share the worker processes, does not (the workers keep the
// samples by their goroutines' pprof labels).
func TestFlameGraph(t *testing.T) {
	c := newCluster(t, 2, "rest.flamegraph.enabled=true", "rest.flamegraph.num-samples=40", "rest.flamegraph.delay-between-samples=50 ms")
	o := c.mustSluice("run", "-d", "-m", c.rest(), "-p", "2", jobBin, "-shape", "rebalance", "-out", filepath.Join(c.dir, "out"),
		"-n", "100000000", "-rate", "1000", "-spin", "300000")
	m := regexp.MustCompile(`JobID ([0-9a-f]{32})`).FindStringSubmatch(o)
	if m == nil {
		t.Fatalf("no job id in the output of sluice run -d:\n%s", o)
	}
	job := m[1]
	var details struct {
		State    string `json:"state"`
		Vertices []struct {
			ID, Name, Status string
		} `json:"vertices"`
	}
	testwait.Eventually(t, 60*time.Second, "the job's vertices to run", func() bool {
		restJSON(t, c, "/jobs/"+job, &details)
		running := details.State == "RUNNING"
		for _, v := range details.Vertices {
			running = running && v.Status == "RUNNING"
		}
		return running
	})
	if len(details.Vertices) != 2 {
		t.Fatalf("the job has vertices %+v, want a source and its Maps and sink chained", details.Vertices)
	}
	source, busy := details.Vertices[0], details.Vertices[1]
	if !strings.HasSuffix(source.Name, "Source") { // "DataGen Source", and "Map -> Map -> Sink: ..."
		source, busy = busy, source
	}
	const user = "main.spinWork"
	for _, query := range []string{"?type=ON_CPU", "?type=FULL", "?type=ON_CPU&subtaskindex=1"} {
		tree := flameGraphOf(t, c, job, busy.ID, query)
		v, ok := tree.find(user)
		if tree.Value <= 0 || !ok || v <= 0 {
			t.Errorf("%s of %s: %d samples, %s %v with %d; want samples through the user function %s", query, busy.Name, tree.Value, user, ok, v, user)
		}
		if query == "?type=ON_CPU" {
			t.Logf("ON_CPU of %s: %d samples, %d in %s", busy.Name, tree.Value, v, user)
		}
	}
	tree := flameGraphOf(t, c, job, source.ID, "?type=FULL")
	if _, ok := tree.find(user); ok {
		t.Errorf("the flame graph of the source vertex %s has frames of %s, which runs in another vertex's goroutines", source.Name, user)
	}
	if tree.Value <= 0 {
		t.Errorf("the source vertex's FULL flame graph has no samples")
	}
	if _, ok := tree.find("github.com/sluice/sluice/internal/runtime/task.(*Task).Run"); !ok {
		t.Errorf("the source vertex's FULL flame graph has no frame of its task's run loop: %s", fmt.Sprint(tree.Children))
	}
}
