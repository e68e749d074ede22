// Package translate compiles a Beam pipeline (the runner API proto) into a
// plan of nodes the Beam runner turns into one core job graph: harness
// stages — chains of transforms fused to run in an SDK harness — and the
// primitives the engine runs itself (Impulse, GroupByKey, Flatten,
// Reshuffle). It is a pure function of the proto: no I/O, no engine types.
//
// The plan also fixes the wire format of every PCollection that crosses
// between nodes: a windowed value whose payload (and any window the
// runner cannot read) is length-prefixed, and whose key and value are
// length-prefixed separately where a GroupByKey reads them (see package
// wire). The SDK harness is told these coders in its bundle descriptors,
// so the runner never needs to understand an SDK's own coders.
package translate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/internal/beam/trigger"
	"github.com/sluice/sluice/internal/beam/wire"
)

// URNs the runner knows.
const (
	URNImpulse    = "beam:transform:impulse:v1"
	URNGroupByKey = "beam:transform:group_by_key:v1"
	URNFlatten    = "beam:transform:flatten:v1"
	URNReshuffle  = "beam:transform:reshuffle:v1"
	URNParDo      = "beam:transform:pardo:v1"
	URNTestStream = "beam:transform:teststream:v1"

	URNCombinePerKey     = "beam:transform:combine_per_key:v1"
	URNCombinePrecombine = "beam:transform:combine_per_key_precombine:v1"
	URNCombineMerge      = "beam:transform:combine_per_key_merge_accumulators:v1"
	URNCombineExtract    = "beam:transform:combine_per_key_extract_outputs:v1"

	URNPairWithRestriction  = "beam:transform:sdf_pair_with_restriction:v1"
	URNSplitAndSize         = "beam:transform:sdf_split_and_size_restrictions:v1"
	URNProcessSizedElements = "beam:transform:sdf_process_sized_element_and_restrictions:v1"

	URNDataSource = "beam:runner:source:v1"
	URNDataSink   = "beam:runner:sink:v1"

	coderBytes        = "beam:coder:bytes:v1"
	coderString       = "beam:coder:string_utf8:v1"
	coderKV           = "beam:coder:kv:v1"
	coderIterable     = "beam:coder:iterable:v1"
	coderLengthPrefix = "beam:coder:length_prefix:v1"
	coderWindowed     = "beam:coder:windowed_value:v1"
	coderGlobalWindow = "beam:coder:global_window:v1"
	coderInterval     = "beam:coder:interval_window:v1"
	coderDouble       = "beam:coder:double:v1"
)

// sdkURNs are the leaf transforms an SDK harness executes inside a stage.
var sdkURNs = map[string]bool{
	URNParDo:                                                    true,
	URNPairWithRestriction:                                      true,
	URNSplitAndSize:                                             true,
	URNProcessSizedElements:                                     true,
	"beam:transform:window_into:v1":                             true,
	"beam:transform:map_windows:v1":                             true,
	"beam:transform:combine_per_key_precombine:v1":              true,
	"beam:transform:combine_per_key_merge_accumulators:v1":      true,
	"beam:transform:combine_per_key_extract_outputs:v1":         true,
	"beam:transform:combine_grouped_values:v1":                  true,
	"beam:transform:combine_per_key_convert_to_accumulators:v1": true,
	"beam:transform:to_string:v1":                               true,
}

// Kind is what runs a node.
type Kind int

// Node kinds.
const (
	// Stage is a fused chain of transforms run by an SDK harness.
	Stage Kind = iota
	// Impulse emits one empty element in the global window.
	Impulse
	// GroupByKey groups by encoded key and window, emitting each group
	// when the watermark passes the end of its window.
	GroupByKey
	// Flatten merges its inputs.
	Flatten
	// Reshuffle redistributes its input.
	Reshuffle
	// TestStream emits a TestStream's events: elements with their
	// timestamps and watermark advances, in order.
	TestStream
)

func (k Kind) String() string {
	return [...]string{"stage", "impulse", "group-by-key", "flatten", "reshuffle", "test-stream"}[k]
}

// Node is one node of the plan.
type Node struct {
	// ID is unique in the plan ("s0", "gbk1"...).
	ID   string
	Kind Kind
	// Name is the pipeline's name for it: a transform's unique name, or
	// the first and last of a stage's.
	Name string
	// Inputs are the PCollections it consumes from other nodes (a stage
	// has exactly one).
	Inputs []string
	// Outputs are the PCollections it produces for other nodes.
	Outputs []string
	// Transforms are a stage's transforms in topological order, or the
	// engine primitive's own transform.
	Transforms []string
	// Environment is a stage's SDK environment.
	Environment string
	// SideInputs are a stage's side inputs (their PCollections follow
	// the main input in Inputs). A stage with side inputs starts at the
	// one transform that reads them.
	SideInputs []SideInput
	// Merging marks a GroupByKey of merging (session) windows: interval
	// windows merged per key where they overlap.
	Merging bool
	// Keyed marks a stage that starts at a stateful ParDo: its input is
	// partitioned by encoded key, and the harness keeps its user state
	// (bags) in the runner.
	Keyed bool
	// Timers are the timer families of a keyed stage's ParDo.
	Timers []TimerFamily
	// Windowing is a GroupByKey's trigger, accumulation mode and allowed
	// lateness.
	Windowing Windowing
	// Events are a TestStream's events.
	Events []TestEvent
}

// Windowing is how a GroupByKey fires its windows.
type Windowing struct {
	Trigger trigger.Options
	// AllowedLateness (ms): a window's state is kept, and its late
	// elements fire late panes, until the watermark passes its end plus
	// this; later elements are dropped.
	AllowedLateness int64
}

// TestEvent is one event of a TestStream: elements (each a windowed
// value in the wire encoding of the TestStream's output, in the global
// window, with its timestamp), a watermark advance, or a processing-time
// advance.
type TestEvent struct {
	Elements   [][]byte
	Timestamps []int64
	// Watermark is the new watermark of a watermark event (ms).
	Watermark int64
	// ProcessingTime is the advance (ms) of a processing-time event.
	ProcessingTime int64
	Kind           TestEventKind
}

