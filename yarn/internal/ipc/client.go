// Package ipc is Sluice's client of Hadoop IPC (RPC protocol version 9 with
// the protobuf RPC engine), the transport of every YARN protocol.
//
// A Client multiplexes concurrent calls over one TCP connection per
// (address, protocol, user), matching responses to calls by call id. A
// connection authenticates either with no SASL (plain SIMPLE: the user name is
// sent in the connection context) or with SASL: SIMPLE, TOKEN through
// DIGEST-MD5 with a Hadoop token (the AMRMToken towards the scheduler, an
// NMToken towards a NodeManager, an HDFS delegation token), or KERBEROS
// through GSSAPI with a Kerberos login (Options.Kerberos). Under KERBEROS the
// server's principal must be the one the Endpoint expects (ServerPrincipal,
// with _HOST replaced by the address's host), and a server asking it to fall
// back to SIMPLE is refused with a *FallbackError unless
// Options.FallbackToSimpleAllowed (ipc.client.fallback-to-simple-auth-allowed).
// Under KERBEROS and TOKEN the quality of protection is negotiated from
// Options.QOP: with integrity or privacy, every frame after the exchange
// travels wrapped in RpcSaslProto WRAP messages.
//
// Idle connections send pings (call id -4) and are closed after IdleTimeout
// without calls; a broken connection fails its outstanding calls with
// ErrConnectionLost and the next call reconnects, retrying the dial with
// exponential backoff. Calls marked idempotent are re-sent once reconnected,
// with the same call id and an increased retry count, as Hadoop's retry cache
// expects. Remote exceptions come back as *hadoop.RemoteError.
package ipc

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/yarn/internal/sasl"
)

// TokenSource supplies the token a connection authenticates with. It is
// asked at every (re)connection, so a token that rolls over (the AMRMToken)
// is picked up by the next connection.
type TokenSource interface {
	Token() *hadoop.Token
}

// StaticToken is a TokenSource that always returns the same token.
type StaticToken struct{ T *hadoop.Token }

// Token returns the token.
func (s StaticToken) Token() *hadoop.Token { return s.T }

// Kerberos authenticates connections with SASL GSSAPI. While Options.Kerberos
// is nil, servers that only accept KERBEROS are refused with
// ErrKerberosNotConfigured.
type Kerberos interface {
	// NewMechanism starts a GSSAPI exchange with the service principal
	// service/host, accepting the qualities of protection qops (most
	// preferred first).
	NewMechanism(service, host string, qops []string) (sasl.Mechanism, error)
}

// KerberosLogin is the Kerberos of a login (a *kerberos.Login as the
// TicketSource).
type KerberosLogin struct {
	// Tickets gives service tickets. Required.
	Tickets sasl.TicketSource
	// Now dates authenticators. Default time.Now.
	Now func() time.Time
}

// NewMechanism implements Kerberos.
func (k KerberosLogin) NewMechanism(service, host string, qops []string) (sasl.Mechanism, error) {
	if k.Tickets == nil {
		return nil, errors.New("ipc: KerberosLogin without Tickets")
	}
	return sasl.NewGSSAPI(k.Tickets, service, host, qops, k.Now), nil
}

// Endpoint identifies a connection: one TCP connection is kept per distinct
// (Addr, Protocol, User).
type Endpoint struct {
	// Addr is the server's host:port.
	Addr string
	// Protocol is the Java protocol name sent in the connection context and
	// each request header, e.g. org.apache.hadoop.yarn.api.ApplicationClientProtocolPB.
	Protocol string
	// User is the user the connection acts as. With SIMPLE authentication it
	// is sent to the server; with tokens it only keys the connection.
	User string
	// Token, when set, makes the connection authenticate with SASL TOKEN
	// (DIGEST-MD5).
	Token TokenSource
	// ServerPrincipal is the Kerberos principal the server must present
	// under KERBEROS, as configured (dfs.namenode.kerberos.principal,
	// yarn.resourcemanager.principal): service/host@REALM where host may be
	// _HOST, replaced by the host of Addr. Required when the connection
	// authenticates with Kerberos.
	ServerPrincipal string
}

