package netexchange

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/sluice/sluice/internal/runtime/exchange"
	"github.com/sluice/sluice/internal/runtime/netexchange/internal/netpb"
	"github.com/sluice/sluice/internal/runtime/task"
)

// rawConnect opens a stream to ep as a hand-driven peer, hello included.
func rawConnect(t *testing.T, ep *Endpoint, version uint32) (netpb.DataExchange_ConnectClient, error) {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+ep.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	st, err := netpb.NewDataExchangeClient(cc).Connect(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&netpb.Message{Hello: &netpb.Hello{Version: version, Address: "127.0.0.1:1"}}); err != nil {
		t.Fatal(err)
	}
	m, err := st.Recv()
	if err != nil {
		return nil, err
	}
	if m.Hello == nil || m.Hello.Address != ep.Addr() {
		t.Fatalf("hello %v", m)
	}
	return st, nil
}

// violation reads from st until the endpoint reports a protocol violation
// and ends the stream.
func violation(t *testing.T, st netpb.DataExchange_ConnectClient) string {
	t.Helper()
	for {
		m, err := st.Recv()
		if err != nil {
			t.Fatalf("stream ended without a report: %v", err)
		}
		if m.Error != "" {
			if _, err := st.Recv(); status.Code(err) != codes.InvalidArgument {
				t.Fatalf("after the report: %v, want InvalidArgument", err)
			}
			return m.Error
		}
	}
}

// recvFrames reads the next message's frames.
func recvFrames(t *testing.T, st netpb.DataExchange_ConnectClient) []frame {
	t.Helper()
	m, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var out []frame
	r := frameReader{b: m.Frames}
	for {
		var f frame
		ok, err := r.next(&f)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, f)
	}
}

func intBatch(vs ...int64) []byte {
	bc, _ := task.TypeOf[int64]().BatchCodec()
	return bc.AppendBatch(nil, &task.Batch[int64]{Values: vs, Ts: vs})
}

