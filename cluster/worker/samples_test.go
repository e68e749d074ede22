package worker

import (
	"context"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/cluster/deployment"
	"github.com/sluice/sluice/internal/flamegraph"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
)

// parkLabelled parks a goroutine in parkedSubtask under the labels of
// subtask id of job until stop is closed.
func parkLabelled(wg *sync.WaitGroup, job string, id checkpoint.TaskID, stop <-chan struct{}) {
	started := make(chan struct{})
	wg.Add(1)
	go pprof.Do(context.Background(), pprof.Labels(jobmaster.TaskLabels(job, id, "chain")...), func(context.Context) {
		defer wg.Done()
		close(started)
		parkedSubtask(stop)
	})
	<-started
}

//go:noinline
func parkedSubtask(stop <-chan struct{}) { <-stop }

// answers runs the worker's SampleTasks handling for req and returns what
// it queued for the JobMaster.
func answer(t *testing.T, w *worker, req *clusterpb.SampleTasks) *clusterpb.TaskSamples {
	t.Helper()
	w.sampleTasks(req)
	w.samplers.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) != 1 || w.queue[0].GetSamples() == nil {
		t.Fatalf("queued %v, want one TaskSamples", w.queue)
	}
	out := w.queue[0].GetSamples()
	w.queue = nil
	return out
}

func TestSampleTasks(t *testing.T) {
	const job = "0123456789abcdef0123456789abcdef"
	here0, here1, other := checkpoint.TaskID{Vertex: 1, Subtask: 0}, checkpoint.TaskID{Vertex: 1, Subtask: 1}, checkpoint.TaskID{Vertex: 2, Subtask: 0}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	parkLabelled(&wg, job, here0, stop)
	parkLabelled(&wg, "another-job", here1, stop) // the same subtask of another job's (cannot be in one worker, but is not it)
	defer func() { close(stop); wg.Wait() }()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &worker{dep: &deployment.WorkerDeployment{JobID: job, WorkerID: "w1"}, here: map[checkpoint.TaskID]bool{here0: true, here1: true, other: true},
		wake: make(chan struct{}, 1), samplingCtx: ctx}
	goroutines := func(tasks ...checkpoint.TaskID) *clusterpb.SampleTasks {
		req := &clusterpb.SampleTasks{Id: 7, NumSamples: 2, DelayMs: 1}
		for _, t := range tasks {
			req.Tasks = append(req.Tasks, key(t))
		}
		return req
	}
	for _, tc := range []struct {
		name   string
		req    *clusterpb.SampleTasks
		err    string
		parked int64 // samples of parkedSubtask
	}{
		{"the labelled subtask", goroutines(here0), "", 2},
		{"both subtasks of the chain", goroutines(here0, here1), "", 2},
		{"a subtask without goroutines", goroutines(here1), "", 0},
		{"no task", goroutines(), "worker w1: no task to sample", 0},
		{"a task not here", goroutines(checkpoint.TaskID{Vertex: 1, Subtask: 9}), "worker w1: task 1.9 does not run here", 0},
		{"two chains", goroutines(here0, other), "more than one chain (1 and 2)", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := answer(t, w, tc.req)
			if out.GetId() != 7 || !strings.Contains(out.GetError(), tc.err) || (tc.err == "") != (out.GetError() == "") || out.GetCpuBusy() {
				t.Fatalf("answer %v, want id 7 and error %q", out, tc.err)
			}
			var parked int64
			for _, s := range out.GetStacks() {
				for _, f := range s.GetFrames() {
					if strings.HasPrefix(out.GetNames()[f], "github.com/sluice/sluice/cluster/worker.parkedSubtask (") {
						parked += s.GetCount()
						if !s.GetOffCpu() {
							t.Errorf("the parked goroutine's stack is not off CPU: %v", s)
						}
					}
				}
			}
			if parked != tc.parked {
				t.Errorf("%d samples of parkedSubtask, want %d: %v", parked, tc.parked, out)
			}
		})
	}

	// A CPU profile while another runs in the process: the answer says so.
	t.Run("cpu busy", func(t *testing.T) {
		var sink strings.Builder
		if err := pprof.StartCPUProfile(&sink); err != nil {
			t.Fatal(err)
		}
		defer pprof.StopCPUProfile()
		out := answer(t, w, &clusterpb.SampleTasks{Id: 8, Cpu: true, DurationMs: 10, Tasks: []*clusterpb.TaskKey{key(here0)}})
		if !out.GetCpuBusy() || !strings.Contains(out.GetError(), "a CPU profile is already being taken") {
			t.Errorf("answer %v, want the CPU profile busy", out)
		}
	})
}

func TestEncodeStacksSharesNames(t *testing.T) {
	out := &clusterpb.TaskSamples{}
	encodeStacks(out, []flamegraph.Stack{
		{Frames: []string{"main", "run", "map"}, Count: 3},
		{Frames: []string{"main", "run", "gopark"}, Count: 1, OffCPU: true},
	})
	if got := strings.Join(out.GetNames(), ","); got != "main,run,map,gopark" {
		t.Errorf("names %s", got)
	}
	if len(out.GetStacks()) != 2 || out.GetStacks()[1].GetFrames()[2] != 3 || !out.GetStacks()[1].GetOffCpu() || out.GetStacks()[0].GetCount() != 3 {
		t.Errorf("stacks %v", out.GetStacks())
	}
}
