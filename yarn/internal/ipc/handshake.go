package ipc

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/security/kerberos"
	"github.com/sluice/sluice/yarn/internal/proto/commonpb"
	"github.com/sluice/sluice/yarn/internal/sasl"
)

// Authentication methods as Hadoop names them in SaslAuth.method.
const (
	AuthSimple   = "SIMPLE"
	AuthToken    = "TOKEN"
	AuthKerberos = "KERBEROS"
)

// handshakeResult is what a connection's handshake settled.
type handshakeResult struct {
	method string             // AuthSimple, AuthToken or AuthKerberos
	qop    string             // negotiated quality of protection ("" without SASL)
	layer  sasl.SecurityLayer // nil unless integrity or privacy was negotiated
}

// handshake writes the connection header, runs SASL if the endpoint needs
// it, and sends the connection context (through the security layer, if one
// was negotiated).
func (c *Client) handshake(nc net.Conn, ep Endpoint) (handshakeResult, error) {
	// An endpoint with a server principal expects Kerberos: negotiating SASL
	// lets a server that requires it say so even without a login here.
	useSASL := ep.Token != nil || c.opts.Kerberos != nil || ep.ServerPrincipal != ""
	if _, err := nc.Write(connectionHeader(useSASL)); err != nil {
		return handshakeResult{}, err
	}
	hs := handshakeResult{method: AuthSimple}
	if useSASL {
		var err error
		if hs, err = c.saslConnect(nc, ep); err != nil {
			return handshakeResult{}, err
		}
	}
	ctxMsg := &commonpb.IpcConnectionContextProto{Protocol: proto.String(ep.Protocol)}
	// As Hadoop's ProtoUtil: with a token or Kerberos the connection itself
	// establishes the user, so only an effective user differing from the
	// authenticated one would be sent; Sluice sends none.
	if hs.method == AuthSimple {
		ctxMsg.UserInfo = &commonpb.UserInformationProto{EffectiveUser: proto.String(ep.User)}
	}
	f, err := frame(requestHeader(callIDConnectionContext, c.opts.ClientID, -1), ctxMsg)
	if err != nil {
		return handshakeResult{}, err
	}
	if _, err := newFrameWriter(nc, hs.layer, c.opts.ClientID).Write(f); err != nil {
		return handshakeResult{}, err
	}
	return hs, nil
}

