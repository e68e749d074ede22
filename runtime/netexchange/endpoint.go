// Package netexchange is the data plane between the worker processes of a
// distributed job: it carries exchange buffers (batches of records and
// control events) between subtasks that run in different processes, with
// the same contract as the in-process exchange.
//
// Each worker process has one Endpoint. It serves the DataExchange gRPC
// service (netpb) and dials its peers lazily. Two endpoints share one
// stream, on the connection of the one that dialled it, which multiplexes
// every channel between them in both directions. When both dial at once
// (the workers of an attempt all open their channels as it is deployed),
// the stream dialled by the endpoint with the lower data address wins: the
// other endpoint refuses the loser in its hello reply, before either side
// has opened a channel on it, and the loser's dialler waits for the winner
// to arrive. Endpoints are known by their data address (Addr), so the rule
// holds when peers dial each other at the addresses they advertise.
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
	"github.com/sluice/sluice/internal/runtime/netexchange/internal/netpb"
	"github.com/sluice/sluice/internal/runtime/task"
)

// Config configures an Endpoint. The zero value listens on an ephemeral
// loopback port.
type Config struct {
	// Address is the host:port the data service listens on: on a
	// cluster, the TaskManager's taskmanager.host and a port of
	// taskmanager.data.port (0: any free port; the worker tries the ports
	// of a range or list in turn). Default "127.0.0.1:0".
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
	// redialAfter is how long a dial refused as superseded waits for the
	// winning stream before it dials again (the winner's dial may have
	// failed). Tests lower it.
	redialAfter time.Duration

	// Lock order: Endpoint.mu, then session.mu, then Sender.mu.
	mu struct {
		sync.Mutex
		closed bool
		// peers are the sessions used to send to each peer, by the data
		// address senders dial (the peer's advertised address, or the
		// address of an accepted stream's hello).
		peers    map[string]*peerConn
		sessions map[*session]struct{}
		gates    map[GateKey]*Gate
		// parked are channels opened for gates that do not exist yet.
		parked map[GateKey][]*parkedOpen
	}
}

// peerConn is a session to a peer, possibly still being dialled. s and err
// are set before ready is closed and never change after.
type peerConn struct {
	ready chan struct{} // closed once s or err is set
	s     *session
	err   error

	// Guarded by Endpoint.mu:
	// done is true once ready is closed.
	done bool
	// dialling is true while this endpoint's own dial is under way.
	dialling bool
	// awaiting is the data address of a peer that refused our dial as
	// superseded: the stream it dials to us is adopted for this entry too
	// (it may be known here by another address than the one dialled).
	awaiting string
}

// resolveLocked settles p with a session or an error, which every sender
// waiting on it gets. A failed entry is forgotten.
// REQUIRES: ep.mu held.
func (ep *Endpoint) resolveLocked(key string, p *peerConn, s *session, err error) {
	p.s, p.err, p.done, p.dialling, p.awaiting = s, err, true, false, ""
	close(p.ready)
	if err != nil && ep.mu.peers[key] == p {
		delete(ep.mu.peers, key)
	}
}

// peerLocked returns the entry for a peer known by its data address id: the
// entry dialled at id, or the one awaiting that peer's stream.
// REQUIRES: ep.mu held.
func (ep *Endpoint) peerLocked(id string) (string, *peerConn) {
	if p := ep.mu.peers[id]; p != nil {
		return id, p
	}
	for key, p := range ep.mu.peers {
		if !p.done && p.awaiting == id {
			return key, p
		}
	}
	return "", nil
}

// ownStreamWinsLocked reports whether a stream dialled by the peer at id
// must be refused as superseded: this endpoint's address is the lower and
// its own stream to the peer is being dialled or works.
// REQUIRES: ep.mu held.
func (ep *Endpoint) ownStreamWinsLocked(id string) bool {
	if ep.addr >= id {
		return false
	}
	_, p := ep.peerLocked(id)
	switch {
	case p == nil:
		return false
	case !p.done:
		return p.dialling
	default:
		return p.s != nil && !p.s.inbound && p.s.err() == nil
	}
}

// adoptLocked makes s, a stream the peer at id dialled, the session this
// endpoint sends to the peer on: it settles a dial of ours in progress (the
// peer's address is the lower, so its stream wins and ours will be refused)
// or replaces an entry whose session the peer no longer uses (it would not
// have dialled otherwise).
// REQUIRES: ep.mu held.
func (ep *Endpoint) adoptLocked(id string, s *session) {
	if key, p := ep.peerLocked(id); p != nil && !p.done {
		ep.resolveLocked(key, p, s, nil)
		return
	}
	p := &peerConn{ready: make(chan struct{})}
	ep.mu.peers[id] = p
	ep.resolveLocked(id, p, s, nil)
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
	ep := &Endpoint{cfg: cfg, addr: cfg.AdvertisedAddress, redialAfter: defaultRedialAfter}
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

// defaultRedialAfter is Endpoint.redialAfter: the winning stream of a
// simultaneous dial was already under way when ours was refused, so it
// arrives within a round trip unless its dial failed.
const defaultRedialAfter = 5 * time.Second

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
			p = &peerConn{ready: make(chan struct{}), dialling: true}
			ep.mu.peers[peer] = p
			ep.mu.Unlock()
			if err := ep.connect(ctx, peer, p); err != nil {
				return nil, err
			}
			continue // p is settled
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
}

