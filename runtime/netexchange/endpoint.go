// Package netexchange is the data plane between the worker processes of a
// distributed job: it carries exchange buffers (batches of records and
// control events) between subtasks that run in different processes, with
// the same contract as the in-process exchange.
//
// Each worker process has one Endpoint. It serves the DataExchange gRPC
// service (netpb) and dials its peers lazily. A stream multiplexes every
// channel of the endpoint that dialled it to the peer, and the peer's
// channels back unless the peer had dialled too: two endpoints that dial
// each other at the same time keep one stream each, for the channels they
// send on.
//
// A receiving subtask has a Gate whose channels are local (the sender runs
// in the same process: buffers pass by reference, nothing is encoded) or
// remote. A remote channel is opened by its sender (Endpoint.Sender) and
// credited by the gate: the gate grants the sender its credits when it is
// built, and one more each time a buffer is released, so a sender is never
// more than its credits ahead of the receiving task, a slow receiver
// backpressures its senders across machines, and memory stays bounded by
// credits × buffer size per channel on both sides. A sender started before
// the receiving gate exists waits for its credits (up to
// Config.OpenTimeout).
//
// A broken connection fails every sender and gate using it with a
// *PeerError wrapping ErrConnectionLost; a gate delivers its failure in its
// inbox as a buffer with Err set, so the receiving task fails and the job
// restarts. A peer that breaks the protocol (a malformed frame, a frame for
// a channel it never opened, more buffers than credits) loses the
// connection with an error naming what was wrong.
package netexchange

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/runtime/netexchange/internal/netpb"
	"github.com/sluice/sluice/runtime/task"
)

// Config configures an Endpoint. The zero value listens on an ephemeral
// loopback port.
type Config struct {
	// Address is the host:port the data service listens on: the
	// TaskManager's taskmanager.host and taskmanager.data.port (0: any
	// free port). Default "127.0.0.1:0".
	Address string
	// AdvertisedAddress is the address peers dial to reach this endpoint,
	// as published in the job's placement. Default: the listener's
	// address (set it when Address has an unspecified host).
	AdvertisedAddress string
	// Log receives the endpoint's logs. Default: discarded.
	Log *slog.Logger
	// MessageBytes is the size up to which frames are gathered into one
	// gRPC message. Default 256 KiB.
	MessageBytes int
	// MaxMessageBytes is the largest gRPC message sent or accepted, and so
	// the largest encoded batch. Default 64 MiB.
	MaxMessageBytes int
	// OpenTimeout is how long a channel opened for a gate this endpoint
	// does not have waits for the gate before it is refused with
	// ErrUnknownGate. Default 2 minutes.
	OpenTimeout time.Duration
	// KeepaliveInterval is how often an idle connection is pinged (gRPC
	// raises values below 10 s to 10 s on the dialling side). Default 10 s.
	KeepaliveInterval time.Duration
	// KeepaliveTimeout is how long a ping may go unanswered before the
	// connection is declared lost. Default 20 s.
	KeepaliveTimeout time.Duration
	// ServerOptions and DialOptions are added to the endpoint's own (for
	// transport security).
	ServerOptions []grpc.ServerOption
	DialOptions   []grpc.DialOption
}

