// Package yarndriver is the ResourceManager driver of the YARN
// ApplicationMaster: it turns the number of TaskManagers the cluster needs
// into YARN container requests, launches a TaskManager in every container
// it keeps, gives back the containers it does not need, and reports the
// TaskManagers that YARN took away (exit, preemption, lost node).
//
// The decisions (what to ask, launch and release) are made by
// scheduler.PlanContainers; this package carries them out through package
// yarn: the allocate heartbeat to the ResourceManager (AMClient, which keeps
// the response ids, re-sends after a ResourceManager restart and rolls the
// AMRMToken over) and container starts on the NodeManagers (NMClient, with
// the NMTokens the allocate responses carry).
package yarndriver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/scheduler"
	"github.com/sluice/sluice/yarn"
)

// Errors of this package.
var (
	// ErrShutdown: the YARN ResourceManager ordered the ApplicationMaster to
	// shut down (AM_SHUTDOWN, e.g. the application was killed or the
	// attempt is no longer current).
	ErrShutdown = errors.New("yarndriver: the YARN ResourceManager ordered the ApplicationMaster to shut down")
	// ErrAllocate wraps a failed allocate heartbeat (after package yarn's
	// retries and ResourceManager failover).
	ErrAllocate = errors.New("yarndriver: allocate heartbeat failed")
	// ErrInvalidConfig wraps every configuration problem.
	ErrInvalidConfig = errors.New("yarndriver: invalid config")
)

// Scheduler is the ResourceManager's ApplicationMasterProtocol as the
// driver uses it; *yarn.AMClient (registered) implements it.
type Scheduler interface {
	Allocate(ctx context.Context, r yarn.AllocateRequest) (*yarn.AllocateResponse, error)
}

// Launcher starts containers on their NodeManagers; *yarn.NMClient
// implements it.
type Launcher interface {
	StartContainer(ctx context.Context, c yarn.Container, launch yarn.ContainerLaunchContext) error
}

// Config configures a Driver. Every field documents its default.
type Config struct {
	// Scheduler heartbeats to the ResourceManager. Required.
	Scheduler Scheduler
	// Launcher starts TaskManager containers. Required.
	Launcher Launcher
	// Resource is the size of each TaskManager container
	// (taskmanager.memory.process.size, yarn.containers.vcores). Required.
	Resource yarn.Resource
	// Priority of the TaskManager container requests. Default 1.
	Priority yarn.Priority
	// NodeLabel is the node label expression of the TaskManager container
	// requests (yarn.taskmanager.node-label). Default none.
	NodeLabel string
	// TaskManager describes the process launched in each container.
	// Required.
	TaskManager TaskManagerLaunch
	// HeartbeatInterval between allocate calls while no container is
	// requested (yarn.heartbeat.interval). Default 5 s.
	HeartbeatInterval time.Duration
	// ContainerRequestHeartbeatInterval between allocate calls while
	// containers are requested (yarn.heartbeat.container-request-interval).
	// Default 500 ms.
	ContainerRequestHeartbeatInterval time.Duration
	// LaunchTimeout bounds one StartContainer call. Default 1 min.
	LaunchTimeout time.Duration
	// StartWorkerMaxFailureRate is the number of TaskManager start
	// failures per minute at which no new containers are asked for during
	// StartWorkerRetryInterval
	// (resourcemanager.start-worker.max-failure-rate). Default 10.
	StartWorkerMaxFailureRate float64
	// StartWorkerRetryInterval is that pause
	// (resourcemanager.start-worker.retry-interval). Default 3 s.
	StartWorkerRetryInterval time.Duration
	// Logger; default discards.
	Logger *slog.Logger
}

// Validate reports every problem with the configuration.
func (c *Config) Validate() error {
	var errs []error
	if c.Scheduler == nil {
		errs = append(errs, errors.New("Scheduler is nil"))
	}
	if c.Launcher == nil {
		errs = append(errs, errors.New("Launcher is nil"))
	}
	if c.Resource.MemoryMB <= 0 || c.Resource.VCores <= 0 {
		errs = append(errs, fmt.Errorf("Resource %v must have positive memory and vcores", c.Resource))
	}
	if c.Priority < 0 {
		errs = append(errs, fmt.Errorf("Priority is %d, want >= 0", c.Priority))
	}
	if c.StartWorkerMaxFailureRate < 0 {
		errs = append(errs, fmt.Errorf("StartWorkerMaxFailureRate is %v, want > 0", c.StartWorkerMaxFailureRate))
	}
	if c.HeartbeatInterval < 0 || c.ContainerRequestHeartbeatInterval < 0 || c.LaunchTimeout < 0 || c.StartWorkerRetryInterval < 0 {
		errs = append(errs, errors.New("intervals and timeouts must not be negative"))
	}
	if err := c.TaskManager.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}