// TestEventKind is the kind of a TestEvent.
type TestEventKind int

// TestStream event kinds.
const (
	TestElements TestEventKind = iota
	TestWatermark
	TestProcessingTime
)

// TimerFamily is a timer family of a stateful ParDo, with the coder the
// harness is told to use for it (its key and any window the runner cannot
// read length-prefixed) and how to read its windows.
type TimerFamily struct {
	Transform, Family string
	Coder             string
	Window            wire.WindowKind
	EventTime         bool
}

// SideInput is an iterable side input of a stage's transform.
type SideInput struct {
	// Transform and Tag name it in the harness's state requests.
	Transform, Tag string
	// PCollection is the collection it reads.
	PCollection string
	// Multimap: read by key (beam:side_input:multimap:v1), not whole.
	Multimap bool
	// Unframed: an iterable side input of a collection the same
	// transform also reads as a multimap, so the harness decodes its
	// elements with the KV<LP<K>, LP<V>> coder, not length-prefixed.
	Unframed bool
}

// The access patterns of the side inputs the runner serves.
const (
	URNIterableSideInput = "beam:side_input:iterable:v1"
	URNMultimapSideInput = "beam:side_input:multimap:v1"
)

// Wire is the encoding of a PCollection between nodes.
type Wire struct {
	// Coder is the windowed-value coder's ID in Plan.Components.
	Coder string
	// Window says how to read its windows.
	Window wire.WindowKind
	// Grouped marks a GroupByKey's output, whose payload —
	// kv<LP<K>, iterable<LP<V>>> — is not length-prefixed: the SDKs
	// read a grouped input only in that coder (the Go SDK's data source
	// groups by a KV-of-iterable coder, never by a length prefix of one).
	// The runner writes it with wire.AppendGroupedElement and reads it
	// back with wire.Record.
	Grouped bool
}

// Plan is a translated pipeline.
type Plan struct {
	// Components are the pipeline's, plus the transforms of expanded
	// splittable DoFns and the wire coders.
	Components *pipepb.Components
	// Nodes are in topological order.
	Nodes []Node
	// Wires holds the encoding of every PCollection between nodes.
	Wires map[string]Wire
	// Residuals are the transforms whose unprocessed remainders
	// (residual roots: a splittable DoFn's checkpoint) the runner feeds
	// back to them, with how it reads them.
	Residuals map[string]Residual
	// Unbounded: a PCollection of the pipeline is unbounded (a streaming
	// pipeline).
	Unbounded bool
	// Recoded maps the IDs of recoded copies of PCollections (a stage's
	// output written a second time in another encoding, for a Flatten or
	// Reshuffle) to the PCollection they copy.
	Recoded map[string]string
}

// Residual is a transform that takes residuals: its input collection,
// and the coder residuals come in (the windowed value of that
// collection's own coder).
type Residual struct {
	Input, Coder string
}

// Collection is the pipeline's PCollection behind a plan's collection ID
// (itself, or the one a recoded copy copies).
func (p *Plan) Collection(id string) string {
	if pc, ok := p.Recoded[id]; ok {
		return pc
	}
	return id
}

// UnsupportedError is a pipeline the runner cannot run, naming the
// transform.
type UnsupportedError struct {
	Transform string // unique name
	URN       string
	Reason    string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("beam translate: transform %q (URN %s): %s", e.Transform, e.URN, e.Reason)
}

// ErrInvalid is wrapped by the errors of malformed pipelines.
var ErrInvalid = errors.New("beam translate: invalid pipeline")

type leafKind int

const (
	leafSDK leafKind = iota
	leafImpulse
	leafGBK
	leafFlatten
	leafReshuffle
	leafTestStream
)

type translator struct {
	c      *pipepb.Components
	leaves []string
	kind   map[string]leafKind
	// sides holds the side inputs of the transforms that have them.
	sides map[string][]SideInput
	// stateful holds the ParDos with user state.
	stateful map[string]bool
	// residual maps SDF process transforms to their input.
	residual map[string]string
	errs     []error
}

// Translate compiles p. Every problem found is reported, joined.
func Translate(p *pipepb.Pipeline) (*Plan, error) {
	if p.GetComponents() == nil {
		return nil, fmt.Errorf("%w: no components", ErrInvalid)
	}
	t := &translator{c: proto.Clone(p.GetComponents()).(*pipepb.Components), kind: map[string]leafKind{}, sides: map[string][]SideInput{}, stateful: map[string]bool{}, residual: map[string]string{}}
	for _, id := range p.GetRootTransformIds() {
		t.collect(id)
	}
	if len(t.errs) > 0 {
		return nil, errors.Join(t.errs...)
	}
	order, err := t.topo()
	if err != nil {
		return nil, err
	}
	plan := t.fuse(order)
	if len(t.errs) > 0 {
		return nil, errors.Join(t.errs...)
	}
	t.wires(plan)
	for _, pc := range t.c.Pcollections {
		plan.Unbounded = plan.Unbounded || pc.GetIsBounded() == pipepb.IsBounded_UNBOUNDED
	}
	t.recode(plan)
	prune(plan)
	plan.Residuals = map[string]Residual{}
	for tid, pc := range t.residual {
		p := t.c.Pcollections[pc]
		win := t.c.WindowingStrategies[p.GetWindowingStrategyId()].GetWindowCoderId()
		plan.Residuals[tid] = Residual{Input: pc, Coder: t.addCoder("residual", coderWindowed, p.GetCoderId(), win)}
	}
	if len(t.errs) > 0 {
		return nil, errors.Join(t.errs...)
	}
	return plan, nil
}