// connect dials peer for the entry p until p is settled: by our stream, by
// the peer's stream if it wins over ours, or with an error (which it
// returns).
func (ep *Endpoint) connect(ctx context.Context, peer string, p *peerConn) error {
	for {
		s, err := ep.dial(ctx, peer)
		var sup *supersededError
		superseded := errors.As(err, &sup)
		ep.mu.Lock()
		switch {
		case p.done:
			// The peer's stream won while we dialled: the peer refused
			// ours. If it accepted ours instead, its own stream had
			// failed there: ours replaces the adopted one if that has
			// failed here too, and otherwise runs on unused by our
			// senders, as the peer may send on it.
			if err == nil && p.err == nil && p.s.err() != nil && ep.mu.peers[peer] == p {
				np := &peerConn{ready: make(chan struct{})}
				ep.mu.peers[peer] = np
				ep.resolveLocked(peer, np, s, nil)
			}
			ep.mu.Unlock()
			return nil
		case err == nil:
			// A session that failed already is not kept for the next
			// sender (sessionEnded, which forgets it, may have run
			// before p.s is set).
			err = s.err()
			if err == nil {
				ep.resolveLocked(peer, p, s, nil)
				ep.mu.Unlock()
				return nil
			}
		case superseded:
			p.dialling, p.awaiting = false, sup.by
			ep.mu.Unlock()
			ep.log.Debug("netexchange: simultaneous dial, awaiting the peer's stream", "peer", peer, "peer_address", sup.by)
			if !ep.await(ctx, peer, p) {
				continue // dial again
			}
			return p.err
		}
		ep.resolveLocked(peer, p, nil, err)
		ep.mu.Unlock()
		return err
	}
}

// await waits for the stream of a peer whose own dial superseded ours. It
// reports whether p is settled; false means the stream did not come within
// redialAfter, and p is ours to dial again.
func (ep *Endpoint) await(ctx context.Context, peer string, p *peerConn) bool {
	t := time.NewTimer(ep.redialAfter)
	defer t.Stop()
	var err error
	select {
	case <-p.ready:
		return true
	case <-ctx.Done():
		err = ctx.Err()
	case <-ep.ctx.Done():
		err = ErrClosed
	case <-t.C:
	}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	switch {
	case p.done:
		return true
	case err != nil:
		ep.resolveLocked(peer, p, nil, err)
		return true
	}
	ep.log.Warn("netexchange: the peer that superseded our dial did not dial us; dialling again", "peer", peer, "after", ep.redialAfter)
	p.dialling, p.awaiting = true, ""
	return false
}

// supersededError is a dial the peer refused because its own stream to us
// wins.
type supersededError struct{ by string }

func (e *supersededError) Error() string {
	return fmt.Sprintf("netexchange: the stream was superseded by the one %s dialled", e.by)
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
	if m.Hello.Superseded {
		stop()
		cancel()
		cc.Close()
		if by := m.Hello.Address; by >= ep.addr {
			// Only the lower address wins; two ends that both yielded
			// would wait for each other.
			return nil, &PeerError{Peer: peer, Err: fmt.Errorf("%w: %s superseded our stream, but %s is the lower address", ErrProtocol, by, ep.addr)}
		}
		return nil, &supersededError{by: m.Hello.Address}
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

// checkDialHello checks the hello a dialler opens its stream with.
func checkDialHello(m *netpb.Message) error {
	if err := checkHello(m); err != nil {
		return err
	}
	if m.Hello.Superseded {
		return fmt.Errorf("%w: the dialler's hello says superseded", ErrProtocol)
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
	if err := checkDialHello(m); err != nil {
		ep.log.Warn("netexchange: refused a connection", "err", err)
		return status.Error(codes.InvalidArgument, err.Error())
	}
	peer := m.Hello.Address
	ep.mu.Lock()
	if ep.mu.closed {
		ep.mu.Unlock()
		return status.Error(codes.Unavailable, ErrClosed.Error())
	}
	if ep.ownStreamWinsLocked(peer) {
		ep.mu.Unlock()
		// Both dialled at once: our stream carries the pair's channels.
		// The peer ends this one, on which nothing was sent.
		ep.log.Debug("netexchange: simultaneous dial, our stream supersedes the peer's", "peer", peer)
		return stream.Send(&netpb.Message{Hello: &netpb.Hello{Version: frameVersion, Address: ep.addr, Superseded: true}})
	}
	s := newSession(ep, peer, stream, true)
	ep.mu.sessions[s] = struct{}{}
	// Our own channels to this peer go on this stream too. Their frames
	// wait for the writer, which starts after our hello.
	ep.adoptLocked(peer, s)
	// The reader outlives the handler by a moment: its Recv returns once
	// the handler has returned.
	ep.wg.Add(1)
	ep.mu.Unlock()
	if err := stream.Send(&netpb.Message{Hello: &netpb.Hello{Version: frameVersion, Address: ep.addr}}); err != nil {
		s.fail(s.lost(err))
		ep.wg.Done()
		return err
	}
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
