package netexchange

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/sluice/sluice/internal/runtime/exchange"
	"github.com/sluice/sluice/internal/runtime/netexchange/internal/netpb"
	"github.com/sluice/sluice/internal/runtime/task"
)

// testDialer dials the TCP connections of endpoints' gRPC clients: it
// counts those still open, and holds a dial to a target until the test
// releases it (with nil to connect, or the error the dial fails with).
type testDialer struct {
	open atomic.Int64
	mu   sync.Mutex
	held map[string]*heldDial
}

type heldDial struct {
	reached chan struct{}
	release chan error
}

// wait waits until the held dial has been reached.
func (h *heldDial) wait(ctx context.Context) error {
	select {
	case <-h.reached:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the held dial was not reached: %w", ctx.Err())
	}
}

func (d *testDialer) option() grpc.DialOption { return grpc.WithContextDialer(d.dial) }

// hold holds the next dial to target.
func (d *testDialer) hold(target string) *heldDial {
	h := &heldDial{reached: make(chan struct{}), release: make(chan error, 1)}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.held == nil {
		d.held = map[string]*heldDial{}
	}
	d.held[target] = h
	return h
}

func (d *testDialer) dial(ctx context.Context, addr string) (net.Conn, error) {
	d.mu.Lock()
	h := d.held[addr]
	delete(d.held, addr)
	d.mu.Unlock()
	if h != nil {
		close(h.reached)
		select {
		case err := <-h.release:
			if err != nil {
				return nil, err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var nd net.Dialer
	conn, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	d.open.Add(1)
	return &countedConn{Conn: conn, d: d}, nil
}

type countedConn struct {
	net.Conn
	d    *testDialer
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.d.open.Add(-1) })
	return c.Conn.Close()
}

// collisions counts, from an endpoint's logs, the streams it refused as
// superseded and the dials of its own that were.
type collisions struct{ refused, yielded atomic.Int64 }

func (c *collisions) Enabled(context.Context, slog.Level) bool { return true }
func (c *collisions) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *collisions) WithGroup(string) slog.Handler            { return c }
func (c *collisions) Handle(_ context.Context, r slog.Record) error {
	switch {
	case strings.Contains(r.Message, "our stream supersedes the peer's"):
		c.refused.Add(1)
	case strings.Contains(r.Message, "awaiting the peer's stream"):
		c.yielded.Add(1)
	}
	return nil
}

// endpointPair starts two endpoints dialling through d, closed at the end
// of the test, and returns them ordered by address: low's stream to high
// wins when both dial at once.
func endpointPair(t testing.TB, d *testDialer, log *slog.Logger) (low, high *Endpoint) {
	t.Helper()
	var eps [2]*Endpoint
	for i := range eps {
		ep, err := Listen(Config{Log: log, DialOptions: []grpc.DialOption{d.option()}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ep.Close() })
		eps[i] = ep
	}
	if eps[0].Addr() > eps[1].Addr() {
		eps[0], eps[1] = eps[1], eps[0]
	}
	return eps[0], eps[1]
}

// exchangeBothWays sends a batch and the end of partition from each endpoint
// to a gate of the other, each sender opened by open (which may block while
// the endpoints connect), and checks what each gate received.
func exchangeBothWays(ctx context.Context, eps [2]*Endpoint, ints task.BatchCodec, open func(i int, key GateKey) (*Sender, error)) error {
	var keys [2]GateKey
	var gates [2]*Gate
	for i, ep := range eps {
		keys[i] = GateKey{Scope: "pair/0", Chain: 1 + i}
		gb := ep.NewGate(keys[i], 1)
		gb.AddRemote(0, ints)
		g, _, err := gb.Build()
		if err != nil {
			return err
		}
		defer g.Close()
		gates[i] = g
	}
	var wg sync.WaitGroup
	var serrs, rerrs [2]error
	var got [2]map[int][]string
	for i := range eps {
		wg.Go(func() {
			s, err := open(i, keys[1-i])
			if err != nil {
				serrs[i] = err
				return
			}
			defer s.Close()
			for _, b := range []exchange.Buffer{
				{Data: &task.Batch[int64]{Values: []int64{int64(i)}, Ts: []int64{1}}},
				{Event: exchange.Event{Kind: exchange.EndOfPartition}},
			} {
				if err := s.Send(ctx, b); err != nil {
					serrs[i] = err
					return
				}
			}
		})
		wg.Go(func() { got[i], rerrs[i] = receive(ctx, gates[i], 1, []task.BatchCodec{ints}) })
	}
	wg.Wait()
	for i := range eps {
		if serrs[1-i] != nil {
			return fmt.Errorf("sender to endpoint %d: %w", i, serrs[1-i])
		}
		if rerrs[i] != nil {
			return fmt.Errorf("gate of endpoint %d: %w", i, rerrs[i])
		}
		if want := fmt.Sprintf("in0 int64 [%d] [1]", 1-i); len(got[i][0]) != 2 || got[i][0][0] != want {
			return fmt.Errorf("endpoint %d received %q, want %q and the end of partition", i, got[i][0], want)
		}
	}
	return nil
}

