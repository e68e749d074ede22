// Package ipctest is a small in-process Hadoop IPC server of Sluice's own,
// speaking the server side of the framing and SASL that package ipc
// implements. It exists to unit-test Sluice's client logic (framing,
// multiplexing, errors, pings, reconnects, token authentication, failover);
// it is not a model of any Hadoop service: handlers supply the behaviour.
package ipctest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/yarn/internal/proto/commonpb"
	"github.com/sluice/sluice/yarn/internal/sasl"
)

// Call describes one request as the server saw it.
type Call struct {
	Protocol   string // from the connection context
	Method     string
	Declaring  string // declaringClassProtocolName
	Version    uint64
	User       string // effective user (SIMPLE) or token user name (TOKEN)
	Auth       string // NONE, SIMPLE or TOKEN
	CallID     int32
	RetryCount int32
	ClientID   []byte
	Body       []byte // the serialized request message
}

// Handler serves one method. It returns the response message, or an error:
// an *Exception is sent as a Hadoop exception, anything else as a
// java.io.IOException.
type Handler func(ctx context.Context, call *Call) (proto.Message, error)

// Exception is a Java exception to raise in a response.
type Exception struct {
	Class   string
	Message string
	Fatal   bool // send status FATAL and close the connection
}

func (e *Exception) Error() string { return e.Class + ": " + e.Message }

// Options configure a Server.
type Options struct {
	// Passwords enables SASL TOKEN (DIGEST-MD5) authentication: it maps a
	// token's SASL user name (base64 identifier) to its SASL password.
	Passwords map[string]string
	// RequireToken refuses connections that are not TOKEN-authenticated.
	RequireToken bool
	// SimpleOnly answers SASL NEGOTIATE with SUCCESS, as a server with only
	// SIMPLE enabled does.
	SimpleOnly bool
	// OfferKerberosOnly offers only KERBEROS in the SASL negotiation.
	OfferKerberosOnly bool
	// Logger; default discard.
	Logger *slog.Logger
}

// Server is a running fake server.
type Server struct {
	opts     Options
	ln       net.Listener
	log      *slog.Logger
	handlers sync.Map // protocol + "." + method -> Handler

	pings    atomic.Int64
	accepted atomic.Int64
	calls    atomic.Int64

	mu struct {
		sync.Mutex
		conns map[net.Conn]struct{}
	}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New starts a server on a loopback port.
func New(opts Options) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{opts: opts, ln: ln, log: opts.Logger, ctx: ctx, cancel: cancel}
	s.mu.conns = make(map[net.Conn]struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.acceptLoop()
	}()
	return s, nil
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Handle registers h for protocol.method.
func (s *Server) Handle(protocol, method string, h Handler) {
	s.handlers.Store(protocol+"."+method, h)
}

// Pings is the number of pings received.
func (s *Server) Pings() int64 { return s.pings.Load() }

// Accepted is the number of connections accepted so far.
func (s *Server) Accepted() int64 { return s.accepted.Load() }

// Calls is the number of calls dispatched to handlers.
func (s *Server) Calls() int64 { return s.calls.Load() }

// OpenConns is the number of connections currently open.
func (s *Server) OpenConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.conns)
}

// DropConnections closes every open connection (fault injection).
func (s *Server) DropConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.mu.conns {
		c.Close()
	}
}

// Close stops the server and waits for its goroutines.
func (s *Server) Close() {
	s.cancel()
	s.ln.Close()
	s.DropConnections()
	s.wg.Wait()
}

func (s *Server) acceptLoop() {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.accepted.Add(1)
		s.mu.Lock()
		s.mu.conns[nc] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.mu.conns, nc)
				s.mu.Unlock()
				nc.Close()
			}()
			if err := s.serveConn(nc); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Debug("ipctest: connection ended", "err", err)
			}
		}()
	}
}

type serverConn struct {
	s       *Server
	nc      net.Conn
	writeMu sync.Mutex
	auth    string
	user    string
	proto   string
	wg      sync.WaitGroup
}