func (c Config) withDefaults() Config {
	if c.Address == "" {
		c.Address = "127.0.0.1:0"
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.MessageBytes == 0 {
		c.MessageBytes = 256 << 10
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = 64 << 20
	}
	if c.OpenTimeout == 0 {
		c.OpenTimeout = 2 * time.Minute
	}
	if c.KeepaliveInterval == 0 {
		c.KeepaliveInterval = 10 * time.Second
	}
	if c.KeepaliveTimeout == 0 {
		c.KeepaliveTimeout = 20 * time.Second
	}
	return c
}

// Validate reports every problem of the configuration (after defaults),
// wrapping conf.ErrInvalid.
func (c Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Address); err != nil {
		errs = append(errs, fmt.Errorf("address %q: %v", c.Address, err))
	}
	if c.AdvertisedAddress != "" {
		if _, _, err := net.SplitHostPort(c.AdvertisedAddress); err != nil {
			errs = append(errs, fmt.Errorf("advertised address %q: %v", c.AdvertisedAddress, err))
		}
	}
	if c.MessageBytes < 1 {
		errs = append(errs, fmt.Errorf("message bytes %d must be positive", c.MessageBytes))
	}
	if c.MaxMessageBytes < c.MessageBytes || c.MaxMessageBytes < 1<<10 {
		errs = append(errs, fmt.Errorf("max message bytes %d must be at least 1 KiB and the message bytes (%d)", c.MaxMessageBytes, c.MessageBytes))
	}
	if c.OpenTimeout < 0 {
		errs = append(errs, fmt.Errorf("open timeout %v is negative", c.OpenTimeout))
	}
	if c.KeepaliveInterval < 0 || c.KeepaliveTimeout < 0 {
		errs = append(errs, fmt.Errorf("keepalive interval %v and timeout %v must not be negative", c.KeepaliveInterval, c.KeepaliveTimeout))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: netexchange: %w", conf.ErrInvalid, errors.Join(errs...))
}

// GateKey names the gate of one receiving subtask on an endpoint.
type GateKey struct {
	// Scope separates jobs and their attempts, e.g. "<job id>/<attempt>",
	// so a late frame of an earlier attempt never reaches a new one.
	Scope string
	// Chain is the receiving chain (vertex) and Subtask its subtask.
	Chain   int
	Subtask int
}

func (k GateKey) String() string { return fmt.Sprintf("gate %q/%d/%d", k.Scope, k.Chain, k.Subtask) }

func (k GateKey) validate() error {
	if k.Chain < 0 || k.Subtask < 0 || len(k.Scope) > maxScopeBytes {
		return fmt.Errorf("netexchange: invalid %s (negative chain or subtask, or a scope over %d bytes)", k, maxScopeBytes)
	}
	return nil
}

// Endpoint is a worker process's data-plane endpoint.
type Endpoint struct {
	cfg  Config
	log  *slog.Logger
	addr string
	srv  *grpc.Server

	// ctx ends with Close; outbound streams derive from it.
	ctx    context.Context
	cancel context.CancelFunc
	// wg waits for every goroutine the endpoint starts.
	wg        sync.WaitGroup
	closeOnce sync.Once

	// Lock order: Endpoint.mu, then session.mu, then Sender.mu.
	mu struct {
		sync.Mutex
		closed bool
		// peers are the sessions used to send to each peer data address.
		peers    map[string]*peerConn
		sessions map[*session]struct{}
		gates    map[GateKey]*Gate
		// parked are channels opened for gates that do not exist yet.
		parked map[GateKey][]*parkedOpen
	}
}

// peerConn is a session to a peer, possibly still being dialled.
type peerConn struct {
	ready chan struct{} // closed once s or err is set
	s     *session
	err   error
}

// parkedOpen is a channel opened before its gate was built.
type parkedOpen struct {
	s       *session
	id      uint32
	key     GateKey
	channel int
	timer   *time.Timer
}

// Listen starts an endpoint serving the data service on cfg.Address.
func Listen(cfg Config) (*Endpoint, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", cfg.Address)
	if err != nil {
		return nil, fmt.Errorf("netexchange: listening on %s: %w", cfg.Address, err)
	}
	ep := &Endpoint{cfg: cfg, addr: cfg.AdvertisedAddress}
	if ep.addr == "" {
		ep.addr = lis.Addr().String()
	}
	ep.log = cfg.Log.With("data_address", ep.addr)
	ep.ctx, ep.cancel = context.WithCancel(context.Background())
	ep.mu.peers = map[string]*peerConn{}
	ep.mu.sessions = map[*session]struct{}{}
	ep.mu.gates = map[GateKey]*Gate{}
	ep.mu.parked = map[GateKey][]*parkedOpen{}
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(cfg.MaxMessageBytes),
		grpc.MaxSendMsgSize(cfg.MaxMessageBytes),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: cfg.KeepaliveInterval, Timeout: cfg.KeepaliveTimeout}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: cfg.KeepaliveInterval / 2, PermitWithoutStream: true}),
	}
	ep.srv = grpc.NewServer(append(opts, cfg.ServerOptions...)...)
	netpb.RegisterDataExchangeServer(ep.srv, &service{ep: ep})
	ep.wg.Add(1)
	go func() {
		defer ep.wg.Done()
		if err := ep.srv.Serve(lis); err != nil {
			ep.log.Error("netexchange: data service stopped", "err", err)
		}
	}()
	return ep, nil
}