func TestProtocolViolationsEndTheConnection(t *testing.T) {
	ep := newEndpoint(t)
	known := GateKey{Scope: "raw", Chain: 1}
	gb := ep.NewGate(known, 1)
	gb.AddRemote(0, codecOf[int64](t))
	gate, _, err := gb.Build()
	if err != nil {
		t.Fatal(err)
	}
	unknown := GateKey{Scope: "raw", Chain: 9}
	open1 := appendOpen(nil, 1, unknown, 0)
	cases := []struct {
		name   string
		frames []byte
		hello  bool
		want   string
	}{
		{"unknown frame type", []byte{0x7f}, false, "malformed frame: type-127 frame at byte 0: unknown frame type"},
		{"truncated open", appendOpen(nil, 1, unknown, 0)[:4], false, "malformed frame: open frame at byte 0: scope of 3 bytes truncated"},
		{"bad frame after a good one", append(append([]byte{}, open1...), byte(frameCredit), 1, 0), false,
			"malformed frame: credit frame at byte " + strconv.Itoa(len(open1)) + ": zero credits"},
		{"data on a channel never opened", appendData(nil, 1, intBatch(1)), false, "data frame at byte 0: netexchange: protocol violation: channel id 1 was never opened"},
		{"ids out of order", appendOpen(nil, 2, unknown, 0), false, "channel id 2 opened after 0"},
		{"data before credits", appendData(append([]byte{}, open1...), 1, intBatch(1)), false, "channel id 1 sent before it had credits"},
		{"credit for a channel not ours", appendCredit(nil, 5, 1), false, "channel id 5 is not ours"},
		{"channel id zero", appendClose(nil, 0), false, "close frame at byte 0: channel id 0 out of range"},
		{"unknown event", []byte{byte(frameEvent), 1, 42}, false, "unknown event kind 42"},
		{"second hello", nil, true, "a second hello"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, err := rawConnect(t, ep, frameVersion)
			if err != nil {
				t.Fatal(err)
			}
			m := &netpb.Message{Frames: tc.frames}
			if tc.hello {
				m.Hello = &netpb.Hello{Version: frameVersion, Address: "x:1"}
			}
			if err := st.Send(m); err != nil {
				t.Fatal(err)
			}
			if got := violation(t, st); !strings.Contains(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}

	t.Run("beyond credits", func(t *testing.T) {
		st, err := rawConnect(t, ep, frameVersion)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(&netpb.Message{Frames: appendOpen(nil, 1, known, 0)}); err != nil {
			t.Fatal(err)
		}
		if fs := recvFrames(t, st); len(fs) != 1 || fs[0].typ != frameCredit || fs[0].id != 1 || fs[0].credits != 1 {
			t.Fatalf("got %+v, want one credit for channel id 1", fs)
		}
		two := appendData(appendData(nil, 1, intBatch(1)), 1, intBatch(2))
		if err := st.Send(&netpb.Message{Frames: two}); err != nil {
			t.Fatal(err)
		}
		want := `channel 0 of gate "raw"/1/0 has 2 buffers in flight, beyond its 1 credits`
		if got := violation(t, st); !strings.Contains(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
		// The gate got the credited buffer, then the failure.
		if b := <-gate.C(); describe(b) != "int64 [1] [1]" {
			t.Fatalf("got %s", describe(b))
		}
		b := <-gate.C()
		var ce *ChannelError
		if !errors.Is(b.Err, ErrProtocol) || !errors.As(b.Err, &ce) || ce.Peer != "127.0.0.1:1" {
			t.Fatalf("got %+v", b)
		}
	})

	t.Run("wrong version", func(t *testing.T) {
		_, err := rawConnect(t, ep, 9)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "frame version 9, want "+strconv.Itoa(frameVersion)) {
			t.Fatalf("got %v", err)
		}
	})
}

// A batch that does not decode fails its channel, not the connection.
func TestCorruptBatchFailsTheChannel(t *testing.T) {
	ep := newEndpoint(t)
	key := GateKey{Scope: "corrupt", Chain: 1}
	gb := ep.NewGate(key, 2)
	gb.AddRemote(0, codecOf[int64](t))
	gb.AddRemote(0, codecOf[int64](t))
	gate, _, err := gb.Build()
	if err != nil {
		t.Fatal(err)
	}
	st, err := rawConnect(t, ep, frameVersion)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&netpb.Message{Frames: appendOpen(appendOpen(nil, 1, key, 0), 2, key, 1)}); err != nil {
		t.Fatal(err)
	}
	for credited := 0; credited < 2; {
		credited += len(recvFrames(t, st))
	}
	bad := appendData(nil, 1, []byte{3, 1, 1}) // three records announced, two bytes
	bad = appendData(bad, 1, intBatch(5))      // dropped: the channel is closed
	bad = appendEvent(bad, 2, exchange.Event{Kind: exchange.EndOfPartition})
	if err := st.Send(&netpb.Message{Frames: bad}); err != nil {
		t.Fatal(err)
	}
	fs := recvFrames(t, st)
	if len(fs) != 1 || fs[0].typ != frameRefuse || fs[0].id != 1 || fs[0].code != refuseCorrupt || !strings.Contains(fs[0].reason, "task: corrupt batch of int64") {
		t.Fatalf("got %+v, want a refusal of channel id 1", fs)
	}
	b := <-gate.C()
	var ce *ChannelError
	if !errors.Is(b.Err, ErrCorruptData) || !errors.As(b.Err, &ce) || ce.Channel != 0 || !errors.Is(b.Err, task.ErrCorruptBatch) {
		t.Fatalf("got %+v", b)
	}
	if b := <-gate.C(); b.Channel != 1 || b.Event.Kind != exchange.EndOfPartition {
		t.Fatalf("the other channel must go on: %+v", b)
	}
}

// rogue is a data service of our own that answers the hello and then sends
// the given frames once the dialler has opened a channel.
type rogue struct {
	netpb.UnimplementedDataExchangeServer
	frames []byte
	report chan string
}

func (r *rogue) Connect(st netpb.DataExchange_ConnectServer) error {
	if _, err := st.Recv(); err != nil {
		return err
	}
	if err := st.Send(&netpb.Message{Hello: &netpb.Hello{Version: frameVersion, Address: "rogue:1"}}); err != nil {
		return err
	}
	if _, err := st.Recv(); err != nil { // the open of the sender's channel
		return err
	}
	if err := st.Send(&netpb.Message{Frames: r.frames}); err != nil {
		return err
	}
	for {
		m, err := st.Recv()
		if err != nil {
			r.report <- "no report: " + err.Error()
			return nil
		}
		if m.Error != "" {
			r.report <- m.Error
			return nil
		}
	}
}

// The dialling side checks its peer's frames too: a violation fails its
// senders and is reported to the peer.
func TestPeerViolationFailsTheDiallingSide(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	// A credit for the sender's channel (id 1), then garbage.
	r := &rogue{frames: append(appendCredit(nil, 1, 1), 0xee), report: make(chan string, 1)}
	netpb.RegisterDataExchangeServer(srv, r)
	go srv.Serve(lis)
	defer srv.Stop()

	ctx := testCtx(t)
	ep := newEndpoint(t)
	s, err := ep.Sender(ctx, lis.Addr().String(), GateKey{Scope: "r"}, 0, codecOf[int64](t))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Send(ctx, exchange.Buffer{Event: exchange.Event{Kind: exchange.Idle}})
	if err == nil {
		err = s.Send(ctx, exchange.Buffer{Event: exchange.Event{Kind: exchange.Idle}})
	}
	if !errors.Is(err, ErrMalformedFrame) || !strings.Contains(err.Error(), "type-238 frame at byte") {
		t.Fatalf("sender: %v", err)
	}
	if got := <-r.report; !strings.Contains(got, "malformed frame: type-238") {
		t.Fatalf("the peer was told %q", got)
	}
}

// A session fails (its endpoint closes, its writer breaks) while its reader
// is still handling the frames of a message: the frames left are dropped,
// whatever their type, without a panic or a protocol error.
func TestFramesAfterTheSessionFailedAreDropped(t *testing.T) {
	key := GateKey{Scope: "late", Chain: 1}
	for name, frames := range map[string][]byte{
		"open":   appendOpen(nil, 1, key, 0),
		"data":   appendData(appendOpen(nil, 1, key, 0), 1, intBatch(1)),
		"event":  appendEvent(nil, 1, exchange.Event{Kind: exchange.EndOfPartition}),
		"close":  appendClose(nil, 1),
		"credit": appendCredit(nil, 1, 1),
		"refuse": appendRefuse(nil, 1, refuseUnknownGate, "late"),
	} {
		t.Run(name, func(t *testing.T) {
			ep := newEndpoint(t, func(c *Config) { c.Log = nil })
			s := newSession(ep, "late:1", fakeStream{}, true)
			s.fail(&PeerError{Peer: "late:1", Err: ErrClosed})
			if err := s.handleFrames(frames); err != nil {
				t.Fatalf("frames after the failure: %v", err)
			}
			ep.mu.Lock()
			parked := len(ep.mu.parked)
			ep.mu.Unlock()
			if parked != 0 {
				t.Errorf("a failed session's channel is parked for a gate")
			}
		})
	}
}
