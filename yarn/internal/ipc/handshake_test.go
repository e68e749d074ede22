package ipc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/yarn/internal/proto/commonpb"
	"github.com/sluice/sluice/yarn/internal/sasl"
)

// The handshake fuzz test plays a server that sends fuzzed frames to a
// client over net.Pipe: the client must end with a result or an error of a
// known kind, never panic, and never wait once the server has hung up.

// Fixed credentials, so that seeds can carry valid exchanges.
var (
	hsToken   = &hadoop.Token{Identifier: []byte("nm-token-id"), Password: []byte("nm-token-pw"), Kind: hadoop.KindNMToken}
	hsKrbKey  = types.EncryptionKey{KeyType: etypeID.AES128_CTS_HMAC_SHA1_96, KeyValue: bytes.Repeat([]byte{0x42}, 16)}
	hsNonce   = "c2VydmVyLW5vbmNl"
	hsCnonce  = "AQEBAQEBAQEBAQEBAQEBAQEB" // base64 of 18 bytes of fixedRand(1)
	hsAddr    = "nn.example.com:8020"
	hsService = "nn/nn.example.com"
)

type fixedRand byte

func (f fixedRand) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(f)
	}
	return len(p), nil
}

// fakeTickets is a TicketSource with one fixed ticket and session key.
type fakeTickets struct{}

func (fakeTickets) ServiceTicket(spn string) (messages.Ticket, types.EncryptionKey, error) {
	return messages.Ticket{
		TktVNO:  5,
		Realm:   "EXAMPLE.COM",
		SName:   types.NewPrincipalName(nametype.KRB_NT_SRV_INST, spn),
		EncPart: types.EncryptedData{EType: hsKrbKey.KeyType, KVNO: 1, Cipher: bytes.Repeat([]byte{7}, 64)},
	}, hsKrbKey, nil
}
func (fakeTickets) ClientPrincipal() types.PrincipalName {
	return types.NewPrincipalName(nametype.KRB_NT_PRINCIPAL, "alice")
}
func (fakeTickets) Realm() string { return "EXAMPLE.COM" }

// handshakeClients are the client set-ups the fuzz input chooses from.
var handshakeClients = []struct {
	name string
	opts Options
	ep   Endpoint
}{
	{"token", Options{}, Endpoint{Addr: hsAddr, Protocol: "p", User: "u", Token: StaticToken{hsToken}}},
	{"token-privacy", Options{QOP: []hadoop.QOP{hadoop.QOPPrivacy, hadoop.QOPIntegrity, hadoop.QOPAuthentication}},
		Endpoint{Addr: hsAddr, Protocol: "p", User: "u", Token: StaticToken{hsToken}}},
	{"kerberos", Options{QOP: []hadoop.QOP{hadoop.QOPIntegrity, hadoop.QOPAuthentication}, Kerberos: KerberosLogin{Tickets: fakeTickets{}}},
		Endpoint{Addr: hsAddr, Protocol: "p", User: "u", ServerPrincipal: "nn/_HOST@EXAMPLE.COM"}},
	{"principal-without-login", Options{}, Endpoint{Addr: hsAddr, Protocol: "p", User: "u", ServerPrincipal: "nn/_HOST@EXAMPLE.COM"}},
	{"kerberos-fallback-allowed", Options{QOP: []hadoop.QOP{hadoop.QOPIntegrity, hadoop.QOPAuthentication}, Kerberos: KerberosLogin{Tickets: fakeTickets{}}, FallbackToSimpleAllowed: true},
		Endpoint{Addr: hsAddr, Protocol: "p", User: "u", ServerPrincipal: "nn/_HOST@EXAMPLE.COM"}},
}

