package jobmanager

import (
	"errors"
	"fmt"
	"sync"

	"github.com/sluice/sluice/cluster/clusterpb"
)

// session is a worker's stream with its JobMaster. The gRPC handler
// goroutine receives; a sender goroutine drains the outgoing queue, so
// sending never blocks the JobMaster.
type session struct {
	hello  *clusterpb.Hello
	stream clusterpb.JobMaster_ConnectWorkerServer
	// host is the name of the worker's TaskManager's host (from its slot
	// offer), and tmAddr the TaskManager's RPC address, set by the
	// deployment before its handler.
	host, tmAddr string

	mu      sync.Mutex
	queue   []*clusterpb.JobMasterMessage
	closed  bool
	wake    chan struct{}
	handler func(*clusterpb.WorkerMessage)
	// early holds messages that arrived before a handler was set.
	early []*clusterpb.WorkerMessage

	done chan struct{} // closed when the stream has ended
	err  error         // why; set before done is closed
}

func newSession(h *clusterpb.Hello, stream clusterpb.JobMaster_ConnectWorkerServer) *session {
	return &session{hello: h, stream: stream, wake: make(chan struct{}, 1), done: make(chan struct{})}
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

// run serves the session until the stream ends or close; it is the gRPC
// handler's body.
func (s *session) run() error {
	sendErr := make(chan error, 1)
	go func() { sendErr <- s.sender() }()
	recvErr := make(chan error, 1)
	go func() { recvErr <- s.receiver() }()
	var err error
	select {
	case err = <-recvErr:
		s.close()
	case err = <-sendErr:
		if err == nil {
			err = errors.New("the JobMaster closed the session")
		}
	}
	s.err = err
	close(s.done)
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
				return fmt.Errorf("sending to %s: %w", s, err)
			}
		}
		if closed && len(q) == 0 {
			return nil
		}
		if len(q) == 0 {
			select {
			case <-s.wake:
			case <-s.stream.Context().Done():
				return fmt.Errorf("%s: %w", s, s.stream.Context().Err())
			}
		}
	}
}

func (s *session) receiver() error {
	for {
		m, err := s.stream.Recv()
		if err != nil {
			return fmt.Errorf("%s lost: %w", s, err)
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
