package ipc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/yarn/internal/proto/commonpb"
)

// conn is one authenticated connection. A reader goroutine delivers
// responses to waiting calls by call id; a monitor goroutine sends pings and
// closes the connection when idle. Lock order: writeMu before mu.
type conn struct {
	client *Client
	ep     Endpoint
	nc     net.Conn
	r      io.Reader // frames in: nc, or the unwrapped stream under a security layer
	w      io.Writer // frames out: nc, or a wrapping writer (guarded by writeMu)
	auth   string
	qop    string        // negotiated SASL quality of protection, "" without SASL
	done   chan struct{} // closed once the connection is dead

	writeMu sync.Mutex // serialises frames on nc

	mu struct {
		sync.Mutex
		err       error // why the connection died (set once)
		pending   map[int32]*pendingCall
		lastWrite time.Time
		idleSince time.Time // when pending last became empty
	}
}

// writeFailureGrace is how long a call whose request could not be written
// waits for the reader to report why the connection died.
const writeFailureGrace = 2 * time.Second

type pendingCall struct {
	method string
	done   chan struct{}
	resp   *response
	err    error
}

func newConn(c *Client, ep Endpoint, nc net.Conn, hs handshakeResult) *conn {
	cn := &conn{client: c, ep: ep, nc: nc, auth: hs.method, qop: hs.qop, done: make(chan struct{}),
		r: newFrameReader(nc, hs.layer, c.opts.MaxResponseSize),
		w: newFrameWriter(nc, hs.layer, c.opts.ClientID)}
	now := time.Now()
	cn.mu.pending = make(map[int32]*pendingCall)
	cn.mu.lastWrite = now
	cn.mu.idleSince = now
	c.wg.Add(2)
	go func() {
		defer c.wg.Done()
		cn.readLoop()
	}()
	go func() {
		defer c.wg.Done()
		cn.monitor()
	}()
	return cn
}

func (cn *conn) alive() bool {
	select {
	case <-cn.done:
		return false
	default:
		return true
	}
}

// close marks the connection dead with err, fails outstanding calls and
// closes the socket. Only the first call has an effect.
func (cn *conn) close(err error) {
	cn.mu.Lock()
	if cn.mu.err != nil {
		cn.mu.Unlock()
		return
	}
	cn.mu.err = err
	pending := cn.mu.pending
	cn.mu.pending = nil
	close(cn.done)
	cn.mu.Unlock()
	cn.nc.Close()
	for _, p := range pending {
		p.err = err
		close(p.done)
	}
	cn.client.forget(cn)
}

// call sends one request and waits for its response.
func (cn *conn) call(ctx context.Context, id, retry int32, method string, req, resp proto.Message) error {
	rh := &commonpb.RequestHeaderProto{
		MethodName:                 proto.String(method),
		DeclaringClassProtocolName: proto.String(cn.ep.Protocol),
		ClientProtocolVersion:      proto.Uint64(clientProtocolVersion),
	}
	f, err := frame(requestHeader(id, cn.client.opts.ClientID, retry), rh, req)
	if err != nil {
		return err
	}
	p := &pendingCall{method: method, done: make(chan struct{})}
	cn.mu.Lock()
	if cn.mu.err != nil {
		err := cn.mu.err
		cn.mu.Unlock()
		// Nothing was sent: safe to retry on a new connection.
		return &staleError{cause: err}
	}
	if _, dup := cn.mu.pending[id]; dup {
		cn.mu.Unlock()
		return fmt.Errorf("ipc: call id %d already outstanding", id)
	}
	cn.mu.pending[id] = p
	cn.mu.Unlock()

	if err := cn.write(ctx, f); err != nil {
		// A server that refuses the connection sends a FATAL response and
		// closes; the write may fail first. Give the reader a moment to
		// deliver the server's reason before falling back to the write error.
		t := time.NewTimer(writeFailureGrace)
		select {
		case <-cn.done:
		case <-t.C:
		}
		t.Stop()
		cn.close(fmt.Errorf("%w: writing %s: %v", ErrConnectionLost, method, err))
		<-p.done
	} else {
		select {
		case <-p.done:
		case <-ctx.Done():
			cn.mu.Lock()
			if cn.mu.pending != nil {
				delete(cn.mu.pending, id)
				if len(cn.mu.pending) == 0 {
					cn.mu.idleSince = time.Now()
				}
			}
			cn.mu.Unlock()
			return ctx.Err()
		}
	}
	if p.err != nil {
		if errors.Is(p.err, ErrClosed) {
			return ErrClosed
		}
		if !errors.Is(p.err, ErrConnectionLost) {
			return fmt.Errorf("%w: %v", ErrConnectionLost, p.err)
		}
		return p.err
	}
	h := p.resp.header
	switch h.GetStatus() {
	case commonpb.RpcResponseHeaderProto_SUCCESS:
		if p.resp.body == nil {
			return fmt.Errorf("%w: %s: successful response without a body", ErrMalformed, method)
		}
		if err := proto.Unmarshal(p.resp.body, resp); err != nil {
			return fmt.Errorf("%w: %s response: %v", ErrMalformed, method, err)
		}
		return nil
	default:
		return remoteError(h, method)
	}
}