// oneStream checks that two endpoints share one stream on one connection,
// dialled by dialler (either, if nil).
func oneStream(eps [2]*Endpoint, dialler *Endpoint, d *testDialer) error {
	var dialled []*Endpoint
	for _, ep := range eps {
		ep.mu.Lock()
		n := len(ep.mu.sessions)
		for s := range ep.mu.sessions {
			if !s.inbound {
				dialled = append(dialled, ep)
			}
		}
		ep.mu.Unlock()
		if n != 1 {
			return fmt.Errorf("%s has %d streams to its peer, want 1", ep.Addr(), n)
		}
	}
	if len(dialled) != 1 {
		return fmt.Errorf("both ends dialled the stream they have: they are not the same stream")
	}
	if dialler != nil && dialled[0] != dialler {
		return fmt.Errorf("%s dialled the stream, want %s", dialled[0].Addr(), dialler.Addr())
	}
	// A superseded dial's connection is closed as the dial returns.
	deadline := time.Now().Add(10 * time.Second)
	for d.open.Load() != 1 {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d connections between the endpoints, want 1", d.open.Load())
		}
		time.Sleep(time.Millisecond) // polling, not synchronisation
	}
	return nil
}

// Two endpoints that dial each other at the same moment, as the workers of
// an attempt do when it is deployed, keep one stream and one connection
// between them, and every channel on it delivers what was sent, in both
// directions.
func TestSimultaneousDialsKeepOneStream(t *testing.T) {
	tries := 200
	if testing.Short() {
		tries = 20
	}
	ints := codecOf[int64](t)
	var c collisions
	log := slog.New(&c)
	for try := range tries {
		err := func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var d testDialer
			var eps [2]*Endpoint
			for i := range eps {
				ep, err := Listen(Config{Log: log, DialOptions: []grpc.DialOption{d.option()}})
				if err != nil {
					return err
				}
				defer ep.Close()
				eps[i] = ep
			}
			start := make(chan struct{})
			done := make(chan error, 1)
			go func() {
				done <- exchangeBothWays(ctx, eps, ints, func(i int, key GateKey) (*Sender, error) {
					<-start
					return eps[i].Sender(ctx, eps[1-i].Addr(), key, 0, ints)
				})
			}()
			close(start)
			if err := <-done; err != nil {
				return err
			}
			return oneStream(eps, nil, &d)
		}()
		if err != nil {
			t.Fatalf("try %d: %v", try, err)
		}
	}
	// The test is about dials that cross: most tries have them.
	t.Logf("%d tries: %d streams refused as superseded, %d dials awaited the winner after their refusal",
		tries, c.refused.Load(), c.yielded.Load())
	if c.refused.Load() == 0 {
		t.Fatalf("in %d tries the endpoints never dialled each other at once", tries)
	}
}

