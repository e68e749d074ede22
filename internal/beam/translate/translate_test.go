package translate

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/internal/beam/wire"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/*.plan")

// render prints a plan: its nodes, each stage's transforms and every wire
// coder spelled out.
func render(p *Plan) string {
	c := p.Components
	var coder func(id string) string
	coder = func(id string) string {
		cd := c.Coders[id]
		urn := strings.TrimSuffix(strings.TrimPrefix(cd.GetSpec().GetUrn(), "beam:coder:"), ":v1")
		if len(cd.GetComponentCoderIds()) == 0 {
			return urn
		}
		var parts []string
		for _, s := range cd.GetComponentCoderIds() {
			parts = append(parts, coder(s))
		}
		return urn + "<" + strings.Join(parts, ", ") + ">"
	}
	var b strings.Builder
	pcs := map[string]bool{}
	for _, n := range p.Nodes {
		fmt.Fprintf(&b, "%s %s %q in=%v out=%v\n", n.ID, n.Kind, n.Name, n.Inputs, n.Outputs)
		if n.Kind == Stage {
			for _, id := range n.Transforms {
				fmt.Fprintf(&b, "  %s (%s)\n", c.Transforms[id].GetUniqueName(), c.Transforms[id].GetSpec().GetUrn())
			}
		}
		for _, pc := range append(slices.Clone(n.Inputs), n.Outputs...) {
			pcs[pc] = true
		}
	}
	var ids []string
	for pc := range pcs {
		ids = append(ids, pc)
	}
	slices.Sort(ids)
	for _, pc := range ids {
		fmt.Fprintf(&b, "wire %s: %s (%s windows)\n", pc, coder(p.Wires[pc].Coder), p.Wires[pc].Window)
	}
	return b.String()
}

func load(t *testing.T) *pipepb.Pipeline {
	// testdata/pipeline.pb is what the Python SDK 2.77.0's PortableRunner
	// submits for ReadFromText → FlatMap → Map → CombinePerKey, Create →
	// WindowInto(FixedWindows) → GroupByKey → MapTuple, and a Flatten of
	// the counts with a second Create into WriteToText (side inputs);
	// testdata/pipeline.py writes it.
	return loadFile(t, "testdata/pipeline.pb")
}

func loadFile(t *testing.T, path string) *pipepb.Pipeline {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p pipepb.Pipeline
	if err := proto.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// TestTranslateSDKPipelines translates what the SDKs submit and compares
// the plan with testdata/*.plan.
func TestTranslateSDKPipelines(t *testing.T) {
	for _, tc := range []struct{ name, pb, plan string }{
		{"Python", "testdata/pipeline.pb", "testdata/pipeline.plan"},
		// The Go SDK 2.77.0's universal runner submits gopipeline.pb for
		// the pipelines of internal/beam/jobservice/testdata/gosdk —
		// WordCount (textio, stats.Count), fixed-window GroupByKey, side
		// inputs, CombinePerKey, bag state and timers, map and set state,
		// session windows, Flatten and Reshuffle — in one pipeline (its
		// --write_pipeline writes it).
		{"Go", "testdata/gopipeline.pb", "testdata/gopipeline.plan"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkPlan(t, loadFile(t, tc.pb), tc.plan) })
	}
}

func checkPlan(t *testing.T, p *pipepb.Pipeline, golden string) {
	plan, err := Translate(p)
	if err != nil {
		t.Fatal(err)
	}
	got := render(plan)
	if *rewrite {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("plan (rerun with -rewrite and review the diff):\n%s\nwant:\n%s", got, want)
	}
	// A pure function: the same plan again, and the input untouched.
	before := proto.Clone(p)
	again, err := Translate(p)
	if err != nil || render(again) != got {
		t.Errorf("a second translation differs (%v)", err)
	}
	if !proto.Equal(before, p) {
		t.Error("Translate changed its input")
	}
	// Every stage has a descriptor naming its data transforms.
	for i := range plan.Nodes {
		n := &plan.Nodes[i]
		if n.Kind != Stage {
			continue
		}
		ep := &pipepb.ApiServiceDescriptor{Url: "localhost:1"}
		d, err := plan.Descriptor("d", n, ep, ep)
		if err != nil {
			t.Fatal(err)
		}
		var port fnpb.RemoteGrpcPort
		if err := proto.Unmarshal(d.Transforms[SourceID(n)].GetSpec().GetPayload(), &port); err != nil || port.GetCoderId() != plan.Wires[n.Inputs[0]].Coder {
			t.Errorf("stage %s: source port %v (%v)", n.ID, &port, err)
		}
		for _, pc := range n.Outputs {
			if d.Transforms[SinkID(n, pc)] == nil {
				t.Errorf("stage %s: no sink for %s", n.ID, pc)
			}
		}
	}
}

