package rest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/internal/flamegraph"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/rest"
	"github.com/sluice/sluice/rest/resttest"
)

// sampler is the fake backend's Sample hook: it records the requests and
// answers the next of its answers (then the last one again).
type sampler struct {
	mu      sync.Mutex
	reqs    []rest.SampleRequest
	answers []func() ([]flamegraph.Stack, error)
}

func (s *sampler) sample(_ context.Context, _, vertex string, req rest.SampleRequest) ([]flamegraph.Stack, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if vertex != vertexB {
		return nil, fmt.Errorf("sampled vertex %s", vertex)
	}
	s.reqs = append(s.reqs, req)
	a := s.answers[min(len(s.reqs), len(s.answers))-1]
	return a()
}

func (s *sampler) requests() []rest.SampleRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

func stacks(st ...flamegraph.Stack) func() ([]flamegraph.Stack, error) {
	return func() ([]flamegraph.Stack, error) { return st, nil }
}

func getFlameGraph(t *testing.T, url string) (int, restapi.VertexFlameGraph, string) {
	t.Helper()
	res := do(t, http.MethodGet, url, "", nil)
	var fg restapi.VertexFlameGraph
	if res.status == http.StatusOK {
		if err := json.Unmarshal(res.body, &fg); err != nil {
			t.Fatalf("GET %s: %v in %s", url, err, res.body)
		}
	}
	return res.status, fg, string(res.body)
}

func TestFlameGraphDisabledAnswersAsFlink(t *testing.T) {
	b, clk := vertexFixture(t)
	s := serve(t, b, clk, nil) // rest.flamegraph.enabled defaults to false
	for _, url := range []string{
		s.URL() + "/jobs/" + jobVertices + "/vertices/" + vertexB + "/flamegraph",
		s.URL() + "/jobs/" + jobMissing + "/vertices/" + vertexB + "/flamegraph?type=ON_CPU", // Flink's disabled handler looks at nothing
	} {
		res := do(t, http.MethodGet, url, "", nil)
		if res.status != 200 || string(res.body) != `{"endTimestamp":-2}` {
			t.Errorf("GET %s: %d %s, want 200 {\"endTimestamp\":-2}", url, res.status, res.body)
		}
	}
}

