package yarn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/yarn/internal/ipc"
	"github.com/sluice/sluice/yarn/internal/proto/yarnpb"
)

// AMClientConfig configures an AMClient. Every field documents its default.
type AMClientConfig struct {
	// Schedulers lists the ApplicationMasterProtocol addresses
	// (yarn.resourcemanager.scheduler.address), in failover order. Required.
	Schedulers []string
	// AMRMToken authenticates the AM to the scheduler. Inside a YARN
	// container it is in the token file ($HADOOP_TOKEN_FILE_LOCATION, kind
	// YARN_AM_RM_TOKEN); an unmanaged AM gets it from its application
	// report. Required.
	AMRMToken *hadoop.Token
	// Attempt is the AM's application attempt; it names the connection's
	// user. Optional.
	Attempt ApplicationAttemptID
	// Logger; default discards.
	Logger *slog.Logger
	// MaxFailovers, FailoverBackoff, MaxFailoverBackoff, ConnectAttempts,
	// Dial: as in ClientConfig (same defaults).
	MaxFailovers                        int
	FailoverBackoff, MaxFailoverBackoff time.Duration
	ConnectAttempts                     int
	Dial                                func(ctx context.Context, network, addr string) (net.Conn, error)
	// FinishPollInterval is the pause between FinishApplicationMaster calls
	// while the RM has not yet unregistered the AM. Default 100ms.
	FinishPollInterval time.Duration
	// QOP lists the acceptable qualities of protection of the AMRMToken
	// connection, most preferred first (hadoop.rpc.protection). Default
	// [authentication].
	QOP []hadoop.QOP
}

