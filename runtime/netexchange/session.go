package netexchange

import (
	"fmt"
	"sync"
	"time"

	"github.com/sluice/sluice/internal/runtime/exchange"
	"github.com/sluice/sluice/internal/runtime/netexchange/internal/netpb"
)

// msgStream is either end of a Connect stream.
type msgStream interface {
	Send(*netpb.Message) error
	Recv() (*netpb.Message, error)
}

// sendCloser is the dialling end's CloseSend.
type sendCloser interface{ CloseSend() error }

// Free chunks kept per session for reuse, and the largest kept.
const (
	maxFreeChunks = 8
	reportGrace   = time.Second
)

// session is one stream to a peer, carrying the channels of both
// directions: the senders of this endpoint (out) and the channels peers
// opened into this endpoint's gates (in). A reader goroutine decodes the
// peer's frames; a writer goroutine sends the frames the senders and gates
// queue, gathered into messages.
type session struct {
	ep      *Endpoint
	peer    string
	inbound bool
	stream  msgStream

	done       chan struct{} // closed when the session fails
	kick       chan struct{} // wakes the writer
	readerDone chan struct{}

	mu struct {
		sync.Mutex
		err error
		// reportMsg is the protocol violation the peer is told of.
		reportMsg string
		// pending are the chunks of frames waiting for the writer; free
		// are emptied chunks for reuse.
		pending [][]byte
		free    [][]byte
		// out are this endpoint's senders by id; lastOut the last id given.
		out     map[uint32]*Sender
		lastOut uint32
		// in are the channels the peer opened, by the peer's id; a nil
		// value is a channel waiting for its gate. An id up to lastIn that
		// is absent was closed: its late frames are dropped.
		in     map[uint32]*remoteChan
		lastIn uint32
	}
}

func newSession(ep *Endpoint, peer string, stream msgStream, inbound bool) *session {
	s := &session{ep: ep, peer: peer, inbound: inbound, stream: stream,
		done: make(chan struct{}), kick: make(chan struct{}, 1), readerDone: make(chan struct{})}
	s.mu.out = map[uint32]*Sender{}
	s.mu.in = map[uint32]*remoteChan{}
	return s
}

// run runs the dialling end's reader and writer until the session fails,
// then calls cleanup (which ends the stream).
func (s *session) run(cleanup func()) {
	go s.readLoop()
	s.writeLoop()
	if s.report() != "" {
		// Let the peer read why before the stream is torn down.
		if cs, ok := s.stream.(sendCloser); ok {
			_ = cs.CloseSend()
		}
		t := time.NewTimer(reportGrace)
		select {
		case <-s.readerDone:
		case <-t.C:
		}
		t.Stop()
	}
	cleanup()
	<-s.readerDone
}

// err is the session's failure, nil while it works.
func (s *session) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.err
}

func (s *session) report() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.reportMsg
}

// fail ends the session once: every sender on it and every gate it feeds
// fails with err.
func (s *session) fail(err error) {
	s.mu.Lock()
	if s.mu.err != nil {
		s.mu.Unlock()
		return
	}
	s.mu.err = err
	out, in := s.mu.out, s.mu.in
	s.mu.out, s.mu.in = nil, nil
	s.mu.pending = nil
	s.mu.Unlock()
	close(s.done)
	for _, x := range out {
		x.fail(x.errorf(err))
	}
	s.ep.sessionEnded(s, in, err)
}

// failProtocol ends the session for a protocol violation of the peer, and
// tells the peer.
func (s *session) failProtocol(err error) {
	s.mu.Lock()
	if s.mu.err == nil {
		s.mu.reportMsg = err.Error()
	}
	s.mu.Unlock()
	s.fail(&PeerError{Peer: s.peer, Err: err})
}

func (s *session) lost(err error) error {
	return &PeerError{Peer: s.peer, Err: fmt.Errorf("%w: %w", ErrConnectionLost, err)}
}

// chunkLocked returns the chunk to append a frame of about n bytes to.
// REQUIRES: s.mu held.
func (s *session) chunkLocked(n int) *[]byte {
	if k := len(s.mu.pending); k > 0 {
		if c := s.mu.pending[k-1]; len(c) == 0 || len(c)+n <= s.ep.cfg.MessageBytes {
			return &s.mu.pending[k-1]
		}
	}
	var c []byte
	if k := len(s.mu.free); k > 0 {
		c, s.mu.free = s.mu.free[k-1], s.mu.free[:k-1]
	}
	s.mu.pending = append(s.mu.pending, c)
	return &s.mu.pending[len(s.mu.pending)-1]
}