// saslConnect runs Hadoop's SASL negotiation (call id -33) on a fresh
// connection: NEGOTIATE, the server's offer, INITIATE with the chosen
// mechanism, CHALLENGE/RESPONSE rounds, SUCCESS.
func (c *Client) saslConnect(nc net.Conn, ep Endpoint) (handshakeResult, error) {
	if err := c.writeSASL(nc, &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_NEGOTIATE.Enum()}); err != nil {
		return handshakeResult{}, err
	}
	var (
		mech   sasl.Mechanism
		method string
	)
	fail := func(err error) (handshakeResult, error) {
		return handshakeResult{}, c.authError(ep, method, mech, err)
	}
	for {
		msg, err := c.readSASL(nc)
		if err != nil {
			return fail(err)
		}
		switch msg.GetState() {
		case commonpb.RpcSaslProto_NEGOTIATE:
			if method != "" {
				return fail(fmt.Errorf("%w: server sent NEGOTIATE twice", ErrAuth))
			}
			auth, m, err := c.selectAuth(msg.GetAuths(), ep)
			if err != nil {
				return handshakeResult{}, err
			}
			method = auth.GetMethod()
			reply := &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_INITIATE.Enum()}
			chosen := proto.Clone(auth).(*commonpb.RpcSaslProto_SaslAuth)
			chosen.Challenge = nil
			reply.Auths = []*commonpb.RpcSaslProto_SaslAuth{chosen}
			if method == AuthSimple {
				// Switching to SIMPLE: the server expects no further exchange.
				return handshakeResult{method: method}, c.writeSASL(nc, reply)
			}
			mech = m
			resp, _, err := mech.Step(auth.GetChallenge())
			if err != nil {
				return fail(fmt.Errorf("%w: %s: %w", ErrAuth, mech.Name(), err))
			}
			reply.Token = nonNil(resp)
			if err := c.writeSASL(nc, reply); err != nil {
				return handshakeResult{}, err
			}
		case commonpb.RpcSaslProto_CHALLENGE:
			if mech == nil {
				return fail(fmt.Errorf("%w: CHALLENGE before a mechanism was chosen", ErrAuth))
			}
			resp, _, err := mech.Step(msg.GetToken())
			if err != nil {
				return fail(fmt.Errorf("%w: %s: %w", ErrAuth, mech.Name(), err))
			}
			if err := c.writeSASL(nc, &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_RESPONSE.Enum(), Token: nonNil(resp)}); err != nil {
				return handshakeResult{}, err
			}
		case commonpb.RpcSaslProto_SUCCESS:
			if mech == nil {
				// A simple-only server answers NEGOTIATE with SUCCESS: switch
				// to SIMPLE, if this client may.
				if err := c.fallBackToSimple(ep, "answered NEGOTIATE with SUCCESS"); err != nil {
					return fail(err)
				}
				return handshakeResult{method: AuthSimple}, nil
			}
			if !mech.Complete() {
				if _, _, err := mech.Step(msg.GetToken()); err != nil {
					return fail(fmt.Errorf("%w: %s: %w", ErrAuth, mech.Name(), err))
				}
			}
			if !mech.Complete() {
				return fail(fmt.Errorf("%w: server reported SUCCESS before %s completed", ErrAuth, mech.Name()))
			}
			hs := handshakeResult{method: method, qop: mech.QOP()}
			if q := mech.QOP(); q != "" && q != sasl.QOPAuth {
				var layer sasl.SecurityLayer
				if l, ok := mech.(sasl.Layered); ok {
					layer = l.SecurityLayer()
				}
				if layer == nil {
					return fail(fmt.Errorf("%w: negotiated qop %s, which %s does not implement", ErrAuth, q, mech.Name()))
				}
				hs.layer = layer
			}
			return hs, nil
		default:
			return fail(fmt.Errorf("%w: unexpected SASL state %v", ErrAuth, msg.GetState()))
		}
	}
}

// authError adds, to a failure during a KERBEROS exchange, the kind of
// Kerberos failure (from a server's GSS-API error, e.g. clock skew or a
// ticket for the wrong key) and what to check.
func (c *Client) authError(ep Endpoint, method string, mech sasl.Mechanism, err error) error {
	if method != AuthKerberos {
		return err
	}
	var ke *kerberos.Error
	if errors.As(err, &ke) {
		return err
	}
	spn := ""
	if g, ok := mech.(*sasl.GSSAPI); ok {
		spn = g.SPN()
	}
	if code := kerberos.KDCErrorCode(err); code != 0 {
		kind := kerberos.KindOfCode(code)
		return fmt.Errorf("%w: Kerberos authentication to %s (%s) refused: %w", ErrAuth, ep.Addr, spn,
			&kerberos.Error{Kind: kind, Op: "authenticate to " + ep.Addr, SPN: spn, Code: code, Hint: kerberosHint(kind), Err: err})
	}
	var re *hadoop.RemoteError
	if errors.As(err, &re) {
		return fmt.Errorf("%w: Kerberos authentication to %s (%s) refused: %w", ErrAuth, ep.Addr, spn,
			&kerberos.Error{Kind: kerberos.ErrRejected, Op: "authenticate to " + ep.Addr, SPN: spn, Hint: kerberosHint(kerberos.ErrRejected), Err: err})
	}
	if errors.Is(err, sasl.ErrIntegrity) {
		return fmt.Errorf("%w: %w", err, &kerberos.Error{Kind: kerberos.ErrServerPrincipal, Op: "authenticate to " + ep.Addr, SPN: spn,
			Hint: "the server's reply does not verify under the ticket's session key: the server is not " + spn + ", or its keytab is outdated"})
	}
	return err
}

