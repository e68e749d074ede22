package yarn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/yarn/internal/ipc"
	"github.com/sluice/sluice/yarn/internal/proto/yarnpb"
)

// NMTokenSource supplies the NMToken for a NodeManager (host:port). AMClient
// implements it with the tokens the ResourceManager handed out.
type NMTokenSource interface {
	NMToken(node string) (*hadoop.Token, bool)
}

// NMClientConfig configures an NMClient. Every field documents its default.
type NMClientConfig struct {
	// Tokens supplies NMTokens. Required.
	Tokens NMTokenSource
	// Logger; default discards.
	Logger *slog.Logger
	// ConnectAttempts per NodeManager. Default 3.
	ConnectAttempts int
	// Dial opens connections; default net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// IdleTimeout closes unused NodeManager connections. Default 10s.
	IdleTimeout time.Duration
	// QOP lists the acceptable qualities of protection of the NMToken
	// connections, most preferred first (hadoop.rpc.protection). Default
	// [authentication].
	QOP []hadoop.QOP
}

// NMClient speaks ContainerManagementProtocol to NodeManagers: it starts,
// stops and inspects the AM's containers, authenticating to each node with
// its NMToken. Safe for concurrent use.
type NMClient struct {
	cfg NMClientConfig
	log *slog.Logger
	ipc *ipc.Client
}