// Driver acquires TaskManager containers from YARN. It implements the
// ResourceManager's Driver: SetRequired and Release may be called from any
// goroutine, before or while Run runs.
type Driver struct {
	cfg  Config
	log  *slog.Logger
	wake chan struct{} // capacity 1: SetRequired or Release happened

	mu struct {
		sync.Mutex
		tokens []byte // the TaskManagers' credentials document
		// tokensExpiry is the earliest expiry of tokens' delegation
		// tokens, Unix seconds; 0 while unknown (the client's tokens).
		tokensExpiry int64
		// launchedExpiry is tokensExpiry as each running TaskManager
		// container was launched with it (known expiries only).
		launchedExpiry map[string]int64
		required       int
		stop           []string
		running        bool
		// containers are the application's TaskManager containers: those
		// held, and the last maxEndedContainers that ended (ended, oldest
		// first).
		containers map[string]*ContainerInfo
		ended      []string
	}
}

// The states of a TaskManager container, as Containers reports them.
const (
	ContainerAllocated    = "ALLOCATED"     // granted by the ResourceManager, not launched yet
	ContainerLaunching    = "LAUNCHING"     // its NodeManager is asked to start it
	ContainerRunning      = "RUNNING"       // the TaskManager started
	ContainerLaunchFailed = "LAUNCH_FAILED" // its NodeManager did not start it (released)
	ContainerReleased     = "RELEASED"      // given back to YARN, not yet reported complete
	ContainerComplete     = "COMPLETE"      // ended, with ExitStatus and Diagnostics
)

// maxEndedContainers bounds how many ended containers Containers keeps.
const maxEndedContainers = 50

// ContainerInfo is a TaskManager container of the application.
type ContainerInfo struct {
	ID              string
	Node            string // the NodeManager, host:port
	NodeHTTPAddress string
	Resource        yarn.Resource
	State           string // one of the Container* states
	ExitStatus      int32  // when ContainerComplete
	Diagnostics     string // when ContainerComplete or ContainerLaunchFailed
	Since           time.Time
}

// Containers returns the application's TaskManager containers, held ones
// and the last ended ones, by container id.
func (d *Driver) Containers() []ContainerInfo {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]ContainerInfo, 0, len(d.mu.containers))
	for _, c := range d.mu.containers {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b ContainerInfo) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// setContainer records a container's state; c is the container when it is
// first seen (allocated).
func (d *Driver) setContainer(id string, c *yarn.Container, state, diag string, exit int32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mu.containers == nil {
		d.mu.containers = map[string]*ContainerInfo{}
	}
	ci := d.mu.containers[id]
	if ci == nil {
		if c == nil {
			return // not one of ours, or forgotten already
		}
		ci = &ContainerInfo{ID: id, Node: c.Node.String(), NodeHTTPAddress: c.NodeHTTPAddress, Resource: c.Resource}
		d.mu.containers[id] = ci
	}
	if ci.State == ContainerComplete {
		return
	}
	ci.State, ci.Since = state, time.Now()
	if diag != "" {
		ci.Diagnostics = diag
	}
	if state == ContainerComplete {
		ci.ExitStatus = exit
		d.mu.ended = append(d.mu.ended, id)
		for len(d.mu.ended) > maxEndedContainers {
			delete(d.mu.containers, d.mu.ended[0])
			d.mu.ended = d.mu.ended[1:]
		}
	}
}

// New returns a driver; nothing happens until Run.
func New(cfg Config) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Priority == 0 {
		cfg.Priority = 1
	}
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = 5 * time.Second
	}
	if cfg.ContainerRequestHeartbeatInterval == 0 {
		cfg.ContainerRequestHeartbeatInterval = 500 * time.Millisecond
	}
	if cfg.LaunchTimeout == 0 {
		cfg.LaunchTimeout = time.Minute
	}
	if cfg.StartWorkerMaxFailureRate == 0 {
		cfg.StartWorkerMaxFailureRate = 10
	}
	if cfg.StartWorkerRetryInterval == 0 {
		cfg.StartWorkerRetryInterval = 3 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	tokens, err := taskManagerTokens(cfg.TaskManager.Credentials)
	if err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg, log: cfg.Logger, wake: make(chan struct{}, 1)}
	d.mu.tokens = tokens
	return d, nil
}

