// Package runner runs a translated Beam pipeline on the Sluice engine: it
// starts the pipeline's SDK harnesses through their external worker
// pools, builds one core job graph from the plan — harness stages as
// operators that send bundles to a harness over the Fn API, Impulse,
// GroupByKey, Flatten and Reshuffle as engine operators over Bytes
// records (each an encoded windowed value) — and runs it on the embedded
// engine.
package runner

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/sluice/sluice/internal/beam/fnapi"
	"github.com/sluice/sluice/internal/beam/translate"
	"github.com/sluice/sluice/internal/beam/wire"
	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
)

// URNExternalEnv is the environment of a harness started by an external
// worker pool (what the Python SDK's LOOPBACK environment becomes).
const URNExternalEnv = "beam:env:external:v1"

// Options configure a run.
type Options struct {
	// Parallelism of every node but Impulse (default 1).
	Parallelism int
	// BundleSize is the most elements a stage sends in one bundle
	// (default 1000); a bundle also ends at each watermark and at the end
	// of input.
	BundleSize int
	// ConnectTimeout bounds the wait for a started harness to connect
	// (default 60 s).
	ConnectTimeout time.Duration
	// Log receives the runner's and the engine's logs (default: discarded).
	Log *slog.Logger
	// PipelineOptions are handed to the harnesses (Provision).
	PipelineOptions *structpb.Struct
	// Metrics, if set, aggregates the harnesses' monitoring infos.
	Metrics *Metrics
	// Streaming marks a pipeline submitted with --streaming; one with an
	// unbounded PCollection is streaming too. A bounded one's triggers
	// see each window's elements at once (as Beam's batch runners do).
	Streaming bool
	// OnStarted, if set, is called once the harnesses are connected and
	// the engine job started.
	OnStarted func()
}