func (t *translator) fail(tr *pipepb.PTransform, reason string) {
	t.errs = append(t.errs, &UnsupportedError{Transform: tr.GetUniqueName(), URN: tr.GetSpec().GetUrn(), Reason: reason})
}

// collect walks the transform tree down to the transforms that run.
func (t *translator) collect(id string) {
	tr := t.c.Transforms[id]
	if tr == nil {
		t.errs = append(t.errs, fmt.Errorf("%w: transform %q is referenced but not defined", ErrInvalid, id))
		return
	}
	urn := tr.GetSpec().GetUrn()
	switch urn {
	case URNImpulse:
		t.leaf(id, leafImpulse)
		return
	case URNGroupByKey:
		t.leaf(id, leafGBK)
		return
	case URNFlatten:
		t.leaf(id, leafFlatten)
		return
	case URNTestStream:
		var ts pipepb.TestStreamPayload
		switch err := proto.Unmarshal(tr.GetSpec().GetPayload(), &ts); {
		case err != nil:
			t.errs = append(t.errs, fmt.Errorf("%w: transform %q: TestStream payload: %v", ErrInvalid, tr.GetUniqueName(), err))
		case len(tr.GetOutputs()) != 1:
			t.fail(tr, fmt.Sprintf("a TestStream with %d outputs (tagged outputs are not supported yet; one expected)", len(tr.GetOutputs())))
		case ts.GetEndpoint().GetUrl() != "" && len(ts.GetEvents()) == 0:
			t.fail(tr, "a TestStream reading its events from a TestStreamService endpoint is not supported yet")
		default:
			// The elements are in the payload's coder, which need not be
			// the output's (Python's output may keep its inferred
			// coder): the output takes the payload's, so the stage
			// reading it decodes what the runner writes — unless the
			// output's is a length prefix of it (Go's: a custom coder is
			// readable only inside one).
			if c := ts.GetCoderId(); c != "" && t.c.Coders[c] != nil {
				for _, pc := range tr.GetOutputs() {
					p := t.c.Pcollections[pc]
					oc := t.c.Coders[p.GetCoderId()]
					if p != nil && !(oc.GetSpec().GetUrn() == coderLengthPrefix && slices.Equal(oc.GetComponentCoderIds(), []string{c})) {
						p.CoderId = c
					}
				}
			}
			t.leaf(id, leafTestStream)
		}
		return
	case URNReshuffle:
		if len(tr.GetInputs()) == 1 && len(tr.GetOutputs()) == 1 {
			t.leaf(id, leafReshuffle)
			return
		}
	case URNCombinePerKey:
		if t.liftCombine(id, tr) {
			return
		}
	}
	if len(tr.GetSubtransforms()) > 0 {
		for _, s := range tr.GetSubtransforms() {
			t.collect(s)
		}
		return
	}
	if !sdkURNs[urn] {
		if passThrough(tr) {
			// A composite that expanded to nothing (Python's Create
			// under --streaming: MaybeReshuffle returns its input):
			// its outputs are its inputs, produced elsewhere.
			return
		}
		if urn == "" {
			// An empty root (Python's top-level wrapper) or a transform
			// that does nothing.
			if len(tr.GetInputs()) == 0 && len(tr.GetOutputs()) == 0 {
				return
			}
			t.fail(tr, "the transform has no URN")
			return
		}
		t.fail(tr, "the Sluice runner does not know this URN")
		return
	}
	if tr.GetEnvironmentId() == "" {
		t.fail(tr, "an SDK transform without an environment")
		return
	}
	if urn == URNParDo {
		var pd pipepb.ParDoPayload
		if err := proto.Unmarshal(tr.GetSpec().GetPayload(), &pd); err != nil {
			t.errs = append(t.errs, fmt.Errorf("%w: transform %q: ParDo payload: %v", ErrInvalid, tr.GetUniqueName(), err))
			return
		}
		switch {
		case (len(pd.GetStateSpecs()) > 0 || len(pd.GetTimerFamilySpecs()) > 0) && len(pd.GetSideInputs()) > 0:
			t.fail(tr, "user state or timers together with side inputs are not supported yet")
			return
		case pd.GetRestrictionCoderId() != "" && len(pd.GetSideInputs()) > 0:
			t.fail(tr, "a splittable DoFn with side inputs is not supported yet")
			return
		case pd.GetRestrictionCoderId() != "":
			t.expandSDF(id, tr, &pd)
			return
		}
		for name, spec := range pd.GetStateSpecs() {
			if spec.GetBagSpec() == nil && spec.GetCombiningSpec() == nil && spec.GetReadModifyWriteSpec() == nil &&
				spec.GetMapSpec() == nil && spec.GetSetSpec() == nil && spec.GetMultimapSpec() == nil {
				t.fail(tr, fmt.Sprintf("user state %q is neither a bag, combining, read-modify-write, map, set nor multimap state; others (ordered lists) are not supported yet", name))
				return
			}
			t.stateful[id] = true
		}
		if len(pd.GetTimerFamilySpecs()) > 0 {
			t.stateful[id] = true
		}
		tags := make([]string, 0, len(pd.GetSideInputs()))
		for tag, si := range pd.GetSideInputs() {
			if urn := si.GetAccessPattern().GetUrn(); urn != URNIterableSideInput && urn != URNMultimapSideInput {
				t.fail(tr, fmt.Sprintf("side input %q has access pattern %s; only %s and %s are supported yet", tag, urn, URNIterableSideInput, URNMultimapSideInput))
				return
			}
			tags = append(tags, tag)
		}
		slices.Sort(tags)
		for _, tag := range tags {
			pc, ok := tr.GetInputs()[tag]
			if !ok {
				t.errs = append(t.errs, fmt.Errorf("%w: transform %q has side input %q but no input of that name", ErrInvalid, tr.GetUniqueName(), tag))
				return
			}
			multimap := pd.GetSideInputs()[tag].GetAccessPattern().GetUrn() == URNMultimapSideInput
			t.sides[id] = append(t.sides[id], SideInput{Transform: id, Tag: tag, PCollection: pc, Multimap: multimap})
		}
		for i, si := range t.sides[id] {
			t.sides[id][i].Unframed = !si.Multimap && slices.ContainsFunc(t.sides[id], func(o SideInput) bool { return o.Multimap && o.PCollection == si.PCollection })
		}
	}
	t.leaf(id, leafSDK)
}

