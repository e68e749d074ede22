package yarn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/security/kerberos"
	"github.com/sluice/sluice/yarn/internal/ipc"
	"github.com/sluice/sluice/yarn/internal/proto/yarnpb"
)

// ClientConfig configures a Client. Every field documents its default.
type ClientConfig struct {
	// ResourceManagers lists the ApplicationClientProtocol addresses
	// (host:port), in failover order. Required.
	ResourceManagers []string
	// User is the user to act as (SIMPLE authentication). Required.
	User string
	// Logger; default discards.
	Logger *slog.Logger
	// MaxFailovers bounds the retries of one call across ResourceManagers
	// (standby, unreachable, connection lost). Default 10.
	MaxFailovers int
	// FailoverBackoff is the first pause between retries, doubling up to
	// MaxFailoverBackoff. Defaults 200ms and 5s.
	FailoverBackoff, MaxFailoverBackoff time.Duration
	// ConnectAttempts is how often one address is dialled before the call
	// fails over. Default 10 with one ResourceManager, 2 with several.
	ConnectAttempts int
	// Dial opens connections; default net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// SkipQueueCheck disables SubmitApplication's check that the queue
	// exists (for schedulers that create queues on demand). Default false.
	SkipQueueCheck bool
	// Kerberos authenticates to a secure ResourceManager with SASL
	// GSSAPI. Default nil: SIMPLE.
	Kerberos *kerberos.Login
	// ServerPrincipal is the ResourceManager's principal
	// (yarn.resourcemanager.principal, e.g. yarn/_HOST@REALM); required
	// with Kerberos.
	ServerPrincipal string
	// QOP lists the acceptable qualities of protection, most preferred
	// first (hadoop.rpc.protection). Default [authentication].
	QOP []hadoop.QOP
	// FallbackToSimpleAllowed lets a client with Kerberos continue
	// unauthenticated when a ResourceManager asks it to fall back to SIMPLE
	// (ipc.client.fallback-to-simple-auth-allowed). Default false: the call
	// fails with ErrFallbackToSimple, naming the ResourceManager.
	FallbackToSimpleAllowed bool
}

// Validate reports every problem with the configuration.
func (c *ClientConfig) Validate() error {
	var errs []error
	if len(c.ResourceManagers) == 0 {
		errs = append(errs, errors.New("ResourceManagers is empty"))
	}
	for _, a := range c.ResourceManagers {
		if _, _, err := net.SplitHostPort(a); err != nil {
			errs = append(errs, fmt.Errorf("ResourceManager address %q is not host:port", a))
		}
	}
	if strings.TrimSpace(c.User) == "" {
		errs = append(errs, errors.New("User is empty"))
	}
	if c.MaxFailovers < 0 {
		errs = append(errs, fmt.Errorf("MaxFailovers is %d, want >= 0", c.MaxFailovers))
	}
	if c.Kerberos != nil && c.ServerPrincipal == "" {
		errs = append(errs, fmt.Errorf("ServerPrincipal is empty: with Kerberos the ResourceManager's principal is needed (%s, e.g. yarn/_HOST@REALM)", KeyRMPrincipal))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("yarn: invalid client config: %w", err)
	}
	return nil
}

// Client speaks ApplicationClientProtocol to the ResourceManager: it creates,
// submits, inspects and kills applications and reads cluster state. It is
// safe for concurrent use.
type Client struct {
	cfg ClientConfig
	log *slog.Logger
	ipc *ipc.Client
	rm  *failoverCaller

	mu struct {
		sync.Mutex
		maxCapability *Resource // from the last GetNewApplication
	}
}

// NewClient returns a client; it connects on first use.
func NewClient(cfg ClientConfig) (*Client, error) {
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
		if len(cfg.ResourceManagers) > 1 {
			cfg.ConnectAttempts = 2
		}
	}
	io := ipc.Options{Logger: cfg.Logger, Dial: cfg.Dial, MaxConnectAttempts: cfg.ConnectAttempts, QOP: cfg.QOP, FallbackToSimpleAllowed: cfg.FallbackToSimpleAllowed}
	if cfg.Kerberos != nil {
		io.Kerberos = ipc.KerberosLogin{Tickets: cfg.Kerberos}
	}
	ic, err := ipc.NewClient(io)
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, log: cfg.Logger, ipc: ic}
	c.rm = &failoverCaller{
		ipc: ic, protocol: protocolClient, user: cfg.User, principal: cfg.ServerPrincipal, addrs: cfg.ResourceManagers, log: cfg.Logger,
		maxFailovers: cfg.MaxFailovers, backoff: cfg.FailoverBackoff, maxBackoff: cfg.MaxFailoverBackoff,
	}
	return c, nil
}