// Addr is the endpoint's data address, which peers dial.
func (ep *Endpoint) Addr() string { return ep.addr }

// Close stops the endpoint: every connection, sender and gate fails with
// ErrClosed, and Close returns once the endpoint's goroutines have ended.
func (ep *Endpoint) Close() error {
	ep.closeOnce.Do(func() {
		ep.mu.Lock()
		ep.mu.closed = true
		sessions := make([]*session, 0, len(ep.mu.sessions))
		for s := range ep.mu.sessions {
			sessions = append(sessions, s)
		}
		gates := make([]*Gate, 0, len(ep.mu.gates))
		for _, g := range ep.mu.gates {
			gates = append(gates, g)
		}
		for _, ps := range ep.mu.parked {
			for _, p := range ps {
				p.timer.Stop()
			}
		}
		clear(ep.mu.parked)
		ep.mu.Unlock()

		ep.cancel()
		for _, s := range sessions {
			s.fail(&PeerError{Peer: s.peer, Err: ErrClosed})
		}
		ep.srv.Stop()
		for _, g := range gates {
			g.fail(fmt.Errorf("%w: the endpoint of %s", ErrClosed, g.key))
		}
		ep.wg.Wait()
	})
	return nil
}

// session returns the session to send to peer, dialling it if need be. A
// session that has failed is not reused, even before sessionEnded forgot
// it.
func (ep *Endpoint) session(ctx context.Context, peer string) (*session, error) {
	for {
		ep.mu.Lock()
		if ep.mu.closed {
			ep.mu.Unlock()
			return nil, ErrClosed
		}
		p := ep.mu.peers[peer]
		if p == nil {
			break // dial, with ep.mu held
		}
		ep.mu.Unlock()
		select {
		case <-p.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if p.err != nil {
			return nil, p.err
		}
		if p.s.err() == nil {
			return p.s, nil
		}
		ep.mu.Lock()
		if ep.mu.peers[peer] == p {
			delete(ep.mu.peers, peer)
		}
		ep.mu.Unlock()
	}
	p := &peerConn{ready: make(chan struct{})}
	ep.mu.peers[peer] = p
	ep.mu.Unlock()

	s, err := ep.dial(ctx, peer)
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if err == nil {
		// A session that failed already is not kept for the next sender
		// (sessionEnded, which forgets it, may have run before p.s is set).
		if ferr := s.err(); ferr != nil {
			s, err = nil, ferr
		}
	}
	if err != nil {
		p.err = err
		if ep.mu.peers[peer] == p {
			delete(ep.mu.peers, peer)
		}
	} else {
		p.s = s
	}
	close(p.ready)
	return s, err
}

// dial opens the stream to peer and exchanges hellos. The stream lives
// until the session fails or the endpoint closes; ctx bounds the dial.
func (ep *Endpoint) dial(ctx context.Context, peer string) (*session, error) {
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(ep.cfg.MaxMessageBytes), grpc.MaxCallSendMsgSize(ep.cfg.MaxMessageBytes)),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: ep.cfg.KeepaliveInterval, Timeout: ep.cfg.KeepaliveTimeout, PermitWithoutStream: true}),
	}
	cc, err := grpc.NewClient("passthrough:///"+peer, append(opts, ep.cfg.DialOptions...)...)
	if err != nil {
		return nil, &PeerError{Peer: peer, Err: fmt.Errorf("%w: %w", ErrConnectionLost, err)}
	}
	sctx, cancel := context.WithCancel(ep.ctx)
	stop := context.AfterFunc(ctx, cancel)
	fail := func(err error) (*session, error) {
		stop()
		cancel()
		cc.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var pe *PeerError
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, &PeerError{Peer: peer, Err: fmt.Errorf("%w: %w", ErrConnectionLost, err)}
	}
	stream, err := netpb.NewDataExchangeClient(cc).Connect(sctx)
	if err != nil {
		return fail(err)
	}
	if err := stream.Send(&netpb.Message{Hello: &netpb.Hello{Version: frameVersion, Address: ep.addr}}); err != nil {
		return fail(err)
	}
	m, err := stream.Recv()
	if err != nil {
		return fail(err)
	}
	if err := checkHello(m); err != nil {
		return fail(&PeerError{Peer: peer, Err: err})
	}
	if !stop() {
		return fail(ctx.Err())
	}
	s := newSession(ep, peer, stream, false)
	ep.mu.Lock()
	if ep.mu.closed {
		ep.mu.Unlock()
		return fail(&PeerError{Peer: peer, Err: ErrClosed})
	}
	ep.mu.sessions[s] = struct{}{}
	ep.wg.Add(1) // under ep.mu: Close waits only once no more can start
	ep.mu.Unlock()
	go func() {
		defer ep.wg.Done()
		s.run(func() {
			cancel()
			cc.Close()
		})
	}()
	return s, nil
}

