package jobmanager

import (
	"context"
	"fmt"
	"sort"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/internal/flamegraph"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/rest"
)

// Flame graphs: the REST API asks a JobMaster for the stacks of a vertex's
// subtasks; the JobMaster asks each worker running some of them over its
// session (SampleTasks; the goroutines are the worker's, told apart by
// their pprof labels) and merges the answers (TaskSamples).

// SampleVertex implements rest.Backend.
func (b Backend) SampleVertex(ctx context.Context, jobID, vid string, req rest.SampleRequest) ([]flamegraph.Stack, error) {
	jm, err := b.D.job(jobID)
	if err != nil {
		return nil, restErr(err)
	}
	var chain *graph.Chain
	for _, c := range jm.plan.Chains {
		if vertexID(jobID)(c) == vid {
			chain = c
		}
	}
	if chain == nil {
		return nil, fmt.Errorf("%w: job %s has no vertex %s", restapi.ErrNotFound, jobID, vid)
	}
	subtasks := req.Subtasks
	if len(subtasks) == 0 {
		for i := range chain.Parallelism {
			subtasks = append(subtasks, i)
		}
	}
	var tasks []checkpoint.TaskID
	for _, s := range subtasks {
		if s < 0 || s >= chain.Parallelism {
			return nil, fmt.Errorf("%w: vertex %s (%s) has no subtask %d", restapi.ErrNotFound, vid, chain.Name, s)
		}
		tasks = append(tasks, checkpoint.TaskID{Vertex: chain.ID, Subtask: s})
	}
	a := jm.exec.currentAttempt()
	if a == nil {
		return nil, fmt.Errorf("%w: job %s has not deployed its tasks yet", restapi.ErrConflict, jobID)
	}
	msg := &clusterpb.SampleTasks{Cpu: req.CPU, DurationMs: req.Duration.Milliseconds(), NumSamples: int32(req.NumSamples),
		DelayMs: req.Delay.Milliseconds(), StackDepth: int32(req.StackDepth)}
	return a.sample(ctx, tasks, msg)
}

// sample asks the workers running tasks (of one chain) for their stacks,
// as req says, and merges their answers.
func (a *remoteAttempt) sample(ctx context.Context, tasks []checkpoint.TaskID, req *clusterpb.SampleTasks) ([]flamegraph.Stack, error) {
	a.mu.Lock()
	placed := a.placed
	a.mu.Unlock()
	if !placed {
		return nil, fmt.Errorf("%w: attempt %d of job %s is deploying its tasks", restapi.ErrConflict, a.n, a.x.jm.id)
	}
	states := map[checkpoint.TaskID]restapi.ExecutionState{}
	for _, st := range a.states.list() {
		states[st.Task] = st.State
	}
	// a.where was filled before placed was set, and is not written again.
	bySession := map[*session][]*clusterpb.TaskKey{}
	var order []*session
	for _, t := range tasks {
		if st := states[t]; st != restapi.TaskRunning {
			return nil, fmt.Errorf("%w: subtask %s of job %s is %s, not RUNNING", restapi.ErrConflict, t, a.x.jm.id, st)
		}
		s := a.where[t]
		if s == nil {
			return nil, fmt.Errorf("%w: subtask %s of job %s runs nowhere", restapi.ErrConflict, t, a.x.jm.id)
		}
		if _, ok := bySession[s]; !ok {
			order = append(order, s)
		}
		bySession[s] = append(bySession[s], key(t))
	}
	type pending struct {
		s  *session
		id int64
		ch chan *clusterpb.TaskSamples
	}
	var waits []pending
	defer func() {
		a.samples.Lock()
		for _, p := range waits {
			delete(a.samples.waiting, p.id)
		}
		a.samples.Unlock()
	}()
	for _, s := range order {
		a.samples.Lock()
		a.samples.next++
		p := pending{s: s, id: a.samples.next, ch: make(chan *clusterpb.TaskSamples, 1)}
		if a.samples.waiting == nil {
			a.samples.waiting = map[int64]chan *clusterpb.TaskSamples{}
		}
		a.samples.waiting[p.id] = p.ch
		a.samples.Unlock()
		waits = append(waits, p)
		m := &clusterpb.SampleTasks{Id: p.id, Tasks: bySession[s], Cpu: req.Cpu, DurationMs: req.DurationMs,
			NumSamples: req.NumSamples, DelayMs: req.DelayMs, StackDepth: req.StackDepth}
		s.send(&clusterpb.JobMasterMessage{Msg: &clusterpb.JobMasterMessage_Sample{Sample: m}})
	}
	var lists [][]flamegraph.Stack
	for _, p := range waits {
		select {
		case r := <-p.ch:
			if r.GetError() != "" {
				if r.GetCpuBusy() {
					return nil, fmt.Errorf("%w: %s", restapi.ErrUnavailable, r.GetError())
				}
				return nil, fmt.Errorf("jobmanager: sampling the tasks of %s: %s", p.s, r.GetError())
			}
			lists = append(lists, decodeStacks(r))
		case <-p.s.done:
			return nil, fmt.Errorf("%w: %s ended before it answered the sampling of its tasks", restapi.ErrUnavailable, p.s)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return flamegraph.Merge(lists...), nil
}

// samplesAnswered hands a worker's TaskSamples to the sampling waiting
// for it; a late answer (its sampling gave up) is dropped.
func (a *remoteAttempt) samplesAnswered(r *clusterpb.TaskSamples) {
	a.samples.Lock()
	ch := a.samples.waiting[r.GetId()]
	delete(a.samples.waiting, r.GetId())
	a.samples.Unlock()
	if ch != nil {
		ch <- r // buffered, and answered once
	}
}

// decodeStacks reads the stacks of a worker's answer; a frame index
// outside its names (a broken peer) names the index.
func decodeStacks(r *clusterpb.TaskSamples) []flamegraph.Stack {
	names := r.GetNames()
	out := make([]flamegraph.Stack, 0, len(r.GetStacks()))
	for _, st := range r.GetStacks() {
		s := flamegraph.Stack{Count: st.GetCount(), OffCPU: st.GetOffCpu(), Frames: make([]string, len(st.GetFrames()))}
		for i, f := range st.GetFrames() {
			if f >= 0 && int(f) < len(names) {
				s.Frames[i] = names[f]
			} else {
				s.Frames[i] = fmt.Sprintf("(frame %d missing from the worker's answer)", f)
			}
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, k int) bool { return out[i].Count > out[k].Count })
	return out
}