func (s *Server) serveConn(nc net.Conn) error {
	c := &serverConn{s: s, nc: nc}
	defer c.wg.Wait()
	var hdr [7]byte
	if _, err := io.ReadFull(nc, hdr[:]); err != nil {
		return err
	}
	if !bytes.Equal(hdr[:4], []byte("hrpc")) || hdr[4] != 9 || hdr[5] != 0 {
		return fmt.Errorf("bad connection header % x", hdr)
	}
	switch hdr[6] {
	case 0:
		c.auth = "NONE"
		if s.opts.RequireToken {
			return c.fatal(-1, "org.apache.hadoop.security.AccessControlException", "SIMPLE authentication is not enabled.  Available:[TOKEN]")
		}
	case 0xDF:
		if err := c.serverSASL(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("bad auth protocol %d", hdr[6])
	}
	for {
		f, err := readFrame(nc)
		if err != nil {
			return err
		}
		h, rest, err := splitDelimited(f)
		if err != nil {
			return err
		}
		var rh commonpb.RpcRequestHeaderProto
		if err := proto.Unmarshal(h, &rh); err != nil {
			return err
		}
		if len(rh.GetClientId()) != 16 && rh.GetCallId() >= 0 {
			return c.fatal(rh.GetCallId(), "org.apache.hadoop.ipc.RpcServerException", "client id is not 16 bytes")
		}
		switch id := rh.GetCallId(); {
		case id == -4:
			s.pings.Add(1)
		case id == -3:
			body, _, err := splitDelimited(rest)
			if err != nil {
				return err
			}
			var cc commonpb.IpcConnectionContextProto
			if err := proto.Unmarshal(body, &cc); err != nil {
				return err
			}
			c.proto = cc.GetProtocol()
			if c.auth != "TOKEN" {
				c.user = cc.GetUserInfo().GetEffectiveUser()
			} else if cc.GetUserInfo().GetEffectiveUser() != "" {
				return c.fatal(id, "org.apache.hadoop.security.AccessControlException", "token connections must not send a user")
			}
		case id >= 0:
			if c.proto == "" {
				return c.fatal(id, "org.apache.hadoop.ipc.RpcServerException", "call before connection context")
			}
			if rh.GetRpcKind() != commonpb.RpcKindProto_RPC_PROTOCOL_BUFFER {
				return c.fatal(id, "org.apache.hadoop.ipc.RpcServerException", "unsupported rpc kind")
			}
			rqh, body, err := splitDelimited(rest)
			if err != nil {
				return err
			}
			var reqHdr commonpb.RequestHeaderProto
			if err := proto.Unmarshal(rqh, &reqHdr); err != nil {
				return err
			}
			msg, tail, err := splitDelimited(body)
			if err != nil || len(tail) != 0 {
				return fmt.Errorf("bad request body (err %v, %d trailing)", err, len(tail))
			}
			call := &Call{
				Protocol: c.proto, Method: reqHdr.GetMethodName(), Declaring: reqHdr.GetDeclaringClassProtocolName(),
				Version: reqHdr.GetClientProtocolVersion(), User: c.user, Auth: c.auth,
				CallID: id, RetryCount: rh.GetRetryCount(), ClientID: rh.GetClientId(), Body: msg,
			}
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				c.dispatch(call)
			}()
		default:
			return c.fatal(id, "org.apache.hadoop.ipc.RpcServerException", fmt.Sprintf("unknown out-of-band call id %d", id))
		}
	}
}

func (c *serverConn) dispatch(call *Call) {
	c.s.calls.Add(1)
	v, ok := c.s.handlers.Load(call.Protocol + "." + call.Method)
	if !ok {
		c.respondError(call.CallID, &Exception{Class: "org.apache.hadoop.ipc.RpcNoSuchMethodException", Message: "Unknown method " + call.Method + " called on " + call.Protocol + " protocol."}, commonpb.RpcResponseHeaderProto_ERROR_NO_SUCH_METHOD)
		return
	}
	resp, err := v.(Handler)(c.s.ctx, call)
	if err != nil {
		var ex *Exception
		if !errors.As(err, &ex) {
			ex = &Exception{Class: "java.io.IOException", Message: err.Error()}
		}
		if ex.Fatal {
			_ = c.fatal(call.CallID, ex.Class, ex.Message)
			c.nc.Close()
			return
		}
		c.respondError(call.CallID, ex, commonpb.RpcResponseHeaderProto_ERROR_APPLICATION)
		return
	}
	h := &commonpb.RpcResponseHeaderProto{
		CallId: proto.Uint32(uint32(call.CallID)), Status: commonpb.RpcResponseHeaderProto_SUCCESS.Enum(),
		ServerIpcVersionNum: proto.Uint32(9), ClientId: call.ClientID,
	}
	_ = c.send(h, resp)
}

func (c *serverConn) respondError(id int32, ex *Exception, code commonpb.RpcResponseHeaderProto_RpcErrorCodeProto) {
	h := &commonpb.RpcResponseHeaderProto{
		CallId: proto.Uint32(uint32(id)), Status: commonpb.RpcResponseHeaderProto_ERROR.Enum(),
		ServerIpcVersionNum: proto.Uint32(9), ExceptionClassName: proto.String(ex.Class),
		ErrorMsg: proto.String(ex.Message), ErrorDetail: code.Enum(),
	}
	_ = c.send(h)
}

// fatal sends a FATAL response and returns an error that ends the
// connection.
func (c *serverConn) fatal(id int32, class, msg string) error {
	h := &commonpb.RpcResponseHeaderProto{
		CallId: proto.Uint32(uint32(id)), Status: commonpb.RpcResponseHeaderProto_FATAL.Enum(),
		ServerIpcVersionNum: proto.Uint32(9), ExceptionClassName: proto.String(class),
		ErrorMsg: proto.String(msg), ErrorDetail: commonpb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED.Enum(),
	}
	_ = c.send(h)
	return fmt.Errorf("fatal: %s: %s", class, msg)
}