func kerberosHint(kind error) string {
	switch {
	case errors.Is(kind, kerberos.ErrClockSkew):
		return "synchronise this host's clock (NTP) with the server's; Kerberos allows 5 minutes by default"
	case errors.Is(kind, kerberos.ErrServerPrincipal):
		return "the server could not decrypt the ticket: check the server principal setting (_HOST resolves to the address's host) and that the server's keytab is current"
	case errors.Is(kind, kerberos.ErrTicketExpired):
		return "the service ticket expired: the client's login must be renewed (keytab login) or kinit run again"
	case errors.Is(kind, kerberos.ErrRejected):
		return "the server's log names the reason; the usual ones: this host's clock differs from the server's by more than 5 minutes (synchronise with NTP), " +
			"the server's keytab does not hold the key of the ticket (outdated keytab, or the server principal setting names another principal), or the ticket expired"
	}
	return "see the server's log for the GSS-API failure"
}

// serverPrincipal resolves an Endpoint's expected principal: _HOST becomes
// the (lower-case) host of addr, an IP address reverse-resolved to its
// host name as Hadoop's clients do (kerberos.ServiceHost). It returns the
// service/host part.
func serverPrincipal(pattern, addr string) (string, error) {
	if pattern == "" {
		return "", fmt.Errorf("%w: %w: no server principal is configured for %s (set dfs.namenode.kerberos.principal or yarn.resourcemanager.principal, e.g. hdfs/_HOST@REALM)",
			ErrAuth, kerberos.ErrServerPrincipal, addr)
	}
	name, _, _ := strings.Cut(pattern, "@")
	svc, host, ok := strings.Cut(name, "/")
	if !ok || svc == "" || host == "" {
		return "", fmt.Errorf("%w: %w: server principal %q has no service/host part", ErrAuth, kerberos.ErrServerPrincipal, pattern)
	}
	if host == "_HOST" {
		h, _, err := net.SplitHostPort(addr)
		if err != nil {
			h = addr
		}
		host = kerberos.ServiceHost(h)
	}
	return svc + "/" + host, nil
}

// selectAuth picks the first server-offered method the client can use, as
// Hadoop's SaslRpcClient does: TOKEN if we hold a token, KERBEROS if
// configured, SIMPLE if we use neither.
func (c *Client) selectAuth(auths []*commonpb.RpcSaslProto_SaslAuth, ep Endpoint) (*commonpb.RpcSaslProto_SaslAuth, sasl.Mechanism, error) {
	var offered []string
	kerberosOffered := false
	var refused error // a refused fallback to SIMPLE
	for _, a := range auths {
		offered = append(offered, a.GetMethod()+"/"+a.GetMechanism())
		switch a.GetMethod() {
		case AuthToken:
			if ep.Token == nil || a.GetMechanism() != "DIGEST-MD5" {
				continue
			}
			tok := ep.Token.Token()
			if tok == nil {
				continue
			}
			qops := make([]string, 0, len(c.opts.QOP))
			for _, q := range c.opts.QOP {
				qops = append(qops, string(q))
			}
			return a, sasl.NewDigestMD5(tok.SASLUsername(), tok.SASLPassword(), a.GetProtocol(), a.GetServerId(), qops, c.opts.Rand), nil
		case AuthKerberos:
			kerberosOffered = true
			if c.opts.Kerberos == nil || a.GetMechanism() != "GSSAPI" {
				continue
			}
			want, err := serverPrincipal(ep.ServerPrincipal, ep.Addr)
			if err != nil {
				return nil, nil, err
			}
			if got := a.GetProtocol() + "/" + a.GetServerId(); got != want {
				return nil, nil, fmt.Errorf("%w: %w", ErrAuth, &kerberos.Error{
					Kind: kerberos.ErrServerPrincipal, Op: "authenticate to " + ep.Addr, SPN: want,
					Hint: fmt.Sprintf("the server at %s has Kerberos principal %s, but %s was expected (from %s): check the server principal setting and that %s is the host the principal names",
						ep.Addr, got, want, ep.ServerPrincipal, ep.Addr)})
			}
			qops := make([]string, 0, len(c.opts.QOP))
			for _, q := range c.opts.QOP {
				qops = append(qops, string(q))
			}
			m, err := c.opts.Kerberos.NewMechanism(a.GetProtocol(), a.GetServerId(), qops)
			if err != nil {
				return nil, nil, fmt.Errorf("%w: kerberos: %w", ErrAuth, err)
			}
			return a, m, nil
		case AuthSimple:
			switch {
			case c.opts.Kerberos != nil:
				// As Hadoop: SIMPLE, if it comes before anything the
				// client can use, is a fallback, refused unless allowed.
				if err := c.fallBackToSimple(ep, "offered "+strings.Join(methods(auths), ", ")); err != nil {
					refused = err
					continue
				}
			case ep.Token != nil:
				continue // a token client authenticates with its token
			}
			return a, nil, nil
		}
	}
	if refused != nil {
		return nil, nil, refused
	}
	if kerberosOffered && c.opts.Kerberos == nil {
		return nil, nil, fmt.Errorf("%w (server %s offers %s)", ErrKerberosNotConfigured, ep.Addr, strings.Join(offered, ", "))
	}
	have := "no token"
	if ep.Token != nil {
		have = "a token"
	}
	return nil, nil, fmt.Errorf("%w: server offers %s; client has %s", ErrAuth, strings.Join(offered, ", "), have)
}