func TestFlameGraphSamplesInTheBackgroundAndServesTheCache(t *testing.T) {
	b, clk := vertexFixture(t)
	smp := &sampler{answers: []func() ([]flamegraph.Stack, error){
		stacks(flamegraph.Stack{Frames: []string{"main (m.go:1)", "user.Map (op.go:7)"}, Count: 3},
			flamegraph.Stack{Frames: []string{"main (m.go:1)", "runtime.gopark (proc.go:1)"}, Count: 2, OffCPU: true}),
		stacks(flamegraph.Stack{Frames: []string{"main (m.go:1)"}, Count: 9}),
	}}
	b.Sample = smp.sample
	s := serve(t, b, clk, func(c *rest.Config) {
		c.FlameGraph = rest.FlameGraphConfig{Enabled: true, NumSamples: 10, Delay: 20 * time.Millisecond, StackDepth: 7,
			RefreshInterval: time.Minute, CleanupInterval: 10 * time.Minute}
	})
	url := s.URL() + "/jobs/" + jobVertices + "/vertices/" + vertexB + "/flamegraph"

	// The first request starts the sampling and waits for nothing.
	if res := do(t, http.MethodGet, url, "", nil); res.status != 200 || string(res.body) != `{"endTimestamp":-3}` {
		t.Fatalf("first GET: %d %s, want {\"endTimestamp\":-3}", res.status, res.body)
	}
	var body string
	testwait.Eventually(t, 10*time.Second, "the sampled flame graph", func() bool {
		res := do(t, http.MethodGet, url+"?type=FULL", "", nil)
		body = string(res.body)
		return res.status == 200 && !strings.Contains(body, `"endTimestamp":-3`)
	})
	want := fmt.Sprintf(`{"endTimestamp":%d,"data":{"name":"root","value":5,"children":[{"name":"main (m.go:1)","value":5,"children":[`+
		`{"name":"runtime.gopark (proc.go:1)","value":2,"children":[]},{"name":"user.Map (op.go:7)","value":3,"children":[]}]}]}}`, clk.NowMillis())
	if body != want {
		t.Errorf("FULL flame graph\n%s\nwant\n%s", body, want)
	}
	// OFF_CPU comes from the same goroutine samples: no new sampling.
	if _, fg, raw := getFlameGraph(t, url+"?type=OFF_CPU"); fg.Data == nil || fg.Data.Value != 2 {
		t.Errorf("OFF_CPU: %s, want the parked stack's 2 samples", raw)
	}
	reqs := smp.requests()
	if wantReq := (rest.SampleRequest{Duration: 200 * time.Millisecond, NumSamples: 10, Delay: 20 * time.Millisecond, StackDepth: 7}); len(reqs) != 1 || !equalReq(reqs[0], wantReq) {
		t.Errorf("sample requests %+v, want one %+v", reqs, wantReq)
	}

	// Outdated: the next request answers the cache and samples again.
	clk.AdvanceBy(time.Minute)
	if _, fg, raw := getFlameGraph(t, url); fg.Data == nil || fg.Data.Value != 5 {
		t.Errorf("GET after the refresh interval: %s, want the cached graph", raw)
	}
	testwait.Eventually(t, 10*time.Second, "the refreshed flame graph", func() bool {
		_, fg, _ := getFlameGraph(t, url)
		return fg.Data != nil && fg.Data.Value == 9
	})
	if n := len(smp.requests()); n != 2 {
		t.Errorf("%d samplings, want 2", n)
	}
}

func equalReq(a, b rest.SampleRequest) bool {
	return a.CPU == b.CPU && a.Duration == b.Duration && a.NumSamples == b.NumSamples && a.Delay == b.Delay &&
		a.StackDepth == b.StackDepth && slices.Equal(a.Subtasks, b.Subtasks)
}

func TestFlameGraphOnCPUAndSubtasks(t *testing.T) {
	b, clk := vertexFixture(t)
	smp := &sampler{answers: []func() ([]flamegraph.Stack, error){stacks(flamegraph.Stack{Frames: []string{"spin (s.go:3)"}, Count: 4})}}
	b.Sample = smp.sample
	s := serve(t, b, clk, func(c *rest.Config) {
		c.FlameGraph = rest.FlameGraphConfig{Enabled: true, NumSamples: 5, Delay: 100 * time.Millisecond}
	})
	base := s.URL() + "/jobs/" + jobVertices + "/vertices/" + vertexB + "/flamegraph"
	for _, tc := range []struct {
		query string
		want  rest.SampleRequest
	}{
		{"?type=ON_CPU", rest.SampleRequest{CPU: true, Duration: 500 * time.Millisecond, NumSamples: 5, Delay: 100 * time.Millisecond, StackDepth: 100}},
		{"?type=on_cpu&subtaskindex=1", rest.SampleRequest{Subtasks: []int{1}, CPU: true, Duration: 500 * time.Millisecond, NumSamples: 5, Delay: 100 * time.Millisecond, StackDepth: 100}},
		{"?subtaskindex=0", rest.SampleRequest{Subtasks: []int{0}, Duration: 500 * time.Millisecond, NumSamples: 5, Delay: 100 * time.Millisecond, StackDepth: 100}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			n := len(smp.requests())
			testwait.Eventually(t, 10*time.Second, "the flame graph", func() bool {
				_, fg, _ := getFlameGraph(t, base+tc.query)
				return fg.Data != nil && fg.Data.Value == 4
			})
			reqs := smp.requests()
			if len(reqs) != n+1 || !equalReq(reqs[n], tc.want) {
				t.Errorf("sample requests %+v, want one more: %+v", reqs[n:], tc.want)
			}
		})
	}
	for _, tc := range []struct {
		query  string
		status int
		want   string
	}{
		{"?type=CPU", 400, "FULL, ON_CPU, OFF_CPU"},
		{"?subtaskindex=2", 404, "Invalid subtask index"},
		{"?subtaskindex=-1", 404, "Invalid subtask index"},
		{"?subtaskindex=one", 400, "not a number"},
	} {
		if status, _, body := getFlameGraph(t, base+tc.query); status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s: %d %s, want %d with %q", tc.query, status, body, tc.status, tc.want)
		}
	}
	if status, _, body := getFlameGraph(t, s.URL()+"/jobs/"+jobMissing+"/vertices/"+vertexB+"/flamegraph"); status != 404 {
		t.Errorf("an unknown job: %d %s, want 404", status, body)
	}
}