func checkHello(m *netpb.Message) error {
	switch {
	case m.GetHello() == nil:
		return fmt.Errorf("%w: the first message has no hello", ErrProtocol)
	case m.Hello.Version != frameVersion:
		return fmt.Errorf("%w: frame version %d, want %d", ErrProtocol, m.Hello.Version, frameVersion)
	case m.Hello.Address == "":
		return fmt.Errorf("%w: the hello has no address", ErrProtocol)
	case len(m.Frames) > 0 || m.Error != "":
		return fmt.Errorf("%w: the hello message carries frames or an error", ErrProtocol)
	}
	return nil
}

// service is the gRPC data service.
type service struct {
	netpb.UnimplementedDataExchangeServer
	ep *Endpoint
}

// Connect serves a stream dialled by a peer.
func (sv *service) Connect(stream netpb.DataExchange_ConnectServer) error {
	ep := sv.ep
	m, err := stream.Recv()
	if err != nil {
		return err
	}
	if err := checkHello(m); err != nil {
		ep.log.Warn("netexchange: refused a connection", "err", err)
		return status.Error(codes.InvalidArgument, err.Error())
	}
	if err := stream.Send(&netpb.Message{Hello: &netpb.Hello{Version: frameVersion, Address: ep.addr}}); err != nil {
		return err
	}
	peer := m.Hello.Address
	s := newSession(ep, peer, stream, true)
	ep.mu.Lock()
	if ep.mu.closed {
		ep.mu.Unlock()
		return status.Error(codes.Unavailable, ErrClosed.Error())
	}
	ep.mu.sessions[s] = struct{}{}
	if ep.mu.peers[peer] == nil {
		// Our own channels to this peer go on this stream too.
		p := &peerConn{ready: make(chan struct{}), s: s}
		close(p.ready)
		ep.mu.peers[peer] = p
	}
	// The reader outlives the handler by a moment: its Recv returns once
	// the handler has returned.
	ep.wg.Add(1)
	ep.mu.Unlock()
	go func() {
		defer ep.wg.Done()
		s.readLoop()
	}()
	s.writeLoop()
	if r := s.report(); r != "" {
		return status.Error(codes.InvalidArgument, r)
	}
	return nil
}

// sessionEnded forgets a failed session and fails the gates it fed.
func (ep *Endpoint) sessionEnded(s *session, in map[uint32]*remoteChan, err error) {
	ep.mu.Lock()
	closing := ep.mu.closed
	delete(ep.mu.sessions, s)
	if p := ep.mu.peers[s.peer]; p != nil && p.s == s {
		delete(ep.mu.peers, s.peer)
	}
	for key, ps := range ep.mu.parked {
		kept := ps[:0]
		for _, p := range ps {
			if p.s == s {
				p.timer.Stop()
				continue
			}
			kept = append(kept, p)
		}
		if len(kept) == 0 {
			delete(ep.mu.parked, key)
		} else {
			ep.mu.parked[key] = kept
		}
	}
	ep.mu.Unlock()
	if closing {
		ep.log.Debug("netexchange: connection closed", "peer", s.peer)
	} else {
		ep.log.Warn("netexchange: connection failed", "peer", s.peer, "err", err)
	}
	for _, rc := range in {
		if rc != nil {
			rc.g.fail(&ChannelError{Key: rc.g.key, Channel: rc.index, Peer: s.peer, Err: err})
		}
	}
}

