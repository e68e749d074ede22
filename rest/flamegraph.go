package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/internal/flamegraph"
)

// GET /jobs/:jobid/vertices/:vertexid/flamegraph[?type=FULL|ON_CPU|OFF_CPU][&subtaskindex=N]
// answers Flink's VertexFlameGraph: {"endTimestamp": ms, "data": tree}, the
// tree built by package flamegraph from the stacks of the vertex's
// goroutines (Backend.SampleVertex). As Flink's JobVertexFlameGraphHandler
// and its tracker do, it answers at once: the first request of a vertex
// starts sampling in the background and answers {"endTimestamp": -3}
// (waiting); later ones get the cached graph, which a request after
// rest.flamegraph.refresh-interval has it sampled again (still answering
// the old one meanwhile); samples not asked for during
// rest.flamegraph.cleanup-interval are dropped. A vertex (or the subtask
// asked for) that has ended answers {"endTimestamp": -1}, and a server with
// rest.flamegraph.enabled false answers {"endTimestamp": -2} for any.
//
// A sampling that fails (the worker runs another CPU profile, the tasks
// are gone) is answered, once, with its error (and the status its error
// chooses); the next request samples again.

// FlameGraphConfig configures the flame graphs (Flink's rest.flamegraph.*).
type FlameGraphConfig struct {
	// Enabled serves flame graphs (rest.flamegraph.enabled). Default false,
	// as in Flink.
	Enabled bool
	// CleanupInterval drops samples not asked for this long
	// (rest.flamegraph.cleanup-interval). Default 10 minutes.
	CleanupInterval time.Duration
	// RefreshInterval is the age at which samples are taken again
	// (rest.flamegraph.refresh-interval). Default 1 minute.
	RefreshInterval time.Duration
	// NumSamples goroutine samples make a FULL or OFF_CPU graph
	// (rest.flamegraph.num-samples). Default 100.
	NumSamples int
	// Delay is the time between two goroutine samples; an ON_CPU graph's
	// CPU profile runs NumSamples × Delay
	// (rest.flamegraph.delay-between-samples). Default 50 ms.
	Delay time.Duration
	// StackDepth bounds the frames kept of a stack
	// (rest.flamegraph.stack-depth). Default 100.
	StackDepth int
}

func (c *FlameGraphConfig) defaults() {
	if c.CleanupInterval <= 0 {
		c.CleanupInterval = 10 * time.Minute
	}
	if c.RefreshInterval <= 0 {
		c.RefreshInterval = time.Minute
	}
	if c.NumSamples <= 0 {
		c.NumSamples = 100
	}
	if c.Delay <= 0 {
		c.Delay = 50 * time.Millisecond
	}
	if c.StackDepth <= 0 {
		c.StackDepth = 100
	}
}

// SampleRequest says how Backend.SampleVertex samples a vertex.
type SampleRequest struct {
	// Subtasks are the subtasks to sample; empty: every subtask of the
	// vertex.
	Subtasks []int
	// CPU asks for a CPU profile of Duration (ON_CPU); else NumSamples
	// goroutine samples Delay apart (FULL and OFF_CPU).
	CPU        bool
	Duration   time.Duration
	NumSamples int
	Delay      time.Duration
	// StackDepth is the most frames kept of a stack.
	StackDepth int
}

type fgKey struct {
	job, vertex string
	subtask     int // -1: every subtask
	cpu         bool
}

type fgEntry struct {
	stacks  []flamegraph.Stack
	end     int64 // ms, when the stacks were taken; 0: none yet
	err     error // the last sampling's failure, answered once
	running bool
	touched int64 // ms, last asked for
}

// flameGraphs is the cache of samples and owns the goroutines that take
// them.
type flameGraphs struct {
	wg sync.WaitGroup
	mu struct {
		sync.Mutex
		entries map[fgKey]*fgEntry
		closed  bool
	}
}

func (f *flameGraphs) close() {
	f.mu.Lock()
	f.mu.closed = true
	f.mu.Unlock()
	f.wg.Wait()
}