type connKey struct{ addr, protocol, user string }

func (e Endpoint) key() connKey { return connKey{e.Addr, e.Protocol, e.User} }

// Options configure a Client. Every field has a default, documented on it.
type Options struct {
	// Logger receives connection events. Default: discard.
	Logger *slog.Logger
	// ClientID is the 16-byte id sent with every call. Default: random.
	ClientID []byte
	// Dial opens TCP connections. Default: net.Dialer.DialContext.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// ConnectTimeout bounds one dial plus handshake. Default 20s.
	ConnectTimeout time.Duration
	// MaxConnectAttempts is how many times a dial is tried before a call
	// fails with a *ConnectError. Default 10 (ipc.client.connect.max.retries).
	MaxConnectAttempts int
	// ConnectBackoff is the first pause between dial attempts; it doubles up
	// to MaxConnectBackoff. Defaults 100ms and 5s.
	ConnectBackoff, MaxConnectBackoff time.Duration
	// PingInterval: a connection on which nothing was written for this long
	// sends a ping. Default 60s (ipc.ping.interval).
	PingInterval time.Duration
	// IdleTimeout closes a connection that has had no outstanding call for
	// this long. Default 10s (ipc.client.connection.maxidletime); negative
	// disables.
	IdleTimeout time.Duration
	// MaxResponseSize bounds a response frame. Default 128 MiB
	// (ipc.maximum.response.length).
	MaxResponseSize int
	// MaxCallRetries is how often an idempotent call is re-sent after the
	// connection broke under it. Default 3.
	MaxCallRetries int
	// QOP lists acceptable SASL qualities of protection, most preferred
	// first (hadoop.rpc.protection). Default [authentication]. Integrity
	// and privacy apply to KERBEROS (GSSAPI) and TOKEN (DIGEST-MD5, with
	// the rc4 cipher) connections alike.
	QOP []hadoop.QOP
	// Kerberos enables SASL KERBEROS. Default nil: no Kerberos.
	Kerberos Kerberos
	// FallbackToSimpleAllowed lets a client with a Kerberos login continue
	// with SIMPLE authentication when a server asks it to (answers
	// NEGOTIATE with SUCCESS, or offers SIMPLE before any method the client
	// can use), as ipc.client.fallback-to-simple-auth-allowed does for
	// Hadoop's clients. Default false: the connection fails with a
	// *FallbackError, since a server impersonating a secure one would
	// otherwise receive calls without authenticating itself. It does not
	// concern clients without a Kerberos login: a TOKEN client still
	// follows a simple-only server's SUCCESS.
	FallbackToSimpleAllowed bool
	// Rand supplies SASL nonces. Default crypto/rand.Reader.
	Rand io.Reader
}