// fallBackToSimple decides whether the client may continue with SIMPLE
// after asking for SASL, the server having asked for it as how says.
// Hadoop's clients refuse when security is on unless
// ipc.client.fallback-to-simple-auth-allowed is set; for Sluice's client
// security is on when it has a Kerberos login. Clients without one (SIMPLE,
// or TOKEN only) follow the server.
func (c *Client) fallBackToSimple(ep Endpoint, how string) error {
	if c.opts.Kerberos == nil {
		return nil
	}
	if !c.opts.FallbackToSimpleAllowed {
		return &FallbackError{Addr: ep.Addr, How: how}
	}
	c.log.Warn("ipc: the server asks to fall back to SIMPLE authentication; continuing without Kerberos, as "+hadoop.KeyFallbackToSimpleAuthAllowed+" allows",
		"addr", ep.Addr, "protocol", ep.Protocol, "how", how)
	return nil
}

// methods lists the offered methods, for messages.
func methods(auths []*commonpb.RpcSaslProto_SaslAuth) []string {
	out := make([]string, 0, len(auths))
	for _, a := range auths {
		out = append(out, a.GetMethod())
	}
	return out
}

func (c *Client) writeSASL(nc net.Conn, m *commonpb.RpcSaslProto) error {
	f, err := frame(requestHeader(callIDSASL, c.opts.ClientID, -1), m)
	if err != nil {
		return err
	}
	_, err = nc.Write(f)
	return err
}

// readSASL reads one SASL response. A non-SUCCESS RPC status (the server
// refusing the connection) becomes a *hadoop.RemoteError.
func (c *Client) readSASL(nc net.Conn) (*commonpb.RpcSaslProto, error) {
	f, err := readFrame(nc, c.opts.MaxResponseSize)
	if err != nil {
		return nil, err
	}
	r, err := parseResponse(f)
	if err != nil {
		return nil, err
	}
	if r.header.GetStatus() != commonpb.RpcResponseHeaderProto_SUCCESS {
		return nil, remoteError(r.header, "")
	}
	if r.callID() != callIDSASL {
		return nil, fmt.Errorf("%w: expected a SASL response (call id -33), got call id %d", ErrMalformed, r.callID())
	}
	m := &commonpb.RpcSaslProto{}
	if err := proto.Unmarshal(r.body, m); err != nil {
		return nil, fmt.Errorf("%w: SASL message: %v", ErrMalformed, err)
	}
	if m.State == nil {
		return nil, fmt.Errorf("%w: SASL message without state", ErrMalformed)
	}
	return m, nil
}

// remoteError converts an error response header.
func remoteError(h *commonpb.RpcResponseHeaderProto, method string) *hadoop.RemoteError {
	e := &hadoop.RemoteError{
		Class:   h.GetExceptionClassName(),
		Message: h.GetErrorMsg(),
		Fatal:   h.GetStatus() == commonpb.RpcResponseHeaderProto_FATAL,
		Method:  method,
	}
	if h.ErrorDetail != nil {
		e.Code = h.GetErrorDetail().String()
	}
	if e.Class == "" {
		e.Class = "org.apache.hadoop.ipc.RemoteException"
	}
	return e
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