// KeyRMPrincipal names the ResourceManager's Kerberos principal.
const KeyRMPrincipal = "yarn.resourcemanager.principal"

// ConfigureKerberos fills cfg's Kerberos fields for a cluster with
// hadoop.security.authentication=kerberos: the login, the
// ResourceManager's principal (yarn.resourcemanager.principal), the
// qualities of protection (hadoop.rpc.protection) and whether a fallback to
// SIMPLE is allowed (ipc.client.fallback-to-simple-auth-allowed). For other
// clusters it leaves cfg as it is.
func ConfigureKerberos(cfg *ClientConfig, conf *hadoop.Configuration, login *kerberos.Login) error {
	auth, err := conf.SecurityAuthentication()
	if err != nil || auth != hadoop.AuthKerberos {
		return err
	}
	if login == nil {
		return fmt.Errorf("yarn: the cluster requires Kerberos (%s=kerberos in %s) and there is no Kerberos login (security.kerberos.login.keytab and security.kerberos.login.principal, or a ticket cache)",
			hadoop.KeySecurityAuthentication, conf.Source(hadoop.KeySecurityAuthentication))
	}
	qop, err := conf.RPCProtection()
	if err != nil {
		return err
	}
	fallback, err := conf.FallbackToSimpleAuthAllowed()
	if err != nil {
		return err
	}
	cfg.Kerberos, cfg.ServerPrincipal, cfg.QOP, cfg.FallbackToSimpleAllowed = login, conf.Get(KeyRMPrincipal, ""), qop, fallback
	return nil
}

// NewClientFromConfiguration builds a client for the ResourceManagers the
// Hadoop configuration names (yarn.resourcemanager.address, with HA).
func NewClientFromConfiguration(conf *hadoop.Configuration, user string, logger *slog.Logger) (*Client, error) {
	rms, err := conf.ResourceManagerAddresses()
	if err != nil {
		return nil, err
	}
	addrs := make([]string, len(rms))
	for i, r := range rms {
		addrs[i] = r.Address
	}
	return NewClient(ClientConfig{ResourceManagers: addrs, User: user, Logger: logger})
}

// Close closes the client's connections.
func (c *Client) Close() error { return c.ipc.Close() }

// CurrentResourceManager is the address calls currently go to.
func (c *Client) CurrentResourceManager() string { return c.rm.current() }

// NewApplication is a fresh application id and the largest container the
// cluster grants.
type NewApplication struct {
	ID            ApplicationID
	MaxCapability Resource
}

// GetNewApplication asks the ResourceManager for a new application id.
func (c *Client) GetNewApplication(ctx context.Context) (*NewApplication, error) {
	var resp yarnpb.GetNewApplicationResponseProto
	if err := c.rm.call(ctx, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, &resp); err != nil {
		return nil, err
	}
	if resp.ApplicationId == nil {
		return nil, fmt.Errorf("yarn: getNewApplication returned no application id")
	}
	na := &NewApplication{ID: appIDFromProto(resp.GetApplicationId()), MaxCapability: resourceFromProto(resp.GetMaximumCapability())}
	c.mu.Lock()
	mc := na.MaxCapability
	c.mu.maxCapability = &mc
	c.mu.Unlock()
	return na, nil
}

// MaxCapability is the largest container the cluster grants, as reported
// by the last GetNewApplication (false before the first).
func (c *Client) MaxCapability() (Resource, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.maxCapability == nil {
		return Resource{}, false
	}
	return *c.mu.maxCapability, true
}