// UpdateCredentials merges creds (e.g. renewed delegation tokens, the
// earliest of which expires at expiry) into the credentials of
// TaskManagers launched from now on; an AMRMToken among them is left out.
func (d *Driver) UpdateCredentials(creds *hadoop.Credentials, expiry time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	merged := &hadoop.Credentials{}
	if len(d.mu.tokens) > 0 {
		cur, err := hadoop.ParseCredentials(d.mu.tokens)
		if err != nil {
			return fmt.Errorf("yarndriver: the TaskManagers' credentials: %w", err)
		}
		merged.Merge(cur)
	}
	merged.Merge(creds)
	tokens, err := taskManagerTokens(merged)
	if err != nil {
		return err
	}
	d.mu.tokens = tokens
	d.mu.tokensExpiry = expiry.Unix()
	return nil
}

// SetRequired declares how many TaskManagers the cluster needs in total.
func (d *Driver) SetRequired(n int) {
	d.mu.Lock()
	d.mu.required = max(0, n)
	d.mu.Unlock()
	d.poke()
}

// Release stops the TaskManager in the container with this id: the
// container is given back to YARN, which kills it. Unless the required
// count is lowered too, a replacement is requested.
func (d *Driver) Release(resourceID string) {
	d.mu.Lock()
	d.mu.stop = append(d.mu.stop, resourceID)
	d.mu.Unlock()
	d.poke()
}

func (d *Driver) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *Driver) take() (required int, stop []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	required, stop = d.mu.required, d.mu.stop
	d.mu.stop = nil
	return required, stop
}

type launchResult struct {
	id  string
	err error
}

