package ipc

import (
	"fmt"
	"net"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/yarn/internal/proto/commonpb"
	"github.com/sluice/sluice/yarn/internal/sasl"
)

// Authentication methods as Hadoop names them in SaslAuth.method.
const (
	AuthSimple   = "SIMPLE"
	AuthToken    = "TOKEN"
	AuthKerberos = "KERBEROS"
)

// handshake writes the connection header, runs SASL if the endpoint needs
// it, and sends the connection context. It returns the authentication
// method in force.
func (c *Client) handshake(nc net.Conn, ep Endpoint) (string, error) {
	useSASL := ep.Token != nil || c.opts.Kerberos != nil
	if _, err := nc.Write(connectionHeader(useSASL)); err != nil {
		return "", err
	}
	method := AuthSimple
	if useSASL {
		var err error
		if method, err = c.saslConnect(nc, ep); err != nil {
			return "", err
		}
	}
	ctxMsg := &commonpb.IpcConnectionContextProto{Protocol: proto.String(ep.Protocol)}
	// As Hadoop's ProtoUtil: with a token the connection itself establishes
	// the user, so no user information is sent.
	if method != AuthToken {
		ctxMsg.UserInfo = &commonpb.UserInformationProto{EffectiveUser: proto.String(ep.User)}
	}
	f, err := frame(requestHeader(callIDConnectionContext, c.opts.ClientID, -1), ctxMsg)
	if err != nil {
		return "", err
	}
	if _, err := nc.Write(f); err != nil {
		return "", err
	}
	return method, nil
}

// saslConnect runs Hadoop's SASL negotiation (call id -33) on a fresh
// connection: NEGOTIATE, the server's offer, INITIATE with the chosen
// mechanism, CHALLENGE/RESPONSE rounds, SUCCESS.
func (c *Client) saslConnect(nc net.Conn, ep Endpoint) (string, error) {
	if err := c.writeSASL(nc, &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_NEGOTIATE.Enum()}); err != nil {
		return "", err
	}
	var (
		mech   sasl.Mechanism
		method string
	)
	for {
		msg, err := c.readSASL(nc)
		if err != nil {
			return "", err
		}
		switch msg.GetState() {
		case commonpb.RpcSaslProto_NEGOTIATE:
			if method != "" {
				return "", fmt.Errorf("%w: server sent NEGOTIATE twice", ErrAuth)
			}
			auth, m, err := c.selectAuth(msg.GetAuths(), ep)
			if err != nil {
				return "", err
			}
			method = auth.GetMethod()
			reply := &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_INITIATE.Enum()}
			chosen := proto.Clone(auth).(*commonpb.RpcSaslProto_SaslAuth)
			chosen.Challenge = nil
			reply.Auths = []*commonpb.RpcSaslProto_SaslAuth{chosen}
			if method == AuthSimple {
				// Switching to SIMPLE: the server expects no further exchange.
				return method, c.writeSASL(nc, reply)
			}
			mech = m
			resp, _, err := mech.Step(auth.GetChallenge())
			if err != nil {
				return "", fmt.Errorf("%w: %s: %v", ErrAuth, mech.Name(), err)
			}
			reply.Token = nonNil(resp)
			if err := c.writeSASL(nc, reply); err != nil {
				return "", err
			}
		case commonpb.RpcSaslProto_CHALLENGE:
			if mech == nil {
				return "", fmt.Errorf("%w: CHALLENGE before a mechanism was chosen", ErrAuth)
			}
			resp, _, err := mech.Step(msg.GetToken())
			if err != nil {
				return "", fmt.Errorf("%w: %s: %v", ErrAuth, mech.Name(), err)
			}
			if err := c.writeSASL(nc, &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_RESPONSE.Enum(), Token: nonNil(resp)}); err != nil {
				return "", err
			}
		case commonpb.RpcSaslProto_SUCCESS:
			if mech == nil {
				// A simple-only server answers NEGOTIATE with SUCCESS: switch
				// to SIMPLE.
				return AuthSimple, nil
			}
			if !mech.Complete() {
				if _, _, err := mech.Step(msg.GetToken()); err != nil {
					return "", fmt.Errorf("%w: %s: %v", ErrAuth, mech.Name(), err)
				}
			}
			if !mech.Complete() {
				return "", fmt.Errorf("%w: server reported SUCCESS before %s completed", ErrAuth, mech.Name())
			}
			if q := mech.QOP(); q != "" && q != sasl.QOPAuth {
				// TODO(kerberos issue): wrap frames in RpcSaslProto WRAP
				// messages through a sasl.SecurityLayer.
				return "", fmt.Errorf("%w: negotiated qop %s needs a security layer, not implemented", ErrAuth, q)
			}
			return method, nil
		default:
			return "", fmt.Errorf("%w: unexpected SASL state %v", ErrAuth, msg.GetState())
		}
	}
}

// selectAuth picks the first server-offered method the client can use, as
// Hadoop's SaslRpcClient does: TOKEN if we hold a token, KERBEROS if
// configured, SIMPLE if we use neither.
func (c *Client) selectAuth(auths []*commonpb.RpcSaslProto_SaslAuth, ep Endpoint) (*commonpb.RpcSaslProto_SaslAuth, sasl.Mechanism, error) {
	var offered []string
	kerberosOffered := false
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
			if c.opts.Kerberos == nil {
				continue
			}
			m, err := c.opts.Kerberos.NewMechanism(a.GetProtocol(), a.GetServerId())
			if err != nil {
				return nil, nil, fmt.Errorf("%w: kerberos: %v", ErrAuth, err)
			}
			return a, m, nil
		case AuthSimple:
			if ep.Token != nil || c.opts.Kerberos != nil {
				continue // Hadoop clients never fall back from secure auth.
			}
			return a, nil, nil
		}
	}
	if kerberosOffered && c.opts.Kerberos == nil {
		return nil, nil, fmt.Errorf("%w (server offers %s)", ErrKerberosNotImplemented, strings.Join(offered, ", "))
	}
	have := "no token"
	if ep.Token != nil {
		have = "a token"
	}
	return nil, nil, fmt.Errorf("%w: server offers %s; client has %s", ErrAuth, strings.Join(offered, ", "), have)
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