func (t *translator) leaf(id string, k leafKind) {
	t.leaves = append(t.leaves, id)
	t.kind[id] = k
}

// newID returns an unused ID starting with base.
func newID[V any](m map[string]V, base string) string {
	if _, ok := m[base]; !ok {
		return base
	}
	for i := 1; ; i++ {
		id := fmt.Sprintf("%s_%d", base, i)
		if _, ok := m[id]; !ok {
			return id
		}
	}
}

func (t *translator) addCoder(base, urn string, components ...string) string {
	for id, c := range t.c.Coders {
		if strings.HasPrefix(id, "sluice_") && c.GetSpec().GetUrn() == urn && slices.Equal(c.GetComponentCoderIds(), components) {
			return id
		}
	}
	id := newID(t.c.Coders, "sluice_"+base)
	t.c.Coders[id] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: urn}, ComponentCoderIds: components}
	return id
}

// liftCombine replaces a CombinePerKey composite that the SDK did not
// lift itself (the Go SDK's: a GroupByKey and a ParDo combining each
// key's values) by its lifted phases, as Flink's and Prism's runners do:
// precombine (in the stage producing the input: one accumulator per key
// and bundle), GroupByKey of the accumulators, merge accumulators and
// extract outputs — so each key crosses the exchange once per bundle,
// not once per element. It lifts only non-merging windows under the
// default trigger, and reports whether it did.
func (t *translator) liftCombine(id string, tr *pipepb.PTransform) bool {
	var cp pipepb.CombinePayload
	if err := proto.Unmarshal(tr.GetSpec().GetPayload(), &cp); err != nil || cp.GetCombineFn() == nil || len(tr.GetInputs()) != 1 || len(tr.GetOutputs()) != 1 {
		return false
	}
	env := tr.GetEnvironmentId()
	for _, sid := range tr.GetSubtransforms() {
		sub := t.c.Transforms[sid]
		switch sub.GetSpec().GetUrn() {
		case URNCombinePrecombine, URNCombineMerge, URNCombineExtract:
			return false // lifted already (the Python SDK lifts before submitting)
		}
		if env == "" {
			env = sub.GetEnvironmentId()
		}
	}
	in, out := sortedValues(tr.GetInputs())[0], sortedValues(tr.GetOutputs())[0]
	inPC := t.c.Pcollections[in]
	kv := t.c.Coders[inPC.GetCoderId()]
	ws := t.c.WindowingStrategies[inPC.GetWindowingStrategyId()]
	acc := cp.GetAccumulatorCoderId()
	if env == "" || t.c.Coders[acc] == nil || kv.GetSpec().GetUrn() != coderKV || len(kv.GetComponentCoderIds()) != 2 ||
		t.c.Pcollections[out] == nil || ws == nil || ws.GetMergeStatus() != pipepb.MergeStatus_NON_MERGING ||
		(ws.GetTrigger() != nil && ws.GetTrigger().GetDefault() == nil) {
		return false
	}
	k := kv.GetComponentCoderIds()[0]
	kvAcc := t.addCoder("combine_kv", coderKV, k, acc)
	kvIter := t.addCoder("combine_kv", coderKV, k, t.addCoder("iterable", coderIterable, acc))
	pcoll := func(suffix, coder string) string {
		pid := newID(t.c.Pcollections, in+suffix)
		c := proto.Clone(inPC).(*pipepb.PCollection)
		c.UniqueName = tr.GetUniqueName() + "/" + suffix[1:]
		c.CoderId = coder
		t.c.Pcollections[pid] = c
		return pid
	}
	lifted, grouped, merged := pcoll("_lifted", kvAcc), pcoll("_grouped", kvIter), pcoll("_merged", kvAcc)
	step := func(name, urn, env, from, to string, kind leafKind) {
		sid := newID(t.c.Transforms, id+"/"+name)
		spec := &pipepb.FunctionSpec{Urn: urn}
		if urn != URNGroupByKey {
			spec.Payload = tr.GetSpec().GetPayload()
		}
		t.c.Transforms[sid] = &pipepb.PTransform{
			UniqueName: tr.GetUniqueName() + "/" + name, Spec: spec, EnvironmentId: env,
			Inputs: map[string]string{"i0": from}, Outputs: map[string]string{"i0": to},
		}
		t.leaf(sid, kind)
	}
	step("Precombine", URNCombinePrecombine, env, in, lifted, leafSDK)
	step("Group", URNGroupByKey, "", lifted, grouped, leafGBK)
	step("MergeAccumulators", URNCombineMerge, env, grouped, merged, leafSDK)
	step("ExtractOutputs", URNCombineExtract, env, merged, out, leafSDK)
	return true
}

