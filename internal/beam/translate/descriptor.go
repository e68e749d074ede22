package translate

import (
	"fmt"
	"slices"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// SourceID and SinkID name the data transforms a stage's descriptor adds:
// the one feeding the stage's input and one per output.
func SourceID(n *Node) string          { return n.ID + "/source" }
func SinkID(n *Node, pc string) string { return n.ID + "/sink/" + pc }

// Descriptor is the bundle descriptor of stage n: its transforms, a data
// source reading its input and a data sink per output over the data
// endpoint, with the wire coders, and the state endpoint.
func (p *Plan) Descriptor(id string, n *Node, data, state *pipepb.ApiServiceDescriptor) (*fnpb.ProcessBundleDescriptor, error) {
	if n.Kind != Stage {
		return nil, fmt.Errorf("beam translate: node %s is a %s, not a stage", n.ID, n.Kind)
	}
	c := p.Components
	d := &fnpb.ProcessBundleDescriptor{
		Id:                        id,
		Transforms:                map[string]*pipepb.PTransform{},
		Pcollections:              map[string]*pipepb.PCollection{},
		WindowingStrategies:       c.GetWindowingStrategies(),
		Coders:                    c.GetCoders(),
		Environments:              c.GetEnvironments(),
		StateApiServiceDescriptor: state,
	}
	addPC := func(pc string) {
		d.Pcollections[pc] = c.Pcollections[pc]
	}
	for _, tid := range n.Transforms {
		tr := c.Transforms[tid]
		d.Transforms[tid] = tr
		for _, pc := range tr.GetInputs() {
			addPC(pc)
		}
		for _, pc := range tr.GetOutputs() {
			addPC(pc)
		}
	}
	port := func(pc string) ([]byte, error) {
		w, ok := p.Wires[pc]
		if !ok {
			return nil, fmt.Errorf("beam translate: PCollection %q of stage %s has no wire coder", pc, n.ID)
		}
		return proto.Marshal(&fnpb.RemoteGrpcPort{ApiServiceDescriptor: data, CoderId: w.Coder})
	}
	// A side input is read through the state API in its wire element
	// coder (length-prefixed elements), which the harness is told here.
	for _, si := range n.SideInputs {
		w, ok := p.Wires[si.PCollection]
		if !ok {
			return nil, fmt.Errorf("beam translate: side input %s of stage %s has no wire coder", si.PCollection, n.ID)
		}
		pc := proto.Clone(c.Pcollections[si.PCollection]).(*pipepb.PCollection)
		pc.CoderId = c.Coders[w.Coder].GetComponentCoderIds()[0] // LP<T>
		if si.Multimap || si.Unframed {
			// KV<LP<K>, LP<V>>: keys and values as the runner keeps them.
			pc.CoderId = c.Coders[pc.CoderId].GetComponentCoderIds()[0]
		}
		d.Pcollections[si.PCollection] = pc
	}
	// A stateful ParDo's timers come and go over the data endpoint, in
	// the coders the plan chose.
	if len(n.Timers) > 0 {
		d.TimerApiServiceDescriptor = data
		tr := proto.Clone(c.Transforms[n.Timers[0].Transform]).(*pipepb.PTransform)
		var pd pipepb.ParDoPayload
		if err := proto.Unmarshal(tr.GetSpec().GetPayload(), &pd); err != nil {
			return nil, fmt.Errorf("beam translate: ParDo payload of %s: %w", tr.GetUniqueName(), err)
		}
		for _, tf := range n.Timers {
			pd.TimerFamilySpecs[tf.Family].TimerFamilyCoderId = tf.Coder
		}
		b, err := proto.Marshal(&pd)
		if err != nil {
			return nil, err
		}
		tr.Spec.Payload = b
		d.Transforms[n.Timers[0].Transform] = tr
	}
	in := n.Inputs[0]
	payload, err := port(in)
	if err != nil {
		return nil, err
	}
	d.Transforms[SourceID(n)] = &pipepb.PTransform{
		UniqueName: SourceID(n),
		Spec:       &pipepb.FunctionSpec{Urn: URNDataSource, Payload: payload},
		Outputs:    map[string]string{"out": in},
	}
	addPC(in)
	for _, pc := range n.Outputs {
		payload, err := port(pc)
		if err != nil {
			return nil, err
		}
		d.Transforms[SinkID(n, pc)] = &pipepb.PTransform{
			UniqueName: SinkID(n, pc),
			Spec:       &pipepb.FunctionSpec{Urn: URNDataSink, Payload: payload},
			Inputs:     map[string]string{"in": p.Collection(pc)},
		}
	}
	return d, nil
}

// ResidualDescriptor is the bundle descriptor that feeds residuals to
// transform of stage n: the transform and what follows it in the stage,
// its data source reading the residuals' own encoding. It returns the
// sink transforms of the stage outputs it produces.
func (p *Plan) ResidualDescriptor(id string, n *Node, transform string, data, state *pipepb.ApiServiceDescriptor) (*fnpb.ProcessBundleDescriptor, []string, error) {
	res, ok := p.Residuals[transform]
	if !ok || !slices.Contains(n.Transforms, transform) {
		return nil, nil, fmt.Errorf("beam translate: transform %s of stage %s takes no residuals", transform, n.ID)
	}
	full, err := p.Descriptor(id, n, data, state)
	if err != nil {
		return nil, nil, err
	}
	c := p.Components
	// The transform and everything downstream of it in the stage.
	keep := map[string]bool{transform: true}
	produced := map[string]bool{}
	for _, pc := range c.Transforms[transform].GetOutputs() {
		produced[pc] = true
	}
	for changed := true; changed; {
		changed = false
		for _, tid := range n.Transforms {
			if keep[tid] {
				continue
			}
			for _, pc := range c.Transforms[tid].GetInputs() {
				if produced[pc] {
					keep[tid], changed = true, true
					for _, out := range c.Transforms[tid].GetOutputs() {
						produced[out] = true
					}
					break
				}
			}
		}
	}
	d := proto.Clone(full).(*fnpb.ProcessBundleDescriptor)
	var sinks []string
	for tid := range full.GetTransforms() {
		switch {
		case keep[tid]:
		case tid == SourceID(n):
			payload, err := proto.Marshal(&fnpb.RemoteGrpcPort{ApiServiceDescriptor: data, CoderId: res.Coder})
			if err != nil {
				return nil, nil, err
			}
			d.Transforms[tid] = &pipepb.PTransform{UniqueName: tid, Spec: &pipepb.FunctionSpec{Urn: URNDataSource, Payload: payload}, Outputs: map[string]string{"out": res.Input}}
		case full.Transforms[tid].GetSpec().GetUrn() == URNDataSink && produced[full.Transforms[tid].GetInputs()["in"]]:
			sinks = append(sinks, tid)
		default:
			delete(d.Transforms, tid)
		}
	}
	slices.Sort(sinks)
	return d, sinks, nil
}