// NewNMClient returns an NM client; it connects on first use.
func NewNMClient(cfg NMClientConfig) (*NMClient, error) {
	if cfg.Tokens == nil {
		return nil, errors.New("yarn: invalid NM client config: Tokens is nil")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ConnectAttempts <= 0 {
		cfg.ConnectAttempts = 3
	}
	ic, err := ipc.NewClient(ipc.Options{Logger: cfg.Logger, Dial: cfg.Dial, MaxConnectAttempts: cfg.ConnectAttempts, IdleTimeout: cfg.IdleTimeout, QOP: cfg.QOP})
	if err != nil {
		return nil, err
	}
	return &NMClient{cfg: cfg, log: cfg.Logger, ipc: ic}, nil
}

// Close closes the connections.
func (n *NMClient) Close() error { return n.ipc.Close() }

// nmTokenFunc reads a node's current NMToken at each connection.
type nmTokenFunc func() *hadoop.Token

func (f nmTokenFunc) Token() *hadoop.Token { return f() }

// endpoint is the connection to node for the given attempt: Hadoop keys NM
// connections by node and application attempt.
func (n *NMClient) endpoint(node NodeID, attempt ApplicationAttemptID) (ipc.Endpoint, error) {
	addr := node.String()
	if _, ok := n.cfg.Tokens.NMToken(addr); !ok {
		return ipc.Endpoint{}, fmt.Errorf("%w %s", ErrNoNMToken, addr)
	}
	return ipc.Endpoint{
		Addr:     addr,
		Protocol: protocolNM,
		User:     attempt.String(),
		Token: nmTokenFunc(func() *hadoop.Token {
			t, _ := n.cfg.Tokens.NMToken(addr)
			return t
		}),
	}, nil
}

// StartRequest starts one allocated container.
type StartRequest struct {
	Container Container
	Launch    ContainerLaunchContext
}

// ContainerErrors maps containers to the exception the NodeManager raised
// for them (a *hadoop.RemoteError).
type ContainerErrors map[ContainerID]error

func containerErrorsFromProto(failed []*yarnpb.ContainerExceptionMapProto) ContainerErrors {
	if len(failed) == 0 {
		return nil
	}
	out := make(ContainerErrors, len(failed))
	for _, f := range failed {
		ex := f.GetException()
		msg := ex.GetMessage()
		if c := ex.GetCause(); c != nil && c.GetMessage() != "" {
			msg += " (cause: " + c.GetMessage() + ")"
		}
		out[containerIDFromProto(f.GetContainerId())] = &hadoop.RemoteError{Class: ex.GetClassName(), Message: msg}
	}
	return out
}

// StartContainers starts containers, all of which must be on one node and
// belong to one application attempt. It returns the ids started and the
// per-container failures; err is for failures of the call as a whole.
func (n *NMClient) StartContainers(ctx context.Context, reqs []StartRequest) ([]ContainerID, ContainerErrors, error) {
	if len(reqs) == 0 {
		return nil, nil, nil
	}
	node, attempt := reqs[0].Container.Node, reqs[0].Container.ID.Attempt
	req := &yarnpb.StartContainersRequestProto{}
	for _, r := range reqs {
		if r.Container.Node != node || r.Container.ID.Attempt != attempt {
			return nil, nil, fmt.Errorf("yarn: StartContainers mixes %s on %s with %s on %s; call once per node", reqs[0].Container.ID, node, r.Container.ID, r.Container.Node)
		}
		if r.Container.Token == nil {
			return nil, nil, fmt.Errorf("yarn: container %s has no container token", r.Container.ID)
		}
		req.StartContainerRequest = append(req.StartContainerRequest, &yarnpb.StartContainerRequestProto{
			ContainerLaunchContext: launchContextToProto(r.Launch),
			ContainerToken:         tokenToProto(r.Container.Token),
		})
	}
	ep, err := n.endpoint(node, attempt)
	if err != nil {
		return nil, nil, err
	}
	var resp yarnpb.StartContainersResponseProto
	if err := n.ipc.Call(ctx, ep, "startContainers", req, &resp, ipc.Idempotent()); err != nil {
		return nil, nil, err
	}
	var ok []ContainerID
	for _, id := range resp.GetSucceededRequests() {
		ok = append(ok, containerIDFromProto(id))
	}
	return ok, containerErrorsFromProto(resp.GetFailedRequests()), nil
}

// StartContainer starts one container; a per-container failure is returned
// as the error.
func (n *NMClient) StartContainer(ctx context.Context, c Container, launch ContainerLaunchContext) error {
	_, failed, err := n.StartContainers(ctx, []StartRequest{{Container: c, Launch: launch}})
	if err != nil {
		return err
	}
	if e, ok := failed[c.ID]; ok {
		return fmt.Errorf("yarn: starting %s on %s: %w", c.ID, c.Node, e)
	}
	return nil
}

// StopContainers stops containers on one node.
func (n *NMClient) StopContainers(ctx context.Context, node NodeID, ids []ContainerID) ([]ContainerID, ContainerErrors, error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	ep, err := n.endpoint(node, ids[0].Attempt)
	if err != nil {
		return nil, nil, err
	}
	req := &yarnpb.StopContainersRequestProto{}
	for _, id := range ids {
		req.ContainerId = append(req.ContainerId, containerIDToProto(id))
	}
	var resp yarnpb.StopContainersResponseProto
	if err := n.ipc.Call(ctx, ep, "stopContainers", req, &resp, ipc.Idempotent()); err != nil {
		return nil, nil, err
	}
	var ok []ContainerID
	for _, id := range resp.GetSucceededRequests() {
		ok = append(ok, containerIDFromProto(id))
	}
	return ok, containerErrorsFromProto(resp.GetFailedRequests()), nil
}

// GetContainerStatuses returns the status of containers on one node.
func (n *NMClient) GetContainerStatuses(ctx context.Context, node NodeID, ids []ContainerID) ([]ContainerStatus, ContainerErrors, error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	ep, err := n.endpoint(node, ids[0].Attempt)
	if err != nil {
		return nil, nil, err
	}
	req := &yarnpb.GetContainerStatusesRequestProto{}
	for _, id := range ids {
		req.ContainerId = append(req.ContainerId, containerIDToProto(id))
	}
	var resp yarnpb.GetContainerStatusesResponseProto
	if err := n.ipc.Call(ctx, ep, "getContainerStatuses", req, &resp, ipc.Idempotent()); err != nil {
		return nil, nil, err
	}
	var out []ContainerStatus
	for _, s := range resp.GetStatus() {
		out = append(out, containerStatusFromProto(s))
	}
	return out, containerErrorsFromProto(resp.GetFailedRequests()), nil
}