func (s *session) wakeWriter() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// writeLoop sends the queued frames until the session fails; then it tells
// the peer of a protocol violation, if any.
func (s *session) writeLoop() {
	var batch [][]byte
	msg := &netpb.Message{}
	for {
		select {
		case <-s.kick:
		case <-s.done:
		}
		s.mu.Lock()
		failed, report := s.mu.err != nil, s.mu.reportMsg
		batch, s.mu.pending = s.mu.pending, batch[:0]
		s.mu.Unlock()
		if failed {
			if report != "" {
				_ = s.stream.Send(&netpb.Message{Error: report})
			}
			return
		}
		for _, c := range batch {
			msg.Frames = c
			if err := s.stream.Send(msg); err != nil {
				s.fail(s.lost(err))
				break
			}
		}
		msg.Frames = nil
		s.mu.Lock()
		for i, c := range batch {
			if len(s.mu.free) < maxFreeChunks && cap(c) <= 4*s.ep.cfg.MessageBytes {
				s.mu.free = append(s.mu.free, c[:0])
			}
			batch[i] = nil
		}
		s.mu.Unlock()
		batch = batch[:0]
	}
}

// readLoop handles the peer's messages until the stream breaks or the peer
// breaks the protocol.
func (s *session) readLoop() {
	defer close(s.readerDone)
	for {
		m, err := s.stream.Recv()
		if err != nil {
			s.fail(s.lost(err))
			return
		}
		if m.Error != "" {
			s.fail(&PeerError{Peer: s.peer, Err: fmt.Errorf("%w: the peer reports: %s", ErrProtocol, m.Error)})
			return
		}
		if m.Hello != nil {
			s.failProtocol(fmt.Errorf("%w: a second hello", ErrProtocol))
			s.drain()
			return
		}
		if err := s.handleFrames(m.Frames); err != nil {
			s.ep.log.Error("netexchange: protocol violation", "peer", s.peer, "err", err)
			s.failProtocol(err)
			s.drain()
			return
		}
	}
}

// drain reads until the stream ends, so the dialling side knows when the
// peer has read the report (or gives up after reportGrace).
func (s *session) drain() {
	for {
		if _, err := s.stream.Recv(); err != nil {
			return
		}
	}
}

func (s *session) handleFrames(b []byte) error {
	r := frameReader{b: b}
	var f frame
	for {
		ok, err := r.next(&f)
		if err != nil || !ok {
			return err
		}
		if err := s.handle(&f); err != nil {
			return fmt.Errorf("%s frame at byte %d: %w", f.typ, r.start, err)
		}
	}
}

// handle handles one frame of the peer. Once the session has failed (its
// endpoint closing, its writer broken) while its reader still handles a
// message, the message's frames left are dropped.
func (s *session) handle(f *frame) error {
	switch f.typ {
	case frameOpen:
		s.mu.Lock()
		if s.mu.err != nil {
			s.mu.Unlock()
			return nil
		}
		if f.id != s.mu.lastIn+1 {
			last := s.mu.lastIn
			s.mu.Unlock()
			return fmt.Errorf("%w: channel id %d opened after %d", ErrProtocol, f.id, last)
		}
		s.mu.lastIn = f.id
		s.mu.in[f.id] = nil
		s.mu.Unlock()
		s.ep.open(s, f.id, f.key, f.channel)
		return nil

	case frameData, frameEvent, frameClose:
		s.mu.Lock()
		failed := s.mu.err != nil
		rc, known := s.mu.in[f.id]
		last := s.mu.lastIn
		if known && f.typ == frameClose {
			delete(s.mu.in, f.id)
		}
		s.mu.Unlock()
		switch {
		case failed:
			return nil
		case !known && f.id <= last:
			return nil // a channel closed here; the sender learns it
		case !known:
			return fmt.Errorf("%w: channel id %d was never opened", ErrProtocol, f.id)
		case f.typ == frameClose && rc == nil:
			s.ep.unpark(s, f.id)
			return nil
		case f.typ == frameClose:
			rc.g.fail(&ChannelError{Key: rc.g.key, Channel: rc.index, Peer: s.peer, Err: ErrSenderClosed})
			return nil
		case rc == nil:
			return fmt.Errorf("%w: channel id %d sent before it had credits", ErrProtocol, f.id)
		}
		return rc.deliver(f)

	case frameCredit, frameRefuse:
		s.mu.Lock()
		failed := s.mu.err != nil
		x := s.mu.out[f.id]
		last := s.mu.lastOut
		if x != nil && f.typ == frameRefuse {
			delete(s.mu.out, f.id)
		}
		s.mu.Unlock()
		switch {
		case failed:
			return nil
		case x == nil && f.id <= last:
			return nil // a sender that has ended
		case x == nil:
			return fmt.Errorf("%w: channel id %d is not ours", ErrProtocol, f.id)
		case f.typ == frameCredit:
			x.addCredits(f.credits)
		default:
			x.fail(x.errorf(refusalError(f.code, f.reason)))
		}
		return nil
	}
	return fmt.Errorf("%w: unhandled frame type %s", ErrProtocol, f.typ) // next rejects unknown types
}