func (s *Server) getVertexFlameGraph(w http.ResponseWriter, r *http.Request) {
	cfg := s.cfg.FlameGraph
	if !cfg.Enabled {
		writeJSON(w, http.StatusOK, restapi.VertexFlameGraph{EndTimestamp: restapi.FlameGraphDisabled})
		return
	}
	typ, err := flamegraph.ParseType(r.URL.Query().Get("type"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	d, v, ok := s.vertex(w, r)
	if !ok {
		return
	}
	key := fgKey{job: d.ID, vertex: v.ID, subtask: -1, cpu: typ.CPU()}
	ended := terminalState(v.Status)
	if raw := r.URL.Query().Get("subtaskindex"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("subtaskindex %q is not a number", raw))
			return
		}
		if n < 0 || n >= v.Parallelism {
			writeError(w, http.StatusNotFound, fmt.Sprintf("Invalid subtask index for vertex %s: %d (its parallelism is %d)", v.ID, n, v.Parallelism))
			return
		}
		key.subtask = n
		for _, st := range v.Subtasks {
			if st.Subtask == n {
				ended = terminalState(st.Status)
			}
		}
	}
	if ended || d.State.IsGloballyTerminal() {
		writeJSON(w, http.StatusOK, restapi.VertexFlameGraph{EndTimestamp: restapi.FlameGraphTerminated})
		return
	}
	stacks, end, err := s.flameGraphStacks(key, cfg)
	switch {
	case err != nil:
		s.writeBackendError(w, r, err)
	case end == 0:
		writeJSON(w, http.StatusOK, restapi.VertexFlameGraph{EndTimestamp: restapi.FlameGraphWaiting})
	default:
		tree := flamegraph.Tree(typ, stacks)
		writeJSON(w, http.StatusOK, restapi.VertexFlameGraph{EndTimestamp: end, Data: &tree})
	}
}

func terminalState(s restapi.ExecutionState) bool {
	return s == restapi.TaskFinished || s == restapi.TaskCanceled || s == restapi.TaskFailed
}

// flameGraphStacks returns the cached stacks of k and when they were
// taken (0: none yet), or the error of the sampling that failed; it
// starts sampling when there is nothing cached or the cache is older than
// the refresh interval.
func (s *Server) flameGraphStacks(k fgKey, cfg FlameGraphConfig) ([]flamegraph.Stack, int64, error) {
	f := &s.flames
	now := s.cfg.Clock.NowMillis()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.entries == nil {
		f.mu.entries = map[fgKey]*fgEntry{}
	}
	for ek, e := range f.mu.entries {
		if !e.running && now-e.touched >= cfg.CleanupInterval.Milliseconds() {
			delete(f.mu.entries, ek)
		}
	}
	e := f.mu.entries[k]
	if e == nil {
		e = &fgEntry{}
		f.mu.entries[k] = e
	}
	e.touched = now
	if e.err != nil {
		err := e.err
		e.err = nil
		if e.end == 0 {
			delete(f.mu.entries, k)
		}
		return nil, 0, err
	}
	if !e.running && !f.mu.closed && (e.end == 0 || now-e.end >= cfg.RefreshInterval.Milliseconds()) {
		e.running = true
		req := SampleRequest{CPU: k.cpu, Duration: time.Duration(cfg.NumSamples) * cfg.Delay, NumSamples: cfg.NumSamples,
			Delay: cfg.Delay, StackDepth: cfg.StackDepth}
		if k.subtask >= 0 {
			req.Subtasks = []int{k.subtask}
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			s.sample(k, req)
		}()
	}
	return e.stacks, e.end, nil
}

// sample takes k's samples and caches them, on a goroutine of the
// server's: its context ends when the server stops.
func (s *Server) sample(k fgKey, req SampleRequest) {
	// The sampling's own time, then the usual bound on a Backend call.
	ctx, cancel := context.WithTimeout(s.ctx, req.Duration+s.cfg.BackendTimeout)
	defer cancel()
	stacks, err := s.backend.SampleVertex(ctx, k.job, k.vertex, req)
	if err != nil && !errors.Is(err, context.Canceled) {
		s.log.Warn("sampling a vertex for its flame graph failed", "job", k.job, "vertex", k.vertex, "subtask", k.subtask, "cpu", k.cpu, "err", err)
	}
	f := &s.flames
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.mu.entries[k]
	if e == nil { // cannot happen: a running entry is never dropped
		return
	}
	e.running = false
	if err != nil {
		e.err = err
		return
	}
	e.stacks, e.end = stacks, s.cfg.Clock.NowMillis()
}
