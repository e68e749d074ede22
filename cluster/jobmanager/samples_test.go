package jobmanager

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/internal/flamegraph"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/rest"
)

// stackNames are the stacks as "frame/frame/... ×count", sorted.
func stackNames(stacks []flamegraph.Stack) []string {
	var out []string
	for _, s := range stacks {
		out = append(out, strings.Join(s.Frames, "/")+" ×"+strconv.FormatInt(s.Count, 10))
	}
	slices.Sort(out)
	return out
}

// SampleVertex asks the workers running the vertex's subtasks, each for
// its own, and merges their answers.
func TestSampleVertexAsksTheWorkersOfItsSubtasks(t *testing.T) {
	fc := newFakeCluster(t, 1_000_000)
	b := Backend{D: fc.d}
	id := fc.submit(t.TempDir())
	fc.worker(0, "tm-1")
	fc.worker(0, "tm-2")
	print := restapi.DeriveID(id, "1")
	ctx := context.Background()
	var stacks []flamegraph.Stack
	testwait.EventuallyNil(t, 30*time.Second, "a sampling of the running job", func() error {
		var err error
		stacks, err = b.SampleVertex(ctx, id, print, rest.SampleRequest{NumSamples: 1})
		return err
	})
	// Subtask k runs in slot k: on one TaskManager each.
	got := stackNames(stacks)
	if len(got) != 2 || !strings.HasSuffix(got[0], "/task 1.0 ×1") || !strings.HasSuffix(got[1], "/task 1.1 ×1") || got[0][:len("worker tm-1")] == got[1][:len("worker tm-1")] {
		t.Errorf("the vertex's stacks %q, want one of each subtask, from different workers", got)
	}

	for _, tc := range []struct {
		name string
		req  rest.SampleRequest
		want []string
	}{
		{"one subtask", rest.SampleRequest{Subtasks: []int{1}}, []string{"task 1.1 ×1"}},
		{"a CPU profile", rest.SampleRequest{Subtasks: []int{0}, CPU: true, Duration: time.Second}, []string{"task 1.0/cpu ×1"}},
	} {
		stacks, err := b.SampleVertex(ctx, id, print, tc.req)
		got := stackNames(stacks)
		if err != nil || len(got) != len(tc.want) || !strings.HasSuffix(got[0], tc.want[0]) {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}

	for _, tc := range []struct {
		name       string
		job, vid   string
		req        rest.SampleRequest
		busy       bool
		want       error
		wantInText string
	}{
		{"an unknown job", "0123456789abcdef0123456789abcdef", print, rest.SampleRequest{}, false, restapi.ErrNotFound, "no such job"},
		{"an unknown vertex", id, restapi.DeriveID(id, "7"), rest.SampleRequest{}, false, restapi.ErrNotFound, "has no vertex"},
		{"an unknown subtask", id, print, rest.SampleRequest{Subtasks: []int{2}}, false, restapi.ErrNotFound, "has no subtask 2"},
		{"a worker already profiling", id, print, rest.SampleRequest{CPU: true}, true, restapi.ErrUnavailable, "a CPU profile is already being taken"},
	} {
		fc.mu.Lock()
		fc.sampleBusy = tc.busy
		fc.mu.Unlock()
		_, err := b.SampleVertex(ctx, tc.job, tc.vid, tc.req)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.wantInText) {
			t.Errorf("%s: %v, want %v saying %q", tc.name, err, tc.want, tc.wantInText)
		}
	}

	// A worker that never answers: the sampling ends with its context,
	// and the late answer of nobody is forgotten.
	fc.mu.Lock()
	fc.sampleBusy, fc.sampleSilent = false, true
	fc.mu.Unlock()
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := b.SampleVertex(tctx, id, print, rest.SampleRequest{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a silent worker: %v, want the context's deadline", err)
	}
	a := fc.d.jobs.Load().byID[id].exec.currentAttempt()
	a.samples.Lock()
	waiting := len(a.samples.waiting)
	a.samples.Unlock()
	if waiting != 0 {
		t.Errorf("%d samplings still wait for an answer", waiting)
	}
}

func TestDecodeStacks(t *testing.T) {
	got := decodeStacks(&clusterpb.TaskSamples{Names: []string{"a", "b"}, Stacks: []*clusterpb.StackSample{
		{Frames: []int32{0, 1}, Count: 1},
		{Frames: []int32{0, 5}, Count: 3, OffCpu: true},
	}})
	want := []flamegraph.Stack{
		{Frames: []string{"a", "(frame 5 missing from the worker's answer)"}, Count: 3, OffCPU: true},
		{Frames: []string{"a", "b"}, Count: 1},
	}
	if len(got) != 2 || !slices.Equal(got[0].Frames, want[0].Frames) || got[0].Count != 3 || !got[0].OffCPU || !slices.Equal(got[1].Frames, want[1].Frames) {
		t.Errorf("decodeStacks = %+v, want %+v", got, want)
	}
}