// Run heartbeats to the ResourceManager and manages the TaskManager
// containers until ctx ends (it then returns ctx's error) or the
// ResourceManager orders a shutdown (ErrShutdown) or cannot be reached
// (ErrAllocate). Completed TaskManager containers are reported to events
// from Run's goroutine. Run may be called once.
func (d *Driver) Run(ctx context.Context, events DriverEvents) error {
	d.mu.Lock()
	if d.mu.running {
		d.mu.Unlock()
		return errors.New("yarndriver: Run called twice")
	}
	d.mu.running = true
	d.mu.Unlock()

	lctx, cancel := context.WithCancel(ctx)
	var launches sync.WaitGroup
	defer func() {
		cancel()
		launches.Wait()
	}()
	results := make(chan launchResult)

	prio := int32(d.cfg.Priority)
	var (
		book       scheduler.Containers
		ev         scheduler.ContainerEvents
		containers = make(map[string]yarn.Container) // allocated and not completed
		completed  = make(map[string]yarn.ContainerStatus)
		lostNodes  = make(map[yarn.NodeID]yarn.NodeState) // nodes reported lost or unhealthy
		send       yarn.AllocateRequest
		asks       = make(map[int32]int)
		fast       bool
		last       time.Time // zero: heartbeat at once
		failures   = scheduler.NewStartFailures(d.cfg.StartWorkerMaxFailureRate, d.cfg.StartWorkerRetryInterval.Milliseconds())
		held       bool // the last plan held the asks
	)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		required, stop := d.take()
		ev.Required = map[int32]int{prio: required}
		ev.Stop = stop
		paused, pausedUntil := failures.Paused(time.Now().UnixMilli())
		ev.HoldAsks = paused
		if paused && !held {
			d.log.Warn("yarndriver: too many TaskManagers failed to start; asking for no new containers for a while",
				"failures_last_minute", failures.Recent(time.Now().UnixMilli()),
				"max_failure_rate", d.cfg.StartWorkerMaxFailureRate, "retry_in", time.Until(time.UnixMilli(pausedUntil)).Round(time.Millisecond))
		} else if !paused && held {
			d.log.Info("yarndriver: asking for TaskManager containers again after start failures")
		}
		held = paused
		var plan scheduler.ContainerPlan
		book, plan = scheduler.PlanContainers(book, ev)
		ev = scheduler.ContainerEvents{}

		for _, id := range plan.Stopped {
			st := completed[id]
			c := containers[id]
			diag := describeCompletion(st, c.Node, lostNodes[c.Node])
			d.log.Warn("yarndriver: TaskManager container completed", "container", id, "node", c.Node.String(), "diagnostics", diag)
			events.WorkerStopped(id, diag)
		}
		for id, st := range completed {
			if c, ok := containers[id]; ok {
				d.setContainer(id, nil, ContainerComplete, describeCompletion(st, c.Node, lostNodes[c.Node]), st.ExitStatus)
			}
			delete(containers, id)
			d.forgetTokens(id)
		}
		clear(completed)
		for _, a := range plan.Launch {
			c := containers[a.ID]
			d.log.Info("yarndriver: launching TaskManager", "container", a.ID, "node", c.Node.String(), "resource", c.Resource.String())
			d.setContainer(a.ID, nil, ContainerLaunching, "", 0)
			launches.Go(func() {
				err := d.launch(lctx, c)
				select {
				case results <- launchResult{id: a.ID, err: err}:
				case <-lctx.Done():
				}
			})
		}
		maps.Copy(asks, plan.Asks)
		for _, id := range plan.Release {
			c, ok := containers[id]
			if !ok {
				continue
			}
			d.log.Info("yarndriver: releasing container", "container", id, "node", c.Node.String())
			d.setContainer(id, nil, ContainerReleased, "", 0)
			send.Releases = append(send.Releases, c.ID)
		}
		fast = plan.FastHeartbeat

		interval := d.cfg.HeartbeatInterval
		if fast {
			interval = d.cfg.ContainerRequestHeartbeatInterval
		}
		due := last.Add(interval)
		if len(plan.Asks) > 0 || len(plan.Release) > 0 || !time.Now().Before(due) {
			for p, n := range asks {
				send.Asks = append(send.Asks, yarn.ResourceRequest{
					Priority: yarn.Priority(p), ResourceName: yarn.AnyResource, Capability: d.cfg.Resource, NumContainers: int32(n),
					NodeLabelExpression: d.cfg.NodeLabel,
				})
				if n > 0 {
					d.log.Info("yarndriver: requesting TaskManager containers", "count", n, "resource", d.cfg.Resource.String(), "priority", p)
				}
			}
			clear(asks)
			resp, err := d.cfg.Scheduler.Allocate(ctx, send)
			last = time.Now()
			send = yarn.AllocateRequest{}
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("%w: %w", ErrAllocate, err)
			}
			if resp.Command == yarn.AMCommandShutdown {
				return ErrShutdown
			}
			ev.Resynced = resp.Resynced
			if resp.Resynced {
				d.log.Warn("yarndriver: the ResourceManager lost the application's state; asks sent again")
			}
			for _, n := range resp.UpdatedNodes {
				switch n.State {
				case yarn.NodeLost, yarn.NodeUnhealthy, yarn.NodeDecommissioned, yarn.NodeShutdown, yarn.NodeDecommissioning:
					lostNodes[n.ID] = n.State
					d.log.Warn("yarndriver: node is no longer usable", "node", n.ID.String(), "state", n.State.String(), "health", n.HealthReport)
				case yarn.NodeRunning:
					delete(lostNodes, n.ID)
				}
			}
			for _, id := range resp.PreemptContainers {
				d.log.Warn("yarndriver: the YARN scheduler will preempt a container", "container", id.String())
			}
			for _, c := range resp.Allocated {
				id := c.ID.String()
				if _, dup := containers[id]; !dup {
					containers[id] = c
					d.setContainer(id, &c, ContainerAllocated, "", 0)
				}
				ev.Allocated = append(ev.Allocated, scheduler.AllocatedContainer{ID: id, Priority: int32(c.Priority)})
			}
			for _, st := range resp.Completed {
				id := st.ID.String()
				completed[id] = st
				ev.Completed = append(ev.Completed, id)
				if _, ours := containers[id]; ours && failedToStart(st) {
					failures.Record(time.Now().UnixMilli())
				}
			}
			continue
		}

		wait := time.Until(due)
		if paused {
			wait = min(wait, time.Until(time.UnixMilli(pausedUntil)))
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		case <-d.wake:
		case r := <-results:
			d.applyLaunch(&ev, r, failures)
		}
		timer.Stop() // Reset discards a value it left (Go 1.23 timers)
		// Collect every other launch result that is ready.
		for more := true; more; {
			select {
			case r := <-results:
				d.applyLaunch(&ev, r, failures)
			default:
				more = false
			}
		}
	}
}

func (d *Driver) applyLaunch(ev *scheduler.ContainerEvents, r launchResult, failures *scheduler.StartFailures) {
	if r.err != nil {
		d.log.Error("yarndriver: the NodeManager did not start the TaskManager; releasing the container", "container", r.id, "err", r.err)
		d.setContainer(r.id, nil, ContainerLaunchFailed, r.err.Error(), 0)
		ev.LaunchFailed = append(ev.LaunchFailed, r.id)
		failures.Record(time.Now().UnixMilli())
		return
	}
	d.log.Info("yarndriver: TaskManager container started", "container", r.id)
	d.setContainer(r.id, nil, ContainerRunning, "", 0)
	ev.Launched = append(ev.Launched, r.id)
}