// The orders in which two crossing dials can meet, forced by holding one
// dial: the lower address's stream is kept, and a refused dialler whose
// winner never comes dials again.
func TestCrossingDials(t *testing.T) {
	ints := codecOf[int64](t)
	awaiting := func(ep, peer *Endpoint) func() bool {
		return func() bool {
			ep.mu.Lock()
			defer ep.mu.Unlock()
			p := ep.mu.peers[peer.Addr()]
			return p != nil && !p.done && p.awaiting == peer.Addr()
		}
	}
	settled := func(ep, peer *Endpoint) func() bool {
		return func() bool {
			ep.mu.Lock()
			defer ep.mu.Unlock()
			p := ep.mu.peers[peer.Addr()]
			return p != nil && p.done
		}
	}
	t.Run("low dials first, high is refused and awaits", func(t *testing.T) {
		ctx := testCtx(t)
		var d testDialer
		low, high := endpointPair(t, &d, testLogger(t))
		h := d.hold(high.Addr())
		err := exchangeBothWays(ctx, [2]*Endpoint{low, high}, ints, func(i int, key GateKey) (*Sender, error) {
			if i == 0 {
				return low.Sender(ctx, high.Addr(), key, 0, ints)
			}
			if err := h.wait(ctx); err != nil {
				return nil, err
			}
			go func() {
				eventually(t, "high to await low's stream", awaiting(high, low))
				h.release <- nil
			}()
			return high.Sender(ctx, low.Addr(), key, 0, ints)
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := oneStream([2]*Endpoint{low, high}, low, &d); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("high dials first, adopts low's stream, then is refused", func(t *testing.T) {
		ctx := testCtx(t)
		var d testDialer
		low, high := endpointPair(t, &d, testLogger(t))
		h := d.hold(low.Addr())
		err := exchangeBothWays(ctx, [2]*Endpoint{low, high}, ints, func(i int, key GateKey) (*Sender, error) {
			if i == 1 {
				return high.Sender(ctx, low.Addr(), key, 0, ints)
			}
			if err := h.wait(ctx); err != nil {
				return nil, err
			}
			s, err := low.Sender(ctx, high.Addr(), key, 0, ints)
			eventually(t, "high to adopt low's stream", settled(high, low))
			h.release <- nil
			return s, err
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := oneStream([2]*Endpoint{low, high}, low, &d); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the winner's dial fails, the refused one dials again", func(t *testing.T) {
		ctx := testCtx(t)
		var d testDialer
		low, high := endpointPair(t, &d, testLogger(t))
		high.redialAfter = 20 * time.Millisecond
		h := d.hold(high.Addr())
		lowErr := make(chan error, 1)
		go func() {
			_, err := low.Sender(ctx, high.Addr(), GateKey{Scope: "lost"}, 0, ints)
			lowErr <- err
		}()
		if err := h.wait(ctx); err != nil {
			t.Fatal(err)
		}
		err := exchangeBothWays(ctx, [2]*Endpoint{low, high}, ints, func(i int, key GateKey) (*Sender, error) {
			if i == 1 {
				go func() {
					eventually(t, "high to await low's stream", awaiting(high, low))
					h.release <- errors.New("injected dial failure")
				}()
				return high.Sender(ctx, low.Addr(), key, 0, ints)
			}
			if err := <-lowErr; !errors.Is(err, ErrConnectionLost) || !strings.Contains(err.Error(), "injected dial failure") {
				return nil, fmt.Errorf("low's failed dial: %v", err)
			}
			// Once high's stream arrives, low's next sender uses it.
			eventually(t, "high's stream at low", settled(low, high))
			return low.Sender(ctx, high.Addr(), key, 0, ints)
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := oneStream([2]*Endpoint{low, high}, high, &d); err != nil {
			t.Fatal(err)
		}
	})
}

// The superseded mark is the accepting side's alone, and only the lower
// address may set it: otherwise both ends could wait for each other.
func TestSupersededHelloViolations(t *testing.T) {
	t.Run("from a higher address", func(t *testing.T) {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer()
		netpb.RegisterDataExchangeServer(srv, yielder{by: "999.0.0.1:1"})
		go srv.Serve(lis)
		defer srv.Stop()
		ep := newEndpoint(t)
		_, err = ep.Sender(testCtx(t), lis.Addr().String(), GateKey{Scope: "y"}, 0, codecOf[int64](t))
		if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "999.0.0.1:1 superseded our stream, but "+ep.Addr()+" is the lower address") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("in a dialler's hello", func(t *testing.T) {
		ep := newEndpoint(t)
		cc, err := grpc.NewClient("passthrough:///"+ep.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		st, err := netpb.NewDataExchangeClient(cc).Connect(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(&netpb.Message{Hello: &netpb.Hello{Version: frameVersion, Address: "127.0.0.1:1", Superseded: true}}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "the dialler's hello says superseded") {
			t.Fatalf("got %v", err)
		}
	})
}

// yielder is a data service that refuses every stream as superseded by the
// stream of address by.
type yielder struct {
	netpb.UnimplementedDataExchangeServer
	by string
}

func (y yielder) Connect(st netpb.DataExchange_ConnectServer) error {
	if _, err := st.Recv(); err != nil {
		return err
	}
	return st.Send(&netpb.Message{Hello: &netpb.Hello{Version: frameVersion, Address: y.by, Superseded: true}})
}