func (o *Options) withDefaults() error {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ClientID == nil {
		o.ClientID = make([]byte, 16)
		if _, err := rand.Read(o.ClientID); err != nil {
			return fmt.Errorf("ipc: generating client id: %w", err)
		}
		// Version-4 UUID layout, as Hadoop's ClientId.
		o.ClientID[6] = o.ClientID[6]&0x0f | 0x40
		o.ClientID[8] = o.ClientID[8]&0x3f | 0x80
	} else if len(o.ClientID) != 16 {
		return fmt.Errorf("ipc: ClientID is %d bytes, want 16", len(o.ClientID))
	}
	if o.Dial == nil {
		var d net.Dialer
		o.Dial = d.DialContext
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 20 * time.Second
	}
	if o.MaxConnectAttempts <= 0 {
		o.MaxConnectAttempts = 10
	}
	if o.ConnectBackoff <= 0 {
		o.ConnectBackoff = 100 * time.Millisecond
	}
	if o.MaxConnectBackoff <= 0 {
		o.MaxConnectBackoff = 5 * time.Second
	}
	if o.PingInterval <= 0 {
		o.PingInterval = 60 * time.Second
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = 10 * time.Second
	}
	if o.MaxResponseSize <= 0 {
		o.MaxResponseSize = 128 << 20
	}
	if o.MaxCallRetries <= 0 {
		o.MaxCallRetries = 3
	}
	if len(o.QOP) == 0 {
		o.QOP = []hadoop.QOP{hadoop.QOPAuthentication}
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	return nil
}

// Client is a Hadoop IPC client. It is safe for concurrent use.
type Client struct {
	opts Options
	log  *slog.Logger

	mu struct {
		sync.Mutex
		closed  bool
		conns   map[connKey]*conn
		dialing map[connKey]chan struct{}
		callID  int32
	}
	closing chan struct{} // closed by Close
	wg      sync.WaitGroup
}

// NewClient returns a client. It opens no connection until the first call.
func NewClient(opts Options) (*Client, error) {
	if err := opts.withDefaults(); err != nil {
		return nil, err
	}
	c := &Client{opts: opts, log: opts.Logger, closing: make(chan struct{})}
	c.mu.conns = make(map[connKey]*conn)
	c.mu.dialing = make(map[connKey]chan struct{})
	return c, nil
}

// ClientID returns the 16-byte id sent with every call.
func (c *Client) ClientID() []byte { return append([]byte(nil), c.opts.ClientID...) }

// Close closes every connection, failing outstanding calls with ErrClosed,
// and waits for the connections' goroutines to exit.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil
	}
	c.mu.closed = true
	close(c.closing)
	conns := make([]*conn, 0, len(c.mu.conns))
	for _, cn := range c.mu.conns {
		conns = append(conns, cn)
	}
	c.mu.Unlock()
	for _, cn := range conns {
		cn.close(ErrClosed)
	}
	c.wg.Wait()
	return nil
}

// CloseConnections closes the connections to ep's (Addr, Protocol, User), so
// that the next call reconnects (and re-authenticates). Outstanding calls
// fail with ErrConnectionLost.
func (c *Client) CloseConnections(ep Endpoint) {
	c.mu.Lock()
	cn := c.mu.conns[ep.key()]
	c.mu.Unlock()
	if cn != nil {
		cn.close(fmt.Errorf("%w: closed by the client", ErrConnectionLost))
	}
}

// nextCallID returns a fresh non-negative call id.
func (c *Client) nextCallID() int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.mu.callID
	c.mu.callID++
	if c.mu.callID < 0 {
		c.mu.callID = 0
	}
	return id
}

// CallOption modifies one call.
type CallOption func(*callOpts)

type callOpts struct{ idempotent bool }

// Idempotent marks a call safe to re-send after the connection broke under
// it (Hadoop's @Idempotent/@AtMostOnce methods).
func Idempotent() CallOption { return func(o *callOpts) { o.idempotent = true } }

// Call invokes method on ep's protocol with req and decodes the result into
// resp. Errors: *hadoop.RemoteError for a server-side exception; an error
// wrapping ErrConnectionLost if the connection broke while the call was
// outstanding (and it was not retried); *ConnectError if no connection could
// be made; the context's error if ctx ended first.
func (c *Client) Call(ctx context.Context, ep Endpoint, method string, req, resp proto.Message, opts ...CallOption) error {
	var o callOpts
	for _, f := range opts {
		f(&o)
	}
	id := c.nextCallID()
	var lastErr error
	stale := 0
	for retry := int32(0); ; retry++ {
		cn, err := c.getConn(ctx, ep)
		if err != nil {
			if lastErr != nil {
				return fmt.Errorf("%w (after: %v)", err, lastErr)
			}
			return err
		}
		rc := retry
		if retry == 0 {
			rc = -1 // Hadoop's "not a retry"
		}
		err = cn.call(ctx, id, rc, method, req, resp)
		if err == nil {
			return nil
		}
		var se *staleError
		if errors.As(err, &se) {
			if stale < 3 {
				stale++
				retry-- // not a retry as far as the server is concerned
				continue
			}
			return se.cause
		}
		if !errors.Is(err, ErrConnectionLost) || !o.idempotent || int(retry) >= c.opts.MaxCallRetries || ctx.Err() != nil {
			return err
		}
		c.log.Debug("ipc: retrying call after connection loss", "addr", ep.Addr, "method", method, "callId", id, "retry", retry+1, "err", err)
		lastErr = err
	}
}

