package jobmanager

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/scheduler"
)

// ErrHeartbeatTimeout is wrapped by the failure of the tasks of a worker
// the JobMaster heard nothing from for heartbeat.timeout (a frozen or hung
// process or host, or a network dropping its packets, while its connection
// seems open), and matches a *TaskManagerLostError of a TaskManager lost
// for the same reason.
var ErrHeartbeatTimeout = errors.New("jobmanager: heartbeat timeout")

// liveness are the heartbeat settings of worker sessions.
type liveness struct {
	// interval is how often a worker sends a heartbeat; timeout how long it
	// may stay silent before its session ends.
	interval, timeout time.Duration
	clock             clock.Clock
}

// session is a worker's stream with its JobMaster. The gRPC handler
// goroutine runs the session (run): it ends it when the stream breaks,
// when the JobMaster closes or fails it, or when the worker has sent
// nothing for the heartbeat timeout. A receiver goroutine receives; a
// sender goroutine drains the outgoing queue, so sending never blocks the
// JobMaster.
type session struct {
	hello  *clusterpb.Hello
	stream clusterpb.JobMaster_ConnectWorkerServer
	live   liveness
	// host is the name of the worker's TaskManager's host (from its slot
	// offer), tm its TaskManager's id and tmAddr that TaskManager's RPC
	// address, set by the deployment before its handler.
	host, tm, tmAddr string

	// heard wakes run when the receiver got a message, at heardAt (on
	// live.clock).
	heard   chan struct{}
	heardAt atomic.Int64

	mu      sync.Mutex
	queue   []*clusterpb.JobMasterMessage
	closed  bool
	wake    chan struct{}
	handler func(*clusterpb.WorkerMessage)
	// early holds messages that arrived before a handler was set.
	early []*clusterpb.WorkerMessage
	// failure is why the JobMaster failed the session; failed is closed
	// then.
	failure error
	failed  chan struct{}

	done chan struct{} // closed when the session has ended
	err  error         // why; set before done is closed
}

func newSession(h *clusterpb.Hello, stream clusterpb.JobMaster_ConnectWorkerServer, live liveness) *session {
	s := &session{hello: h, stream: stream, live: live, heard: make(chan struct{}, 1), wake: make(chan struct{}, 1),
		failed: make(chan struct{}), done: make(chan struct{})}
	s.heardAt.Store(live.clock.NowMillis()) // its Hello
	return s
}

func (s *session) String() string {
	return fmt.Sprintf("worker %s (TaskManager %s, pid %d)", s.hello.WorkerId, s.hello.TaskManagerId, s.hello.Pid)
}

// send queues m; it is dropped once the session is closed.
func (s *session) send(m *clusterpb.JobMasterMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.queue = append(s.queue, m)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// setHandler routes the worker's messages (including those that arrived
// before) to h, on the receiving goroutine.
func (s *session) setHandler(h func(*clusterpb.WorkerMessage)) {
	s.mu.Lock()
	early := s.early
	s.early = nil
	s.handler = h
	s.mu.Unlock()
	for _, m := range early {
		h(m)
	}
}

// close ends the session: queued messages are still sent, then the stream
// ends.
func (s *session) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// fail ends the session at once with err: the JobMaster gave the worker
// up (its TaskManager is lost). Nothing more is sent or received; the
// worker, if it still runs, finds its stream ended with err.
func (s *session) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failure == nil {
		s.failure = err
		close(s.failed)
	}
}

// run serves the session until it ends; it is the gRPC handler's body.
// The first message tells the worker the heartbeat settings; a worker
// that announced heartbeats is then timed out when it is silent.
func (s *session) run() error {
	s.send(&clusterpb.JobMasterMessage{Msg: &clusterpb.JobMasterMessage_Accepted{Accepted: &clusterpb.WorkerAccepted{
		HeartbeatIntervalMs: s.live.interval.Milliseconds(), HeartbeatTimeoutMs: s.live.timeout.Milliseconds()}}})
	sendErr := make(chan error, 1)
	go func() { sendErr <- s.sender() }()
	recvErr := make(chan error, 1)
	go func() { recvErr <- s.receiver() }()
	// The tracker decides; this loop only feeds it the times the worker was
	// heard from and wakes at its deadline.
	peer := s.hello.WorkerId
	hb := scheduler.NewHeartbeats(s.live.timeout.Milliseconds())
	if s.hello.Heartbeats {
		hb.Seen(peer, s.heardAt.Load())
	}
	var err error
	aborted := false
	for err == nil {
		var expire <-chan struct{}
		stop := func() {}
		if at, ok := hb.NextDeadline(); ok {
			expire, stop = s.live.clock.AfterMillis(at)
		}
		select {
		case err = <-recvErr:
		case err = <-sendErr:
			if err == nil {
				err = fmt.Errorf("jobmanager: the JobMaster closed the session of %s", s)
			}
		case <-s.failed:
			s.mu.Lock()
			err = s.failure
			s.mu.Unlock()
			aborted = true
		case <-s.heard:
			if hb.Len() > 0 {
				hb.Seen(peer, s.heardAt.Load())
			}
		case <-expire:
			hb.Seen(peer, s.heardAt.Load()) // a message not yet noted
			if len(hb.Expire(s.live.clock.NowMillis())) > 0 {
				err = fmt.Errorf("%w: %s sent nothing for %v (heartbeat.timeout)", ErrHeartbeatTimeout, s, s.live.timeout)
				aborted = true
			}
		}
		stop()
	}
	s.close()
	s.err = err
	close(s.done)
	if aborted {
		// Ending the handler ends the stream: a worker that resumes finds it
		// gone, with the reason.
		return status.Error(codes.Aborted, err.Error())
	}
	return nil
}

func (s *session) sender() error {
	for {
		s.mu.Lock()
		q, closed := s.queue, s.closed
		s.queue = nil
		s.mu.Unlock()
		for _, m := range q {
			if err := s.stream.Send(m); err != nil {
				return fmt.Errorf("jobmanager: sending to %s: %w", s, err)
			}
		}
		if closed && len(q) == 0 {
			return nil
		}
		if len(q) == 0 {
			select {
			case <-s.wake:
			case <-s.stream.Context().Done():
				return fmt.Errorf("jobmanager: %s: %w", s, s.stream.Context().Err())
			}
		}
	}
}

// receiver hands the worker's messages to the handler, in order, and
// notes when each arrived. It hands nothing on once the session has
// ended: what a worker the JobMaster gave up still sends is ignored.
func (s *session) receiver() error {
	for {
		m, err := s.stream.Recv()
		if err != nil {
			return fmt.Errorf("jobmanager: %s lost: %w", s, err)
		}
		s.heardAt.Store(s.live.clock.NowMillis())
		select {
		case s.heard <- struct{}{}:
		default:
		}
		select {
		case <-s.done:
			return nil
		default:
		}
		if m.GetHeartbeat() != nil {
			continue // noted; nothing for the handler
		}
		s.mu.Lock()
		h := s.handler
		if h == nil {
			s.early = append(s.early, m)
		}
		s.mu.Unlock()
		if h != nil {
			h(m)
		}
	}
}