// Validate reports every problem with the configuration.
func (c *AMClientConfig) Validate() error {
	var errs []error
	if len(c.Schedulers) == 0 {
		errs = append(errs, errors.New("Schedulers is empty"))
	}
	for _, a := range c.Schedulers {
		if _, _, err := net.SplitHostPort(a); err != nil {
			errs = append(errs, fmt.Errorf("scheduler address %q is not host:port", a))
		}
	}
	if c.AMRMToken == nil || len(c.AMRMToken.Identifier) == 0 {
		errs = append(errs, errors.New("AMRMToken is missing"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("yarn: invalid AM client config: %w", err)
	}
	return nil
}

// AMClient speaks ApplicationMasterProtocol for one application attempt:
// register, allocate (heartbeat), finish. It keeps the protocol's state: the
// allocate response id, the outstanding asks and releases (re-sent when the
// ResourceManager asks the AM to resynchronise), the current AMRMToken
// (rolled over by the RM), and the NMTokens the RM hands out. It implements
// NMTokenSource for NMClient. Safe for concurrent use; Allocate calls are
// serialised.
type AMClient struct {
	cfg   AMClientConfig
	log   *slog.Logger
	ipc   *ipc.Client
	rm    *failoverCaller
	token *tokenHolder

	allocMu sync.Mutex // serialises Allocate; held before mu
	mu      struct {
		sync.Mutex
		registered  *RegisterRequest
		responseID  int32
		asks        map[askKey]ResourceRequest // last absolute ask per key
		releases    map[ContainerID]struct{}   // released, completion not yet seen
		blacklisted map[string]struct{}
		// Changes not yet acknowledged by a successful allocate: sent with
		// every request until one succeeds.
		dirtyAsks     map[askKey]struct{}
		dirtyReleases map[ContainerID]struct{}
		dirtyBlAdd    map[string]struct{}
		dirtyBlRemove map[string]struct{}
		nmTokens      map[string]*hadoop.Token // node host:port -> token
		maxCap        Resource
	}
}

type askKey struct {
	priority Priority
	name     string
	cap      Resource
	allocID  int64
}

// tokenHolder is a TokenSource whose token can be replaced.
type tokenHolder struct {
	mu sync.Mutex
	t  *hadoop.Token
}

func (h *tokenHolder) Token() *hadoop.Token {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.t
}

func (h *tokenHolder) set(t *hadoop.Token) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.t = t
}

// NewAMClient returns an AM client; it connects on first use.
func NewAMClient(cfg AMClientConfig) (*AMClient, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxFailovers == 0 {
		cfg.MaxFailovers = 10
	}
	if cfg.FailoverBackoff <= 0 {
		cfg.FailoverBackoff = 200 * time.Millisecond
	}
	if cfg.MaxFailoverBackoff <= 0 {
		cfg.MaxFailoverBackoff = 5 * time.Second
	}
	if cfg.ConnectAttempts <= 0 {
		cfg.ConnectAttempts = 10
		if len(cfg.Schedulers) > 1 {
			cfg.ConnectAttempts = 2
		}
	}
	if cfg.FinishPollInterval <= 0 {
		cfg.FinishPollInterval = 100 * time.Millisecond
	}
	ic, err := ipc.NewClient(ipc.Options{Logger: cfg.Logger, Dial: cfg.Dial, MaxConnectAttempts: cfg.ConnectAttempts, QOP: cfg.QOP})
	if err != nil {
		return nil, err
	}
	user := "appmaster"
	if cfg.Attempt != (ApplicationAttemptID{}) {
		user = cfg.Attempt.String()
	}
	a := &AMClient{cfg: cfg, log: cfg.Logger, ipc: ic, token: &tokenHolder{t: cfg.AMRMToken.Clone()}}
	a.rm = &failoverCaller{
		ipc: ic, protocol: protocolAM, user: user, token: a.token, addrs: cfg.Schedulers, log: cfg.Logger,
		maxFailovers: cfg.MaxFailovers, backoff: cfg.FailoverBackoff, maxBackoff: cfg.MaxFailoverBackoff,
	}
	a.mu.asks = make(map[askKey]ResourceRequest)
	a.mu.releases = make(map[ContainerID]struct{})
	a.mu.blacklisted = make(map[string]struct{})
	a.mu.dirtyAsks = make(map[askKey]struct{})
	a.mu.dirtyReleases = make(map[ContainerID]struct{})
	a.mu.dirtyBlAdd = make(map[string]struct{})
	a.mu.dirtyBlRemove = make(map[string]struct{})
	a.mu.nmTokens = make(map[string]*hadoop.Token)
	return a, nil
}

// Close closes the connections.
func (a *AMClient) Close() error { return a.ipc.Close() }

// AMRMToken returns the token currently in use (it changes when the RM
// rolls its master key).
func (a *AMClient) AMRMToken() *hadoop.Token { return a.token.Token().Clone() }

// RegisterRequest is the AM's registration.
type RegisterRequest struct {
	Host        string
	RPCPort     int32
	TrackingURL string
}

// RegisterResponse is the ResourceManager's answer to registration.
type RegisterResponse struct {
	MaxCapability Resource
	Queue         string
	// ContainersFromPreviousAttempts are still running after an AM restart
	// with KeepContainersAcrossAttempts.
	ContainersFromPreviousAttempts []Container
	ClientToAMTokenMasterKey       []byte
}

// Register registers the ApplicationMaster. It is idempotent.
func (a *AMClient) Register(ctx context.Context, r RegisterRequest) (*RegisterResponse, error) {
	req := &yarnpb.RegisterApplicationMasterRequestProto{
		Host:        proto.String(r.Host),
		RpcPort:     proto.Int32(r.RPCPort),
		TrackingUrl: proto.String(r.TrackingURL),
	}
	var resp yarnpb.RegisterApplicationMasterResponseProto
	if err := a.rm.call(ctx, "registerApplicationMaster", req, &resp); err != nil {
		return nil, err
	}
	out := &RegisterResponse{
		MaxCapability:            resourceFromProto(resp.GetMaximumCapability()),
		Queue:                    resp.GetQueue(),
		ClientToAMTokenMasterKey: resp.GetClientToAmTokenMasterKey(),
	}
	for _, c := range resp.GetContainersFromPreviousAttempts() {
		out.ContainersFromPreviousAttempts = append(out.ContainersFromPreviousAttempts, containerFromProto(c))
	}
	a.mu.Lock()
	rr := r
	a.mu.registered = &rr
	a.mu.maxCap = out.MaxCapability
	for _, t := range resp.GetNmTokensFromPreviousAttempts() {
		a.mu.nmTokens[nodeIDFromProto(t.GetNodeId()).String()] = tokenFromProto(t.GetToken())
	}
	a.mu.Unlock()
	return out, nil
}

// AllocateRequest is one heartbeat's changes.
type AllocateRequest struct {
	// Asks set absolute container counts per (Priority, ResourceName,
	// Capability); a count of 0 withdraws the ask.
	Asks []ResourceRequest
	// Releases gives containers back.
	Releases []ContainerID
	// BlacklistAdditions/Removals change the nodes the AM refuses.
	BlacklistAdditions, BlacklistRemovals []string
	// Progress in [0, 1].
	Progress float32
}

// AMCommand is an order from the ResourceManager in an allocate response.
type AMCommand int32

// AM commands.
const (
	AMCommandNone     AMCommand = 0
	AMCommandResync   AMCommand = 1 // handled by AMClient (re-register, resend)
	AMCommandShutdown AMCommand = 2 // the AM must exit
)

// AllocateResponse is one heartbeat's news.
type AllocateResponse struct {
	Allocated []Container
	Completed []ContainerStatus
	// Limit is the headroom: what the application may still get.
	Limit           Resource
	UpdatedNodes    []NodeReport
	NumClusterNodes int32
	NMTokens        []NMToken
	Command         AMCommand
	// PreemptContainers the RM will take back unless the AM frees resources.
	PreemptContainers []ContainerID
	// AMRMTokenRolled reports that the RM issued a new AMRMToken; it is
	// already in use for new connections.
	AMRMTokenRolled bool
	// Resynced reports that the RM lost the AM's registration (RM restart)
	// and AMClient re-registered and re-sent every outstanding ask.
	Resynced bool
}

// Allocate sends asks and releases and returns new allocations and
// completions. Requests larger than the cluster maximum are refused with
// ErrExceedsMaximum. If the RM has lost the registration
// (ApplicationMasterNotRegisteredException or an AM_RESYNC command), the
// client re-registers, resets the response id and re-sends all outstanding
// asks, releases and blacklist entries.
func (a *AMClient) Allocate(ctx context.Context, r AllocateRequest) (*AllocateResponse, error) {
	a.allocMu.Lock()
	defer a.allocMu.Unlock()

	a.mu.Lock()
	if a.mu.registered == nil {
		a.mu.Unlock()
		return nil, ErrNotRegistered
	}
	maxCap := a.mu.maxCap
	a.mu.Unlock()
	for _, ask := range r.Asks {
		if maxCap != (Resource{}) && !ask.Capability.Fits(maxCap) {
			return nil, fmt.Errorf("%w: ask at priority %d for %v, cluster maximum %v", ErrExceedsMaximum, ask.Priority, ask.Capability, maxCap)
		}
		if ask.NumContainers < 0 {
			return nil, fmt.Errorf("yarn: ask at priority %d for %q has %d containers", ask.Priority, ask.ResourceName, ask.NumContainers)
		}
	}

	a.mu.Lock()
	for _, ask := range r.Asks {
		k := askKey{ask.Priority, ask.ResourceName, ask.Capability, ask.AllocationRequestID}
		a.mu.asks[k] = ask
		a.mu.dirtyAsks[k] = struct{}{}
	}
	for _, id := range r.Releases {
		a.mu.releases[id] = struct{}{}
		a.mu.dirtyReleases[id] = struct{}{}
	}
	for _, n := range r.BlacklistAdditions {
		a.mu.blacklisted[n] = struct{}{}
		a.mu.dirtyBlAdd[n] = struct{}{}
		delete(a.mu.dirtyBlRemove, n)
	}
	for _, n := range r.BlacklistRemovals {
		delete(a.mu.blacklisted, n)
		a.mu.dirtyBlRemove[n] = struct{}{}
		delete(a.mu.dirtyBlAdd, n)
	}
	var asks []ResourceRequest
	for k := range a.mu.dirtyAsks {
		asks = append(asks, a.mu.asks[k])
	}
	var releases []ContainerID
	for id := range a.mu.dirtyReleases {
		releases = append(releases, id)
	}
	req := a.buildAllocateLocked(asks, releases, keysOf(a.mu.dirtyBlAdd), keysOf(a.mu.dirtyBlRemove), r.Progress)
	a.mu.Unlock()

	resp, err := a.allocateOnce(ctx, req)
	resynced := false
	if errors.Is(err, ErrApplicationMasterNotRegistered) || (err == nil && resp.AMCommand != nil && resp.GetAMCommand() == yarnpb.AMCommandProto_AM_RESYNC) {
		a.log.Warn("yarn: ResourceManager asked the AM to resynchronise; re-registering")
		if resp, err = a.resync(ctx, r.Progress); err != nil {
			return nil, err
		}
		resynced = true
	}
	if err != nil {
		return nil, err
	}
	out := a.applyAllocateResponse(resp)
	out.Resynced = resynced
	return out, nil
}

// buildAllocateLocked makes an allocate request with the given changes.
// REQUIRES: a.mu held.
func (a *AMClient) buildAllocateLocked(asks []ResourceRequest, releases []ContainerID, blAdd, blRemove []string, progress float32) *yarnpb.AllocateRequestProto {
	req := &yarnpb.AllocateRequestProto{
		ResponseId: proto.Int32(a.mu.responseID),
		Progress:   proto.Float32(progress),
	}
	for _, ask := range asks {
		req.Ask = append(req.Ask, resourceRequestToProto(ask))
	}
	for _, id := range releases {
		req.Release = append(req.Release, containerIDToProto(id))
	}
	if len(blAdd) > 0 || len(blRemove) > 0 {
		req.BlacklistRequest = &yarnpb.ResourceBlacklistRequestProto{BlacklistAdditions: blAdd, BlacklistRemovals: blRemove}
	}
	return req
}

func (a *AMClient) allocateOnce(ctx context.Context, req *yarnpb.AllocateRequestProto) (*yarnpb.AllocateResponseProto, error) {
	var resp yarnpb.AllocateResponseProto
	if err := a.rm.call(ctx, "allocate", req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// resync re-registers and re-sends the whole outstanding state with
// response id 0.
func (a *AMClient) resync(ctx context.Context, progress float32) (*yarnpb.AllocateResponseProto, error) {
	a.mu.Lock()
	reg := *a.mu.registered
	a.mu.Unlock()
	if _, err := a.Register(ctx, reg); err != nil {
		return nil, fmt.Errorf("yarn: re-registering after resync: %w", err)
	}
	a.mu.Lock()
	a.mu.responseID = 0
	var asks []ResourceRequest
	for _, ask := range a.mu.asks {
		if ask.NumContainers > 0 {
			asks = append(asks, ask)
		}
	}
	var releases []ContainerID
	for id := range a.mu.releases {
		releases = append(releases, id)
	}
	req := a.buildAllocateLocked(asks, releases, keysOf(a.mu.blacklisted), nil, progress)
	a.mu.Unlock()
	return a.allocateOnce(ctx, req)
}

// applyAllocateResponse records the response's state changes and converts
// it.
func (a *AMClient) applyAllocateResponse(resp *yarnpb.AllocateResponseProto) *AllocateResponse {
	out := &AllocateResponse{
		Limit:           resourceFromProto(resp.GetLimit()),
		NumClusterNodes: resp.GetNumClusterNodes(),
		Command:         AMCommand(resp.GetAMCommand()),
	}
	if resp.AMCommand == nil {
		out.Command = AMCommandNone
	}
	for _, c := range resp.GetAllocatedContainers() {
		out.Allocated = append(out.Allocated, containerFromProto(c))
	}
	for _, s := range resp.GetCompletedContainerStatuses() {
		out.Completed = append(out.Completed, containerStatusFromProto(s))
	}
	for _, n := range resp.GetUpdatedNodes() {
		out.UpdatedNodes = append(out.UpdatedNodes, nodeReportFromProto(n))
	}
	for _, t := range resp.GetNmTokens() {
		out.NMTokens = append(out.NMTokens, NMToken{Node: nodeIDFromProto(t.GetNodeId()), Token: tokenFromProto(t.GetToken())})
	}
	if p := resp.GetPreempt(); p != nil {
		for _, c := range p.GetStrictContract().GetContainer() {
			out.PreemptContainers = append(out.PreemptContainers, containerIDFromProto(c.GetId()))
		}
		for _, c := range p.GetContract().GetContainer() {
			out.PreemptContainers = append(out.PreemptContainers, containerIDFromProto(c.GetId()))
		}
	}
	if t := resp.GetAmRmToken(); t != nil && len(t.GetIdentifier()) > 0 {
		nt := tokenFromProto(t)
		if nt.Kind == "" {
			nt.Kind = hadoop.KindAMRMToken
		}
		// The RM repeats the new token in every response until the AM
		// connects with it (it then serves the calls of the connection
		// authenticated with the old one until the old key retires): only
		// a token that differs from the one held is a roll-over.
		if cur := a.token.Token(); cur == nil || !bytes.Equal(cur.Identifier, nt.Identifier) {
			a.token.set(nt)
			out.AMRMTokenRolled = true
			a.log.Info("yarn: AMRMToken rolled over")
		}
	}

	a.mu.Lock()
	if resp.ResponseId != nil {
		a.mu.responseID = resp.GetResponseId()
	}
	// Everything sent so far is acknowledged.
	clear(a.mu.dirtyAsks)
	clear(a.mu.dirtyReleases)
	clear(a.mu.dirtyBlAdd)
	clear(a.mu.dirtyBlRemove)
	for _, t := range out.NMTokens {
		a.mu.nmTokens[t.Node.String()] = t.Token
	}
	for _, s := range out.Completed {
		delete(a.mu.releases, s.ID)
	}
	// Asks withdrawn (count 0) have been sent; forget them.
	for k, ask := range a.mu.asks {
		if ask.NumContainers == 0 {
			delete(a.mu.asks, k)
		}
	}
	a.mu.Unlock()
	return out
}

// ResponseID is the id the next Allocate will send.
func (a *AMClient) ResponseID() int32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mu.responseID
}

// NMToken returns the latest NMToken for a node (host:port).
func (a *AMClient) NMToken(node string) (*hadoop.Token, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.mu.nmTokens[node]
	return t, ok
}

// FinishRequest is the AM's final report.
type FinishRequest struct {
	FinalStatus FinalStatus
	Diagnostics string
	TrackingURL string
}

// Finish unregisters the ApplicationMaster, repeating the call until the RM
// confirms the unregistration (it may first need to persist the final
// state) or ctx ends.
func (a *AMClient) Finish(ctx context.Context, r FinishRequest) error {
	req := &yarnpb.FinishApplicationMasterRequestProto{
		FinalApplicationStatus: yarnpb.FinalApplicationStatusProto(r.FinalStatus).Enum(),
		Diagnostics:            proto.String(r.Diagnostics),
		TrackingUrl:            proto.String(r.TrackingURL),
	}
	reregistered := 0
	for {
		var resp yarnpb.FinishApplicationMasterResponseProto
		err := a.rm.call(ctx, "finishApplicationMaster", req, &resp)
		if errors.Is(err, ErrApplicationMasterNotRegistered) && reregistered < 3 {
			reregistered++
			a.mu.Lock()
			reg := a.mu.registered
			a.mu.Unlock()
			if reg == nil {
				return err
			}
			if _, rerr := a.Register(ctx, *reg); rerr != nil {
				return fmt.Errorf("yarn: re-registering before finish: %w", rerr)
			}
			continue
		}
		if err != nil {
			return err
		}
		if resp.GetIsUnregistered() {
			return nil
		}
		t := time.NewTimer(a.cfg.FinishPollInterval)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("yarn: waiting for the ResourceManager to unregister the AM: %w", ctx.Err())
		}
	}
}

func keysOf[K comparable](m map[K]struct{}) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