// saslFrame is a server frame: a SUCCESS response header under call id -33
// and body as the (possibly invalid) RpcSaslProto bytes.
func saslFrame(body []byte) []byte {
	h, _ := proto.Marshal(&commonpb.RpcResponseHeaderProto{CallId: proto.Uint32(uint32(0xffffffdf)), Status: commonpb.RpcResponseHeaderProto_SUCCESS.Enum()})
	b := make([]byte, 4, 16+len(h)+len(body))
	b = protowire.AppendBytes(b, h)
	b = protowire.AppendBytes(b, body)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// serverStream turns fuzz input into the bytes the server sends. Unless raw,
// data is a sequence of length-delimited chunks, each the body of one SASL
// frame: the fuzzer then explores the state machine rather than the framing
// (which FuzzParseResponse and FuzzReadFrame cover).
func serverStream(raw bool, data []byte) []byte {
	if raw {
		return data
	}
	var out []byte
	for len(data) > 0 {
		chunk, n := protowire.ConsumeBytes(data)
		if n < 0 {
			return append(out, saslFrame(data)...)
		}
		out = append(out, saslFrame(chunk)...)
		data = data[n:]
	}
	return out
}

// saslChunks encodes messages as serverStream's chunks.
func saslChunks(msgs ...*commonpb.RpcSaslProto) []byte {
	var b []byte
	for _, m := range msgs {
		body, err := proto.Marshal(m)
		if err != nil {
			panic(err)
		}
		b = protowire.AppendBytes(b, body)
	}
	return b
}

// rawFrames encodes messages as the server's byte stream.
func rawFrames(msgs ...*commonpb.RpcSaslProto) []byte {
	var b []byte
	for _, m := range msgs {
		body, _ := proto.Marshal(m)
		b = append(b, saslFrame(body)...)
	}
	return b
}

// acceptorToken wraps p as a Hadoop server does (RFC 4121, signed, no
// rotation) under hsKrbKey.
func acceptorToken(p []byte) []byte {
	et, err := crypto.GetEtype(hsKrbKey.KeyType)
	if err != nil {
		panic(err)
	}
	h := make([]byte, 16)
	h[0], h[1], h[2], h[3] = 0x05, 0x04, 0x01, 0xff
	binary.BigEndian.PutUint64(h[8:], 1)
	ck, err := et.GetChecksumHash(hsKrbKey.KeyValue, append(append([]byte{}, p...), h...), 22)
	if err != nil {
		panic(err)
	}
	binary.BigEndian.PutUint16(h[4:], uint16(len(ck)))
	return append(append(h, p...), ck...)
}

func handshakeSeeds() [][]*commonpb.RpcSaslProto {
	state := func(s commonpb.RpcSaslProto_SaslState) *commonpb.RpcSaslProto_SaslState { return &s }
	digestAuth := &commonpb.RpcSaslProto_SaslAuth{Method: proto.String(AuthToken), Mechanism: proto.String("DIGEST-MD5"), Protocol: proto.String(""), ServerId: proto.String("default")}
	challenge := func(qops string) []byte {
		return []byte(`realm="default",nonce="` + hsNonce + `",qop="` + qops + `",cipher="rc4",charset=utf-8,algorithm=md5-sess`)
	}
	rspauth := func(qop string) []byte {
		return []byte("rspauth=" + sasl.DigestResponse(hsToken.SASLUsername(), "default", hsToken.SASLPassword(), hsNonce, hsCnonce, "00000001", qop, "/default", "", false))
	}
	withChallenge := func(a *commonpb.RpcSaslProto_SaslAuth, ch []byte) *commonpb.RpcSaslProto_SaslAuth {
		c := proto.Clone(a).(*commonpb.RpcSaslProto_SaslAuth)
		c.Challenge = ch
		return c
	}
	krbAuth := &commonpb.RpcSaslProto_SaslAuth{Method: proto.String(AuthKerberos), Mechanism: proto.String("GSSAPI"), Protocol: proto.String("nn"), ServerId: proto.String("nn.example.com")}
	simpleAuth := &commonpb.RpcSaslProto_SaslAuth{Method: proto.String(AuthSimple), Mechanism: proto.String("")}
	return [][]*commonpb.RpcSaslProto{
		// TOKEN: challenge in a separate CHALLENGE, rspauth with SUCCESS.
		{
			{State: state(commonpb.RpcSaslProto_NEGOTIATE), Auths: []*commonpb.RpcSaslProto_SaslAuth{krbAuth, digestAuth}},
			{State: state(commonpb.RpcSaslProto_CHALLENGE), Token: challenge("auth")},
			{State: state(commonpb.RpcSaslProto_SUCCESS), Token: rspauth("auth")},
		},
		// TOKEN: challenge inside NEGOTIATE, as Hadoop servers send it.
		{
			{State: state(commonpb.RpcSaslProto_NEGOTIATE), Auths: []*commonpb.RpcSaslProto_SaslAuth{withChallenge(digestAuth, challenge("auth-conf,auth-int,auth"))}},
			{State: state(commonpb.RpcSaslProto_SUCCESS), Token: rspauth("auth-conf")},
		},
		{
			{State: state(commonpb.RpcSaslProto_NEGOTIATE), Auths: []*commonpb.RpcSaslProto_SaslAuth{withChallenge(digestAuth, challenge("auth-int"))}},
			{State: state(commonpb.RpcSaslProto_CHALLENGE), Token: rspauth("auth-int")},
			{State: state(commonpb.RpcSaslProto_SUCCESS)},
		},
		// KERBEROS: the security-layer offer (all layers, 64 KiB), SUCCESS.
		{
			{State: state(commonpb.RpcSaslProto_NEGOTIATE), Auths: []*commonpb.RpcSaslProto_SaslAuth{digestAuth, krbAuth}},
			{State: state(commonpb.RpcSaslProto_CHALLENGE), Token: acceptorToken([]byte{7, 1, 0, 0})},
			{State: state(commonpb.RpcSaslProto_SUCCESS)},
		},
		// SIMPLE, offered or by SUCCESS to NEGOTIATE.
		{{State: state(commonpb.RpcSaslProto_NEGOTIATE), Auths: []*commonpb.RpcSaslProto_SaslAuth{simpleAuth}}},
		{{State: state(commonpb.RpcSaslProto_SUCCESS)}},
		// Out of order.
		{{State: state(commonpb.RpcSaslProto_CHALLENGE), Token: challenge("auth")}},
		{
			{State: state(commonpb.RpcSaslProto_NEGOTIATE), Auths: []*commonpb.RpcSaslProto_SaslAuth{digestAuth}},
			{State: state(commonpb.RpcSaslProto_NEGOTIATE), Auths: []*commonpb.RpcSaslProto_SaslAuth{digestAuth}},
		},
		{{State: state(commonpb.RpcSaslProto_WRAP)}},
	}
}

func FuzzSASLHandshake(f *testing.F) {
	for _, seed := range handshakeSeeds() {
		for i := range handshakeClients {
			f.Add(uint8(i), false, saslChunks(seed...))
			f.Add(uint8(i), true, rawFrames(seed...))
		}
	}
	// The server refusing the connection.
	h, _ := proto.Marshal(&commonpb.RpcResponseHeaderProto{CallId: proto.Uint32(uint32(0xffffffdf)), Status: commonpb.RpcResponseHeaderProto_FATAL.Enum(),
		ExceptionClassName: proto.String("org.apache.hadoop.security.AccessControlException"), ErrorMsg: proto.String("SIMPLE authentication is not enabled")})
	refusal := binary.BigEndian.AppendUint32(nil, uint32(len(protowire.AppendBytes(nil, h))))
	f.Add(uint8(0), true, protowire.AppendBytes(refusal, h))
	f.Add(uint8(0), true, []byte{0, 0, 0, 0})
	f.Add(uint8(0), true, []byte{0xff, 0xff, 0xff, 0xff})

	f.Fuzz(func(t *testing.T, client uint8, raw bool, data []byte) {
		setup := handshakeClients[int(client)%len(handshakeClients)]
		opts := setup.opts
		opts.ClientID = bytes.Repeat([]byte{9}, 16)
		opts.Rand = fixedRand(1)
		opts.MaxResponseSize = 1 << 16
		c, err := NewClient(opts)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cli, srv := net.Pipe()
		defer cli.Close()
		defer srv.Close()
		// The deadline turns a client that waits for more than the server
		// sent into a failure below, rather than a hung fuzzer.
		if err := cli.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		drained := make(chan struct{})
		go func() { // what the client writes
			defer close(drained)
			_, _ = io.Copy(io.Discard, srv)
		}()
		sent := make(chan struct{})
		go func() { // the server's frames, then hang up
			defer close(sent)
			_, _ = srv.Write(serverStream(raw, data))
			srv.Close()
		}()

		type result struct {
			hs  handshakeResult
			err error
		}
		done := make(chan result, 1)
		go func() {
			hs, err := c.handshake(cli, setup.ep)
			done <- result{hs, err}
		}()
		var r result
		select {
		case r = <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: handshake still running 20s after start", setup.name)
		}
		cli.Close()
		<-sent
		<-drained

		if r.err != nil {
			var re *hadoop.RemoteError
			switch {
			case errors.Is(r.err, os.ErrDeadlineExceeded):
				t.Fatalf("%s: the client waited past the server's hang-up: %v", setup.name, r.err)
			case errors.Is(r.err, ErrFallbackToSimple):
				if setup.opts.Kerberos == nil || setup.opts.FallbackToSimpleAllowed {
					t.Fatalf("%s: a client that may use SIMPLE refused the fallback: %v", setup.name, r.err)
				}
			case errors.Is(r.err, ErrAuth), errors.Is(r.err, ErrMalformed), errors.Is(r.err, ErrKerberosNotConfigured),
				errors.As(r.err, &re), errors.Is(r.err, io.EOF), errors.Is(r.err, io.ErrUnexpectedEOF), errors.Is(r.err, io.ErrClosedPipe):
			default:
				t.Fatalf("%s: unclassified handshake error %T: %v", setup.name, r.err, r.err)
			}
			return
		}
		hs := r.hs
		switch hs.method {
		case AuthSimple:
			if hs.qop != "" || hs.layer != nil {
				t.Fatalf("%s: SIMPLE with qop %q layer %v", setup.name, hs.qop, hs.layer)
			}
			if setup.opts.Kerberos != nil && !setup.opts.FallbackToSimpleAllowed {
				t.Fatalf("%s: a Kerberos client fell back to SIMPLE without being allowed to", setup.name)
			}
		case AuthToken, AuthKerberos:
			if hs.method == AuthToken && setup.ep.Token == nil || hs.method == AuthKerberos && setup.opts.Kerberos == nil {
				t.Fatalf("%s: authenticated with %s without its credentials", setup.name, hs.method)
			}
			qops := setup.opts.QOP
			if len(qops) == 0 {
				qops = []hadoop.QOP{hadoop.QOPAuthentication}
			}
			ok := false
			for _, q := range qops {
				ok = ok || string(q) == hs.qop
			}
			if !ok {
				t.Fatalf("%s: negotiated qop %q, client accepts %v", setup.name, hs.qop, qops)
			}
			if (hs.layer == nil) != (hs.qop == sasl.QOPAuth) {
				t.Fatalf("%s: qop %s with layer %v", setup.name, hs.qop, hs.layer)
			}
		default:
			t.Fatalf("%s: handshake settled on method %q", setup.name, hs.method)
		}
	})
}

// TestHandshakeSeeds checks that the seeds reach what they were written
// for, so the fuzzer starts from the end of each path.
func TestHandshakeSeeds(t *testing.T) {
	seeds := handshakeSeeds()
	tests := []struct {
		seed, client int
		method, qop  string
	}{
		{0, 0, AuthToken, sasl.QOPAuth},
		{1, 1, AuthToken, sasl.QOPAuthConf},
		{2, 1, AuthToken, sasl.QOPAuthInt},
		{3, 2, AuthKerberos, sasl.QOPAuthInt},
		{4, 3, AuthSimple, ""},
		{5, 0, AuthSimple, ""},
	}
	for _, tt := range tests {
		setup := handshakeClients[tt.client]
		opts := setup.opts
		opts.Rand = fixedRand(1)
		c, err := NewClient(opts)
		if err != nil {
			t.Fatal(err)
		}
		cli, srv := net.Pipe()
		go func() { _, _ = io.Copy(io.Discard, srv) }()
		go func() { _, _ = srv.Write(rawFrames(seeds[tt.seed]...)) }()
		hs, err := c.handshake(cli, setup.ep)
		cli.Close()
		srv.Close()
		c.Close()
		if err != nil {
			t.Fatalf("seed %d with %s: %v", tt.seed, setup.name, err)
		}
		if hs.method != tt.method || hs.qop != tt.qop {
			t.Errorf("seed %d with %s: method %s qop %q, want %s %q", tt.seed, setup.name, hs.method, hs.qop, tt.method, tt.qop)
		}
	}
}

// clientCallIDs parses what a client wrote (the connection header, then
// frames) into the call ids of its frames.
func clientCallIDs(t *testing.T, b []byte) []int32 {
	t.Helper()
	if len(b) < 7 || string(b[:4]) != "hrpc" {
		t.Fatalf("client stream does not start with a connection header: %q", b)
	}
	b = b[7:]
	var ids []int32
	for len(b) > 0 {
		if len(b) < 4 {
			t.Fatalf("truncated frame length: %x", b)
		}
		n := int(binary.BigEndian.Uint32(b))
		if len(b) < 4+n {
			t.Fatalf("truncated frame: want %d bytes, have %d", n, len(b)-4)
		}
		h, m := protowire.ConsumeBytes(b[4 : 4+n])
		if m < 0 {
			t.Fatalf("frame without a request header: %x", b[4:4+n])
		}
		var rh commonpb.RpcRequestHeaderProto
		if err := proto.Unmarshal(h, &rh); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rh.GetCallId())
		b = b[4+n:]
	}
	return ids
}