func TestFlameGraphOfAnEndedVertexIsTerminated(t *testing.T) {
	b, clk := vertexFixture(t)
	j := resttest.Job{
		Overview: restapi.JobOverview{ID: jobOther, Name: "ended", State: restapi.JobRunning, StartTime: start, EndTime: -1},
		Details: restapi.JobDetails{ID: jobOther, Name: "ended", State: restapi.JobRunning, StartTime: start, EndTime: -1,
			Vertices: []restapi.Vertex{{ID: vertexB, Name: "Source", Parallelism: 2, Status: restapi.TaskRunning,
				Subtasks: []restapi.SubtaskDetails{{Subtask: 0, Status: restapi.TaskFinished}, {Subtask: 1, Status: restapi.TaskRunning}}}}},
	}
	b.AddJob(j)
	smp := &sampler{answers: []func() ([]flamegraph.Stack, error){stacks()}}
	b.Sample = smp.sample
	s := serve(t, b, clk, func(c *rest.Config) { c.FlameGraph.Enabled = true })
	base := s.URL() + "/jobs/" + jobOther + "/vertices/" + vertexB + "/flamegraph"
	if _, fg, raw := getFlameGraph(t, base+"?subtaskindex=0"); fg.EndTimestamp != restapi.FlameGraphTerminated || raw != `{"endTimestamp":-1}` {
		t.Errorf("a finished subtask: %s, want {\"endTimestamp\":-1}", raw)
	}
	if _, fg, raw := getFlameGraph(t, base+"?subtaskindex=1"); fg.EndTimestamp != restapi.FlameGraphWaiting {
		t.Errorf("a running subtask of the vertex: %s, want waiting", raw)
	}
}

func TestFlameGraphSamplingFailureIsAnsweredOnce(t *testing.T) {
	b, clk := vertexFixture(t)
	smp := &sampler{answers: []func() ([]flamegraph.Stack, error){
		func() ([]flamegraph.Stack, error) {
			return nil, fmt.Errorf("%w: worker w1: a CPU profile is already being taken in this process", restapi.ErrUnavailable)
		},
		stacks(flamegraph.Stack{Frames: []string{"spin (s.go:3)"}, Count: 1}),
	}}
	b.Sample = smp.sample
	s := serve(t, b, clk, func(c *rest.Config) { c.FlameGraph.Enabled = true })
	url := s.URL() + "/jobs/" + jobVertices + "/vertices/" + vertexB + "/flamegraph?type=ON_CPU"
	var status int
	var body string
	testwait.Eventually(t, 10*time.Second, "the sampling's failure", func() bool {
		status, _, body = getFlameGraph(t, url)
		return status != 200
	})
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "a CPU profile is already being taken") {
		t.Errorf("the failed sampling: %d %s, want 503 naming the running profile", status, body)
	}
	testwait.Eventually(t, 10*time.Second, "a flame graph sampled again", func() bool {
		status, fg, _ := getFlameGraph(t, url)
		return status == 200 && fg.Data != nil && fg.Data.Value == 1
	})
}