// ValidateSubmission checks a submission context before it is sent, and
// reports every problem found.
func (c *Client) ValidateSubmission(s *SubmissionContext) error {
	var errs []error
	if s.ID.IsZero() {
		errs = append(errs, errors.New("ID is not set (call GetNewApplication)"))
	}
	if !s.UnmanagedAM {
		if s.AMResource.MemoryMB <= 0 || s.AMResource.VCores <= 0 {
			errs = append(errs, fmt.Errorf("AMResource %v must have positive memory and vcores", s.AMResource))
		}
		if len(s.AMContainer.Commands) == 0 {
			errs = append(errs, errors.New("AMContainer has no command"))
		}
		if limit, ok := c.MaxCapability(); ok && !s.AMResource.Fits(limit) {
			errs = append(errs, fmt.Errorf("%w: AMResource %v, cluster maximum %v", ErrExceedsMaximum, s.AMResource, limit))
		}
	}
	for k := range s.AMContainer.ACLs {
		if k != "VIEW_APP" && k != "MODIFY_APP" {
			errs = append(errs, fmt.Errorf("ACL key %q, want VIEW_APP or MODIFY_APP", k))
		}
	}
	for name, r := range s.AMContainer.LocalResources {
		if r.URL.Scheme == "" || r.URL.File == "" {
			errs = append(errs, fmt.Errorf("local resource %q has no scheme or path", name))
		}
		if r.Type < ResourceArchive || r.Type > ResourcePattern {
			errs = append(errs, fmt.Errorf("local resource %q has type %d", name, r.Type))
		}
		if r.Visibility < VisibilityPublic || r.Visibility > VisibilityApplication {
			errs = append(errs, fmt.Errorf("local resource %q has visibility %d", name, r.Visibility))
		}
	}
	if s.MaxAppAttempts < 0 {
		errs = append(errs, fmt.Errorf("MaxAppAttempts is %d", s.MaxAppAttempts))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidSubmission, err)
	}
	return nil
}

// SubmitApplication validates and submits an application. Unless
// SkipQueueCheck is set, a queue the scheduler does not know is refused
// with a *QueueError (errors.Is ErrUnknownQueue) before submission.
func (c *Client) SubmitApplication(ctx context.Context, s *SubmissionContext) error {
	if err := c.ValidateSubmission(s); err != nil {
		return err
	}
	if s.Queue != "" && !c.cfg.SkipQueueCheck {
		if err := c.CheckQueue(ctx, s.Queue); err != nil {
			return err
		}
	}
	req := &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: submissionToProto(s)}
	var resp yarnpb.SubmitApplicationResponseProto
	return c.rm.call(ctx, "submitApplication", req, &resp)
}

// CheckQueue returns a *QueueError if the scheduler has no leaf queue of
// that name (short name, or dotted path from root). If the scheduler's queue
// tree cannot be read (e.g. ACLs), the check passes and submission decides.
func (c *Client) CheckQueue(ctx context.Context, queue string) error {
	root, err := c.GetQueueInfo(ctx, "root", QueueInfoOptions{IncludeChildQueues: true, Recursive: true})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.log.Debug("yarn: cannot read the queue tree; not checking the queue", "queue", queue, "err", err)
		return nil
	}
	var leaves []string
	found := false
	var walk func(q *QueueInfo, path string)
	walk = func(q *QueueInfo, path string) {
		if len(q.Children) == 0 {
			leaves = append(leaves, path)
			if q.Name == queue || path == queue || strings.HasSuffix(q.Name, "."+queue) {
				found = true
			}
			return
		}
		for i := range q.Children {
			ch := &q.Children[i]
			p := ch.Name
			if !strings.Contains(ch.Name, ".") {
				p = path + "." + ch.Name
			}
			walk(ch, p)
		}
	}
	walk(root, root.Name)
	if !found {
		return &QueueError{Queue: queue, Known: leaves}
	}
	return nil
}

// GetApplicationReport returns the application's report; an unknown id is
// an error matching ErrApplicationNotFound.
func (c *Client) GetApplicationReport(ctx context.Context, id ApplicationID) (*ApplicationReport, error) {
	var resp yarnpb.GetApplicationReportResponseProto
	err := c.rm.call(ctx, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: appIDToProto(id)}, &resp)
	if err != nil {
		return nil, err
	}
	if resp.ApplicationReport == nil {
		return nil, fmt.Errorf("yarn: getApplicationReport(%s) returned no report", id)
	}
	r := reportFromProto(resp.GetApplicationReport())
	return &r, nil
}

// ApplicationFilter selects applications for GetApplications; empty fields
// do not filter.
type ApplicationFilter struct {
	Types  []string
	States []ApplicationState
	Users  []string
	Queues []string
	Tags   []string
	Name   string
	Limit  int64
}

// GetApplications lists the applications matching the filter.
func (c *Client) GetApplications(ctx context.Context, f ApplicationFilter) ([]ApplicationReport, error) {
	req := &yarnpb.GetApplicationsRequestProto{
		ApplicationTypes: f.Types,
		Users:            f.Users,
		Queues:           f.Queues,
		ApplicationTags:  f.Tags,
	}
	for _, s := range f.States {
		req.ApplicationStates = append(req.ApplicationStates, yarnpb.YarnApplicationStateProto(s))
	}
	if f.Limit > 0 {
		req.Limit = proto.Int64(f.Limit)
	}
	if f.Name != "" {
		req.Name = proto.String(f.Name)
	}
	var resp yarnpb.GetApplicationsResponseProto
	if err := c.rm.call(ctx, "getApplications", req, &resp); err != nil {
		return nil, err
	}
	out := make([]ApplicationReport, 0, len(resp.GetApplications()))
	for _, a := range resp.GetApplications() {
		out = append(out, reportFromProto(a))
	}
	return out, nil
}

