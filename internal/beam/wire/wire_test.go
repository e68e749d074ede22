package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"
)

func interval(startMs, endMs int64) []byte {
	return binary.AppendUvarint(AppendTimestamp(nil, endMs), uint64(endMs-startMs))
}

func TestElementsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kind    WindowKind
		windows [][]byte
		pane    []byte
		maxTs   []int64
	}{
		{"global", GlobalWindow, [][]byte{{}}, PaneNoFiring, []int64{GlobalWindowMaxTimestamp}},
		{"one interval", IntervalWindow, [][]byte{interval(0, 10000)}, PaneOnTime, []int64{9999}},
		{"two intervals (sliding)", IntervalWindow, [][]byte{interval(-5000, 5000), interval(0, 10000)}, PaneNoFiring, []int64{4999, 9999}},
		{"opaque", OpaqueWindow, [][]byte{{3, 'a', 'b', 'c'}}, []byte{0x1f, 5}, []int64{MaxTimestamp}},
		{"pane with two indices", GlobalWindow, [][]byte{{}}, []byte{0x2f, 1, 0x81, 1}, []int64{GlobalWindowMaxTimestamp}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var data []byte
			payloads := [][]byte{nil, []byte("x"), bytes.Repeat([]byte("y"), 300)}
			for i, p := range payloads {
				data = AppendElement(data, int64(i*1000-1), tc.windows, tc.pane, p)
			}
			i := 0
			err := Split(data, tc.kind, func(enc []byte, e Element) error {
				if e.Timestamp != int64(i*1000-1) || !bytes.Equal(e.Payload, payloads[i]) || !bytes.Equal(e.Pane, tc.pane) {
					t.Errorf("element %d: got ts %d pane %x payload %q", i, e.Timestamp, e.Pane, e.Payload)
				}
				if !slices.EqualFunc(e.Windows, tc.windows, bytes.Equal) {
					t.Errorf("element %d: windows %x, want %x", i, e.Windows, tc.windows)
				}
				for j, w := range e.Windows {
					if got, err := MaxTimestampOf(tc.kind, w); err != nil || got != tc.maxTs[j] {
						t.Errorf("window %d: max timestamp %d (%v), want %d", j, got, err, tc.maxTs[j])
					}
				}
				if want := AppendElement(nil, e.Timestamp, e.Windows, e.Pane, e.Payload); !bytes.Equal(enc, want) {
					t.Errorf("element %d: encoding %x, re-encoded %x", i, enc, want)
				}
				i++
				return nil
			})
			if err != nil || i != len(payloads) {
				t.Fatalf("split %d elements: %v", i, err)
			}
		})
	}
}

func TestTimestampOrder(t *testing.T) {
	ts := []int64{MinTimestamp, -1, 0, 1, GlobalWindowMaxTimestamp, MaxTimestamp}
	for i := 1; i < len(ts); i++ {
		if bytes.Compare(AppendTimestamp(nil, ts[i-1]), AppendTimestamp(nil, ts[i])) >= 0 {
			t.Errorf("the encoding of %d does not sort before that of %d", ts[i-1], ts[i])
		}
	}
	// Beam's encoding of the minimum timestamp (Java's and Python's coders).
	if got := AppendTimestamp(nil, MinTimestamp); !bytes.Equal(got, []byte{0x7f, 0xdf, 0x3b, 0x64, 0x5a, 0x1c, 0xac, 0x09}) {
		t.Errorf("min timestamp encodes as %x", got)
	}
}

