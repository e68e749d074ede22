package yarnam

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"path"
	"strconv"
	"sync"
	"time"

	"github.com/sluice/sluice/cluster/yarndriver"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/hdfs"
	"github.com/sluice/sluice/yarn"
	"github.com/sluice/sluice/yarn/delegation"
)

// Final is how the application ends: the final status and diagnostics the
// ApplicationMaster reports to YARN when it unregisters.
type Final struct {
	Status      yarn.FinalStatus
	Diagnostics string
}

// Host runs the JobManager components of the application (Dispatcher,
// ResourceManager, JobMasters, REST endpoint) on the session's listeners,
// with the session's Driver as the ResourceManager's driver, and returns
// when the application ends, with its final status. The ResourceManager must
// run the driver (Driver.Run): it is what heartbeats to YARN. When ctx ends
// (the ApplicationMaster is stopped, or YARN is lost) Host must return
// promptly; its Final is then not reported.
type Host func(ctx context.Context, s *Session) Final

// Session is what the JobManager components get from the ApplicationMaster.
type Session struct {
	// Env is the container's environment: configuration, credentials, the
	// job binary's path in application mode.
	Env *Environment
	// Driver acquires TaskManager containers (resourcemanager.Driver).
	Driver *Driver
	// RPC is the listener of the JobManager's RPC endpoint; TaskManagers
	// are given Env.Host and its port as jobmanager.rpc.address and
	// jobmanager.rpc.port.
	RPC net.Listener
	// REST is the listener of the REST endpoint, registered with YARN as the
	// application's tracking URL (RESTURL).
	REST    net.Listener
	RESTURL string
	// Logger is scoped to the application attempt.
	Logger *slog.Logger
	// DelegationTokens is the manager that obtains the HDFS delegation
	// tokens of the TaskManager containers on a secure cluster
	// (security.delegation.tokens.enabled), whose state the JobManager
	// exports at GET /metrics (as Env.Kerberos's, the ApplicationMaster's
	// login); nil otherwise.
	DelegationTokens *delegation.Manager
}

// Driver is the session's resource driver: a yarndriver.Driver whose
// failures (the ResourceManager ordered a shutdown, or cannot be reached)
// end the session. It implements the ResourceManager's Driver.
type Driver struct {
	d    *yarndriver.Driver
	fail func(error)

	mu struct {
		sync.Mutex
		cancel context.CancelFunc
		done   chan struct{}
	}
}

// Run runs the YARN driver (see yarndriver.Driver.Run).
func (d *Driver) Run(ctx context.Context, events yarndriver.DriverEvents) error {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	d.mu.Lock()
	if d.mu.done != nil {
		d.mu.Unlock()
		cancel()
		return errors.New("yarnam: the driver is already running")
	}
	d.mu.cancel, d.mu.done = cancel, done
	d.mu.Unlock()
	defer close(done)
	defer cancel()
	err := d.d.Run(ctx, events)
	if err != nil && ctx.Err() == nil {
		d.fail(err)
	}
	return err
}

// SetRequired declares how many TaskManagers the cluster needs.
func (d *Driver) SetRequired(n int) { d.d.SetRequired(n) }

// Release stops the TaskManager in this container.
func (d *Driver) Release(resourceID string) { d.d.Release(resourceID) }

// TaskManagerTokenExpiries maps each running TaskManager to the earliest
// expiry of the delegation tokens it was launched with (see
// yarndriver.Driver.TaskManagerTokenExpiries).
func (d *Driver) TaskManagerTokenExpiries() map[string]int64 { return d.d.TaskManagerTokenExpiries() }

// Containers returns the TaskManager containers, held and lately ended
// (see yarndriver.Driver.Containers).
func (d *Driver) Containers() []yarndriver.ContainerInfo { return d.d.Containers() }