// openSender registers x and opens its channel at the peer.
func (s *session) openSender(x *Sender) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.err != nil {
		return s.mu.err
	}
	s.mu.lastOut++
	x.id = s.mu.lastOut
	s.mu.out[x.id] = x
	c := s.chunkLocked(32 + len(x.key.Scope))
	*c = appendOpen(*c, x.id, x.key, x.channel)
	s.wakeWriter()
	return nil
}

// sendData queues a data frame of sender x.
func (s *session) sendData(x *Sender, payload []byte) error {
	s.mu.Lock()
	if err := s.sendableLocked(x); err != nil {
		s.mu.Unlock()
		return err
	}
	c := s.chunkLocked(dataOverhead + len(payload))
	*c = appendData(*c, x.id, payload)
	s.mu.Unlock()
	s.wakeWriter()
	return nil
}

// sendEvent queues an event frame of sender x; after its end of partition
// the sender is forgotten.
func (s *session) sendEvent(x *Sender, ev exchange.Event) error {
	s.mu.Lock()
	if err := s.sendableLocked(x); err != nil {
		s.mu.Unlock()
		return err
	}
	c := s.chunkLocked(32)
	*c = appendEvent(*c, x.id, ev)
	if ev.Kind == exchange.EndOfPartition {
		delete(s.mu.out, x.id)
	}
	s.mu.Unlock()
	s.wakeWriter()
	return nil
}

// sendableLocked is nil if x may send.
// REQUIRES: s.mu held.
func (s *session) sendableLocked(x *Sender) error {
	if s.mu.err != nil {
		return x.errorf(s.mu.err)
	}
	if s.mu.out[x.id] != x {
		return x.errorf(ErrClosed) // refused, ended or closed: its own error comes first
	}
	return nil
}

// closeSender forgets x and, unless it has ended, tells the peer.
func (s *session) closeSender(x *Sender) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.err != nil || s.mu.out[x.id] != x {
		return
	}
	delete(s.mu.out, x.id)
	c := s.chunkLocked(16)
	*c = appendClose(*c, x.id)
	s.wakeWriter()
}

// bind connects the peer's channel id to rc and grants its credits.
func (s *session) bind(id uint32, rc *remoteChan, credits int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.err != nil {
		return s.mu.err
	}
	if cur, known := s.mu.in[id]; !known || cur != nil {
		return fmt.Errorf("%w: channel id %d was closed before its gate was built", ErrSenderClosed, id)
	}
	s.mu.in[id] = rc
	c := s.chunkLocked(16)
	*c = appendCredit(*c, id, credits)
	s.wakeWriter()
	return nil
}

// grant returns one credit to the peer's channel id, if rc still has it.
func (s *session) grant(id uint32, rc *remoteChan) {
	s.mu.Lock()
	if s.mu.err != nil || s.mu.in[id] != rc {
		s.mu.Unlock()
		return
	}
	c := s.chunkLocked(16)
	*c = appendCredit(*c, id, 1)
	s.mu.Unlock()
	s.wakeWriter()
}

// refuse refuses or ends the peer's channel id.
func (s *session) refuse(id uint32, code refuseCode, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.err != nil {
		return
	}
	if _, known := s.mu.in[id]; !known {
		return // ended or closed
	}
	delete(s.mu.in, id)
	c := s.chunkLocked(24 + len(reason))
	*c = appendRefuse(*c, id, code, reason)
	s.wakeWriter()
}

// forget drops the peer's channel id after its end of partition.
func (s *session) forget(id uint32, rc *remoteChan) {
	s.mu.Lock()
	if s.mu.in[id] == rc {
		delete(s.mu.in, id)
	}
	s.mu.Unlock()
}
