package runner

import (
	"bytes"
	"encoding/binary"
	"testing"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"

	"github.com/sluice/sluice/internal/beam/translate"
	"github.com/sluice/sluice/internal/beam/wire"
	"github.com/sluice/sluice/internal/runtime/core"
)

func lp(s string) []byte { return append(binary.AppendUvarint(nil, uint64(len(s))), s...) }

// TestGroupedElements: the runner keys and serves a GroupByKey's output
// (its payload not length-prefixed) as it does a length-prefixed element.
func TestGroupedElements(t *testing.T) {
	w := wire.AppendInterval(nil, 0, 10000)
	kv := append(lp("key"), lp("value")...)
	grouped := wire.AppendGroupedElement(nil, 9999, [][]byte{w}, wire.PaneOnTime, lp("key"), [][]byte{lp("a"), lp("bc")})
	groupedPayload := append(lp("key"), 0, 0, 0, 2, 1, 'a', 2, 'b', 'c')
	for _, tc := range []struct {
		name string
		wire translate.Wire
		enc  []byte
		// the iterable side input's data: the element in the coder the
		// descriptor gives the harness
		side []byte
	}{
		{"length-prefixed KV", translate.Wire{Window: wire.IntervalWindow}, wire.AppendElement(nil, 9999, [][]byte{w}, wire.PaneOnTime, kv), append(binary.AppendUvarint(nil, uint64(len(kv))), kv...)},
		{"grouped", translate.Wire{Window: wire.IntervalWindow, Grouped: true}, grouped, groupedPayload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := keyOf(tc.wire)(core.BytesRecord(tc.enc), nil); !bytes.Equal(got, lp("key")) {
				t.Errorf("key %q, want %q", got, lp("key"))
			}
			si := newSideInputs([]translate.SideInput{{Transform: "t", Tag: "side"}}, []translate.Wire{tc.wire})
			if err := si.add(append([]byte{0}, tc.enc...)); err != nil {
				t.Fatal(err)
			}
			resp := si.serve(&fnpb.StateRequest{
				StateKey: &fnpb.StateKey{Type: &fnpb.StateKey_IterableSideInput_{IterableSideInput: &fnpb.StateKey_IterableSideInput{TransformId: "t", SideInputId: "side", Window: w}}},
				Request:  &fnpb.StateRequest_Get{Get: &fnpb.StateGetRequest{}},
			})
			if got := resp.GetGet().GetData(); resp.GetError() != "" || !bytes.Equal(got, tc.side) {
				t.Errorf("side input data %x (%s), want %x", got, resp.GetError(), tc.side)
			}
		})
	}
}