// stop ends a running Run and waits for it.
func (d *Driver) stop() {
	d.mu.Lock()
	cancel, done := d.mu.cancel, d.mu.done
	d.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Config configures Run. Every field documents its default.
type Config struct {
	// Getenv reads the container's environment, usually os.Getenv.
	// Required.
	Getenv func(string) string
	// Logger; default discards.
	Logger *slog.Logger
	// FinishTimeout bounds unregistering and deleting the staging
	// directory. Default 1 min.
	FinishTimeout time.Duration
	// TaskManagerProperties are extra dynamic properties for every
	// TaskManager, besides jobmanager.rpc.address, jobmanager.rpc.port and
	// taskmanager.resource-id. Optional.
	TaskManagerProperties map[string]string
}

// Run is the ApplicationMaster: it reads its environment, opens the
// JobManager's listeners, registers with the ResourceManager (host, REST
// port, tracking URL), runs host, and then unregisters with host's final
// status and deletes the staging directory.
//
// If ctx ends first (the container is being stopped) or the ResourceManager
// orders a shutdown, Run returns without unregistering: YARN then decides
// whether another attempt runs, and the staging directory stays for it,
// unless the ResourceManager has already ended the attempt (a kill: see
// sweepIfKilled). If the resource driver fails, the application is
// unregistered as FAILED.
func Run(ctx context.Context, cfg Config, host Host) error {
	if cfg.Getenv == nil {
		return errors.New("yarnam: Config.Getenv is nil")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.FinishTimeout <= 0 {
		cfg.FinishTimeout = time.Minute
	}
	env, err := ReadEnvironment(cfg.Getenv)
	if err != nil {
		reportBrokenEnvironment(ctx, cfg, log, env, err)
		return err
	}
	log = log.With("application", env.Container.Attempt.Application.String(), "attempt", env.Container.Attempt.Attempt)
	for _, w := range env.Warnings {
		log.Warn("yarnam: configuration", "warning", w.String())
	}

	stopSecurity, err := startSecurity(ctx, env, log)
	if err != nil {
		reportBrokenEnvironment(ctx, cfg, log, env, err)
		return err
	}
	defer stopSecurity()

	rpcLn, err := net.Listen("tcp", ":0")
	if err != nil {
		return fmt.Errorf("yarnam: opening the JobManager RPC listener: %w", err)
	}
	defer rpcLn.Close()
	restLn, err := net.Listen("tcp", ":0")
	if err != nil {
		return fmt.Errorf("yarnam: opening the REST listener: %w", err)
	}
	defer restLn.Close()
	rpcPort, restPort := rpcLn.Addr().(*net.TCPAddr).Port, restLn.Addr().(*net.TCPAddr).Port
	scheme := "http"
	if conf.Get(env.Conf, conf.SSLRESTEnabled) {
		// The tracking URL YARN's web proxy forwards to is the REST
		// endpoint's own, https: the proxy must trust its CA (as with
		// Flink's REST SSL on YARN).
		scheme = "https"
	}
	restURL := scheme + "://" + net.JoinHostPort(env.Host, strconv.Itoa(restPort))

	am, err := newAMClient(env, log)
	if err != nil {
		return err
	}
	defer am.Close()
	reg, err := am.Register(ctx, yarn.RegisterRequest{Host: env.Host, RPCPort: int32(restPort), TrackingURL: restURL})
	if err != nil {
		return fmt.Errorf("yarnam: registering with the ResourceManager: %w", err)
	}
	log.Info("yarnam: registered with the ResourceManager", "host", env.Host, "rest", restURL, "rpc_port", rpcPort,
		"queue", reg.Queue, "max_container", reg.MaxCapability.String())

	nm, err := yarn.NewNMClient(yarn.NMClientConfig{Tokens: am, Logger: log, QOP: env.QOP})
	if err != nil {
		return err
	}
	defer nm.Close()
	tmProps := maps.Clone(cfg.TaskManagerProperties)
	if tmProps == nil {
		tmProps = make(map[string]string)
	}
	tmProps[conf.JobManagerRPCAddress.Key()] = env.Host
	tmProps[conf.JobManagerRPCPort.Key()] = strconv.Itoa(rpcPort)
	drv, err := yarndriver.New(yarndriver.Config{
		Scheduler: am,
		Launcher:  nm,
		Resource:  TaskManagerResource(env.Conf),
		NodeLabel: TaskManagerNodeLabel(env.Conf),
		TaskManager: yarndriver.TaskManagerLaunch{
			LocalResources:    env.TaskManagerFiles,
			Program:           FileTaskManager,
			DynamicProperties: tmProps,
			Environment:       ContainerEnvironment(env.Conf, env.User, PrefixTaskManagerEnv),
			Credentials:       env.Credentials,
		},
		HeartbeatInterval:                 time.Duration(conf.Get(env.Conf, conf.YarnHeartbeatInterval)) * time.Second,
		ContainerRequestHeartbeatInterval: conf.Get(env.Conf, conf.YarnContainerRequestHeartbeatInterval),
		StartWorkerMaxFailureRate:         conf.Get(env.Conf, conf.StartWorkerMaxFailureRate),
		StartWorkerRetryInterval:          conf.Get(env.Conf, conf.StartWorkerRetryInterval),
		Logger:                            log,
	})
	if err != nil {
		return err
	}

	hostCtx, cancelHost := context.WithCancelCause(ctx)
	defer cancelHost(nil)
	tokens, stopTokens, err := startDelegationTokens(hostCtx, env, drv, log)
	if err != nil {
		return err
	}
	defer stopTokens()
	driver := &Driver{d: drv, fail: cancelHost}
	hostDone, killSwept := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(killSwept)
		select {
		case <-ctx.Done():
			sweepIfKilled(am, env, cfg.FinishTimeout, log)
		case <-hostDone:
		}
	}()
	final := host(hostCtx, &Session{Env: env, Driver: driver, RPC: rpcLn, REST: restLn, RESTURL: restURL, Logger: log, DelegationTokens: tokens})
	driver.stop()
	close(hostDone)
	<-killSwept

	if ctx.Err() != nil {
		log.Warn("yarnam: stopped before the application ended; not unregistering", "cause", context.Cause(ctx))
		return ctx.Err()
	}
	if cause := context.Cause(hostCtx); cause != nil {
		if errors.Is(cause, yarndriver.ErrShutdown) {
			log.Error("yarnam: the ResourceManager ordered a shutdown; not unregistering")
			return cause
		}
		final = Final{Status: yarn.FinalFailed, Diagnostics: fmt.Sprintf("the YARN resource driver failed: %v", cause)}
	}

	fctx, cancel := context.WithTimeout(context.Background(), cfg.FinishTimeout)
	defer cancel()
	log.Info("yarnam: unregistering", "final_status", final.Status.String(), "diagnostics", final.Diagnostics)
	// No final tracking URL: the JobManager's REST port dies with this
	// process, and without one the ResourceManager's proxy sends the
	// application's tracking URL to its own page of the application.
	if err := am.Finish(fctx, yarn.FinishRequest{FinalStatus: final.Status, Diagnostics: final.Diagnostics}); err != nil {
		return fmt.Errorf("yarnam: unregistering: %w", err)
	}
	if err := RemoveStagingDir(env); err != nil {
		log.Error("yarnam: could not delete the staging directory", "dir", env.StagingDir.String(), "err", err)
	} else {
		log.Info("yarnam: deleted the staging directory", "dir", env.StagingDir.String())
	}
	return nil
}

// attemptEnded reports whether err, the answer of the ResourceManager to
// an allocate call, says that it no longer knows this attempt: it ended the
// attempt (a yarn application -kill) before its NodeManager stopped the
// container.
func attemptEnded(err error) bool { return errors.Is(err, yarn.ErrApplicationAttemptNotFound) }

// sweepIfKilled runs when the container is being stopped (SIGTERM): it asks
// the ResourceManager with one heartbeat whether the attempt still exists.
// A `yarn application -kill` ends the attempt first and then has its
// NodeManager stop the container, so the heartbeat is refused, no attempt
// will follow, and the staging directory is deleted now: nothing else
// would before the user's next submission. A container stopped for other
// reasons (its node decommissioned, preempted) still has its attempt, and
// YARN may start another that needs the staging directory: it stays.
// The NodeManager sends SIGKILL soon after (250 ms by default,
// yarn.nodemanager.sleep-delay-before-sigkill.ms), so this runs first,
// beside the job's suspension.
func sweepIfKilled(am *yarn.AMClient, env *Environment, timeout time.Duration, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// The file system is dialled while the ResourceManager is asked: the
	// time before SIGKILL is short.
	type dialled struct {
		fsys *hdfs.FileSystem
		dir  string
		err  error
	}
	dial := make(chan dialled, 1)
	go func() {
		fsys, dir, err := openStagingDir(env)
		dial <- dialled{fsys, dir, err}
	}()
	_, err := am.Allocate(ctx, yarn.AllocateRequest{})
	d := <-dial
	if d.fsys != nil {
		defer d.fsys.Close()
	}
	if !attemptEnded(err) {
		log.Info("yarnam: stopped while the ResourceManager still runs the attempt; keeping the staging directory for another", "err", err)
		return
	}
	log.Warn("yarnam: the ResourceManager ended the attempt (killed); deleting the staging directory", "dir", env.StagingDir.String())
	if d.err == nil {
		d.err = d.fsys.RemoveAll(d.dir)
	}
	if d.err != nil {
		log.Error("yarnam: could not delete the staging directory", "dir", env.StagingDir.String(), "err", d.err)
		return
	}
	log.Info("yarnam: deleted the staging directory", "dir", env.StagingDir.String())
}

func newAMClient(env *Environment, log *slog.Logger) (*yarn.AMClient, error) {
	rms, err := env.Hadoop.SchedulerAddresses()
	if err != nil {
		return nil, err
	}
	addrs := make([]string, len(rms))
	for i, r := range rms {
		addrs[i] = r.Address
	}
	return yarn.NewAMClient(yarn.AMClientConfig{Schedulers: addrs, AMRMToken: env.AMRMToken, Attempt: env.Container.Attempt, Logger: log, QOP: env.QOP})
}

// reportBrokenEnvironment tells YARN (and so the user, in the application
// report) why the ApplicationMaster cannot run, when it knows enough to
// register: it registers and unregisters as FAILED, and deletes the staging
// directory.
func reportBrokenEnvironment(ctx context.Context, cfg Config, log *slog.Logger, env *Environment, problem error) {
	log.Error("yarnam: cannot start", "err", problem)
	if env == nil || env.AMRMToken == nil || env.Hadoop == nil || env.Host == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.FinishTimeout)
	defer cancel()
	am, err := newAMClient(env, log)
	if err != nil {
		return
	}
	defer am.Close()
	if _, err := am.Register(ctx, yarn.RegisterRequest{Host: env.Host}); err != nil {
		log.Error("yarnam: cannot register to report the problem", "err", err)
		return
	}
	if err := am.Finish(ctx, yarn.FinishRequest{FinalStatus: yarn.FinalFailed, Diagnostics: "Sluice ApplicationMaster: " + problem.Error()}); err != nil {
		log.Error("yarnam: cannot unregister to report the problem", "err", err)
		return
	}
	if env.StagingDir != nil && env.User != "" {
		if err := RemoveStagingDir(env); err != nil {
			log.Error("yarnam: could not delete the staging directory", "err", err)
		}
	}
}

