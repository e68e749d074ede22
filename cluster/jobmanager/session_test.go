package jobmanager

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/internal/clock"
)

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// fakeStream is a worker's end of ConnectWorker, in memory: the test sends
// the worker's messages on in; what the JobMaster sends is kept.
type fakeStream struct {
	grpc.ServerStream
	ctx    context.Context
	cancel context.CancelFunc
	in     chan *clusterpb.WorkerMessage

	mu  sync.Mutex
	out []*clusterpb.JobMasterMessage
}

func newFakeStream() *fakeStream {
	f := &fakeStream{in: make(chan *clusterpb.WorkerMessage)}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	return f
}

func (f *fakeStream) Context() context.Context { return f.ctx }

func (f *fakeStream) Send(m *clusterpb.JobMasterMessage) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out = append(f.out, m)
	return nil
}

func (f *fakeStream) Recv() (*clusterpb.WorkerMessage, error) {
	select {
	case m, ok := <-f.in:
		if !ok {
			return nil, io.EOF
		}
		return m, nil
	case <-f.ctx.Done():
		return nil, f.ctx.Err()
	}
}

func (f *fakeStream) sent() []*clusterpb.JobMasterMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*clusterpb.JobMasterMessage(nil), f.out...)
}

// armClock is a manual clock that reports every deadline armed on it: the
// session's loop arms the worker's heartbeat deadline, so the test sees
// each decision before it moves time.
type armClock struct {
	*clock.Manual
	armed chan int64
}

func newArmClock() *armClock {
	return &armClock{Manual: clock.NewManual(0), armed: make(chan int64, 1024)}
}

func (c *armClock) AfterMillis(deadline int64) (<-chan struct{}, func()) {
	c.armed <- deadline
	return c.Manual.AfterMillis(deadline)
}

// waitArmed waits until the session's loop arms deadline.
func (c *armClock) waitArmed(t *testing.T, deadline int64) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case d := <-c.armed:
			if d == deadline {
				return
			}
		case <-timeout:
			t.Fatalf("the session did not arm the heartbeat deadline %d", deadline)
		}
	}
}

// runningSession is a session served as the gRPC handler serves it.
type runningSession struct {
	s      *session
	stream *fakeStream
	// result is what run returned (the handler's status).
	result chan error
	// handled receives the worker's messages the handler got.
	handled chan *clusterpb.WorkerMessage
}

func startSession(t *testing.T, h *clusterpb.Hello, live liveness) *runningSession {
	t.Helper()
	r := &runningSession{stream: newFakeStream(), result: make(chan error, 1), handled: make(chan *clusterpb.WorkerMessage, 64)}
	r.s = newSession(h, r.stream, live)
	r.s.setHandler(func(m *clusterpb.WorkerMessage) { r.handled <- m })
	go func() {
		err := r.s.run()
		r.stream.cancel() // as gRPC does when the handler returns
		r.result <- err
	}()
	t.Cleanup(func() {
		r.s.fail(errors.New("the test ended"))
		<-r.s.done
	})
	return r
}

// deliver has the worker send m and waits until the handler got it (a
// heartbeat, which the handler does not get: until it is received).
func (r *runningSession) deliver(t *testing.T, m *clusterpb.WorkerMessage) {
	t.Helper()
	select {
	case r.stream.in <- m:
	case <-time.After(10 * time.Second):
		t.Fatal("the session does not receive")
	}
	if m.GetHeartbeat() != nil {
		return
	}
	select {
	case <-r.handled:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not get the worker's message")
	}
}

func (r *runningSession) waitEnded(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.result:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end")
		return nil
	}
}

func heartbeat() *clusterpb.WorkerMessage {
	return &clusterpb.WorkerMessage{Msg: &clusterpb.WorkerMessage_Heartbeat{Heartbeat: &clusterpb.Heartbeat{}}}
}

func metrics() *clusterpb.WorkerMessage {
	return &clusterpb.WorkerMessage{Msg: &clusterpb.WorkerMessage_Metrics{Metrics: &clusterpb.MetricsReport{}}}
}

