// Package delegation obtains, renews and cancels HDFS delegation tokens over
// Sluice's Hadoop IPC client, authenticated with a Kerberos login: what the
// YARN client puts into the containers' credentials so that the
// ApplicationMaster and TaskManagers reach HDFS without Kerberos of their
// own, and what a long-running application renews before expiry.
//
// The NameNode is asked over ClientNamenodeProtocol
// (org.apache.hadoop.hdfs.protocol.ClientProtocol, methods getDelegationToken,
// renewDelegationToken, cancelDelegationToken) on a SASL KERBEROS
// connection; the token's service is set to the NameNode's ip:port, as
// Hadoop's clients set it (hadoop.security.token.service.use_ip), so that
// Hadoop's token selection finds it.
package delegation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/security/kerberos"
	"github.com/sluice/sluice/yarn/internal/ipc"
	"github.com/sluice/sluice/yarn/internal/proto/commonpb"
)

// Hadoop names.
const (
	// ClientProtocol is the NameNode's client protocol.
	ClientProtocol = "org.apache.hadoop.hdfs.protocol.ClientProtocol"
	// HDFSTokenKind is the kind of HDFS delegation tokens.
	HDFSTokenKind = "HDFS_DELEGATION_TOKEN"
	// KeyNameNodePrincipal names the NameNode's principal (with _HOST).
	KeyNameNodePrincipal = "dfs.namenode.kerberos.principal"
	// DefaultNameNodePort is the RPC port of an hdfs:// URI without one.
	DefaultNameNodePort = 8020
)

// ErrNoToken is returned when the NameNode issues no token: it does so
// when security is off.
var ErrNoToken = errors.New("delegation: the NameNode issued no token (is hadoop.security.authentication kerberos on the cluster?)")

// Config configures a Client. Every field documents its default.
type Config struct {
	// Login authenticates the connections. Required.
	Login *kerberos.Login
	// QOP lists acceptable qualities of protection, most preferred first
	// (hadoop.rpc.protection). Default [authentication].
	QOP []hadoop.QOP
	// Logger receives connection events. Default: discard.
	Logger *slog.Logger
	// FallbackToSimpleAllowed lets the client continue unauthenticated
	// when a NameNode asks it to fall back to SIMPLE
	// (ipc.client.fallback-to-simple-auth-allowed; such a NameNode issues
	// no tokens). Default false: the call fails with
	// yarn.ErrFallbackToSimple, naming the NameNode.
	FallbackToSimpleAllowed bool
}

// Client asks NameNodes for delegation tokens. It is safe for concurrent
// use; Close it when done.
type Client struct {
	ipc   *ipc.Client
	login *kerberos.Login
	user  string
}

// New returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.Login == nil {
		return nil, errors.New("delegation: Config.Login is required")
	}
	c, err := ipc.NewClient(ipc.Options{
		Logger:                  cfg.Logger,
		QOP:                     cfg.QOP,
		Kerberos:                ipc.KerberosLogin{Tickets: cfg.Login},
		FallbackToSimpleAllowed: cfg.FallbackToSimpleAllowed,
		// A Kerberos refusal is not a network blip: fail fast.
		MaxConnectAttempts: 3,
	})
	if err != nil {
		return nil, err
	}
	user, _, _ := strings.Cut(cfg.Login.Principal(), "@")
	return &Client{ipc: c, login: cfg.Login, user: user}, nil
}

// Close closes the connections.
func (c *Client) Close() error { return c.ipc.Close() }

// NameNode says where a NameNode is and which principal it must have.
type NameNode struct {
	// Addr is the RPC address, host:port.
	Addr string
	// Principal is the configured principal, e.g. hdfs/_HOST@REALM.
	Principal string
}