func (c *serverConn) send(msgs ...proto.Message) error {
	b := make([]byte, 4, 128)
	for _, m := range msgs {
		if m == nil {
			continue
		}
		mb, err := proto.Marshal(m)
		if err != nil {
			return err
		}
		b = protowire.AppendVarint(b, uint64(len(mb)))
		b = append(b, mb...)
	}
	binary.BigEndian.PutUint32(b[:4], uint32(len(b)-4))
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.nc.Write(b)
	return err
}

// serverSASL runs the server side of Hadoop's SASL negotiation.
func (c *serverConn) serverSASL() error {
	var dm *sasl.DigestMD5Server
	for {
		f, err := readFrame(c.nc)
		if err != nil {
			return err
		}
		h, rest, err := splitDelimited(f)
		if err != nil {
			return err
		}
		var rh commonpb.RpcRequestHeaderProto
		if err := proto.Unmarshal(h, &rh); err != nil {
			return err
		}
		if rh.GetCallId() != -33 {
			return c.fatal(rh.GetCallId(), "org.apache.hadoop.security.AccessControlException", "expected SASL call id -33")
		}
		body, _, err := splitDelimited(rest)
		if err != nil {
			return err
		}
		var m commonpb.RpcSaslProto
		if err := proto.Unmarshal(body, &m); err != nil {
			return err
		}
		switch m.GetState() {
		case commonpb.RpcSaslProto_NEGOTIATE:
			if c.s.opts.SimpleOnly {
				c.auth = "SIMPLE"
				return c.sendSASL(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_SUCCESS.Enum()})
			}
			reply := &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_NEGOTIATE.Enum()}
			if c.s.opts.OfferKerberosOnly {
				reply.Auths = append(reply.Auths, &commonpb.RpcSaslProto_SaslAuth{
					Method: proto.String("KERBEROS"), Mechanism: proto.String("GSSAPI"),
					Protocol: proto.String("rm"), ServerId: proto.String("localhost"),
				})
				if err := c.sendSASL(reply); err != nil {
					return err
				}
				continue
			}
			if c.s.opts.Passwords != nil {
				dm = &sasl.DigestMD5Server{Realm: "default", Protocol: "", ServerID: "default", Rand: rand.Reader,
					Password: func(u string) (string, bool) { p, ok := c.s.opts.Passwords[u]; return p, ok }}
				ch, err := dm.Challenge()
				if err != nil {
					return err
				}
				reply.Auths = append(reply.Auths, &commonpb.RpcSaslProto_SaslAuth{
					Method: proto.String("TOKEN"), Mechanism: proto.String("DIGEST-MD5"),
					Protocol: proto.String(""), ServerId: proto.String("default"), Challenge: ch,
				})
			}
			if !c.s.opts.RequireToken {
				reply.Auths = append(reply.Auths, &commonpb.RpcSaslProto_SaslAuth{Method: proto.String("SIMPLE"), Mechanism: proto.String("")})
			}
			if err := c.sendSASL(reply); err != nil {
				return err
			}
		case commonpb.RpcSaslProto_INITIATE:
			if len(m.GetAuths()) != 1 {
				return c.fatal(-33, "javax.security.sasl.SaslException", "INITIATE must name one auth")
			}
			switch a := m.GetAuths()[0]; a.GetMethod() {
			case "SIMPLE":
				if c.s.opts.RequireToken {
					return c.fatal(-33, "org.apache.hadoop.security.AccessControlException", "SIMPLE authentication is not enabled.  Available:[TOKEN]")
				}
				c.auth = "SIMPLE"
				return nil
			case "TOKEN":
				if dm == nil {
					return c.fatal(-33, "org.apache.hadoop.security.AccessControlException", "TOKEN not offered")
				}
				final, user, err := dm.Verify(m.GetToken())
				if err != nil {
					return c.fatal(-33, "javax.security.sasl.SaslException", "DIGEST-MD5: digest response format violation. "+err.Error())
				}
				c.auth, c.user = "TOKEN", user
				return c.sendSASL(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_SUCCESS.Enum(), Token: final})
			default:
				return c.fatal(-33, "org.apache.hadoop.security.AccessControlException", a.GetMethod()+" authentication is not enabled")
			}
		default:
			return c.fatal(-33, "javax.security.sasl.SaslException", "unexpected SASL state "+m.GetState().String())
		}
	}
}

func (c *serverConn) sendSASL(m *commonpb.RpcSaslProto) error {
	h := &commonpb.RpcResponseHeaderProto{
		CallId: proto.Uint32(uint32(0xFFFFFFDF)), Status: commonpb.RpcResponseHeaderProto_SUCCESS.Enum(),
	}
	return c.send(h, m)
}

func readFrame(r io.Reader) ([]byte, error) {
	var l [4]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(l[:])
	if n > 64<<20 {
		return nil, fmt.Errorf("frame too large: %d", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}

func splitDelimited(b []byte) ([]byte, []byte, error) {
	size, n := protowire.ConsumeVarint(b)
	if n < 0 || size > uint64(len(b)-n) {
		return nil, nil, fmt.Errorf("bad delimited message")
	}
	return b[n : n+int(size)], b[n+int(size):], nil
}
