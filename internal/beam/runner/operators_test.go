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

// TestUserStateMultimap drives the multimap user state the Go SDK's map
// and set state are made of, beside a bag of the same name.
func TestUserStateMultimap(t *testing.T) {
	u := newUserState()
	mm := func(mapKey string) *fnpb.StateKey {
		return &fnpb.StateKey{Type: &fnpb.StateKey_MultimapUserState_{MultimapUserState: &fnpb.StateKey_MultimapUserState{
			TransformId: "t", UserStateId: "s", Window: []byte{}, Key: lp("k"), MapKey: lp(mapKey)}}}
	}
	keys := &fnpb.StateKey{Type: &fnpb.StateKey_MultimapKeysUserState_{MultimapKeysUserState: &fnpb.StateKey_MultimapKeysUserState{
		TransformId: "t", UserStateId: "s", Window: []byte{}, Key: lp("k")}}}
	bag := &fnpb.StateKey{Type: &fnpb.StateKey_BagUserState_{BagUserState: &fnpb.StateKey_BagUserState{
		TransformId: "t", UserStateId: "s", Window: []byte{}, Key: lp("k")}}}
	get := &fnpb.StateRequest_Get{Get: &fnpb.StateGetRequest{}}
	clear := &fnpb.StateRequest_Clear{Clear: &fnpb.StateClearRequest{}}
	appendOf := func(s string) *fnpb.StateRequest_Append {
		return &fnpb.StateRequest_Append{Append: &fnpb.StateAppendRequest{Data: lp(s)}}
	}
	cat := func(ss ...string) []byte {
		var b []byte
		for _, s := range ss {
			b = append(b, lp(s)...)
		}
		return b
	}
	for i, step := range []struct {
		key  *fnpb.StateKey
		req  any
		want []byte // a Get's data
	}{
		{keys, get, nil},
		{mm("b"), appendOf("1"), nil},
		{mm("a"), appendOf("2"), nil},
		{mm("b"), appendOf("3"), nil},
		{bag, appendOf("bag"), nil},
		{mm("b"), get, cat("1", "3")},
		{mm("c"), get, nil},
		{keys, get, cat("b", "a")}, // first written first
		{mm("b"), clear, nil},
		{keys, get, cat("a")},
		{mm("b"), appendOf("4"), nil},
		{keys, get, cat("a", "b")},
		{keys, clear, nil},
		{keys, get, nil},
		{mm("a"), get, nil},
		{bag, get, cat("bag")}, // a bag of the same name is another state
	} {
		r := &fnpb.StateRequest{StateKey: step.key}
		switch req := step.req.(type) {
		case *fnpb.StateRequest_Get:
			r.Request = req
		case *fnpb.StateRequest_Clear:
			r.Request = req
		case *fnpb.StateRequest_Append:
			r.Request = req
		}
		resp := u.serve(r)
		if resp.GetError() != "" {
			t.Fatalf("step %d: %s", i, resp.GetError())
		}
		if _, isGet := step.req.(*fnpb.StateRequest_Get); isGet && !bytes.Equal(resp.GetGet().GetData(), step.want) {
			t.Errorf("step %d: get %q, want %q", i, resp.GetGet().GetData(), step.want)
		}
	}
}