// open handles a channel opened by a peer: bound at once if its gate
// exists, parked until the gate is built otherwise.
func (ep *Endpoint) open(s *session, id uint32, key GateKey, channel int) {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if g := ep.mu.gates[key]; g != nil {
		ep.bindLocked(g, s, id, channel)
		return
	}
	if ep.mu.closed {
		s.refuse(id, refuseGateClosed, "the endpoint is closing")
		return
	}
	p := &parkedOpen{s: s, id: id, key: key, channel: channel}
	p.timer = time.AfterFunc(ep.cfg.OpenTimeout, func() { ep.expire(p) })
	ep.mu.parked[key] = append(ep.mu.parked[key], p)
}

// expire refuses a parked channel whose gate did not come in time.
func (ep *Endpoint) expire(p *parkedOpen) {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	ps := ep.mu.parked[p.key]
	for i, q := range ps {
		if q == p {
			ep.mu.parked[p.key] = append(ps[:i:i], ps[i+1:]...)
			if len(ep.mu.parked[p.key]) == 0 {
				delete(ep.mu.parked, p.key)
			}
			ep.log.Warn("netexchange: refused a channel for an unknown gate", "peer", p.s.peer, "gate", p.key.String(), "channel", p.channel)
			p.s.refuse(p.id, refuseUnknownGate, fmt.Sprintf("no %s on %s after %v", p.key, ep.addr, ep.cfg.OpenTimeout))
			return
		}
	}
}

// unpark forgets a parked channel its sender closed.
func (ep *Endpoint) unpark(s *session, id uint32) {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	for key, ps := range ep.mu.parked {
		for i, p := range ps {
			if p.s == s && p.id == id {
				p.timer.Stop()
				ep.mu.parked[key] = append(ps[:i:i], ps[i+1:]...)
				if len(ep.mu.parked[key]) == 0 {
					delete(ep.mu.parked, key)
				}
				return
			}
		}
	}
}

// bindLocked connects a channel opened by a peer to its gate and grants
// the sender its credits, or refuses it.
// REQUIRES: ep.mu held.
func (ep *Endpoint) bindLocked(g *Gate, s *session, id uint32, channel int) {
	var reason string
	code := refuseUnknownChannel
	switch {
	case g.closed:
		code, reason = refuseGateClosed, fmt.Sprintf("%s is closed", g.key)
	case channel >= len(g.chans):
		reason = fmt.Sprintf("channel %d of %s, which has %d channels", channel, g.key, len(g.chans))
	case g.chans[channel].remote == nil:
		reason = fmt.Sprintf("channel %d of %s is local", channel, g.key)
	case g.chans[channel].remote.s != nil:
		reason = fmt.Sprintf("channel %d of %s is already open from %s", channel, g.key, g.chans[channel].remote.s.peer)
	}
	if reason != "" {
		ep.log.Warn("netexchange: refused a channel", "peer", s.peer, "reason", reason)
		s.refuse(id, code, reason)
		return
	}
	rc := g.chans[channel].remote
	rc.s, rc.id = s, id
	if err := s.bind(id, rc, g.credits); err != nil {
		g.fail(&ChannelError{Key: g.key, Channel: channel, Peer: s.peer, Err: err})
	}
}

// Sender opens channel `channel` of the gate key on the endpoint at peer
// (its data address) and returns its sending end. Batches are encoded with
// codec, which must be the codec of the channel's record type. The sender
// may be created before the gate: it waits for its credits.
func (ep *Endpoint) Sender(ctx context.Context, peer string, key GateKey, channel int, codec task.BatchCodec) (*Sender, error) {
	if err := key.validate(); err != nil {
		return nil, err
	}
	if channel < 0 || codec == nil {
		return nil, fmt.Errorf("netexchange: sender for channel %d of %s needs a channel index >= 0 and a codec", channel, key)
	}
	s, err := ep.session(ctx, peer)
	if err != nil {
		return nil, &ChannelError{Key: key, Channel: channel, Peer: peer, Err: err}
	}
	x := &Sender{s: s, key: key, channel: channel, peer: peer, codec: codec, wake: make(chan struct{}, 1)}
	if err := s.openSender(x); err != nil {
		return nil, x.errorf(err)
	}
	return x, nil
}
