package netexchange

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/sluice/sluice/internal/runtime/exchange"
	"github.com/sluice/sluice/internal/runtime/netexchange/internal/netpb"
	"github.com/sluice/sluice/internal/runtime/task"
)

func sampleFrames() []frame {
	key := GateKey{Scope: "job/3", Chain: 4, Subtask: 5}
	return []frame{
		{typ: frameOpen, id: 1, key: key, channel: 6},
		{typ: frameData, id: 1, payload: intBatch(1, 2, 3)},
		{typ: frameData, id: math.MaxUint32, payload: []byte{}},
		{typ: frameEvent, id: 2, event: exchange.Event{Kind: exchange.Watermark, Watermark: math.MinInt64}},
		{typ: frameEvent, id: 2, event: exchange.Event{Kind: exchange.Idle}},
		{typ: frameEvent, id: 2, event: exchange.Event{Kind: exchange.Active}},
		{typ: frameEvent, id: 2, event: exchange.Event{Kind: exchange.EndOfPartition}},
		{typ: frameEvent, id: 3, event: exchange.Event{Kind: exchange.Barrier, CheckpointID: 42, Options: math.MaxUint32}},
		{typ: frameClose, id: 7},
		{typ: frameCredit, id: 8, credits: math.MaxInt32},
		{typ: frameRefuse, id: 9, code: refuseGateClosed, reason: "gate is closed"},
	}
}

func parseAll(b []byte) ([]frame, error) {
	var out []frame
	r := frameReader{b: b}
	for {
		var f frame
		ok, err := r.next(&f)
		if err != nil || !ok {
			return out, err
		}
		out = append(out, f)
	}
}

// normalise makes empty payloads comparable.
func normalise(fs []frame) []frame {
	for i := range fs {
		if len(fs[i].payload) == 0 {
			fs[i].payload = nil
		}
	}
	return fs
}

func TestFramesRoundTrip(t *testing.T) {
	want := sampleFrames()
	var b []byte
	for i := range want {
		b = appendFrame(b, &want[i])
	}
	got, err := parseAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normalise(got), normalise(sampleFrames())) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	// Every strict prefix that cuts a frame is malformed, never a panic.
	for i := 1; i < len(b); i++ {
		if _, err := parseAll(b[:i]); err != nil && !errors.Is(err, ErrMalformedFrame) {
			t.Fatalf("prefix %d: %v", i, err)
		}
	}
}

