package ipc_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/yarn/internal/ipc"
	"github.com/sluice/sluice/yarn/internal/ipc/ipctest"
	"github.com/sluice/sluice/yarn/internal/proto/commonpb"
	"github.com/sluice/sluice/yarn/internal/sasl"
)

const testProtocol = "org.example.TestProtocolPB"

// testLogger routes logs to t.Log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

func newServer(t *testing.T, opts ipctest.Options) *ipctest.Server {
	t.Helper()
	s, err := ipctest.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func newClient(t *testing.T, opts ipc.Options) *ipc.Client {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	if opts.ConnectBackoff == 0 {
		opts.ConnectBackoff = time.Millisecond
	}
	if opts.MaxConnectAttempts == 0 {
		opts.MaxConnectAttempts = 3
	}
	c, err := ipc.NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// echo answers with the request's kind and the caller's identity.
func echo(ctx context.Context, call *ipctest.Call) (proto.Message, error) {
	var req commonpb.TokenProto
	if err := proto.Unmarshal(call.Body, &req); err != nil {
		return nil, err
	}
	return &commonpb.TokenProto{Kind: proto.String(req.GetKind()), Service: proto.String(call.User + "/" + call.Auth)}, nil
}

func callEcho(ctx context.Context, c *ipc.Client, ep ipc.Endpoint, kind string, opts ...ipc.CallOption) (*commonpb.TokenProto, error) {
	var resp commonpb.TokenProto
	err := c.Call(ctx, ep, "echo", &commonpb.TokenProto{Kind: proto.String(kind)}, &resp, opts...)
	return &resp, err
}

func TestCallFraming(t *testing.T) {
	s := newServer(t, ipctest.Options{})
	var seen *ipctest.Call
	var mu sync.Mutex
	s.Handle(testProtocol, "echo", func(ctx context.Context, call *ipctest.Call) (proto.Message, error) {
		mu.Lock()
		seen = call
		mu.Unlock()
		return echo(ctx, call)
	})
	c := newClient(t, ipc.Options{})
	ep := ipc.Endpoint{Addr: s.Addr(), Protocol: testProtocol, User: "alice"}
	resp, err := callEcho(context.Background(), c, ep, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetKind() != "hello" || resp.GetService() != "alice/NONE" {
		t.Fatalf("response = %v", resp)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen.Protocol != testProtocol || seen.Declaring != testProtocol || seen.Method != "echo" || seen.Version != 1 {
		t.Errorf("request header = %+v", seen)
	}
	if seen.RetryCount != -1 || len(seen.ClientID) != 16 || string(seen.ClientID) != string(c.ClientID()) {
		t.Errorf("retry count %d, client id %x", seen.RetryCount, seen.ClientID)
	}
	if id := c.ClientID(); id[6]>>4 != 4 {
		t.Errorf("client id %x is not a version-4 UUID", id)
	}
}

func TestMultiplexing(t *testing.T) {
	const n = 16
	s := newServer(t, ipctest.Options{})
	var arrived sync.WaitGroup
	arrived.Add(n)
	release := make(chan struct{})
	var count atomic.Int32
	s.Handle(testProtocol, "echo", func(ctx context.Context, call *ipctest.Call) (proto.Message, error) {
		if count.Add(1) <= n {
			arrived.Done()
			<-release // every call is outstanding at once; answers come in any order
		}
		return echo(ctx, call)
	})
	c := newClient(t, ipc.Options{})
	ep := ipc.Endpoint{Addr: s.Addr(), Protocol: testProtocol, User: "alice"}
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			kind := fmt.Sprintf("call-%d", i)
			resp, err := callEcho(context.Background(), c, ep, kind)
			if err == nil && resp.GetKind() != kind {
				err = fmt.Errorf("call %s got response for %s", kind, resp.GetKind())
			}
			errs <- err
		}()
	}
	arrived.Wait()
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := s.Accepted(); got != 1 {
		t.Errorf("server accepted %d connections, want 1 shared connection", got)
	}
	// A different user gets its own connection.
	if _, err := callEcho(context.Background(), c, ipc.Endpoint{Addr: s.Addr(), Protocol: testProtocol, User: "bob"}, "x"); err != nil {
		t.Fatal(err)
	}
	if got := s.Accepted(); got != 2 {
		t.Errorf("server accepted %d connections, want 2", got)
	}
}

func TestRemoteErrors(t *testing.T) {
	s := newServer(t, ipctest.Options{})
	s.Handle(testProtocol, "standby", func(context.Context, *ipctest.Call) (proto.Message, error) {
		return nil, &ipctest.Exception{Class: string(hadoop.ErrStandby), Message: "Operation category READ is not supported in state standby"}
	})
	s.Handle(testProtocol, "echo", echo)
	c := newClient(t, ipc.Options{})
	ep := ipc.Endpoint{Addr: s.Addr(), Protocol: testProtocol, User: "alice"}
	var resp commonpb.TokenProto
	err := c.Call(context.Background(), ep, "standby", &commonpb.TokenProto{}, &resp)
	var re *hadoop.RemoteError
	if !errors.As(err, &re) || !errors.Is(err, hadoop.ErrStandby) {
		t.Fatalf("err = %v, want a StandbyException RemoteError", err)
	}
	if re.Method != "standby" || re.Code != "ERROR_APPLICATION" || re.Fatal {
		t.Errorf("remote error = %+v", re)
	}
	err = c.Call(context.Background(), ep, "nosuch", &commonpb.TokenProto{}, &resp)
	if !errors.Is(err, hadoop.ErrNoSuchMethod) {
		t.Fatalf("err = %v, want RpcNoSuchMethodException", err)
	}
	// The connection survives non-fatal errors.
	if _, err := callEcho(context.Background(), c, ep, "still-ok"); err != nil {
		t.Fatal(err)
	}
	if s.Accepted() != 1 {
		t.Errorf("accepted %d connections, want 1", s.Accepted())
	}
}

func TestFatalErrorFailsOutstandingCalls(t *testing.T) {
	s := newServer(t, ipctest.Options{})
	blocked := make(chan struct{})
	s.Handle(testProtocol, "block", func(ctx context.Context, call *ipctest.Call) (proto.Message, error) {
		close(blocked)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	s.Handle(testProtocol, "fatal", func(context.Context, *ipctest.Call) (proto.Message, error) {
		return nil, &ipctest.Exception{Class: "org.apache.hadoop.ipc.RpcServerException", Message: "boom", Fatal: true}
	})
	s.Handle(testProtocol, "echo", echo)
	c := newClient(t, ipc.Options{})
	ep := ipc.Endpoint{Addr: s.Addr(), Protocol: testProtocol, User: "alice"}
	blockErr := make(chan error, 1)
	go func() {
		var resp commonpb.TokenProto
		blockErr <- c.Call(context.Background(), ep, "block", &commonpb.TokenProto{}, &resp)
	}()
	<-blocked
	var resp commonpb.TokenProto
	err := c.Call(context.Background(), ep, "fatal", &commonpb.TokenProto{}, &resp)
	var re *hadoop.RemoteError
	if !errors.As(err, &re) || !re.Fatal || re.Class != "org.apache.hadoop.ipc.RpcServerException" {
		t.Fatalf("err = %v, want a fatal RemoteError", err)
	}
	if err := <-blockErr; !errors.Is(err, ipc.ErrConnectionLost) {
		t.Fatalf("outstanding call err = %v, want ErrConnectionLost", err)
	}
	if _, err := callEcho(context.Background(), c, ep, "after"); err != nil {
		t.Fatalf("call after fatal error: %v", err)
	}
	if s.Accepted() != 2 {
		t.Errorf("accepted %d connections, want a reconnect (2)", s.Accepted())
	}
}

func TestPingsWhileIdle(t *testing.T) {
	s := newServer(t, ipctest.Options{})
	s.Handle(testProtocol, "echo", echo)
	c := newClient(t, ipc.Options{PingInterval: 20 * time.Millisecond, IdleTimeout: -1})
	ep := ipc.Endpoint{Addr: s.Addr(), Protocol: testProtocol, User: "alice"}
	if _, err := callEcho(context.Background(), c, ep, "x"); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 10*time.Second, "three pings", func() bool { return s.Pings() >= 3 })
	if _, err := callEcho(context.Background(), c, ep, "y"); err != nil {
		t.Fatal(err)
	}
	if s.Accepted() != 1 {
		t.Errorf("pings did not keep the connection: %d accepted", s.Accepted())
	}
}

func TestIdleConnectionClosedAndReopened(t *testing.T) {
	s := newServer(t, ipctest.Options{})
	s.Handle(testProtocol, "echo", echo)
	c := newClient(t, ipc.Options{IdleTimeout: 30 * time.Millisecond})
	ep := ipc.Endpoint{Addr: s.Addr(), Protocol: testProtocol, User: "alice"}
	if _, err := callEcho(context.Background(), c, ep, "x"); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 10*time.Second, "idle close", func() bool { return s.OpenConns() == 0 })
	if _, err := callEcho(context.Background(), c, ep, "y"); err != nil {
		t.Fatal(err)
	}
	if s.Accepted() != 2 {
		t.Errorf("accepted %d, want 2", s.Accepted())
	}
}

func TestReconnectRetriesIdempotentCalls(t *testing.T) {
	s := newServer(t, ipctest.Options{})
	var attempts atomic.Int32
	var retryCounts []int32
	var callIDs []int32
	var mu sync.Mutex
	s.Handle(testProtocol, "flaky", func(ctx context.Context, call *ipctest.Call) (proto.Message, error) {
		mu.Lock()
		retryCounts = append(retryCounts, call.RetryCount)
		callIDs = append(callIDs, call.CallID)
		mu.Unlock()
		if attempts.Add(1) == 1 {
			s.DropConnections() // the connection breaks under the first try
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return echo(ctx, call)
	})
	c := newClient(t, ipc.Options{})
	ep := ipc.Endpoint{Addr: s.Addr(), Protocol: testProtocol, User: "alice"}
	var resp commonpb.TokenProto
	if err := c.Call(context.Background(), ep, "flaky", &commonpb.TokenProto{Kind: proto.String("k")}, &resp, ipc.Idempotent()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(retryCounts) != 2 || retryCounts[0] != -1 || retryCounts[1] != 1 || callIDs[0] != callIDs[1] {
		t.Errorf("retry counts %v, call ids %v; want [-1 1] with one call id", retryCounts, callIDs)
	}
	mu.Unlock()

	// A call not marked idempotent is not re-sent.
	attempts.Store(0)
	err := c.Call(context.Background(), ep, "flaky", &commonpb.TokenProto{}, &resp)
	if !errors.Is(err, ipc.ErrConnectionLost) {
		t.Fatalf("err = %v, want ErrConnectionLost", err)
	}
}

func TestConnectBackoff(t *testing.T) {
	s := newServer(t, ipctest.Options{})
	s.Handle(testProtocol, "echo", echo)
	var dials atomic.Int32
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) <= 2 {
			return nil, errors.New("connection refused (injected)")
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	c := newClient(t, ipc.Options{Dial: dial, MaxConnectAttempts: 3})
	ep := ipc.Endpoint{Addr: s.Addr(), Protocol: testProtocol, User: "alice"}
	if _, err := callEcho(context.Background(), c, ep, "x"); err != nil {
		t.Fatal(err)
	}
	if dials.Load() != 3 {
		t.Errorf("dialled %d times, want 3", dials.Load())
	}

	// Nothing listens on a closed listener's port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	c2 := newClient(t, ipc.Options{MaxConnectAttempts: 2})
	_, err = callEcho(context.Background(), c2, ipc.Endpoint{Addr: dead, Protocol: testProtocol, User: "alice"}, "x")
	var ce *ipc.ConnectError
	if !errors.As(err, &ce) || !errors.Is(err, ipc.ErrConnect) || ce.Attempts != 2 || ce.Addr != dead {
		t.Fatalf("err = %v, want a ConnectError after 2 attempts", err)
	}
}

func TestContextCancellation(t *testing.T) {
	s := newServer(t, ipctest.Options{})
	release := make(chan struct{})
	s.Handle(testProtocol, "slow", func(ctx context.Context, call *ipctest.Call) (proto.Message, error) {
		<-release
		return echo(ctx, call)
	})
	s.Handle(testProtocol, "echo", echo)
	c := newClient(t, ipc.Options{})
	ep := ipc.Endpoint{Addr: s.Addr(), Protocol: testProtocol, User: "alice"}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var resp commonpb.TokenProto
	err := c.Call(ctx, ep, "slow", &commonpb.TokenProto{}, &resp)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	close(release) // the late response is dropped; the connection lives on
	if _, err := callEcho(context.Background(), c, ep, "after"); err != nil {
		t.Fatal(err)
	}
	if s.Accepted() != 1 {
		t.Errorf("accepted %d, want 1", s.Accepted())
	}
}

func TestCloseFailsCalls(t *testing.T) {
	s := newServer(t, ipctest.Options{})
	started := make(chan struct{})
	s.Handle(testProtocol, "block", func(ctx context.Context, call *ipctest.Call) (proto.Message, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	c := newClient(t, ipc.Options{})
	ep := ipc.Endpoint{Addr: s.Addr(), Protocol: testProtocol, User: "alice"}
	errc := make(chan error, 1)
	go func() {
		var resp commonpb.TokenProto
		errc <- c.Call(context.Background(), ep, "block", &commonpb.TokenProto{}, &resp)
	}()
	<-started
	c.Close()
	if err := <-errc; !errors.Is(err, ipc.ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
	if _, err := callEcho(context.Background(), c, ep, "x"); !errors.Is(err, ipc.ErrClosed) {
		t.Fatalf("call after Close: %v", err)
	}
}

type rollingToken struct {
	mu sync.Mutex
	t  *hadoop.Token
}

func (r *rollingToken) Token() *hadoop.Token {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.t
}

func (r *rollingToken) set(t *hadoop.Token) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.t = t
}

func TestTokenAuthentication(t *testing.T) {
	tok1 := &hadoop.Token{Identifier: []byte("id-one"), Password: []byte("pw-one"), Kind: hadoop.KindAMRMToken}
	tok2 := &hadoop.Token{Identifier: []byte("id-two"), Password: []byte("pw-two"), Kind: hadoop.KindAMRMToken}
	s := newServer(t, ipctest.Options{
		RequireToken: true,
		Passwords: map[string]string{
			tok1.SASLUsername(): tok1.SASLPassword(),
			tok2.SASLUsername(): tok2.SASLPassword(),
		},
	})
	s.Handle(testProtocol, "echo", echo)
	c := newClient(t, ipc.Options{})
	src := &rollingToken{t: tok1}
	ep := ipc.Endpoint{Addr: s.Addr(), Protocol: testProtocol, User: "appattempt_1_0001_000001", Token: src}
	resp, err := callEcho(context.Background(), c, ep, "x")
	if err != nil {
		t.Fatal(err)
	}
	if want := tok1.SASLUsername() + "/TOKEN"; resp.GetService() != want {
		t.Fatalf("server saw %q, want %q", resp.GetService(), want)
	}
	// A rolled-over token is used by the next connection.
	src.set(tok2)
	c.CloseConnections(ep)
	resp, err = callEcho(context.Background(), c, ep, "x")
	if err != nil {
		t.Fatal(err)
	}
	if want := tok2.SASLUsername() + "/TOKEN"; resp.GetService() != want {
		t.Fatalf("after roll-over server saw %q, want %q", resp.GetService(), want)
	}
}

func TestTokenAuthenticationFailures(t *testing.T) {
	good := &hadoop.Token{Identifier: []byte("id"), Password: []byte("right")}
	s := newServer(t, ipctest.Options{RequireToken: true, Passwords: map[string]string{good.SASLUsername(): good.SASLPassword()}})
	s.Handle(testProtocol, "echo", echo)
	c := newClient(t, ipc.Options{})

	bad := &hadoop.Token{Identifier: []byte("id"), Password: []byte("wrong")}
	_, err := callEcho(context.Background(), c, ipc.Endpoint{Addr: s.Addr(), Protocol: testProtocol, User: "u", Token: ipc.StaticToken{T: bad}}, "x")
	if !errors.Is(err, hadoop.ErrSasl) {
		t.Fatalf("wrong password: err = %v, want SaslException", err)
	}
	if s.Accepted() != 1 {
		t.Errorf("an authentication failure was retried: %d connections", s.Accepted())
	}

	// Without a token the server refuses SIMPLE.
	_, err = callEcho(context.Background(), c, ipc.Endpoint{Addr: s.Addr(), Protocol: testProtocol, User: "u"}, "x")
	if !errors.Is(err, hadoop.ErrAccessControl) {
		t.Fatalf("no token: err = %v, want AccessControlException", err)
	}
}

func TestSASLSimpleAndKerberos(t *testing.T) {
	tok := &hadoop.Token{Identifier: []byte("id"), Password: []byte("pw")}
	simple := newServer(t, ipctest.Options{SimpleOnly: true})
	simple.Handle(testProtocol, "echo", echo)
	c := newClient(t, ipc.Options{})
	resp, err := callEcho(context.Background(), c, ipc.Endpoint{Addr: simple.Addr(), Protocol: testProtocol, User: "carol", Token: ipc.StaticToken{T: tok}}, "x")
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetService() != "carol/SIMPLE" {
		t.Errorf("simple-only server saw %q", resp.GetService())
	}

	krb := newServer(t, ipctest.Options{OfferKerberosOnly: true})
	_, err = callEcho(context.Background(), c, ipc.Endpoint{Addr: krb.Addr(), Protocol: testProtocol, User: "carol", Token: ipc.StaticToken{T: tok}}, "x")
	if !errors.Is(err, ipc.ErrKerberosNotConfigured) {
		t.Fatalf("kerberos-only server: err = %v", err)
	}
}

// noTickets is a Kerberos login that a server asking for SIMPLE never uses.
type noTickets struct{}

func (noTickets) NewMechanism(service, host string, qops []string) (sasl.Mechanism, error) {
	return nil, errors.New("no tickets in this test")
}

// TestKerberosClientFallbackToSimple: against a fake server that asks for
// SIMPLE, a client with a Kerberos login fails at once (the refusal is an
// authentication failure, not retried), naming the server and the key,
// unless FallbackToSimpleAllowed; a token client goes on as before.
func TestKerberosClientFallbackToSimple(t *testing.T) {
	tok := &hadoop.Token{Identifier: []byte("id"), Password: []byte("pw")}
	tests := []struct {
		name         string
		server       ipctest.Options
		opts         ipc.Options
		token        bool
		wantRefused  bool
		wantAuthSeen string // what the server saw, when the call succeeds
	}{
		{name: "kerberos, simple-only server", server: ipctest.Options{SimpleOnly: true}, opts: ipc.Options{Kerberos: noTickets{}}, wantRefused: true},
		{name: "kerberos, server offering SIMPLE", server: ipctest.Options{}, opts: ipc.Options{Kerberos: noTickets{}}, wantRefused: true},
		{name: "kerberos allowed, simple-only server", server: ipctest.Options{SimpleOnly: true}, opts: ipc.Options{Kerberos: noTickets{}, FallbackToSimpleAllowed: true}, wantAuthSeen: "carol/SIMPLE"},
		{name: "kerberos allowed, server offering SIMPLE", server: ipctest.Options{}, opts: ipc.Options{Kerberos: noTickets{}, FallbackToSimpleAllowed: true}, wantAuthSeen: "carol/SIMPLE"},
		{name: "token, simple-only server", server: ipctest.Options{SimpleOnly: true}, token: true, wantAuthSeen: "carol/SIMPLE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.server)
			s.Handle(testProtocol, "echo", echo)
			c := newClient(t, tt.opts)
			ep := ipc.Endpoint{Addr: s.Addr(), Protocol: testProtocol, User: "carol", ServerPrincipal: "rm/_HOST@EXAMPLE.COM"}
			if tt.token {
				ep.Token = ipc.StaticToken{T: tok}
			}
			resp, err := callEcho(context.Background(), c, ep, "x")
			if tt.wantRefused {
				var fe *ipc.FallbackError
				if !errors.As(err, &fe) || !errors.Is(err, ipc.ErrFallbackToSimple) || !errors.Is(err, ipc.ErrAuth) {
					t.Fatalf("err = %v, want a *FallbackError (ErrFallbackToSimple, ErrAuth)", err)
				}
				if fe.Addr != s.Addr() {
					t.Errorf("FallbackError.Addr = %q, want %q", fe.Addr, s.Addr())
				}
				if s.Accepted() != 1 || s.Calls() != 0 {
					t.Errorf("server accepted %d connections and ran %d calls; want 1 connection (no retry) and no call", s.Accepted(), s.Calls())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetService() != tt.wantAuthSeen {
				t.Errorf("server saw %q, want %q", resp.GetService(), tt.wantAuthSeen)
			}
		})
	}
}