// TestSessionHeartbeatTimeout: a worker that announced heartbeats and then
// sends nothing for heartbeat.timeout loses its session, exactly at the
// timeout after the last message heard from it; one without heartbeats (a
// job binary built before them) is never timed out.
func TestSessionHeartbeatTimeout(t *testing.T) {
	const interval, timeout = 1000, 5000
	for _, tc := range []struct {
		name       string
		heartbeats bool
		// heard are the times (ms) the worker is heard from after its Hello
		// at 0: heartbeats, or any message.
		heard   []int64
		metrics bool // the messages are metrics reports, not heartbeats
		// silentAt is when the session ends for silence; 0: never.
		silentAt int64
	}{
		{name: "silent from its Hello", heartbeats: true, silentAt: 5000},
		{name: "heartbeats push the deadline", heartbeats: true, heard: []int64{1000, 2000, 3000}, silentAt: 8000},
		{name: "a heartbeat just before the deadline counts", heartbeats: true, heard: []int64{4999}, silentAt: 9999},
		{name: "any message counts", heartbeats: true, heard: []int64{2500}, metrics: true, silentAt: 7500},
		{name: "no heartbeats announced: never timed out", heartbeats: false, heard: []int64{1000}, metrics: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newArmClock()
			r := startSession(t, &clusterpb.Hello{JobId: "job", WorkerId: "job-0-tm-1", TaskManagerId: "tm-1", Pid: 42, Heartbeats: tc.heartbeats},
				liveness{interval: interval * time.Millisecond, timeout: timeout * time.Millisecond, clock: clk})
			if tc.heartbeats {
				clk.waitArmed(t, timeout)
			}
			for _, at := range tc.heard {
				clk.Set(at)
				m := heartbeat()
				if tc.metrics {
					m = metrics()
				}
				r.deliver(t, m)
				if tc.heartbeats {
					clk.waitArmed(t, at+timeout)
				}
			}
			// Heartbeats are noted, not handed on (nor kept for a handler).
			select {
			case m := <-r.handled:
				if m.GetHeartbeat() != nil {
					t.Errorf("the handler got a heartbeat")
				}
			default:
			}
			if tc.silentAt == 0 {
				clk.Set(600_000)
				select {
				case <-r.s.done:
					t.Fatalf("the session of a worker without heartbeats ended: %v", r.s.err)
				default:
				}
				r.s.close()
				if err := r.waitEnded(t); err != nil {
					t.Fatalf("a session the JobMaster closed ended with status %v", err)
				}
				return
			}
			clk.Set(tc.silentAt - 1)
			select {
			case <-r.s.done:
				t.Fatalf("the session ended before the timeout: %v", r.s.err)
			default:
			}
			// The sender goroutine writes the queued WorkerAccepted; a
			// session that ends first drops what it has not written.
			for deadline := time.Now().Add(10 * time.Second); len(r.stream.sent()) == 0; {
				if time.Now().After(deadline) {
					t.Fatal("the session sent the worker nothing")
				}
				time.Sleep(time.Millisecond) // polling the fake stream, not timing the session
			}
			clk.Set(tc.silentAt)
			err := r.waitEnded(t)
			if status.Code(err) != codes.Aborted {
				t.Errorf("the stream ended with %v, want Aborted", err)
			}
			if !errors.Is(r.s.err, ErrHeartbeatTimeout) {
				t.Errorf("the session ended with %v, want ErrHeartbeatTimeout", r.s.err)
			}
			for _, want := range []string{"job-0-tm-1", "tm-1", "pid 42", "5s", "heartbeat.timeout"} {
				if !strings.Contains(r.s.err.Error(), want) {
					t.Errorf("%q does not name %q", r.s.err, want)
				}
			}
			// The worker learnt the settings first of all.
			if out := r.stream.sent(); len(out) == 0 || out[0].GetAccepted().GetHeartbeatIntervalMs() != interval ||
				out[0].GetAccepted().GetHeartbeatTimeoutMs() != timeout {
				t.Errorf("the first message to the worker is %v, want WorkerAccepted{%d, %d}", out, interval, timeout)
			}
		})
	}
}

// TestSessionIgnoresAWorkerItGaveUp: once the JobMaster failed a session,
// what its worker still sends reaches no handler.
func TestSessionIgnoresAWorkerItGaveUp(t *testing.T) {
	r := startSession(t, &clusterpb.Hello{JobId: "job", WorkerId: "w"}, liveness{interval: time.Second, timeout: 5 * time.Second, clock: clock.NewManual(0)})
	r.deliver(t, metrics())
	r.s.fail(errors.New("given up"))
	if err := r.waitEnded(t); status.Code(err) != codes.Aborted || r.s.err.Error() != "given up" {
		t.Fatalf("the session ended with %v (status %v)", r.s.err, err)
	}
	// The receiver may still take a message from the stream; it hands none
	// on.
	select {
	case r.stream.in <- metrics():
	case <-r.stream.ctx.Done():
	}
	select {
	case m := <-r.handled:
		t.Fatalf("the handler got %v after the session ended", m)
	default:
	}
}
