//go:build integration

package ipc

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/integration/minicluster"
	"github.com/sluice/sluice/security/kerberos"
	"github.com/sluice/sluice/yarn/internal/proto/commonpb"
	"github.com/sluice/sluice/yarn/internal/proto/hdfspb"
	"github.com/sluice/sluice/yarn/internal/proto/yarnpb"
	"github.com/sluice/sluice/yarn/internal/sasl"
)

func TestMain(m *testing.M) { os.Exit(minicluster.RunMain(m)) }

const (
	nnProtocol = "org.apache.hadoop.hdfs.protocol.ClientProtocol"
	rmProtocol = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"
)

type secureEnv struct {
	c     *minicluster.Cluster
	login *kerberos.Login
	nn    Endpoint
	rm    Endpoint
}

func secure(t *testing.T) secureEnv {
	t.Helper()
	c := minicluster.SharedSecure(t)
	k := c.Kerberos
	login, err := kerberos.New(kerberos.Config{Principal: k.Principal, Keytab: k.Keytab, Krb5Conf: k.Krb5Conf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { login.Close() })
	realm := "@" + k.Realm
	return secureEnv{
		c: c, login: login,
		nn: Endpoint{Addr: c.NameNode, Protocol: nnProtocol, User: "sluice", ServerPrincipal: "hdfs/_HOST" + realm},
		// The harness's YARN servers share the JVM's Kerberos identity, hdfs/localhost.
		rm: Endpoint{Addr: c.ResourceManager, Protocol: rmProtocol, User: "sluice", ServerPrincipal: k.RM},
	}
}

func newKerberosClient(t *testing.T, k Kerberos, qop ...hadoop.QOP) *Client {
	t.Helper()
	c, err := NewClient(Options{Kerberos: k, QOP: qop, MaxConnectAttempts: 2, Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (c *Client) connQOP(ep Endpoint) (auth, qop string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cn := c.mu.conns[ep.key()]; cn != nil {
		return cn.auth, cn.qop
	}
	return "", ""
}

// TestKerberosQOP calls the secure NameNode and ResourceManager over SASL
// GSSAPI with each quality of protection; with integrity and privacy every
// frame travels wrapped.
func TestKerberosQOP(t *testing.T) {
	env := secure(t)
	for _, q := range []hadoop.QOP{hadoop.QOPAuthentication, hadoop.QOPIntegrity, hadoop.QOPPrivacy} {
		t.Run(string(q), func(t *testing.T) {
			c := newKerberosClient(t, KerberosLogin{Tickets: env.login}, q)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var tok commonpb.GetDelegationTokenResponseProto
			if err := c.Call(ctx, env.nn, "getDelegationToken", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("sluice")}, &tok); err != nil {
				t.Fatalf("getDelegationToken: %v", err)
			}
			if len(tok.GetToken().GetIdentifier()) == 0 || tok.GetToken().GetKind() != "HDFS_DELEGATION_TOKEN" {
				t.Fatalf("token %v", tok.GetToken())
			}
			if auth, got := c.connQOP(env.nn); auth != AuthKerberos || got != string(q) {
				t.Fatalf("connection auth %s qop %s, want KERBEROS %s", auth, got, q)
			}
			// Large requests and responses span several wrapped pieces.
			var fi hdfspb.GetFileInfoResponseProto
			long := "/user/sluice/" + strings.Repeat("x", 200_000)
			err := c.Call(ctx, env.nn, "getFileInfo", &hdfspb.GetFileInfoRequestProto{Src: proto.String(long)}, &fi)
			var re *hadoop.RemoteError
			if err != nil && !errors.As(err, &re) {
				t.Fatalf("getFileInfo of a long path: %v", err)
			}
			if err := c.Call(ctx, env.nn, "getFileInfo", &hdfspb.GetFileInfoRequestProto{Src: proto.String("/user/sluice")}, &fi); err != nil {
				t.Fatalf("getFileInfo: %v", err)
			}
			if fi.GetFs().GetOwner() != "sluice" {
				t.Errorf("/user/sluice owned by %q", fi.GetFs().GetOwner())
			}
			var m yarnpb.GetClusterMetricsResponseProto
			if err := c.Call(ctx, env.rm, "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &m); err != nil {
				t.Fatalf("RM getClusterMetrics: %v", err)
			}
			if n := m.GetClusterMetrics().GetNumNodeManagers(); n < 1 {
				t.Errorf("%d NodeManagers", n)
			}
			if auth, got := c.connQOP(env.rm); auth != AuthKerberos || got != string(q) {
				t.Fatalf("RM connection auth %s qop %s, want KERBEROS %s", auth, got, q)
			}
		})
	}
}

// TestDelegationTokenAuthenticatesDigest: a token obtained over Kerberos,
// written to and read back from an HDTS credentials file, authenticates a
// TOKEN (DIGEST-MD5) connection to the NameNode, which then knows the
// caller as the token's owner.
func TestDelegationTokenAuthenticatesDigest(t *testing.T) {
	env := secure(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kc := newKerberosClient(t, KerberosLogin{Tickets: env.login}, hadoop.QOPPrivacy)
	var resp commonpb.GetDelegationTokenResponseProto
	if err := kc.Call(ctx, env.nn, "getDelegationToken", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("sluice")}, &resp); err != nil {
		t.Fatal(err)
	}
	tp := resp.GetToken()
	tok := &hadoop.Token{Identifier: tp.GetIdentifier(), Password: tp.GetPassword(), Kind: tp.GetKind(), Service: "127.0.0.1:" + strings.Split(env.c.NameNode, ":")[1]}
	id, err := hadoop.ParseDelegationTokenIdentifier(tok.Identifier)
	if err != nil {
		t.Fatal(err)
	}
	if id.Owner != env.login.Principal() || id.Renewer != "sluice" {
		t.Errorf("token identifier %+v", id)
	}
	creds := &hadoop.Credentials{}
	creds.AddToken(tok.Service, tok)
	path := filepath.Join(t.TempDir(), "container_tokens")
	if err := creds.WriteTokenFile(path, hadoop.FormatWritable); err != nil {
		t.Fatal(err)
	}
	back, err := hadoop.ReadTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fromFile, ok := back.TokenByKind("HDFS_DELEGATION_TOKEN")
	if !ok {
		t.Fatal("no HDFS token in the credentials file")
	}

	// No Kerberos at all on this client: the token alone authenticates, with each quality of
	// protection (DIGEST-MD5's integrity and rc4 confidentiality layers).
	ep := env.nn
	ep.ServerPrincipal = ""
	ep.Token = StaticToken{T: fromFile}
	var fi hdfspb.GetFileInfoResponseProto
	for _, q := range []hadoop.QOP{hadoop.QOPAuthentication, hadoop.QOPIntegrity, hadoop.QOPPrivacy} {
		tc, err := NewClient(Options{QOP: []hadoop.QOP{q}})
		if err != nil {
			t.Fatal(err)
		}
		defer tc.Close()
		if err := tc.Call(ctx, ep, "getFileInfo", &hdfspb.GetFileInfoRequestProto{Src: proto.String("/user/sluice")}, &fi); err != nil {
			t.Fatalf("getFileInfo with the delegation token under %s: %v", q, err)
		}
		if auth, got := tc.connQOP(ep); auth != AuthToken || got != string(q) {
			t.Errorf("connection authenticated with %s/%s, want TOKEN/%s", auth, got, q)
		}
		if fi.GetFs().GetOwner() != "sluice" {
			t.Errorf("owner %q", fi.GetFs().GetOwner())
		}
		// Many frames, some spanning wrapped pieces, in both directions.
		long := "/user/sluice/" + strings.Repeat("y", 100_000)
		for i := 0; i < 20; i++ {
			err := tc.Call(ctx, ep, "getFileInfo", &hdfspb.GetFileInfoRequestProto{Src: proto.String(long)}, &fi)
			var re *hadoop.RemoteError
			if err != nil && !errors.As(err, &re) {
				t.Fatalf("call %d under %s: %v", i, q, err)
			}
		}
	}

	// Renew (we named ourselves renewer), then cancel: a cancelled token no longer authenticates.
	var rr commonpb.RenewDelegationTokenResponseProto
	if err := kc.Call(ctx, env.nn, "renewDelegationToken", &commonpb.RenewDelegationTokenRequestProto{Token: tp}, &rr); err != nil {
		t.Fatalf("renew: %v", err)
	}
	// The secure cluster's tokens must be renewed every TokenRenewInterval.
	renew := env.c.Kerberos.TokenRenewInterval
	if exp := time.UnixMilli(int64(rr.GetNewExpiryTime())); time.Until(exp) < renew-10*time.Second || time.Until(exp) > renew+time.Second {
		t.Errorf("renewed token expires at %s, in %v; want in the NameNode's renew interval %v", exp, time.Until(exp), renew)
	}
	if err := kc.Call(ctx, env.nn, "cancelDelegationToken", &commonpb.CancelDelegationTokenRequestProto{Token: tp}, &commonpb.CancelDelegationTokenResponseProto{}); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	tc2, _ := NewClient(Options{MaxConnectAttempts: 1})
	defer tc2.Close()
	err = tc2.Call(ctx, ep, "getFileInfo", &hdfspb.GetFileInfoRequestProto{Src: proto.String("/user/sluice")}, &fi)
	if err == nil {
		t.Fatal("a cancelled token still authenticates")
	}
	t.Log(err)
}

// wrongSPN makes GSSAPI mechanisms for another service than the server's:
// the server receives a ticket it cannot decrypt.
type wrongSPN struct {
	login   *kerberos.Login
	service string
}

func (w wrongSPN) NewMechanism(_, host string, qops []string) (sasl.Mechanism, error) {
	return sasl.NewGSSAPI(w.login, w.service, host, qops, nil), nil
}

// TestKerberosFailuresNameWhatToCheck: the usual failures at connection time.
func TestKerberosFailuresNameWhatToCheck(t *testing.T) {
	env := secure(t)
	req := &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("sluice")}
	call := func(k Kerberos, ep Endpoint) error {
		c := newKerberosClient(t, k)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return c.Call(ctx, ep, "getDelegationToken", req, &commonpb.GetDelegationTokenResponseProto{})
	}
	login := KerberosLogin{Tickets: env.login}
	otherHost := env.nn
	otherHost.ServerPrincipal = "hdfs/nn.example.com@" + env.c.Kerberos.Realm
	unset := env.nn
	unset.ServerPrincipal = ""
	tests := []struct {
		name string
		err  func() error
		is   []error
		says []string
	}{
		{"server principal mismatch", func() error { return call(login, otherHost) },
			[]error{ErrAuth, kerberos.ErrServerPrincipal}, []string{"has Kerberos principal hdfs/localhost", "hdfs/nn.example.com was expected"}},
		{"server principal not configured", func() error { return call(login, unset) },
			[]error{ErrAuth, kerberos.ErrServerPrincipal}, []string{"dfs.namenode.kerberos.principal"}},
		{"clock skew", func() error {
			return call(KerberosLogin{Tickets: env.login, Now: func() time.Time { return time.Now().Add(time.Hour) }}, env.nn)
		}, []error{ErrAuth, kerberos.ErrRejected}, []string{"clock differs from the server's", "GSS initiate failed"}},
		{"ticket for another service", func() error { return call(wrongSPN{env.login, "yarn"}, env.nn) },
			[]error{ErrAuth, kerberos.ErrRejected}, []string{"outdated keytab", "server principal setting"}},
		{"no Kerberos login", func() error {
			c, _ := NewClient(Options{MaxConnectAttempts: 1})
			defer c.Close()
			return c.Call(context.Background(), env.nn, "getDelegationToken", req, &commonpb.GetDelegationTokenResponseProto{})
		}, []error{ErrKerberosNotConfigured}, []string{"security.kerberos.login.keytab", "KERBEROS/GSSAPI", env.c.NameNode}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range tc.is {
				if !errors.Is(err, want) {
					t.Errorf("error %v is not %v", err, want)
				}
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			t.Log(err)
		})
	}
}

// TestKerberosConnectionsOutliveTickets: with 30-second tickets and the login's re-login loop
// running, an open connection keeps working after the TGT it was made with ended, and a new
// connection authenticates with the re-logged-in TGT.
func TestKerberosConnectionsOutliveTickets(t *testing.T) {
	env := secure(t)
	k := env.c.Kerberos
	b, err := os.ReadFile(k.Krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(t.TempDir(), "krb5.conf")
	if err := os.WriteFile(short, []byte(strings.Replace(string(b), "ticket_lifetime = 10h", "ticket_lifetime = 30s", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	login, err := kerberos.New(kerberos.Config{Principal: k.Principal, Keytab: k.Keytab, Krb5Conf: short, MinRefreshInterval: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer login.Close()
	first := login.Times()
	if first.Lifetime() > time.Minute {
		t.Fatalf("TGT lifetime %s, want 30s", first.Lifetime())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- login.Run(ctx) }()
	defer func() { cancel(); <-done }()

	c := newKerberosClient(t, KerberosLogin{Tickets: login}, hadoop.QOPPrivacy)
	c.opts.IdleTimeout = -1 // keep the first connection open across the expiry
	call := func() error {
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		var fi hdfspb.GetFileInfoResponseProto
		return c.Call(cctx, env.nn, "getFileInfo", &hdfspb.GetFileInfoRequestProto{Src: proto.String("/user/sluice")}, &fi)
	}
	if err := call(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(first.End) + time.Second) // waiting for the ticket to expire in real time
	if err := call(); err != nil {
		t.Fatalf("the open connection after the TGT ended: %v", err)
	}
	c.CloseConnections(env.nn)
	if err := call(); err != nil {
		t.Fatalf("a new connection after the TGT ended: %v", err)
	}
	if login.Metrics().Refreshes.Load() < 1 {
		t.Error("the login never re-logged in")
	}
}