// timers lists the timer families of ParDo id, each with a coder whose
// key (and unreadable window) is length-prefixed.
func (t *translator) timers(id string, tr *pipepb.PTransform, in string) []TimerFamily {
	var pd pipepb.ParDoPayload
	if err := proto.Unmarshal(tr.GetSpec().GetPayload(), &pd); err != nil {
		return nil
	}
	names := make([]string, 0, len(pd.GetTimerFamilySpecs()))
	for name := range pd.GetTimerFamilySpecs() {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []TimerFamily
	for _, name := range names {
		spec := pd.GetTimerFamilySpecs()[name]
		tc := t.c.Coders[spec.GetTimerFamilyCoderId()]
		if tc.GetSpec().GetUrn() != "beam:coder:timer:v1" || len(tc.GetComponentCoderIds()) != 2 {
			t.fail(tr, fmt.Sprintf("timer family %q has coder %s, not a timer coder", name, tc.GetSpec().GetUrn()))
			continue
		}
		win := tc.GetComponentCoderIds()[1]
		kind := wire.OpaqueWindow
		switch t.c.Coders[win].GetSpec().GetUrn() {
		case coderGlobalWindow:
			kind = wire.GlobalWindow
		case coderInterval:
			kind = wire.IntervalWindow
		default:
			win = t.lp(win)
		}
		out = append(out, TimerFamily{
			Transform: id, Family: name, Window: kind,
			Coder:     t.addCoder("timer", "beam:coder:timer:v1", t.lp(tc.GetComponentCoderIds()[0]), win),
			EventTime: spec.GetTimeDomain() != pipepb.TimeDomain_PROCESSING_TIME,
		})
	}
	return out
}

// expandSDF replaces a splittable ParDo by the three transforms that pair
// each element with its restriction, split and size it, and process it —
// all in the same stage, without splitting (the expansion Python's
// fn_api_runner does).
func (t *translator) expandSDF(id string, tr *pipepb.PTransform, pd *pipepb.ParDoPayload) {
	var mainTag string
	for tag := range tr.GetInputs() {
		if _, side := pd.GetSideInputs()[tag]; !side {
			mainTag = tag
		}
	}
	in := tr.GetInputs()[mainTag]
	inPC := t.c.Pcollections[in]
	if inPC == nil {
		t.errs = append(t.errs, fmt.Errorf("%w: transform %q reads undefined PCollection %q", ErrInvalid, tr.GetUniqueName(), in))
		return
	}
	paired := t.addCoder("sdf_paired", coderKV, inPC.GetCoderId(), pd.GetRestrictionCoderId())
	double := t.addCoder("double", coderDouble)
	sized := t.addCoder("sdf_sized", coderKV, paired, double)
	pcoll := func(suffix, coder string) string {
		pid := newID(t.c.Pcollections, in+suffix)
		c := proto.Clone(inPC).(*pipepb.PCollection)
		c.UniqueName += suffix
		c.CoderId = coder
		t.c.Pcollections[pid] = c
		return pid
	}
	pairedPC, splitPC := pcoll("_paired", paired), pcoll("_split", sized)
	step := func(suffix, urn, input string, outputs map[string]string) string {
		sid := newID(t.c.Transforms, id+suffix)
		c := proto.Clone(tr).(*pipepb.PTransform)
		c.UniqueName += "/" + suffix[1:]
		c.Spec.Urn = urn
		c.Inputs = map[string]string{mainTag: input}
		c.Outputs = outputs
		c.Subtransforms = nil
		t.c.Transforms[sid] = c
		t.leaf(sid, leafSDK)
		return sid
	}
	step("/PairWithRestriction", URNPairWithRestriction, in, map[string]string{"out": pairedPC})
	step("/SplitAndSizeRestriction", URNSplitAndSize, pairedPC, map[string]string{"out": splitPC})
	t.residual[step("/Process", URNProcessSizedElements, splitPC, tr.GetOutputs())] = splitPC
	delete(t.c.Transforms, id)
}

func sortedValues(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	vs := make([]string, len(keys))
	for i, k := range keys {
		vs[i] = m[k]
	}
	return vs
}

// topo orders the leaves so that every PCollection is produced before it
// is consumed, keeping the pipeline's order where it is free.
func (t *translator) topo() ([]string, error) {
	producer := map[string]string{}
	for _, id := range t.leaves {
		for _, pc := range t.c.Transforms[id].GetOutputs() {
			producer[pc] = id
		}
	}
	done := map[string]bool{}
	var order []string
	for len(order) < len(t.leaves) {
		progress := false
		for _, id := range t.leaves {
			if done[id] {
				continue
			}
			ready := true
			for _, pc := range t.c.Transforms[id].GetInputs() {
				p, ok := producer[pc]
				if !ok {
					return nil, fmt.Errorf("%w: transform %q reads PCollection %q, which no transform produces", ErrInvalid, t.c.Transforms[id].GetUniqueName(), pc)
				}
				if !done[p] {
					ready = false
				}
			}
			if ready {
				done[id] = true
				order = append(order, id)
				progress = true
			}
		}
		if !progress {
			return nil, fmt.Errorf("%w: the transforms form a cycle", ErrInvalid)
		}
	}
	return order, nil
}

// fuse groups the SDK transforms into stages: an SDK transform joins the
// stage of the transform producing its input; one whose input comes from
// an engine primitive joins the stage rooted at that PCollection.
func (t *translator) fuse(order []string) *Plan {
	plan := &Plan{Components: t.c, Wires: map[string]Wire{}, Recoded: map[string]string{}}
	stageOf := map[string]int{}    // transform -> node index
	rootStage := map[string]int{}  // engine-produced PCollection -> node index
	producedIn := map[string]int{} // PCollection -> node index
	for _, id := range order {
		tr := t.c.Transforms[id]
		if t.kind[id] != leafSDK {
			n := Node{
				ID:         fmt.Sprintf("%s%d", map[leafKind]string{leafImpulse: "impulse", leafGBK: "gbk", leafFlatten: "flatten", leafReshuffle: "reshuffle", leafTestStream: "teststream"}[t.kind[id]], len(plan.Nodes)),
				Kind:       map[leafKind]Kind{leafImpulse: Impulse, leafGBK: GroupByKey, leafFlatten: Flatten, leafReshuffle: Reshuffle, leafTestStream: TestStream}[t.kind[id]],
				Name:       tr.GetUniqueName(),
				Inputs:     sortedValues(tr.GetInputs()),
				Outputs:    sortedValues(tr.GetOutputs()),
				Transforms: []string{id},
			}
			if n.Kind == GroupByKey && (len(n.Inputs) != 1 || len(n.Outputs) != 1) {
				t.fail(tr, "a GroupByKey needs one input and one output")
			}
			for _, pc := range n.Outputs {
				producedIn[pc] = len(plan.Nodes)
			}
			plan.Nodes = append(plan.Nodes, n)
			continue
		}
		var inputs []string
		for tag, pc := range tr.GetInputs() {
			if !slices.ContainsFunc(t.sides[id], func(si SideInput) bool { return si.Tag == tag }) {
				inputs = append(inputs, pc)
			}
		}
		if len(inputs) != 1 {
			t.fail(tr, fmt.Sprintf("an SDK transform with %d inputs (one main input expected)", len(inputs)))
			continue
		}
		in := inputs[0]
		idx := -1
		if t.stateful[id] {
			// Its own stage, partitioned by key.
			idx = len(plan.Nodes)
			plan.Nodes = append(plan.Nodes, Node{ID: fmt.Sprintf("stage%d", idx), Kind: Stage, Inputs: []string{in}, Environment: tr.GetEnvironmentId(), Keyed: true, Timers: t.timers(id, tr, in)})
		} else if sides := t.sides[id]; len(sides) > 0 {
			// Its own stage: its side inputs come from other nodes.
			idx = len(plan.Nodes)
			n := Node{ID: fmt.Sprintf("stage%d", idx), Kind: Stage, Inputs: []string{in}, Environment: tr.GetEnvironmentId(), SideInputs: sides}
			for _, si := range sides {
				n.Inputs = append(n.Inputs, si.PCollection)
			}
			plan.Nodes = append(plan.Nodes, n)
		} else if p, ok := producedIn[in]; ok && plan.Nodes[p].Kind == Stage {
			idx = p
		} else if r, ok := rootStage[in]; ok {
			idx = r
		}
		if idx < 0 {
			idx = len(plan.Nodes)
			rootStage[in] = idx
			plan.Nodes = append(plan.Nodes, Node{ID: fmt.Sprintf("stage%d", idx), Kind: Stage, Inputs: []string{in}, Environment: tr.GetEnvironmentId()})
		}
		n := &plan.Nodes[idx]
		if n.Environment != tr.GetEnvironmentId() {
			t.fail(tr, fmt.Sprintf("fused with transforms of environment %q, but runs in %q", n.Environment, tr.GetEnvironmentId()))
		}
		n.Transforms = append(n.Transforms, id)
		stageOf[id] = idx
		for _, pc := range sortedValues(tr.GetOutputs()) {
			producedIn[pc] = idx
		}
	}
	// A stage outputs what another node consumes.
	consumed := map[string]bool{}
	for _, n := range plan.Nodes {
		for _, pc := range n.Inputs {
			consumed[pc] = true
		}
	}
	for i := range plan.Nodes {
		n := &plan.Nodes[i]
		if n.Kind != Stage {
			continue
		}
		first := t.c.Transforms[n.Transforms[0]].GetUniqueName()
		last := t.c.Transforms[n.Transforms[len(n.Transforms)-1]].GetUniqueName()
		n.Name = first
		if len(n.Transforms) > 1 {
			n.Name = first + " … " + last
		}
		for _, id := range n.Transforms {
			for _, pc := range sortedValues(t.c.Transforms[id].GetOutputs()) {
				if consumed[pc] && !slices.Contains(n.Outputs, pc) {
					n.Outputs = append(n.Outputs, pc)
				}
			}
		}
	}
	return plan
}

// shape is how a PCollection's payload is laid out on the wire.
type shape int

const (
	plain   shape = iota // LP<T>
	keyed                // LP<KV<LP<K>, LP<V>>>: read by a GroupByKey
	grouped              // LP<KV<LP<K>, Iterable<LP<V>>>>: written by a GroupByKey
)

// wires fixes the encoding of every PCollection between nodes.
func (t *translator) wires(plan *Plan) {
	producer := map[string]*Node{}
	consumers := map[string][]*Node{}
	for i := range plan.Nodes {
		n := &plan.Nodes[i]
		for _, pc := range n.Outputs {
			producer[pc] = n
		}
		for _, pc := range n.Inputs {
			consumers[pc] = append(consumers[pc], n)
		}
	}
	var shapeOf func(pc string, seen int) shape
	shapeOf = func(pc string, seen int) shape {
		if p := producer[pc]; p != nil && p.Kind == GroupByKey {
			return grouped
		}
		if seen > len(plan.Nodes) {
			return plain
		}
		for _, c := range consumers[pc] {
			switch c.Kind {
			case GroupByKey:
				return keyed
			case Stage:
				if c.Keyed && c.Inputs[0] == pc {
					return keyed
				}
				for _, si := range c.SideInputs {
					if si.Multimap && si.PCollection == pc {
						return keyed
					}
				}
			case Flatten, Reshuffle:
				if s := shapeOf(c.Outputs[0], seen+1); s != plain {
					return s
				}
			}
		}
		return plain
	}
	for i := range plan.Nodes {
		n := &plan.Nodes[i]
		for _, pc := range append(slices.Clone(n.Inputs), n.Outputs...) {
			if _, ok := plan.Wires[pc]; ok {
				continue
			}
			w, err := t.wire(pc, shapeOf(pc, 0))
			if err != nil {
				t.errs = append(t.errs, err)
				continue
			}
			plan.Wires[pc] = w
		}
		if n.Kind == GroupByKey && plan.Wires[n.Inputs[0]].Grouped {
			t.fail(t.c.Transforms[n.Transforms[0]], "a GroupByKey of a GroupByKey's output is not supported yet")
		}
		for _, si := range n.SideInputs {
			if si.Multimap && plan.Wires[si.PCollection].Grouped {
				t.fail(t.c.Transforms[si.Transform], fmt.Sprintf("side input %q reads a GroupByKey's output by key (multimap); that is not supported yet", si.Tag))
			}
		}
		if n.Kind == GroupByKey {
			ws := t.c.WindowingStrategies[t.c.Pcollections[n.Inputs[0]].GetWindowingStrategyId()]
			if ws.GetMergeStatus() == pipepb.MergeStatus_NEEDS_MERGE {
				if plan.Wires[n.Inputs[0]].Window != wire.IntervalWindow {
					t.fail(t.c.Transforms[n.Transforms[0]], fmt.Sprintf("merging windows (%s) of a window coder other than interval windows are not supported yet", ws.GetWindowFn().GetUrn()))
				}
				n.Merging = true
			}
			t.windowing(n, ws)
		}
		if n.Kind == TestStream {
			t.testEvents(plan, n)
		}
	}
}

// recode makes the inputs of a Flatten or Reshuffle — which hand
// elements on unchanged — arrive in the encoding of its output: a stage
// producing an input in another encoding writes a recoded copy with the
// output's coder (so the SDK recodes, as Python's fix_flatten_coders
// does); a pass-through engine node before it takes the same encoding in
// turn. Only an input an engine node produced in another encoding cannot
// be recoded. Nodes are visited last first so that chains of them agree.
func (t *translator) recode(plan *Plan) {
	producer := map[string]*Node{}
	for i := range plan.Nodes {
		for _, pc := range plan.Nodes[i].Outputs {
			producer[pc] = &plan.Nodes[i]
		}
	}
	for i := len(plan.Nodes) - 1; i >= 0; i-- {
		n := &plan.Nodes[i]
		if n.Kind != Flatten && n.Kind != Reshuffle {
			continue
		}
		out := plan.Wires[n.Outputs[0]]
		for j, pc := range n.Inputs {
			switch p := producer[pc]; {
			case plan.Wires[pc] == out:
			case p.Kind == Stage:
				copyID := pc + "@" + n.ID
				plan.Recoded[copyID] = pc
				plan.Wires[copyID] = out
				n.Inputs[j] = copyID
				p.Outputs = append(p.Outputs, copyID)
			case p.Kind == Flatten || p.Kind == Reshuffle:
				plan.Wires[pc] = out
			case plan.Wires[pc] != out:
				t.fail(t.c.Transforms[n.Transforms[0]], fmt.Sprintf("input %s comes from %s (%s) in another encoding than the output's; recoding it is not supported yet", pc, p.Name, p.Kind))
			}
		}
	}
}

// prune drops the stage outputs no node reads any more (recoded copies
// replaced them).
func prune(plan *Plan) {
	consumed := map[string]bool{}
	for _, n := range plan.Nodes {
		for _, pc := range n.Inputs {
			consumed[pc] = true
		}
	}
	for i := range plan.Nodes {
		if n := &plan.Nodes[i]; n.Kind == Stage {
			n.Outputs = slices.DeleteFunc(n.Outputs, func(pc string) bool { return !consumed[pc] })
		}
	}
}

// lp returns a coder of c's values that the runner can skip over: c
// itself where its encoding is a length and that many bytes already
// (length_prefix; bytes and string_utf8, whose nested encoding it is in
// every SDK), else length_prefix<c>. Wrapping bytes would not do: the Go
// SDK encodes bytes and strings with their length in every context, so
// its length_prefix<bytes> is the length of a length and the bytes,
// where Python's is one length — and the runner writes Impulse's empty
// bytes itself.
func (t *translator) lp(c string) string {
	switch t.c.Coders[c].GetSpec().GetUrn() {
	case coderLengthPrefix, coderBytes, coderString:
		return c
	}
	return t.addCoder("lp", coderLengthPrefix, c)
}

func (t *translator) wire(pc string, s shape) (Wire, error) {
	p := t.c.Pcollections[pc]
	if p == nil {
		return Wire{}, fmt.Errorf("%w: PCollection %q is not defined", ErrInvalid, pc)
	}
	coder := t.c.Coders[p.GetCoderId()]
	if coder == nil {
		return Wire{}, fmt.Errorf("%w: PCollection %q has undefined coder %q", ErrInvalid, pc, p.GetCoderId())
	}
	ws := t.c.WindowingStrategies[p.GetWindowingStrategyId()]
	if ws == nil {
		return Wire{}, fmt.Errorf("%w: PCollection %q has undefined windowing strategy %q", ErrInvalid, pc, p.GetWindowingStrategyId())
	}
	elem := p.GetCoderId()
	switch s {
	case keyed, grouped:
		if coder.GetSpec().GetUrn() != coderKV || len(coder.GetComponentCoderIds()) != 2 {
			return Wire{}, fmt.Errorf("beam translate: PCollection %q (%s) is grouped by key but its coder %q is %s, not a KV coder", pc, p.GetUniqueName(), p.GetCoderId(), coder.GetSpec().GetUrn())
		}
		k, v := coder.GetComponentCoderIds()[0], coder.GetComponentCoderIds()[1]
		if s == keyed {
			elem = t.addCoder("kv", coderKV, t.lp(k), t.lp(v))
		} else {
			it := t.c.Coders[v]
			if it.GetSpec().GetUrn() != coderIterable || len(it.GetComponentCoderIds()) != 1 {
				return Wire{}, fmt.Errorf("beam translate: PCollection %q (%s) is the output of a GroupByKey but its value coder %q is %s, not an iterable coder", pc, p.GetUniqueName(), v, it.GetSpec().GetUrn())
			}
			elem = t.addCoder("kv", coderKV, t.lp(k), t.addCoder("iterable", coderIterable, t.lp(it.GetComponentCoderIds()[0])))
		}
	}
	w := Wire{Grouped: s == grouped}
	win := ws.GetWindowCoderId()
	w.Window = wire.OpaqueWindow
	switch t.c.Coders[win].GetSpec().GetUrn() {
	case coderGlobalWindow:
		w.Window = wire.GlobalWindow
	case coderInterval:
		w.Window = wire.IntervalWindow
	default:
		win = t.lp(win)
	}
	if !w.Grouped {
		elem = t.lp(elem)
	}
	w.Coder = t.addCoder("wire", coderWindowed, elem, win)
	return w, nil
}

// windowing reads a GroupByKey's trigger, accumulation mode, on-time
// behaviour and allowed lateness; what the runner cannot honour fails
// the transform, naming the trigger.
func (t *translator) windowing(n *Node, ws *pipepb.WindowingStrategy) {
	tr := t.c.Transforms[n.Transforms[0]]
	spec, err := trigger.FromProto(ws.GetTrigger())
	if err != nil {
		t.fail(tr, fmt.Sprintf("windowing strategy %q: %v", t.c.Pcollections[n.Inputs[0]].GetWindowingStrategyId(), err))
		return
	}
	o := trigger.Options{Trigger: spec, FireAlwaysOnTime: ws.GetOnTimeBehavior() == pipepb.OnTimeBehavior_FIRE_ALWAYS}
	switch ws.GetAccumulationMode() {
	case pipepb.AccumulationMode_ACCUMULATING:
		o.Mode = trigger.Accumulating
	case pipepb.AccumulationMode_RETRACTING:
		t.fail(tr, "the RETRACTING accumulation mode is not supported yet")
		return
	}
	lateness := max(ws.GetAllowedLateness(), 0)
	if n.Merging && (spec.Kind != trigger.Default || lateness > 0) {
		t.fail(tr, fmt.Sprintf("merging windows (%s) with trigger %s and allowed lateness %d ms: only the default trigger without allowed lateness is supported on merging windows yet", ws.GetWindowFn().GetUrn(), spec, lateness))
		return
	}
	n.Windowing = Windowing{Trigger: o, AllowedLateness: lateness}
}

// sdkBaseGo is the capability prefix of environments of the Go SDK,
// whose TestStream elements are encoded nested (bytes and strings with
// their length), where Python's are encoded in the outer context.
const sdkBaseGo = "beam:version:sdk_base:go:"

// testEvents encodes a TestStream's events: each element a windowed
// value in the global window in its output's wire encoding.
func (t *translator) testEvents(plan *Plan, n *Node) {
	tr := t.c.Transforms[n.Transforms[0]]
	var ts pipepb.TestStreamPayload
	if err := proto.Unmarshal(tr.GetSpec().GetPayload(), &ts); err != nil {
		return // reported by collect
	}
	out := n.Outputs[0]
	w := plan.Wires[out]
	if w.Window != wire.GlobalWindow || w.Grouped {
		t.fail(tr, "a TestStream's output must be in the global window")
		return
	}
	// The wire element is LP<T>, or T itself where T is a length prefix
	// already, bytes or a string (whose nested encoding is a length and
	// the bytes). A length-prefix coder's encoding has its length in
	// every context; bytes and strings have it in Go's encoding (every
	// context) but not in Python's (the outer context).
	elem := t.c.Coders[w.Coder].GetComponentCoderIds()[0]
	urn := t.c.Coders[elem].GetSpec().GetUrn()
	if urn != coderLengthPrefix && urn != coderBytes && urn != coderString {
		t.fail(tr, fmt.Sprintf("a TestStream whose output %s is read by key directly (wire element coder %s); put a ParDo between", out, urn))
		return
	}
	// framed: the runner writes the element's length (it wrapped T, or
	// Python's bytes and strings).
	framed := elem != t.c.Pcollections[out].GetCoderId() || urn != coderLengthPrefix
	if framed && urn != coderLengthPrefix {
		for _, c := range plan.Nodes {
			if slices.Contains(c.Inputs, out) && c.Kind == Stage {
				env := t.c.Environments[c.Environment]
				if slices.ContainsFunc(env.GetCapabilities(), func(s string) bool { return strings.HasPrefix(s, sdkBaseGo) }) {
					framed = false
				}
			}
		}
	}
	for _, ev := range ts.GetEvents() {
		switch e := ev.GetEvent().(type) {
		case *pipepb.TestStreamPayload_Event_ElementEvent:
			te := TestEvent{Kind: TestElements}
			for _, el := range e.ElementEvent.GetElements() {
				// AppendElement writes the payload's length: Go's
				// element has it already.
				payload := el.GetEncodedElement()
				if !framed {
					l, k := binary.Uvarint(payload)
					if k <= 0 || l != uint64(len(payload)-k) {
						t.errs = append(t.errs, fmt.Errorf("%w: transform %q: TestStream element %x is not a length-prefixed %s", ErrInvalid, tr.GetUniqueName(), payload, t.c.Coders[elem].GetSpec().GetUrn()))
						return
					}
					payload = payload[k:]
				}
				ms := min(max(el.GetTimestamp(), wire.MinTimestamp), wire.MaxTimestamp)
				te.Elements = append(te.Elements, wire.AppendElement(nil, ms, [][]byte{{}}, wire.PaneNoFiring, payload))
				te.Timestamps = append(te.Timestamps, ms)
			}
			n.Events = append(n.Events, te)
		case *pipepb.TestStreamPayload_Event_WatermarkEvent:
			n.Events = append(n.Events, TestEvent{Kind: TestWatermark, Watermark: min(max(e.WatermarkEvent.GetNewWatermark(), wire.MinTimestamp), wire.MaxTimestamp)})
		case *pipepb.TestStreamPayload_Event_ProcessingTimeEvent:
			n.Events = append(n.Events, TestEvent{Kind: TestProcessingTime, ProcessingTime: e.ProcessingTimeEvent.GetAdvanceDuration()})
		default:
			t.fail(tr, fmt.Sprintf("a TestStream event %T is not supported", ev.GetEvent()))
		}
	}
}

// passThrough reports whether tr has outputs and each is one of its
// inputs.
func passThrough(tr *pipepb.PTransform) bool {
	if len(tr.GetOutputs()) == 0 || len(tr.GetSubtransforms()) > 0 {
		return false
	}
	for _, out := range tr.GetOutputs() {
		found := false
		for _, in := range tr.GetInputs() {
			found = found || in == out
		}
		if !found {
			return false
		}
	}
	return true
}