func (d *Driver) launch(ctx context.Context, c yarn.Container) error {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.LaunchTimeout)
	defer cancel()
	d.mu.Lock()
	tokens, expiry := d.mu.tokens, d.mu.tokensExpiry
	d.mu.Unlock()
	err := d.cfg.Launcher.StartContainer(ctx, c, d.cfg.TaskManager.context(c.ID.String(), tokens))
	if err == nil && expiry != 0 {
		d.mu.Lock()
		if d.mu.launchedExpiry == nil {
			d.mu.launchedExpiry = make(map[string]int64)
		}
		d.mu.launchedExpiry[c.ID.String()] = expiry
		d.mu.Unlock()
	}
	return err
}

// TaskManagerTokenExpiries maps each running TaskManager container (its
// id, the TaskManager's resource id) to the earliest expiry, Unix seconds,
// of the delegation tokens it was launched with: a running container's
// tokens are never replaced. Containers launched with tokens of unknown
// expiry (the client's, before the first UpdateCredentials) are left out.
func (d *Driver) TaskManagerTokenExpiries() map[string]int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.mu.launchedExpiry)
}

// forgetTokens drops a completed container from TaskManagerTokenExpiries.
func (d *Driver) forgetTokens(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.mu.launchedExpiry, id)
}

// taskManagerTokens is the AM's credentials without its AMRMToken (which
// only the AM may hold), as a token storage document.
func taskManagerTokens(creds *hadoop.Credentials) ([]byte, error) {
	if creds == nil {
		return nil, nil
	}
	var out hadoop.Credentials
	out.Merge(creds)
	for _, alias := range out.TokenAliases() {
		if t, _ := out.Token(alias); t.Kind == hadoop.KindAMRMToken {
			out.RemoveToken(alias)
		}
	}
	if out.NumTokens() == 0 && len(out.SecretAliases()) == 0 {
		return nil, nil
	}
	b, err := out.Marshal(hadoop.FormatWritable)
	if err != nil {
		return nil, fmt.Errorf("yarndriver: encoding the TaskManagers' credentials: %w", err)
	}
	return b, nil
}

// failedToStart reports whether a completed TaskManager container counts
// against resourcemanager.start-worker.max-failure-rate: its TaskManager
// exited with an error, or YARN killed it for its memory. Containers YARN
// preempted, aborted (released, or lost with a node) or that exited with 0
// do not count; that is no fault of the TaskManager's start.
func failedToStart(st yarn.ContainerStatus) bool {
	switch st.ExitStatus {
	case yarn.ExitKilledExceededPMem, yarn.ExitKilledExceededVMem:
		return true
	}
	return st.ExitStatus > 0
}

// describeCompletion explains why a TaskManager container ended, for logs
// and for the ResourceManager of the cluster.
func describeCompletion(st yarn.ContainerStatus, node yarn.NodeID, nodeState yarn.NodeState) string {
	where := ""
	if node.Host != "" {
		where = " on " + node.String()
	}
	var why string
	switch st.ExitStatus {
	case yarn.ExitPreempted:
		why = "was preempted by the YARN scheduler"
	case yarn.ExitAborted:
		if nodeState != 0 {
			why = fmt.Sprintf("was lost with its node (node %s)", nodeState)
		} else {
			why = "was aborted by YARN (released, or lost with its node)"
		}
	case yarn.ExitDisksFailed:
		why = "failed: the node's disks failed"
	case yarn.ExitKilledExceededPMem:
		why = "was killed by YARN for exceeding its physical memory limit (raise taskmanager.memory.process.size)"
	case yarn.ExitKilledExceededVMem:
		why = "was killed by YARN for exceeding its virtual memory limit"
	case yarn.ExitSuccess:
		why = "exited with status 0"
	default:
		if st.ExitStatus < 0 {
			why = "was ended by YARN (" + yarn.ExitStatusName(st.ExitStatus) + ")"
		} else {
			why = fmt.Sprintf("exited with code %d", st.ExitStatus)
		}
	}
	s := fmt.Sprintf("TaskManager container %s%s %s", st.ID, where, why)
	if st.ExitStatus < 0 {
		s += fmt.Sprintf(" [exit status %d %s]", st.ExitStatus, yarn.ExitStatusName(st.ExitStatus))
	}
	if st.Diagnostics != "" {
		s += ": " + st.Diagnostics
	}
	return s
}
