package worker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/internal/flamegraph"
	"github.com/sluice/sluice/internal/flamegraph/sample"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
)

// sampleTasks answers the JobMaster's SampleTasks on a goroutine of its
// own (a CPU profile takes seconds; the session's other messages go on),
// which shutdown stops and waits for.
func (w *worker) sampleTasks(req *clusterpb.SampleTasks) {
	w.samplers.Add(1)
	go func() {
		defer w.samplers.Done()
		out := &clusterpb.TaskSamples{Id: req.GetId()}
		stacks, err := w.sample(w.samplingCtx, req)
		if err != nil {
			if w.samplingCtx.Err() != nil {
				return // the worker is shutting down, and its session ends
			}
			out.Error = fmt.Sprintf("worker %s: %v", w.dep.WorkerID, err)
			out.CpuBusy = errors.Is(err, sample.ErrCPUBusy)
		}
		encodeStacks(out, stacks)
		w.send(&clusterpb.WorkerMessage{Msg: &clusterpb.WorkerMessage_Samples{Samples: out}})
	}()
}

// sample takes the profile req asks for and keeps the stacks of the
// goroutines of its tasks, which must run here.
func (w *worker) sample(ctx context.Context, req *clusterpb.SampleTasks) ([]flamegraph.Stack, error) {
	tasks := req.GetTasks()
	if len(tasks) == 0 {
		return nil, fmt.Errorf("no task to sample")
	}
	chain := tasks[0].GetChain()
	m := flamegraph.Match{jobmaster.LabelJob: {w.dep.JobID}, jobmaster.LabelVertex: {strconv.Itoa(int(chain))}}
	for _, k := range tasks {
		t := taskID(k)
		if k.GetChain() != chain {
			return nil, fmt.Errorf("the tasks to sample are of more than one chain (%d and %d)", chain, k.GetChain())
		}
		if !w.here[t] {
			return nil, fmt.Errorf("task %s does not run here", t)
		}
		m[jobmaster.LabelSubtask] = append(m[jobmaster.LabelSubtask], strconv.Itoa(t.Subtask))
	}
	depth := int(req.GetStackDepth())
	if req.GetCpu() {
		return w.sampler.CPU(ctx, time.Duration(req.GetDurationMs())*time.Millisecond, m, depth)
	}
	return w.sampler.Goroutines(ctx, int(req.GetNumSamples()), time.Duration(req.GetDelayMs())*time.Millisecond, m, depth)
}

// encodeStacks puts stacks into out, their frame names in its table.
func encodeStacks(out *clusterpb.TaskSamples, stacks []flamegraph.Stack) {
	index := map[string]int32{}
	for _, s := range stacks {
		st := &clusterpb.StackSample{Count: s.Count, OffCpu: s.OffCPU, Frames: make([]int32, len(s.Frames))}
		for i, f := range s.Frames {
			n, ok := index[f]
			if !ok {
				n = int32(len(out.Names))
				index[f] = n
				out.Names = append(out.Names, f)
			}
			st.Frames[i] = n
		}
		out.Stacks = append(out.Stacks, st)
	}
}