func TestTranslateRefuses(t *testing.T) {
	leaf := func(p *pipepb.Pipeline) *pipepb.PTransform {
		for _, tr := range p.Components.Transforms {
			if tr.GetUniqueName() == "Format" {
				return tr
			}
		}
		t.Fatal("no Format transform")
		return nil
	}
	for _, tc := range []struct {
		name   string
		change func(p *pipepb.Pipeline)
		want   string
	}{
		{"an unknown URN", func(p *pipepb.Pipeline) { leaf(p).Spec.Urn = "beam:transform:mystery:v1" },
			`transform "Format" (URN beam:transform:mystery:v1): the Sluice runner does not know this URN`},
		{"an unknown side input access pattern", func(p *pipepb.Pipeline) {
			tr := leaf(p)
			var pd pipepb.ParDoPayload
			_ = proto.Unmarshal(tr.Spec.Payload, &pd)
			pd.SideInputs = map[string]*pipepb.SideInput{"side": {AccessPattern: &pipepb.FunctionSpec{Urn: "beam:side_input:ordered:v1"}}}
			tr.Spec.Payload, _ = proto.Marshal(&pd)
		}, `transform "Format" (URN beam:transform:pardo:v1): side input "side" has access pattern beam:side_input:ordered:v1; only beam:side_input:iterable:v1 and beam:side_input:multimap:v1 are supported yet`},
		{"merging global windows", func(p *pipepb.Pipeline) {
			for _, ws := range p.Components.WindowingStrategies {
				if p.Components.Coders[ws.GetWindowCoderId()].GetSpec().GetUrn() == coderGlobalWindow {
					ws.MergeStatus = pipepb.MergeStatus_NEEDS_MERGE
				}
			}
		}, `transform "GroupAndSum/Group" (URN beam:transform:group_by_key:v1): merging windows (beam:window_fn:global_windows:v1) of a window coder other than interval windows`},
		{"a missing PCollection", func(p *pipepb.Pipeline) { leaf(p).Inputs = map[string]string{"in": "nowhere"} },
			`transform "Format" reads PCollection "nowhere", which no transform produces`},
		{"a processing-time trigger", func(p *pipepb.Pipeline) {
			for _, ws := range p.Components.WindowingStrategies {
				ws.Trigger = &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterEndOfWindow_{AfterEndOfWindow: &pipepb.Trigger_AfterEndOfWindow{
					EarlyFirings: &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterProcessingTime_{AfterProcessingTime: &pipepb.Trigger_AfterProcessingTime{}}}}}}
			}
		}, `transform "GroupAndSum/Group" (URN beam:transform:group_by_key:v1): windowing strategy`},
		{"the retracting mode", func(p *pipepb.Pipeline) {
			for _, ws := range p.Components.WindowingStrategies {
				ws.AccumulationMode = pipepb.AccumulationMode_RETRACTING
			}
		}, `transform "GroupAndSum/Group" (URN beam:transform:group_by_key:v1): the RETRACTING accumulation mode is not supported yet`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := load(t)
			tc.change(p)
			_, err := Translate(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			var ue *UnsupportedError
			if !errors.As(err, &ue) && !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v is neither an UnsupportedError nor ErrInvalid", err)
			}
		})
	}
}