func TestMalformedFramesNameTheProblem(t *testing.T) {
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"unknown type", []byte{0}, "type-0 frame at byte 0: unknown frame type"},
		{"id overflow", []byte{byte(frameClose), 0x80, 0x80, 0x80, 0x80, 0x10}, "channel id 4294967296 out of range"},
		{"huge scope", append([]byte{byte(frameOpen), 1}, 0x80, 0x40), "scope of 8192 bytes exceeds the limit of 4096"},
		{"chain overflow", []byte{byte(frameOpen), 1, 0, 0x80, 0x80, 0x80, 0x80, 0x08}, "chain 2147483648 out of range"},
		{"payload beyond the message", []byte{byte(frameData), 1, 5, 1}, "payload of 5 bytes truncated at 1"},
		{"barrier options overflow", []byte{byte(frameEvent), 1, wireBarrier, 2, 0x80, 0x80, 0x80, 0x80, 0x10}, "barrier options 4294967296 overflow 32 bits"},
		{"refusal code", []byte{byte(frameRefuse), 1, 9, 0}, "unknown refusal code 9"},
		{"truncated credit", []byte{byte(frameCredit), 1}, "bad or truncated credits"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseAll(tc.b)
			if !errors.Is(err, ErrMalformedFrame) || !errors.Is(err, ErrProtocol) || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// FuzzFrameReader: any input decodes to frames or a malformed-frame error,
// never a panic, and what decodes re-encodes to the same frames.
func FuzzFrameReader(f *testing.F) {
	var all []byte
	for _, fr := range sampleFrames() {
		b := appendFrame(nil, &fr)
		f.Add(b)
		all = append(all, b...)
	}
	f.Add(all)
	f.Add([]byte{byte(frameData), 1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		fs, err := parseAll(b)
		if err != nil {
			if !errors.Is(err, ErrMalformedFrame) {
				t.Fatalf("error not about a malformed frame: %v", err)
			}
			return
		}
		var enc []byte
		for i := range fs {
			enc = appendFrame(enc, &fs[i])
		}
		again, err := parseAll(enc)
		if err != nil {
			t.Fatalf("re-encoded frames fail: %v", err)
		}
		if !reflect.DeepEqual(normalise(again), normalise(fs)) {
			t.Fatalf("round trip changed the frames:\n%+v\n%+v", fs, again)
		}
	})
}

// fakeStream stands for a stream nobody reads or writes:
// FuzzSessionFrames drives the session's frame handling directly.
type fakeStream struct{}

func (fakeStream) Send(*netpb.Message) error { return nil }

func (fakeStream) Recv() (*netpb.Message, error) { return nil, errors.New("fake stream") }

// FuzzSessionFrames feeds arbitrary frames to a session of an endpoint with
// a gate: whatever the peer sends is handled or rejected with a protocol
// error, never a panic or a hang.
func FuzzSessionFrames(f *testing.F) {
	ep := newEndpoint(f, func(c *Config) { c.Log = nil })
	key := GateKey{Scope: "fuzz", Chain: 1}
	ints, readings := codecOf[int64](f), codecOf[reading](f)
	var seq []byte
	seq = appendOpen(seq, 1, key, 0)
	seq = appendOpen(seq, 2, key, 2)
	seq = appendOpen(seq, 3, GateKey{Scope: "other"}, 0)
	seq = appendData(seq, 1, intBatch(1, 2))
	seq = appendEvent(seq, 2, exchange.Event{Kind: exchange.Watermark, Watermark: 5})
	seq = appendClose(seq, 3)
	seq = appendCredit(seq, 1, 1)
	f.Add(seq)
	f.Add(appendData(appendOpen(nil, 1, key, 0), 1, []byte{2, 0}))
	f.Fuzz(func(t *testing.T, b []byte) {
		gb := ep.NewGate(key, 2)
		gb.AddRemote(0, ints)
		gb.AddLocal(0)
		gb.AddRemote(1, readings)
		g, _, err := gb.Build()
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		s := newSession(ep, "fuzz:1", fakeStream{}, true)
		if err := s.handleFrames(b); err != nil && !errors.Is(err, ErrProtocol) {
			t.Fatalf("not a protocol error: %v", err)
		}
		s.fail(&PeerError{Peer: "fuzz:1", Err: ErrClosed})
	})
}

// FuzzDecodeBatch: any payload decodes to a batch that re-encodes the same,
// or fails with task.ErrCorruptBatch.
func FuzzDecodeBatch(f *testing.F) {
	ints, _ := task.TypeOf[int64]().BatchCodec()
	rs, _ := task.TypeOf[reading]().BatchCodec()
	f.Add(intBatch(1, -1, math.MaxInt64))
	f.Add(rs.AppendBatch(nil, &task.Batch[reading]{Values: []reading{{1, 2, true}}, Ts: []int64{math.MinInt64}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, bc := range []task.BatchCodec{ints, rs} {
			got, err := bc.DecodeBatch(b)
			if err != nil {
				if !errors.Is(err, task.ErrCorruptBatch) {
					t.Fatalf("error not about a corrupt batch: %v", err)
				}
				continue
			}
			enc := bc.AppendBatch(nil, got)
			again, err := bc.DecodeBatch(enc)
			if err != nil {
				t.Fatalf("re-encoded batch fails: %v", err)
			}
			if !bytes.Equal(bc.AppendBatch(nil, again), enc) {
				t.Fatal("unstable round trip")
			}
			bc.ReleaseBatch(got)
			bc.ReleaseBatch(again)
		}
	})
}