// ForceKillApplication asks the ResourceManager to kill the application and
// reports whether the kill has completed (the RM kills asynchronously; poll
// the report, or call again, until it has).
func (c *Client) ForceKillApplication(ctx context.Context, id ApplicationID, diagnostics string) (bool, error) {
	req := &yarnpb.KillApplicationRequestProto{ApplicationId: appIDToProto(id)}
	if diagnostics != "" {
		req.Diagnostics = proto.String(diagnostics)
	}
	var resp yarnpb.KillApplicationResponseProto
	if err := c.rm.call(ctx, "forceKillApplication", req, &resp); err != nil {
		return false, err
	}
	return resp.GetIsKillCompleted(), nil
}

// GetClusterMetrics returns NodeManager counts.
func (c *Client) GetClusterMetrics(ctx context.Context) (*ClusterMetrics, error) {
	var resp yarnpb.GetClusterMetricsResponseProto
	if err := c.rm.call(ctx, "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &resp); err != nil {
		return nil, err
	}
	m := resp.GetClusterMetrics()
	return &ClusterMetrics{
		NodeManagers:   m.GetNumNodeManagers(),
		Active:         m.GetNumActiveNms(),
		Decommissioned: m.GetNumDecommissionedNms(),
		Lost:           m.GetNumLostNms(),
		Unhealthy:      m.GetNumUnhealthyNms(),
		Rebooted:       m.GetNumRebootedNms(),
	}, nil
}

// GetClusterNodes lists NodeManagers in the given states (all states when
// none is given).
func (c *Client) GetClusterNodes(ctx context.Context, states ...NodeState) ([]NodeReport, error) {
	req := &yarnpb.GetClusterNodesRequestProto{}
	for _, s := range states {
		req.NodeStates = append(req.NodeStates, yarnpb.NodeStateProto(s))
	}
	var resp yarnpb.GetClusterNodesResponseProto
	if err := c.rm.call(ctx, "getClusterNodes", req, &resp); err != nil {
		return nil, err
	}
	out := make([]NodeReport, 0, len(resp.GetNodeReports()))
	for _, n := range resp.GetNodeReports() {
		out = append(out, nodeReportFromProto(n))
	}
	return out, nil
}

// QueueInfoOptions select what GetQueueInfo returns.
type QueueInfoOptions struct {
	IncludeApplications bool
	IncludeChildQueues  bool
	Recursive           bool
}

// GetQueueInfo describes a queue. An unknown queue is a remote error
// (schedulers raise java.io.IOException).
func (c *Client) GetQueueInfo(ctx context.Context, queue string, o QueueInfoOptions) (*QueueInfo, error) {
	req := &yarnpb.GetQueueInfoRequestProto{
		QueueName:           proto.String(queue),
		IncludeApplications: proto.Bool(o.IncludeApplications),
		IncludeChildQueues:  proto.Bool(o.IncludeChildQueues),
		Recursive:           proto.Bool(o.Recursive),
	}
	var resp yarnpb.GetQueueInfoResponseProto
	if err := c.rm.call(ctx, "getQueueInfo", req, &resp); err != nil {
		return nil, err
	}
	if resp.QueueInfo == nil {
		return nil, fmt.Errorf("yarn: getQueueInfo(%q) returned no queue", queue)
	}
	q := queueInfoFromProto(resp.GetQueueInfo())
	return &q, nil
}

// WaitForState polls the application report every poll interval until the
// application is in one of the given states, and returns that report. If
// the application reaches a terminal state not asked for, it returns the
// report and an *ApplicationError.
func (c *Client) WaitForState(ctx context.Context, id ApplicationID, poll time.Duration, states ...ApplicationState) (*ApplicationReport, error) {
	if poll <= 0 {
		poll = 200 * time.Millisecond
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		r, err := c.GetApplicationReport(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, s := range states {
			if r.State == s {
				return r, nil
			}
		}
		if r.State.Terminal() {
			return r, &ApplicationError{ID: id, State: r.State, FinalStatus: r.FinalStatus, Diagnostics: r.Diagnostics}
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return r, fmt.Errorf("yarn: waiting for %s to reach %v (now %s): %w", id, states, r.State, ctx.Err())
		}
	}
}