// TestLiftCombine: the Go SDK's CombinePerKey composites (a GroupByKey and
// a combining ParDo) run lifted, unless lifting would change what they
// compute.
func TestLiftCombine(t *testing.T) {
	composite := func(p *pipepb.Pipeline) *pipepb.PTransform {
		for _, tr := range p.Components.Transforms {
			if tr.GetUniqueName() == "combine/CombinePerKey" {
				return tr
			}
		}
		t.Fatal("no combine/CombinePerKey composite")
		return nil
	}
	for _, tc := range []struct {
		name   string
		change func(p *pipepb.Pipeline)
		lifted bool
	}{
		{"default trigger", func(*pipepb.Pipeline) {}, true},
		{"an element-count trigger", func(p *pipepb.Pipeline) {
			tr := composite(p)
			ws := p.Components.WindowingStrategies[p.Components.Pcollections[sortedValues(tr.GetInputs())[0]].GetWindowingStrategyId()]
			ws.Trigger = &pipepb.Trigger{Trigger: &pipepb.Trigger_ElementCount_{ElementCount: &pipepb.Trigger_ElementCount{ElementCount: 2}}}
		}, false},
		{"no accumulator coder", func(p *pipepb.Pipeline) {
			tr := composite(p)
			var cp pipepb.CombinePayload
			_ = proto.Unmarshal(tr.GetSpec().GetPayload(), &cp)
			cp.AccumulatorCoderId = "nowhere"
			tr.Spec.Payload, _ = proto.Marshal(&cp)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := loadFile(t, "testdata/gopipeline.pb")
			tc.change(p)
			plan, err := Translate(p)
			if err != nil {
				t.Fatal(err)
			}
			var phases []string
			for _, n := range plan.Nodes {
				for _, id := range n.Transforms {
					if tr := plan.Components.Transforms[id]; strings.HasPrefix(tr.GetUniqueName(), "combine/CombinePerKey/") {
						phases = append(phases, tr.GetSpec().GetUrn())
					}
				}
			}
			want := []string{URNGroupByKey, URNParDo} // the composite's own
			if tc.lifted {
				want = []string{URNCombinePrecombine, URNGroupByKey, URNCombineMerge, URNCombineExtract}
			}
			if !slices.Equal(phases, want) {
				t.Errorf("the combine runs as %v, want %v", phases, want)
			}
		})
	}
}