// TestHandshakeFallbackToSimple: a server asking to fall back to SIMPLE
// (SUCCESS to NEGOTIATE, or SIMPLE offered first among what the client can
// use) is refused by a client with a Kerberos login unless
// FallbackToSimpleAllowed, as Hadoop's clients with
// ipc.client.fallback-to-simple-auth-allowed; clients without a login
// (token, none) behave as before.
func TestHandshakeFallbackToSimple(t *testing.T) {
	state := func(s commonpb.RpcSaslProto_SaslState) *commonpb.RpcSaslProto_SaslState { return &s }
	simpleAuth := &commonpb.RpcSaslProto_SaslAuth{Method: proto.String(AuthSimple), Mechanism: proto.String("")}
	digestAuth := &commonpb.RpcSaslProto_SaslAuth{Method: proto.String(AuthToken), Mechanism: proto.String("DIGEST-MD5"), Protocol: proto.String(""), ServerId: proto.String("default"),
		Challenge: []byte(`realm="default",nonce="` + hsNonce + `",qop="auth",charset=utf-8,algorithm=md5-sess`)}
	servers := map[string][]*commonpb.RpcSaslProto{
		// A server with only SIMPLE enabled (or pretending to be one).
		"simple-only":   {{State: state(commonpb.RpcSaslProto_SUCCESS)}},
		"offers-simple": {{State: state(commonpb.RpcSaslProto_NEGOTIATE), Auths: []*commonpb.RpcSaslProto_SaslAuth{simpleAuth}}},
		// A server with security off and a secret manager (a NameNode, a
		// ResourceManager) offers TOKEN, then SIMPLE; SUCCESS ends a TOKEN
		// exchange.
		"insecure-with-tokens": {
			{State: state(commonpb.RpcSaslProto_NEGOTIATE), Auths: []*commonpb.RpcSaslProto_SaslAuth{digestAuth, simpleAuth}},
			{State: state(commonpb.RpcSaslProto_SUCCESS), Token: []byte("rspauth=" + sasl.DigestResponse(hsToken.SASLUsername(), "default", hsToken.SASLPassword(),
				hsNonce, hsCnonce, "00000001", sasl.QOPAuth, "/default", "", false))},
		},
		// A secure server (the KERBEROS seed).
		"kerberos": handshakeSeeds()[3],
	}
	krb := KerberosLogin{Tickets: fakeTickets{}}
	qops := []hadoop.QOP{hadoop.QOPIntegrity, hadoop.QOPAuthentication}
	krbEP := Endpoint{Addr: hsAddr, Protocol: "p", User: "u", ServerPrincipal: "nn/_HOST@EXAMPLE.COM"}
	tokenEP := Endpoint{Addr: hsAddr, Protocol: "p", User: "u", Token: StaticToken{hsToken}}
	refused := Options{QOP: qops, Kerberos: krb}
	allowed := Options{QOP: qops, Kerberos: krb, FallbackToSimpleAllowed: true}
	tests := []struct {
		name   string
		server string
		opts   Options
		ep     Endpoint
		// Either the method settled on, or the error: a refused fallback
		// (wantFallback, naming the server) or another ErrAuth.
		wantMethod   string
		wantFallback bool
		wantAuthErr  bool
	}{
		{name: "kerberos refuses SUCCESS", server: "simple-only", opts: refused, ep: krbEP, wantFallback: true},
		{name: "kerberos refuses offered SIMPLE", server: "offers-simple", opts: refused, ep: krbEP, wantFallback: true},
		{name: "kerberos refuses an insecure server's SIMPLE", server: "insecure-with-tokens", opts: refused, ep: krbEP, wantFallback: true},
		{name: "kerberos with a token refuses SUCCESS", server: "simple-only", opts: refused, ep: Endpoint{Addr: hsAddr, Protocol: "p", User: "u", Token: StaticToken{hsToken}, ServerPrincipal: krbEP.ServerPrincipal}, wantFallback: true},
		{name: "kerberos allowed: SUCCESS", server: "simple-only", opts: allowed, ep: krbEP, wantMethod: AuthSimple},
		{name: "kerberos allowed: offered SIMPLE", server: "offers-simple", opts: allowed, ep: krbEP, wantMethod: AuthSimple},
		{name: "kerberos allowed: insecure server's SIMPLE", server: "insecure-with-tokens", opts: allowed, ep: krbEP, wantMethod: AuthSimple},
		{name: "kerberos allowed: a secure server still gets KERBEROS", server: "kerberos", opts: allowed, ep: krbEP, wantMethod: AuthKerberos},
		{name: "kerberos refused: a secure server gets KERBEROS", server: "kerberos", opts: refused, ep: krbEP, wantMethod: AuthKerberos},
		// Unchanged: a token client follows a simple-only server's SUCCESS,
		// but does not pick an offered SIMPLE over its token.
		{name: "token follows SUCCESS", server: "simple-only", opts: Options{}, ep: tokenEP, wantMethod: AuthSimple},
		{name: "token ignores the flag", server: "simple-only", opts: Options{FallbackToSimpleAllowed: true}, ep: tokenEP, wantMethod: AuthSimple},
		{name: "token does not pick offered SIMPLE", server: "offers-simple", opts: Options{}, ep: tokenEP, wantAuthErr: true},
		{name: "token uses TOKEN on an insecure server", server: "insecure-with-tokens", opts: Options{}, ep: tokenEP, wantMethod: AuthToken},
		{name: "no login follows SUCCESS", server: "simple-only", opts: Options{}, ep: krbEP, wantMethod: AuthSimple},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Rand = fixedRand(1)
			c, err := NewClient(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			cli, srv := net.Pipe()
			if err := cli.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
				t.Fatal(err)
			}
			var written bytes.Buffer
			drained := make(chan struct{})
			go func() {
				defer close(drained)
				_, _ = io.Copy(&written, srv)
			}()
			sent := make(chan struct{})
			go func() {
				defer close(sent)
				_, _ = srv.Write(rawFrames(servers[tt.server]...))
			}()
			hs, err := c.handshake(cli, tt.ep)
			cli.Close()
			<-drained
			srv.Close()
			<-sent
			ids := clientCallIDs(t, written.Bytes())

			var fe *FallbackError
			switch {
			case tt.wantFallback:
				if !errors.As(err, &fe) || !errors.Is(err, ErrFallbackToSimple) || !errors.Is(err, ErrAuth) {
					t.Fatalf("err = %v (method %q), want a *FallbackError wrapping ErrFallbackToSimple and ErrAuth", err, hs.method)
				}
				if fe.Addr != hsAddr || !strings.Contains(err.Error(), hsAddr) || !strings.Contains(err.Error(), hadoop.KeyFallbackToSimpleAuthAllowed) {
					t.Errorf("error %q (Addr %q) does not name the server %s and the key %s", err, fe.Addr, hsAddr, hadoop.KeyFallbackToSimpleAuthAllowed)
				}
				// Nothing but NEGOTIATE was sent: no INITIATE, and no
				// connection context (the user) to the server.
				if !slices.Equal(ids, []int32{callIDSASL}) {
					t.Errorf("client sent call ids %v after refusing, want only NEGOTIATE (-33)", ids)
				}
			case tt.wantAuthErr:
				if !errors.Is(err, ErrAuth) || errors.Is(err, ErrFallbackToSimple) {
					t.Fatalf("err = %v (method %q), want ErrAuth, not a fallback refusal", err, hs.method)
				}
			default:
				if err != nil {
					t.Fatalf("handshake: %v", err)
				}
				if hs.method != tt.wantMethod {
					t.Errorf("method %s, want %s", hs.method, tt.wantMethod)
				}
				// Without a security layer the connection context goes
				// out in the clear, last.
				if hs.layer == nil && ids[len(ids)-1] != callIDConnectionContext {
					t.Errorf("client sent call ids %v, want the connection context (-3) last", ids)
				}
			}
		})
	}
}