func (o *Options) defaults() {
	if o.Parallelism <= 0 {
		o.Parallelism = 1
	}
	if o.BundleSize <= 0 {
		o.BundleSize = 1000
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 60 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// EnvironmentError is an environment the runner cannot start.
type EnvironmentError struct {
	Environment string
	URN         string
}

func (e *EnvironmentError) Error() string {
	return fmt.Sprintf("beam runner: environment %q is %s; the Sluice runner starts only external (LOOPBACK) environments (%s) so far: submit with --environment_type=LOOPBACK", e.Environment, e.URN, URNExternalEnv)
}

// CheckEnvironments reports the stages' environments the runner cannot
// start.
func CheckEnvironments(plan *translate.Plan) error {
	var errs []error
	seen := map[string]bool{}
	for _, n := range plan.Nodes {
		if n.Kind != translate.Stage || seen[n.Environment] {
			continue
		}
		seen[n.Environment] = true
		if _, err := poolOf(plan, n.Environment); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func poolOf(plan *translate.Plan, env string) (string, error) {
	e := plan.Components.GetEnvironments()[env]
	if e.GetUrn() != URNExternalEnv {
		return "", &EnvironmentError{Environment: env, URN: e.GetUrn()}
	}
	var ext pipepb.ExternalPayload
	if err := proto.Unmarshal(e.GetPayload(), &ext); err != nil {
		return "", fmt.Errorf("beam runner: environment %q: external payload: %w", env, err)
	}
	if ext.GetEndpoint().GetUrl() == "" {
		return "", fmt.Errorf("beam runner: environment %q has no worker pool endpoint", env)
	}
	return ext.GetEndpoint().GetUrl(), nil
}

var runs atomic.Int64

// Run runs the plan to its end, or until ctx is cancelled (then it
// cancels the job and returns ctx's error).
func Run(ctx context.Context, srv *fnapi.Server, jobID string, plan *translate.Plan, opts Options) error {
	opts.defaults()
	log := opts.Log.With("job", jobID)
	// One harness per environment, shared by the stages' subtasks.
	workers := map[string]*fnapi.Worker{}
	defer func() {
		for env, w := range workers {
			srv.Forget(w)
			pool, _ := poolOf(plan, env)
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := fnapi.StopWorker(sctx, pool, w.ID()); err != nil {
				log.Debug("stopping SDK harness", "worker", w.ID(), "err", err)
			}
			cancel()
		}
	}()
	run := runs.Add(1)
	descriptors := map[string]map[string]string{} // stage -> residual transform ("": main) -> descriptor
	for i := range plan.Nodes {
		n := &plan.Nodes[i]
		if n.Kind != translate.Stage {
			continue
		}
		if _, ok := workers[n.Environment]; !ok {
			pool, err := poolOf(plan, n.Environment)
			if err != nil {
				return err
			}
			w := srv.NewWorker(fmt.Sprintf("%s-%d-%s", jobID, run, n.Environment), &fnpb.ProvisionInfo{
				PipelineOptions: opts.PipelineOptions,
				ControlEndpoint: srv.Descriptor(), LoggingEndpoint: srv.Descriptor(), ArtifactEndpoint: srv.Descriptor(),
			})
			workers[n.Environment] = w
			if err := srv.StartWorker(ctx, pool, w, nil); err != nil {
				return err
			}
			cctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
			err = w.WaitConnected(cctx)
			cancel()
			if err != nil {
				return err
			}
			log.Info("SDK harness connected", "worker", w.ID(), "environment", n.Environment, "pool", pool)
		}
		id := fmt.Sprintf("%s-%d-%s", jobID, run, n.ID)
		d, err := plan.Descriptor(id, n, srv.Descriptor(), srv.Descriptor())
		if err != nil {
			return err
		}
		srv.RegisterDescriptor(d)
		descriptors[n.ID] = map[string]string{"": id}
		for _, tid := range n.Transforms {
			if _, ok := plan.Residuals[tid]; !ok {
				continue
			}
			rid := id + "/residual/" + tid
			rd, _, err := plan.ResidualDescriptor(rid, n, tid, srv.Descriptor(), srv.Descriptor())
			if err != nil {
				return err
			}
			srv.RegisterDescriptor(rd)
			descriptors[n.ID][tid] = rid
		}
	}
	g, err := Graph(plan, jobID, func(n *translate.Node) Harness {
		return harness{w: workers[n.Environment], descriptors: descriptors[n.ID], metrics: opts.Metrics}
	}, opts)
	if err != nil {
		return err
	}
	gp, err := graph.BuildPlan(g)
	if err != nil {
		return fmt.Errorf("beam runner: planning job %s: %w", jobID, err)
	}
	job, err := jobmaster.Start(ctx, gp, jobmaster.Options{JobID: jobID, Log: log})
	if err != nil {
		return fmt.Errorf("beam runner: starting job %s: %w", jobID, err)
	}
	stop := context.AfterFunc(ctx, job.Cancel)
	defer stop()
	if opts.OnStarted != nil {
		opts.OnStarted()
	}
	if _, err := job.Wait(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	return ctx.Err()
}

// Harness runs bundles of one stage: of its main descriptor (residual
// "") or of the one feeding residuals to the transform residual.
type Harness interface {
	ProcessBundle(ctx context.Context, residual, input string, data []byte, outputs []string, state fnapi.StateFunc, timers *fnapi.Timers) (map[string][]byte, []*fnpb.DelayedBundleApplication, error)
}

type harness struct {
	w           *fnapi.Worker
	descriptors map[string]string
	metrics     *Metrics
}

func (h harness) ProcessBundle(ctx context.Context, residual, input string, data []byte, outputs []string, state fnapi.StateFunc, timers *fnapi.Timers) (map[string][]byte, []*fnpb.DelayedBundleApplication, error) {
	d, ok := h.descriptors[residual]
	if !ok {
		return nil, nil, fmt.Errorf("beam runner: transform %s takes no residuals", residual)
	}
	var metrics func([]*pipepb.MonitoringInfo)
	if h.metrics != nil {
		metrics = h.metrics.Add
	}
	return h.w.ProcessBundle(ctx, d, input, data, outputs, state, metrics, timers)
}

// Graph builds the core job graph of plan; harnessOf gives each stage's
// harness.
func Graph(plan *translate.Plan, name string, harnessOf func(*translate.Node) Harness, opts Options) (*graph.JobGraph, error) {
	opts.defaults()
	b := core.NewBuilder(opts.Parallelism, 0)
	streams := map[string]core.Stream{}
	par := map[string]int{}
	// input connects pc into a node of parallelism p.
	input := func(pc string, p int) core.Stream {
		s := streams[pc]
		if par[pc] != p {
			return s.Rebalance()
		}
		return s
	}
	for i := range plan.Nodes {
		n := &plan.Nodes[i]
		uid := "beam/" + n.ID
		switch n.Kind {
		case translate.Impulse:
			s := core.AddSource(b, core.SourceSpec{
				Name: n.Name, Out: core.Bytes(), Bounded: true, AssignsWatermarks: true,
				New: func() core.Source { return &impulse{} },
			}).UID(uid).SetParallelism(1)
			streams[n.Outputs[0]], par[n.Outputs[0]] = s, 1
		case translate.TestStream:
			events := n.Events
			s := core.AddSource(b, core.SourceSpec{
				Name: n.Name, Out: core.Bytes(), Bounded: true, AssignsWatermarks: true,
				Props: map[string]string{"events": strconv.Itoa(len(events))},
				New:   func() core.Source { return &testStream{events: events} },
			}).UID(uid).SetParallelism(1)
			streams[n.Outputs[0]], par[n.Outputs[0]] = s, 1
		case translate.Stage:
			sides := map[string]core.Type{}
			windows := map[string]wire.WindowKind{}
			for _, pc := range n.Outputs {
				sides[pc] = core.Bytes()
				windows[pc] = plan.Wires[pc].Window
			}
			h := harnessOf(n)
			source := translate.SourceID(n)
			residualSinks := map[string][]string{}
			for _, tid := range n.Transforms {
				if _, ok := plan.Residuals[tid]; ok {
					_, rs, err := plan.ResidualDescriptor("", n, tid, nil, nil)
					if err != nil {
						return nil, err
					}
					residualSinks[tid] = rs
				}
			}
			sinks := map[string]string{}
			var sinkIDs []string
			for _, pc := range n.Outputs {
				sinks[translate.SinkID(n, pc)] = pc
				sinkIDs = append(sinkIDs, translate.SinkID(n, pc))
			}
			spec := core.OperatorSpec{
				Kind: "beam-stage", Name: n.Name, Out: core.Bytes(), Sides: sides,
				Props: map[string]string{"transforms": strconv.Itoa(len(n.Transforms)), "side-inputs": strconv.Itoa(len(n.SideInputs))},
			}
			var s core.Stream
			if n.Keyed {
				spec.Props["keyed"] = "true"
				families := n.Timers
				spec.New = func() core.Operator {
					st := &stage{h: h, source: source, sinks: sinks, sinkIDs: sinkIDs, residualSinks: residualSinks, windows: windows, bundleSize: opts.BundleSize, user: newUserState()}
					if len(families) > 0 {
						st.timers = newTimerStore(families)
					}
					return st
				}
				s = core.Transform(streams[n.Inputs[0]].KeyBy(keyOf(plan.Wires[n.Inputs[0]])), spec)
			} else if len(n.SideInputs) == 0 {
				spec.New = func() core.Operator {
					return &stage{h: h, source: source, sinks: sinks, sinkIDs: sinkIDs, residualSinks: residualSinks, windows: windows, bundleSize: opts.BundleSize}
				}
				s = core.Transform(input(n.Inputs[0], opts.Parallelism), spec)
			} else {
				// Every subtask reads all of each side input: broadcast,
				// tagged with the side input's index, merged into the
				// stage's second input.
				var union core.Stream
				sideWires := make([]translate.Wire, len(n.SideInputs))
				for j, si := range n.SideInputs {
					sideWires[j] = plan.Wires[si.PCollection]
					tagged := core.Transform(streams[si.PCollection].Broadcast(), core.OperatorSpec{
						Kind: "beam-side-input", Name: n.Name + " side input " + si.Tag, Out: core.Bytes(),
						New: func() core.Operator { return tagSide(j) },
					}).UID(uid + "/side/" + strconv.Itoa(j))
					if j == 0 {
						union = tagged
						continue
					}
					union = core.Transform2(union, tagged, core.OperatorSpec{Kind: "beam-side-input", Name: n.Name + " side inputs", Out: core.Bytes(),
						New: func() core.Operator { return pass{} }}).UID(uid + "/sides/" + strconv.Itoa(j))
				}
				sideInputs := n.SideInputs
				spec.New = func() core.Operator {
					st := &stage{h: h, source: source, sinks: sinks, sinkIDs: sinkIDs, residualSinks: residualSinks, windows: windows, bundleSize: opts.BundleSize}
					st.sides = newSideInputs(sideInputs, sideWires)
					return st
				}
				s = core.Transform2(input(n.Inputs[0], opts.Parallelism), union, spec)
			}
			s = s.UID(uid)
			for _, pc := range n.Outputs {
				streams[pc], par[pc] = s.SideOutput(pc), opts.Parallelism
			}
		case translate.GroupByKey:
			kind := plan.Wires[n.Inputs[0]].Window
			s := core.Transform(streams[n.Inputs[0]].KeyBy(keyOf(plan.Wires[n.Inputs[0]])), core.OperatorSpec{
				Kind: "beam-group-by-key", Name: n.Name, Out: core.Bytes(), NeedsWatermarks: true,
				Props: map[string]string{"window": kind.String(), "merging": strconv.FormatBool(n.Merging),
					"trigger": n.Windowing.Trigger.Trigger.String(), "accumulation": strconv.Itoa(int(n.Windowing.Trigger.Mode)),
					"allowed-lateness": strconv.FormatInt(n.Windowing.AllowedLateness, 10)},
				New: func() core.Operator {
					return &groupByKey{window: kind, merging: n.Merging, windowing: n.Windowing, batch: !opts.Streaming && !plan.Unbounded}
				},
			}).UID(uid)
			streams[n.Outputs[0]], par[n.Outputs[0]] = s, opts.Parallelism
		case translate.Flatten:
			var s core.Stream
			for j, pc := range n.Inputs {
				in := input(pc, opts.Parallelism)
				if j == 0 {
					s = core.Transform(in, core.OperatorSpec{Kind: "beam-flatten", Name: n.Name, Out: core.Bytes(), New: func() core.Operator { return pass{} }}).UID(uid)
					continue
				}
				s = core.Transform2(s, in, core.OperatorSpec{Kind: "beam-flatten", Name: n.Name, Out: core.Bytes(), New: func() core.Operator { return pass{} }}).UID(uid + "/" + strconv.Itoa(j))
			}
			if len(n.Inputs) == 0 {
				// A flatten of nothing is empty.
				s = core.AddSource(b, core.SourceSpec{Name: n.Name, Out: core.Bytes(), Bounded: true, AssignsWatermarks: true,
					New: func() core.Source { return &impulse{done: true} }}).UID(uid).SetParallelism(1)
				par[n.Outputs[0]] = 1
			} else {
				par[n.Outputs[0]] = opts.Parallelism
			}
			streams[n.Outputs[0]] = s
		case translate.Reshuffle:
			s := core.Transform(streams[n.Inputs[0]].Rebalance(), core.OperatorSpec{
				Kind: "beam-reshuffle", Name: n.Name, Out: core.Bytes(), New: func() core.Operator { return pass{} },
			}).UID(uid)
			streams[n.Outputs[0]], par[n.Outputs[0]] = s, opts.Parallelism
		}
	}
	g, err := b.Build(name, map[string]string{"beam": "true"})
	if err != nil {
		return nil, fmt.Errorf("beam runner: building the job graph: %w", err)
	}
	return g, nil
}

// impulse emits Impulse's one element.
type impulse struct{ done bool }

func (s *impulse) EmitNext(ctx *core.Context) (core.SourceStatus, error) {
	if !s.done {
		s.done = true
		if err := ctx.Emit(core.BytesRecord(wire.ImpulseElement()), wire.MinTimestamp); err != nil {
			return core.EndOfInput, err
		}
	}
	return core.EndOfInput, nil
}

// testStream emits a TestStream's events in order, one event per call:
// elements with their timestamps, watermark advances as watermarks (so
// elements behind the watermark are late downstream). A processing-time
// advance is an ordering point only: the engine's processing-time clock
// is not driven by it (the runner has no processing-time triggers).
type testStream struct {
	events []translate.TestEvent
	next   int
}

func (s *testStream) EmitNext(ctx *core.Context) (core.SourceStatus, error) {
	if s.next == len(s.events) {
		return core.EndOfInput, nil
	}
	ev := s.events[s.next]
	s.next++
	switch ev.Kind {
	case translate.TestElements:
		for i, e := range ev.Elements {
			if err := ctx.Emit(core.BytesRecord(e), ev.Timestamps[i]); err != nil {
				return core.EndOfInput, err
			}
		}
	case translate.TestWatermark:
		if err := ctx.EmitWatermark(ev.Watermark); err != nil {
			return core.EndOfInput, err
		}
	}
	if s.next == len(s.events) {
		return core.EndOfInput, nil
	}
	return core.MoreAvailable, nil
}

// keyOf selects the encoded key of a KV<LP<K>, LP<V>> element, or of a
// GroupByKey's output KV<LP<K>, Iterable<LP<V>>>.
func keyOf(w translate.Wire) core.KeySelector {
	return func(r core.Record, dst []byte) []byte {
		e, err := wire.Record(r.Bytes(), w.Window, !w.Grouped)
		if err != nil {
			return dst
		}
		k, err := wire.Key(e.Payload)
		if err != nil {
			return dst
		}
		return append(dst, k...)
	}
}

// tagSide prefixes a side input's records with its index.
type tagSide int

func (t tagSide) ProcessElement(ctx *core.Context, _ int, r core.Record, ts int64) error {
	b := binary.AppendUvarint(make([]byte, 0, len(r.Bytes())+2), uint64(t))
	return ctx.Emit(core.BytesRecord(append(b, r.Bytes()...)), ts)
}

// pass hands records on (Flatten, Reshuffle).
type pass struct{}

func (pass) ProcessElement(ctx *core.Context, _ int, r core.Record, ts int64) error {
	return ctx.Emit(r, ts)
}