// NameNodeOf reads the NameNode of fsURI (hdfs://host[:port]; empty means
// fs.defaultFS) and its principal from hc. HA nameservices are not
// resolved.
func NameNodeOf(hc *hadoop.Configuration, fsURI string) (NameNode, error) {
	if fsURI == "" {
		fsURI = hc.DefaultFS()
	}
	u, err := url.Parse(fsURI)
	if err != nil || u.Scheme != "hdfs" || u.Host == "" {
		return NameNode{}, fmt.Errorf("delegation: %q is not an hdfs://host:port URI (fs.defaultFS or security.kerberos.access.hadoopFileSystems)", fsURI)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), strconv.Itoa(DefaultNameNodePort))
	}
	p := hc.Get(KeyNameNodePrincipal, "")
	if p == "" {
		return NameNode{}, fmt.Errorf("delegation: %s is not set: the NameNode's Kerberos principal is needed (e.g. hdfs/_HOST@REALM)", KeyNameNodePrincipal)
	}
	return NameNode{Addr: addr, Principal: p}, nil
}

func (c *Client) endpoint(nn NameNode) ipc.Endpoint {
	return ipc.Endpoint{Addr: nn.Addr, Protocol: ClientProtocol, User: c.user, ServerPrincipal: nn.Principal}
}

// ObtainHDFS asks nn for a delegation token that renewer (a short user
// name or a principal, usually the ResourceManager's) may renew.
func (c *Client) ObtainHDFS(ctx context.Context, nn NameNode, renewer string) (*hadoop.Token, error) {
	var resp commonpb.GetDelegationTokenResponseProto
	err := c.ipc.Call(ctx, c.endpoint(nn), "getDelegationToken",
		&commonpb.GetDelegationTokenRequestProto{Renewer: proto.String(renewer)}, &resp, ipc.Idempotent())
	if err != nil {
		return nil, fmt.Errorf("delegation: getting an HDFS delegation token from %s: %w", nn.Addr, err)
	}
	tp := resp.GetToken()
	if tp == nil || len(tp.GetIdentifier()) == 0 {
		return nil, ErrNoToken
	}
	service, err := tokenService(ctx, nn.Addr)
	if err != nil {
		return nil, err
	}
	kind := tp.GetKind()
	if kind == "" {
		kind = HDFSTokenKind
	}
	return &hadoop.Token{Identifier: tp.GetIdentifier(), Password: tp.GetPassword(), Kind: kind, Service: service}, nil
}

// RenewHDFS renews tok at nn and returns its new expiry. Only the token's
// renewer may renew it.
func (c *Client) RenewHDFS(ctx context.Context, nn NameNode, tok *hadoop.Token) (time.Time, error) {
	var resp commonpb.RenewDelegationTokenResponseProto
	err := c.ipc.Call(ctx, c.endpoint(nn), "renewDelegationToken",
		&commonpb.RenewDelegationTokenRequestProto{Token: tokenProto(tok)}, &resp)
	if err != nil {
		return time.Time{}, fmt.Errorf("delegation: renewing %s at %s: %w", tok, nn.Addr, err)
	}
	return time.UnixMilli(int64(resp.GetNewExpiryTime())), nil
}

// CancelHDFS cancels tok at nn.
func (c *Client) CancelHDFS(ctx context.Context, nn NameNode, tok *hadoop.Token) error {
	var resp commonpb.CancelDelegationTokenResponseProto
	if err := c.ipc.Call(ctx, c.endpoint(nn), "cancelDelegationToken",
		&commonpb.CancelDelegationTokenRequestProto{Token: tokenProto(tok)}, &resp); err != nil {
		return fmt.Errorf("delegation: cancelling %s at %s: %w", tok, nn.Addr, err)
	}
	return nil
}

func tokenProto(t *hadoop.Token) *commonpb.TokenProto {
	return &commonpb.TokenProto{Identifier: t.Identifier, Password: t.Password, Kind: proto.String(t.Kind), Service: proto.String(t.Service)}
}

// tokenService is Hadoop's token service for addr: ip:port.
func tokenService(ctx context.Context, addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("delegation: NameNode address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip != nil {
		return net.JoinHostPort(ip.String(), port), nil
	}
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil || len(ips) == 0 {
		return "", fmt.Errorf("delegation: resolving the NameNode host %s for the token service: %w", host, err)
	}
	ip := ips[0].IP
	for _, a := range ips {
		if a.IP.To4() != nil {
			ip = a.IP
			break
		}
	}
	return net.JoinHostPort(ip.String(), port), nil
}