// write sends one frame, honouring ctx's deadline.
func (cn *conn) write(ctx context.Context, f []byte) error {
	cn.writeMu.Lock()
	defer cn.writeMu.Unlock()
	if d, ok := ctx.Deadline(); ok {
		_ = cn.nc.SetWriteDeadline(d)
		defer cn.nc.SetWriteDeadline(time.Time{})
	}
	_, err := cn.w.Write(f)
	if err == nil {
		cn.mu.Lock()
		cn.mu.lastWrite = time.Now()
		cn.mu.Unlock()
	}
	return err
}

// readLoop delivers response frames until the connection fails.
func (cn *conn) readLoop() {
	for {
		f, err := readFrame(cn.r, cn.client.opts.MaxResponseSize)
		if err != nil {
			cn.close(fmt.Errorf("%w: reading from %s: %v", ErrConnectionLost, cn.ep.Addr, err))
			return
		}
		r, err := parseResponse(f)
		if err != nil {
			cn.close(fmt.Errorf("%w: from %s: %v", ErrConnectionLost, cn.ep.Addr, err))
			return
		}
		id := r.callID()
		if r.header.GetStatus() == commonpb.RpcResponseHeaderProto_FATAL {
			// The server closes the connection after a fatal error; every
			// outstanding call fails with it.
			re := remoteError(r.header, "")
			cn.client.log.Warn("ipc: fatal error from server", "addr", cn.ep.Addr, "callId", id, "err", re)
			cn.mu.Lock()
			p := cn.mu.pending[id]
			if p != nil {
				delete(cn.mu.pending, id)
			}
			cn.mu.Unlock()
			if p != nil {
				re.Method = p.method
				p.resp = r
				close(p.done)
			}
			cn.close(fmt.Errorf("%w: %w", ErrConnectionLost, re))
			return
		}
		cn.mu.Lock()
		p := cn.mu.pending[id]
		if p != nil {
			delete(cn.mu.pending, id)
			if len(cn.mu.pending) == 0 {
				cn.mu.idleSince = time.Now()
			}
		}
		cn.mu.Unlock()
		if p == nil {
			// A call that was cancelled, or a server bug: drop it.
			cn.client.log.Debug("ipc: response for unknown call", "addr", cn.ep.Addr, "callId", id)
			continue
		}
		p.resp = r
		close(p.done)
	}
}

// monitor sends pings on a quiet connection and closes it when idle.
func (cn *conn) monitor() {
	opts := cn.client.opts
	tick := opts.PingInterval / 4
	if opts.IdleTimeout > 0 {
		tick = min(tick, opts.IdleTimeout/4)
	}
	tick = max(tick, 5*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	ping, err := frame(requestHeader(callIDPing, opts.ClientID, -1))
	if err != nil {
		cn.close(err)
		return
	}
	for {
		select {
		case <-cn.done:
			return
		case now := <-t.C:
			cn.mu.Lock()
			idle := len(cn.mu.pending) == 0 && opts.IdleTimeout > 0 && now.Sub(cn.mu.idleSince) >= opts.IdleTimeout
			quiet := now.Sub(cn.mu.lastWrite) >= opts.PingInterval
			cn.mu.Unlock()
			if idle {
				cn.client.log.Debug("ipc: closing idle connection", "addr", cn.ep.Addr, "protocol", cn.ep.Protocol)
				cn.close(fmt.Errorf("%w: idle", ErrConnectionLost))
				return
			}
			if quiet {
				ctx, cancel := context.WithTimeout(context.Background(), opts.PingInterval)
				err := cn.write(ctx, ping)
				cancel()
				if err != nil {
					cn.close(fmt.Errorf("%w: ping: %v", ErrConnectionLost, err))
					return
				}
			}
		}
	}
}

// forget removes a dead connection from the pool.
func (c *Client) forget(cn *conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.conns[cn.ep.key()] == cn {
		delete(c.mu.conns, cn.ep.key())
	}
}