// getConn returns a live connection for ep, dialing if needed. Concurrent
// callers for the same key wait for a single dial.
func (c *Client) getConn(ctx context.Context, ep Endpoint) (*conn, error) {
	key := ep.key()
	for {
		c.mu.Lock()
		if c.mu.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		if cn := c.mu.conns[key]; cn != nil {
			if cn.alive() {
				c.mu.Unlock()
				return cn, nil
			}
			delete(c.mu.conns, key)
		}
		if wait := c.mu.dialing[key]; wait != nil {
			c.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		wait := make(chan struct{})
		c.mu.dialing[key] = wait
		c.mu.Unlock()

		cn, err := c.connect(ctx, ep)

		c.mu.Lock()
		delete(c.mu.dialing, key)
		closed := c.mu.closed
		if err == nil && !closed {
			c.mu.conns[key] = cn
		}
		c.mu.Unlock()
		close(wait)
		if err == nil && closed {
			cn.close(ErrClosed)
			return nil, ErrClosed
		}
		return cn, err
	}
}

// connect dials and handshakes, retrying failed dials with backoff.
// Authentication failures are not retried.
func (c *Client) connect(ctx context.Context, ep Endpoint) (*conn, error) {
	backoff := c.opts.ConnectBackoff
	var lastErr error
	for attempt := 1; attempt <= c.opts.MaxConnectAttempts; attempt++ {
		cn, retryable, err := c.dialOnce(ctx, ep)
		if err == nil {
			return cn, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !retryable {
			return nil, err
		}
		lastErr = err
		if attempt == c.opts.MaxConnectAttempts {
			break
		}
		c.log.Debug("ipc: connect failed, retrying", "addr", ep.Addr, "attempt", attempt, "backoff", backoff, "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-c.closing:
			t.Stop()
			return nil, ErrClosed
		}
		backoff = min(2*backoff, c.opts.MaxConnectBackoff)
	}
	return nil, &ConnectError{Addr: ep.Addr, Attempts: c.opts.MaxConnectAttempts, Err: lastErr}
}

// dialOnce makes one connection attempt. retryable reports whether the
// failure was in reaching the server (worth retrying) rather than a refusal
// by it.
func (c *Client) dialOnce(ctx context.Context, ep Endpoint) (_ *conn, retryable bool, _ error) {
	dctx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout)
	defer cancel()
	nc, err := c.opts.Dial(dctx, "tcp", ep.Addr)
	if err != nil {
		return nil, true, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		_ = tc.SetKeepAlive(true)
	}
	deadline, _ := dctx.Deadline()
	_ = nc.SetDeadline(deadline)
	// Unblock handshake I/O if ctx ends early.
	stop := context.AfterFunc(dctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	hs, err := c.handshake(nc, ep)
	stop()
	if err != nil {
		nc.Close()
		var re *hadoop.RemoteError
		retry := !errors.As(err, &re) && !errors.Is(err, ErrAuth) && !errors.Is(err, ErrKerberosNotConfigured)
		return nil, retry, err
	}
	_ = nc.SetDeadline(time.Time{})
	cn := newConn(c, ep, nc, hs)
	c.log.Debug("ipc: connected", "addr", ep.Addr, "protocol", ep.Protocol, "user", ep.User, "auth", hs.method, "qop", hs.qop)
	return cn, false, nil
}