// TestTranslateTestStream: a TestStream's events, each element written
// as a windowed value in the global window whose payload has its length
// once, whether the SDK encoded a string in the outer context (Python)
// or nested (Go), or its output's coder is a length prefix of the
// payload's (Go's custom coders); the output takes the payload's coder
// otherwise.
func TestTranslateTestStream(t *testing.T) {
	for _, tc := range []struct {
		name          string
		capabilities  []string
		encoded       []byte
		output, coder string // the output's coder before and after
	}{
		{"Python", []string{"beam:version:sdk_base:apache/beam_python3.11_sdk:2.77.0"}, []byte("ab"), "pickled", "str"},
		{"Go", []string{sdkBaseGo + "apache/beam_go_sdk:2.77.0"}, []byte("\x02ab"), "str", "str"},
		{"Go custom coder", []string{sdkBaseGo + "apache/beam_go_sdk:2.77.0"}, []byte("\x02ab"), "lp_custom", "lp_custom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payloadCoder := "str"
			if tc.output == "lp_custom" {
				payloadCoder = "custom"
			}
			ts, _ := proto.Marshal(&pipepb.TestStreamPayload{CoderId: payloadCoder, Events: []*pipepb.TestStreamPayload_Event{
				{Event: &pipepb.TestStreamPayload_Event_ElementEvent{ElementEvent: &pipepb.TestStreamPayload_Event_AddElements{
					Elements: []*pipepb.TestStreamPayload_TimestampedElement{{EncodedElement: tc.encoded, Timestamp: 5}}}}},
				{Event: &pipepb.TestStreamPayload_Event_ProcessingTimeEvent{ProcessingTimeEvent: &pipepb.TestStreamPayload_Event_AdvanceProcessingTime{AdvanceDuration: 3}}},
				{Event: &pipepb.TestStreamPayload_Event_WatermarkEvent{WatermarkEvent: &pipepb.TestStreamPayload_Event_AdvanceWatermark{NewWatermark: 10}}},
			}})
			ext, _ := proto.Marshal(&pipepb.ExternalPayload{Endpoint: &pipepb.ApiServiceDescriptor{Url: "localhost:1"}})
			p := &pipepb.Pipeline{RootTransformIds: []string{"ts", "pd"}, Components: &pipepb.Components{
				Coders: map[string]*pipepb.Coder{
					"str":       {Spec: &pipepb.FunctionSpec{Urn: coderString}},
					"pickled":   {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:pickled_python:v1"}},
					"custom":    {Spec: &pipepb.FunctionSpec{Urn: "beam:go:coder:custom:v1"}},
					"lp_custom": {Spec: &pipepb.FunctionSpec{Urn: coderLengthPrefix}, ComponentCoderIds: []string{"custom"}},
					"gw":        {Spec: &pipepb.FunctionSpec{Urn: coderGlobalWindow}},
				},
				WindowingStrategies: map[string]*pipepb.WindowingStrategy{"ws": {WindowCoderId: "gw"}},
				Pcollections: map[string]*pipepb.PCollection{
					"events": {UniqueName: "events", CoderId: tc.output, WindowingStrategyId: "ws"},
					"out":    {UniqueName: "out", CoderId: "str", WindowingStrategyId: "ws"},
				},
				Environments: map[string]*pipepb.Environment{"env": {Urn: "beam:env:external:v1", Payload: ext, Capabilities: tc.capabilities}},
				Transforms: map[string]*pipepb.PTransform{
					"ts": {UniqueName: "Events", Spec: &pipepb.FunctionSpec{Urn: URNTestStream, Payload: ts}, Outputs: map[string]string{"out": "events"}},
					"pd": {UniqueName: "Use", Spec: &pipepb.FunctionSpec{Urn: URNParDo}, EnvironmentId: "env",
						Inputs: map[string]string{"in": "events"}, Outputs: map[string]string{"out": "out"}},
				},
			}}
			plan, err := Translate(p)
			if err != nil {
				t.Fatal(err)
			}
			if got := plan.Components.Pcollections["events"].GetCoderId(); got != tc.coder {
				t.Errorf("the output's coder is %s, want %s", got, tc.coder)
			}
			n := plan.Nodes[0]
			if n.Kind != TestStream || len(n.Events) != 3 {
				t.Fatalf("first node %s with %d events, want the TestStream with 3", n.Kind, len(n.Events))
			}
			want := wire.AppendElement(nil, 5, [][]byte{{}}, wire.PaneNoFiring, []byte("ab"))
			if ev := n.Events[0]; ev.Kind != TestElements || len(ev.Elements) != 1 || string(ev.Elements[0]) != string(want) || ev.Timestamps[0] != 5 {
				t.Errorf("element event %+v, want the element %x at 5", ev, want)
			}
			if ev := n.Events[1]; ev.Kind != TestProcessingTime || ev.ProcessingTime != 3 {
				t.Errorf("event 1 %+v, want a processing-time advance of 3", ev)
			}
			if ev := n.Events[2]; ev.Kind != TestWatermark || ev.Watermark != 10 {
				t.Errorf("event 2 %+v, want the watermark 10", ev)
			}
		})
	}
}

// TestTranslatePassThrough: a composite that expanded to nothing (its
// outputs are its inputs, as Python's Create/MaybeReshuffle under
// --streaming) is skipped, whatever its URN; one producing a collection
// of its own is not.
func TestTranslatePassThrough(t *testing.T) {
	for _, tc := range []struct {
		name string
		same bool
	}{{"outputs are inputs", true}, {"a new output", false}} {
		t.Run(tc.name, func(t *testing.T) {
			p := load(t)
			var pc string
			for id := range p.Components.Pcollections {
				pc = id
				break
			}
			out := pc
			if !tc.same {
				out = "nowhere_new"
				p.Components.Pcollections[out] = proto.Clone(p.Components.Pcollections[pc]).(*pipepb.PCollection)
			}
			p.Components.Transforms["maybe"] = &pipepb.PTransform{UniqueName: "MaybeReshuffle",
				Spec:   &pipepb.FunctionSpec{Urn: "beam:transform:pickled_python:v1"},
				Inputs: map[string]string{"in": pc}, Outputs: map[string]string{"out": out}}
			p.RootTransformIds = append(p.RootTransformIds, "maybe")
			_, err := Translate(p)
			if tc.same && err != nil {
				t.Fatalf("a pass-through composite failed translation: %v", err)
			}
			if !tc.same && (err == nil || !strings.Contains(err.Error(), `transform "MaybeReshuffle"`)) {
				t.Fatalf("error %v, want one naming MaybeReshuffle", err)
			}
		})
	}
}