// ErrNotStagingDir: the directory to delete is not an application's
// staging directory (its name must be the application id).
var ErrNotStagingDir = errors.New("yarnam: not a staging directory")

// RemoveStagingDir deletes the application's staging directory. As a guard
// against deleting anything else, the directory's name must be the
// application id.
func RemoveStagingDir(env *Environment) error {
	fsys, dir, err := openStagingDir(env)
	if err != nil {
		return err
	}
	defer fsys.Close()
	return fsys.RemoveAll(dir)
}

// openStagingDir dials the file system of the application's staging
// directory and returns it with the directory's path, checked as
// RemoveStagingDir says.
func openStagingDir(env *Environment) (*hdfs.FileSystem, string, error) {
	u := env.StagingDir
	if u == nil || path.Base(u.Path) != env.Container.Attempt.Application.String() {
		return nil, "", fmt.Errorf("%w: %v is not named %s", ErrNotStagingDir, u, env.Container.Attempt.Application)
	}
	if u.Scheme != "hdfs" {
		return nil, "", fmt.Errorf("yarnam: staging directory %s: only hdfs:// is supported", u)
	}
	o, err := hdfs.OptionsFor(hdfs.Config{Hadoop: env.Hadoop, User: env.User, Kerberos: env.Kerberos}, u.Host)
	if err != nil {
		return nil, "", err
	}
	fsys, err := hdfs.Dial(o)
	if err != nil {
		return nil, "", err
	}
	return fsys, u.Path, nil
}