func TestKVAndGrouped(t *testing.T) {
	lp := func(s string) []byte { return append(binary.AppendUvarint(nil, uint64(len(s))), s...) }
	payload := append(lp("key"), lp("value")...)
	k, v, err := KV(payload)
	if err != nil || !bytes.Equal(k, lp("key")) || !bytes.Equal(v, lp("value")) {
		t.Fatalf("KV: %q %q %v", k, v, err)
	}
	if key, err := Key(append(lp("key"), 0, 0, 0, 0)); err != nil || !bytes.Equal(key, lp("key")) {
		t.Errorf("Key: %q %v", key, err)
	}
	if _, err := Key([]byte{9, 'k'}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Key of a short key: %v, want ErrCorrupt", err)
	}
	w := interval(0, 10000)
	got := AppendGroupedElement(nil, 9999, [][]byte{w}, PaneOnTime, k, [][]byte{lp("a"), lp("bc")})
	// No length before the KV: the SDK's coder of a grouped input is
	// windowed_value<kv<LP<K>, iterable<LP<V>>>>.
	grouped := append(lp("key"), 0, 0, 0, 2, 1, 'a', 2, 'b', 'c')
	want := append(append(append(AppendTimestamp(nil, 9999), 0, 0, 0, 1), w...), append(PaneOnTime, grouped...)...)
	if !bytes.Equal(got, want) {
		t.Errorf("grouped %x, want %x", got, want)
	}
	for _, tc := range []struct {
		name    string
		enc     []byte
		framed  bool
		payload []byte
	}{
		{"unframed (grouped)", got, false, grouped},
		{"framed", AppendElement(nil, 9999, [][]byte{w}, PaneOnTime, grouped), true, grouped},
	} {
		e, err := Record(tc.enc, IntervalWindow, tc.framed)
		if err != nil || e.Timestamp != 9999 || !bytes.Equal(e.Payload, tc.payload) || len(e.Windows) != 1 || !bytes.Equal(e.Windows[0], w) {
			t.Errorf("%s: Record reads %+v (%v)", tc.name, e, err)
		}
	}
	if _, err := Record(append(AppendElement(nil, 1, [][]byte{{}}, PaneNoFiring, nil), 7), GlobalWindow, true); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a framed record with trailing bytes: %v, want ErrCorrupt", err)
	}
	for _, bad := range [][]byte{nil, {5, 'a'}, append(lp("k"), 9, 'v')} {
		if _, _, err := KV(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("KV(%x): %v, want ErrCorrupt", bad, err)
		}
	}
}

func TestImpulse(t *testing.T) {
	e, rest, err := Next(ImpulseElement(), GlobalWindow)
	if err != nil || len(rest) != 0 || e.Timestamp != MinTimestamp || len(e.Windows) != 1 || len(e.Payload) != 0 {
		t.Fatalf("impulse element %+v rest %x: %v", e, rest, err)
	}
}

func FuzzNext(f *testing.F) {
	f.Add(ImpulseElement(), 0)
	f.Add(AppendElement(nil, 5, [][]byte{interval(0, 10)}, PaneOnTime, []byte("abc")), 1)
	f.Add([]byte{0x80, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, 2)
	f.Fuzz(func(t *testing.T, b []byte, k int) {
		kind := WindowKind(uint(k) % 3)
		e, rest, err := Next(b, kind)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		// Varints need not be minimal on the wire, so compare what the
		// re-encoding reads back as.
		enc := AppendElement(nil, e.Timestamp, e.Windows, e.Pane, e.Payload)
		e2, rest2, err := Next(enc, kind)
		if err != nil || len(rest2) != 0 || e2.Timestamp != e.Timestamp || !bytes.Equal(e2.Payload, e.Payload) ||
			!bytes.Equal(e2.Pane, e.Pane) || !slices.EqualFunc(e2.Windows, e.Windows, bytes.Equal) {
			t.Fatalf("re-encoding %x of %x reads back as %+v (%v), not %+v", enc, b[:len(b)-len(rest)], e2, err, e)
		}
	})
}

func TestInterval(t *testing.T) {
	for _, w := range [][2]int64{{0, 10000}, {-5000, 5000}, {MinTimestamp, MaxTimestamp}} {
		enc := AppendInterval(nil, w[0], w[1])
		if !bytes.Equal(enc, interval(w[0], w[1])) {
			t.Errorf("%v encodes as %x", w, enc)
		}
		start, end, err := Interval(enc)
		if err != nil || start != w[0] || end != w[1] {
			t.Errorf("%v reads back as [%d,%d) (%v)", w, start, end, err)
		}
	}
	if _, _, err := Interval([]byte{1, 2}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a short window: %v", err)
	}
}
