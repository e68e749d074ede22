package stream_test

import (
	"testing"

	"github.com/sluice/sluice/stream"
)

// tagged is a record with what the function instance that emitted it knew.
type tagged struct {
	V       int64
	Subtask int // set in Open
	Seen    int // the instance's count of records so far
}

// openState keeps per-subtask state in its fields, as a Flink function
// keeps it in its own fields: Open sets the subtask, every record counts.
type openState struct {
	subtask int
	seen    int
}

func (f *openState) Open(rc stream.RuntimeContext) error {
	f.subtask = rc.Subtask()
	return nil
}

func (f *openState) next(v int64) tagged {
	f.seen++
	return tagged{V: v, Subtask: f.subtask, Seen: f.seen}
}

type processState struct{ openState }

func (f *processState) ProcessElement(_ *stream.ProcessContext, v int64, out stream.Collector[tagged]) error {
	out.Collect(f.next(v))
	return nil
}

type keyedState struct{ openState }

func (f *keyedState) ProcessElement(_ *stream.KeyedContext[int64], v int64, out stream.Collector[tagged]) error {
	out.Collect(f.next(v))
	return nil
}

func (f *keyedState) OnTimer(*stream.OnTimerContext[int64], stream.Timestamp, stream.Collector[tagged]) error {
	return nil
}

// TestEachSubtaskHasItsOwnFunctionInstance: a function that is a pointer
// to a struct is copied per subtask, so what Open and the records set in
// its fields belongs to one subtask (shared, they raced: -race reported it,
// and the records carried another subtask's index and counts).
func TestEachSubtaskHasItsOwnFunctionInstance(t *testing.T) {
	const par, n = 4, 400
	for _, tc := range []struct {
		name  string
		build func(src stream.DataStream[int64]) (stream.DataStream[tagged], *openState)
	}{
		{"Process", func(src stream.DataStream[int64]) (stream.DataStream[tagged], *openState) {
			fn := &processState{}
			return stream.Process(src, fn), &fn.openState
		}},
		{"KeyedProcess", func(src stream.DataStream[int64]) (stream.DataStream[tagged], *openState) {
			fn := &keyedState{}
			return stream.KeyedProcess(stream.KeyBy(src, func(v int64) int64 { return v }), fn), &fn.openState
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(par, stream.Streaming)
			out, orig := tc.build(stream.DataGen(env, n, 0, func(i int64) int64 { return i }))
			sink := newSubtaskSink[tagged]()
			stream.SinkTo(out, sink) // forward: the sink subtask is the function's
			execute(t, env)
			if len(sink.got) != n {
				t.Fatalf("%d records, want %d", len(sink.got), n)
			}
			perSubtask := map[int][]int{}
			for r, s := range sink.got {
				if r.Subtask != s {
					t.Fatalf("record %d written by subtask %d carries subtask %d from Open", r.V, s, r.Subtask)
				}
				perSubtask[s] = append(perSubtask[s], r.Seen)
			}
			for s, seen := range perSubtask {
				// Each instance counted exactly its own records: 1..len.
				got := map[int]bool{}
				for _, c := range seen {
					got[c] = true
				}
				for c := 1; c <= len(seen); c++ {
					if !got[c] {
						t.Fatalf("subtask %d: counts %v are not 1..%d", s, seen, len(seen))
					}
				}
			}
			if orig.subtask != 0 || orig.seen != 0 {
				t.Errorf("the function passed in was used by a subtask: %+v", *orig)
			}
		})
	}
}
