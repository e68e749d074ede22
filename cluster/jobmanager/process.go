package jobmanager

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice/sluice/rest/restapi"

	"google.golang.org/grpc"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/cluster/resourcemanager"
	"github.com/sluice/sluice/cluster/rpcauth"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
	"github.com/sluice/sluice/rest"
	"github.com/sluice/sluice/security/kerberos"
	"github.com/sluice/sluice/security/tlsconf"
)

// Options configure a JobManager process.
type Options struct {
	Conf *conf.Configuration
	Log  *slog.Logger
	// Driver acquires TaskManagers (default: standalone, a fixed set the
	// user starts).
	Driver resourcemanager.Driver
	// RPC and REST are listeners to serve on (default: listen on
	// jobmanager.rpc.address:jobmanager.rpc.port and
	// rest.bind-address:rest.port).
	RPC, REST net.Listener
	// RESTTrustedProxy reports whether a peer is a web proxy (YARN's)
	// whose GET forms of cancel and stop are served without the REST token
	// (security.rest.token-file). Nil trusts none.
	RESTTrustedProxy func(net.IP) bool
	// RPCAddress is the address TaskManagers and workers dial (default:
	// jobmanager.rpc.address and the RPC listener's port).
	RPCAddress string
	// FileSystems resolves checkpoint, savepoint and HA URIs.
	FileSystems *fs.Resolver
	// WorkDir keeps job binaries without HA (default: a temporary
	// directory).
	WorkDir string
	// Ready, if set, is called once the JobManager serves, with the REST
	// address.
	Ready func(restAddr string)
	// Application, if set, runs in application mode: the JobManager runs
	// the job program's main itself (it submits its jobs to this
	// JobManager) and ends when the program has ended; RunWith then
	// returns nil if the program succeeded, else an *ApplicationError.
	Application *Application
	// Kerberos, if set, returns the state of this process's Kerberos login
	// (on YARN, the ApplicationMaster's), exported at GET /metrics with the
	// logins the TaskManagers and workers report. Default: nil, no login.
	Kerberos func() kerberos.Status
	// Security authenticates the internal RPCs: the gRPC server refuses
	// peers without it, and the JobManager's own connections (to
	// TaskManagers) carry it. Default: rpcauth.FromConf(Conf), creating
	// the secret file if there is none.
	Security *rpcauth.Security
	// DelegationTokens, if set, returns the state of the HDFS delegation
	// tokens this process obtains for its containers (on YARN), exported at
	// GET /metrics. Default: nil, none.
	DelegationTokens func() DelegationTokenStatus
	// YARN, if set, returns the YARN application the JobManager runs in
	// (the ApplicationMaster's) and its containers, served at GET
	// /jobmanager/yarn and on the dashboard. Default: nil, not on YARN.
	YARN func() restapi.YARNApplication
}

// Application is a job program run by the JobManager (application mode).
type Application struct {
	// Binary is the job binary; Args its arguments.
	Binary string
	Args   []string
	// Dynamic are configuration overrides (key=value) for the program.
	Dynamic []string
	// Stdout and Stderr receive the program's output (default: the log).
	Stdout, Stderr io.Writer
}

// ApplicationError is the failure of a program in application mode.
type ApplicationError struct {
	Err error
	// Tail is the end of the program's standard error.
	Tail string
	// Canceled: a job of the program was cancelled (on YARN the
	// application then ends KILLED, as in Flink).
	Canceled bool
}

func (e *ApplicationError) Error() string {
	if e.Tail == "" {
		return fmt.Sprintf("jobmanager: the application failed: %v", e.Err)
	}
	return fmt.Sprintf("jobmanager: the application failed: %v: %s", e.Err, e.Tail)
}

func (e *ApplicationError) Unwrap() error { return e.Err }

// Run runs a standalone JobManager until ctx ends.
func Run(ctx context.Context, c *conf.Configuration, log *slog.Logger) error {
	return RunWith(ctx, Options{Conf: c, Log: log})
}

// RunWith runs a JobManager: the ResourceManager, the Dispatcher with its
// JobMasters, their gRPC services and the REST endpoint. Jobs left in the
// HA store by a previous JobManager are recovered first.
func RunWith(ctx context.Context, o Options) error {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Conf == nil {
		o.Conf = conf.New()
	}
	c, log := o.Conf, o.Log
	if o.Driver == nil {
		o.Driver = resourcemanager.NewStandalone(log)
	}
	// A standalone JobManager without jobmanager.rpc.address is on
	// localhost: it binds loopback only, and says so to its TaskManagers,
	// until the configuration names a host others can reach.
	rpcHost, bindHost, restBind := BindAddresses(c)
	if o.RPC == nil {
		addr := net.JoinHostPort(bindHost, strconv.Itoa(conf.Get(c, conf.JobManagerRPCPort)))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("jobmanager: listening on %s (jobmanager.bind-host, jobmanager.rpc.port): %w", addr, err)
		}
		o.RPC = ln
	}
	defer o.RPC.Close()
	if o.RPCAddress == "" {
		_, port, _ := net.SplitHostPort(o.RPC.Addr().String())
		o.RPCAddress = net.JoinHostPort(rpcHost, port)
	}
	if o.Security == nil {
		sec, err := rpcauth.FromConf(c, rpcauth.Options{CreateSecret: true})
		if err != nil {
			return fmt.Errorf("jobmanager: %w", err)
		}
		o.Security = sec
	}
	if o.WorkDir == "" {
		d, err := os.MkdirTemp("", "sluice-jobmanager-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		o.WorkDir = d
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var d *Dispatcher
	rmCfg := resourcemanager.ConfigFrom(c)
	rmCfg.Logger = log
	rmCfg.OnTaskManagerLost = func(l resourcemanager.LostTaskManager) {
		log.Warn("TaskManager lost", "taskmanager", l.ID, "reason", l.Reason, "jobs", l.Jobs)
		if d != nil {
			d.TaskManagerLost(l)
		}
	}
	rmCfg.OnWorkerExited = func(e resourcemanager.ExitedWorker) {
		if d != nil {
			d.WorkerExited(e)
		}
	}
	rm, err := resourcemanager.New(rmCfg, o.Driver)
	if err != nil {
		return err
	}
	d, err = NewDispatcher(Config{Conf: c, Log: log, RPCAddress: o.RPCAddress, ResourceManager: rm,
		FileSystems: o.FileSystems, WorkDir: o.WorkDir, DialOptions: o.Security.DialOptions()})
	if err != nil {
		return err
	}
	srv := grpc.NewServer(o.Security.ServerOptions()...)
	clusterpb.RegisterResourceManagerServer(srv, rm)
	d.Register(srv)

	errs := make(chan error, 3)
	go func() { errs <- rm.Run(ctx) }()
	go func() { errs <- srv.Serve(o.RPC) }()

	rcfg := rest.ConfigFrom(c)
	if o.REST == nil {
		// REST binds where the RPC endpoint does (loopback by default), not
		// every interface: whoever reaches it can run code on the cluster.
		rcfg.BindAddress = restBind
	}
	rcfg.Log = log
	rcfg.UploadDir = o.WorkDir
	if rcfg.TLS, err = tlsconf.RESTServer(c); err != nil {
		d.Close()
		srv.Stop()
		cancel()
		return fmt.Errorf("jobmanager: the REST endpoint's TLS: %w", err)
	}
	if rcfg.Token, err = restapi.TokenFromConf(c); err != nil {
		d.Close()
		srv.Stop()
		cancel()
		return fmt.Errorf("jobmanager: %w", err)
	}
	rcfg.TrustedProxy = o.RESTTrustedProxy
	var rs *rest.Server
	// The host label of the JobManager's metrics is the machine's name, as
	// a TaskManager's is (not the RPC address's, often localhost).
	jmHost, err := os.Hostname()
	if err != nil || jmHost == "" {
		jmHost, _, _ = net.SplitHostPort(o.RPCAddress)
	}
	shutDown := make(chan struct{})
	var shutDownOnce sync.Once
	backend := Backend{D: d, TMs: rmLister{rm}, Host: jmHost, Kerberos: o.Kerberos, DelegationTokens: o.DelegationTokens, YARN: o.YARN,
		ShutDown: func() { shutDownOnce.Do(func() { close(shutDown) }) }}
	// Jobs left in the HA store are recovered before the REST endpoint
	// serves: a client following one of them across the restart must not
	// be told it does not exist.
	if err := d.Recover(); err != nil {
		log.Error("recovering jobs from the HA store failed", "err", err)
	}
	if o.REST != nil {
		rs = rest.Serve(rcfg, backend, o.REST)
	} else {
		rs, err = rest.New(rcfg, backend)
	}
	if err != nil {
		d.Close()
		srv.Stop()
		cancel()
		return err
	}
	log.Info("JobManager running", "rpc", o.RPCAddress, "rpc_bind", o.RPC.Addr().String(), "rest", rs.Addr().String(),
		"authentication", o.Security.Describe())
	if o.Ready != nil {
		o.Ready(rs.Addr().String())
	}
	var appDone chan error
	if o.Application != nil {
		appDone = make(chan error, 1)
		go func() { appDone <- runApplication(ctx, c, o.Application, rs.URL(), rcfg.Token, d, log) }()
	}
	select {
	case <-ctx.Done():
		err = nil
	case err = <-errs:
		if err != nil {
			err = fmt.Errorf("jobmanager: %w", err)
		}
	case err = <-appDone:
	case <-shutDown:
		log.Info("shutting the cluster down on request (DELETE /cluster): cancelling its jobs")
		cancelAll(ctx, d, log)
		if o.Application != nil {
			err = &ApplicationError{Err: errors.New("the cluster was shut down on request"), Canceled: true}
		}
	}
	shut, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()
	rs.Shutdown(shut)
	d.Close()
	cancel()
	srv.Stop()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// BindAddresses decides a standalone JobManager's addresses: the RPC host
// it advertises (jobmanager.rpc.address, else localhost), the interface
// its RPC endpoint binds (jobmanager.bind-host, else jobmanager.rpc.address,
// else 127.0.0.1) and the REST endpoint's (rest.bind-address, else the
// RPC endpoint's). Nothing configured binds loopback only.
func BindAddresses(c *conf.Configuration) (rpcHost, rpcBind, restBind string) {
	addr := conf.Get(c, conf.JobManagerRPCAddress)
	rpcHost = cmp.Or(addr, "localhost")
	rpcBind = cmp.Or(conf.Get(c, conf.JobManagerBindHost), addr, "127.0.0.1")
	restBind = cmp.Or(conf.Get(c, conf.RESTBindAddress), rpcBind)
	return rpcHost, rpcBind, restBind
}

// cancelAll cancels the jobs that have not ended and waits (a while) for
// them to end: a cluster shut down on request leaves no job to recover.
func cancelAll(ctx context.Context, d *Dispatcher, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var pending []Info
	for _, in := range d.Jobs() {
		if in.Status.Terminal() {
			continue
		}
		if err := d.Cancel(in.ID); err != nil {
			log.Warn("cancelling a job at shutdown", "job", in.ID, "err", err)
			continue
		}
		pending = append(pending, in)
	}
	for _, in := range pending {
		if res, err := d.Wait(ctx, in.ID); err != nil {
			log.Warn("a job did not end before the shutdown", "job", in.ID, "err", err)
		} else {
			log.Info("job ended at shutdown", "job", in.ID, "status", res.Status)
		}
	}
}

// runApplication runs the job program with this JobManager as its target,
// and then waits for every job it submitted to end.
func runApplication(ctx context.Context, c *conf.Configuration, app *Application, restAddr string, restToken []byte, d *Dispatcher, log *slog.Logger) error {
	// The program reaches this JobManager's REST endpoint as the CLI does:
	// over TLS if it is on, with the cluster's security.ssl.rest.* settings.
	dynamic := slices.Clone(app.Dynamic)
	for k, v := range c.Subset("security.ssl.") {
		dynamic = append(dynamic, conf.DynamicProperty("security.ssl."+k, v))
	}
	props, err := conf.JoinDynamicProperties(dynamic)
	if err != nil {
		return &ApplicationError{Err: err}
	}
	// The arguments go in the environment, not on the command line, which
	// every local user of the host can list (they may hold credentials);
	// the program's start-up (internal/launch) puts them back in os.Args.
	args, err := json.Marshal(append([]string{}, app.Args...))
	if err != nil {
		return &ApplicationError{Err: err}
	}
	cmd := exec.CommandContext(ctx, app.Binary)
	cmd.SysProcAttr = applicationAttr()
	cmd.Env = append(os.Environ(), conf.EnvExecutionTarget+"="+conf.TargetRemote, conf.EnvJobManager+"="+restAddr,
		conf.EnvDynamicProperties+"="+props, conf.EnvProgramArgs+"="+string(args))
	if restToken != nil {
		// The program submits through this JobManager's REST endpoint, which
		// requires its token of requests that change state.
		cmd.Env = append(cmd.Env, conf.EnvRESTToken+"="+string(restToken))
	}
	var stderr tailBuffer
	cmd.Stdout = app.Stdout
	if cmd.Stdout == nil {
		cmd.Stdout = logWriter{log: log, stream: "stdout"}
	}
	errOut := app.Stderr
	if errOut == nil {
		errOut = logWriter{log: log, stream: "stderr"}
	}
	cmd.Stderr = io.MultiWriter(errOut, &stderr)
	// Jobs recovered from the HA store were submitted by the program under
	// an earlier JobManager (a new YARN ApplicationMaster attempt): the
	// program's main is not run again, which would submit them twice; the
	// application ends with those jobs.
	if recovered := d.Jobs(); len(recovered) > 0 {
		log.Info("the application's jobs were recovered; not running the program again", "jobs", len(recovered))
	} else {
		// The arguments are counted, never logged: they can hold secrets
		// (a password, a token), and the log is read by more people than
		// the user who ran the program.
		log.Info("running the application", "binary", app.Binary, "args", len(app.Args))
		if err := cmd.Run(); err != nil {
			canceled := false
			for _, in := range d.Jobs() {
				canceled = canceled || in.Status == jobmaster.StatusCanceled
			}
			return &ApplicationError{Err: err, Tail: stderr.String(), Canceled: canceled}
		}
	}
	// The program has returned; jobs it left running detached end the
	// application when they end.
	for _, in := range d.Jobs() {
		res, err := d.Wait(ctx, in.ID)
		if err != nil {
			return err
		}
		if res.Status != jobmaster.StatusFinished {
			return &ApplicationError{Err: fmt.Errorf("job %s (%s) ended %s: %v", in.ID, in.Name, res.Status, res.Err),
				Canceled: res.Status == jobmaster.StatusCanceled}
		}
	}
	log.Info("the application has ended")
	return nil
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 4096 {
		t.buf = t.buf[len(t.buf)-4096:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// logWriter logs what a program writes, line by line.
type logWriter struct {
	log    *slog.Logger
	stream string
}

func (w logWriter) Write(p []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w.log.Info("application output", "stream", w.stream, "line", l)
	}
	return len(p), nil
}

// rmLister lists the ResourceManager's TaskManagers for the REST API.
type rmLister struct {
	rm interface {
		TaskManagers(ctx context.Context) ([]resourcemanager.TaskManagerInfo, error)
	}
}

func (l rmLister) TaskManagerInfos(ctx context.Context) ([]restapi.TaskManagerInfo, error) {
	tms, err := l.rm.TaskManagers(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", restapi.ErrUnavailable, err)
	}
	out := make([]restapi.TaskManagerInfo, 0, len(tms))
	for _, t := range tms {
		out = append(out, taskManagerInfo(t))
	}
	return out, nil
}

// taskManagerInfo is a TaskManager as GET /taskmanagers shows it.
func taskManagerInfo(t resourcemanager.TaskManagerInfo) restapi.TaskManagerInfo {
	res := func(r resourcemanager.Resources) restapi.ResourceProfile {
		return restapi.ResourceProfile{CPUCores: r.CPUCores, TaskHeapMemory: int(r.MemoryBytes >> 20), ExtendedResources: map[string]float64{}}
	}
	free := resourcemanager.Resources{CPUCores: t.SlotResources.CPUCores * float64(t.SlotsFree), MemoryBytes: t.SlotResources.MemoryBytes * int64(t.SlotsFree)}
	// A TaskManager has no data port of its own: each of its workers opens
	// a data endpoint, on taskmanager.data.port when that is set, else on
	// a free port (-1 here, Flink's "unknown").
	dataPort := -1
	if t.DataPort > 0 {
		dataPort = t.DataPort
	}
	return restapi.TaskManagerInfo{ID: t.ID, Path: t.Address, DataPort: dataPort, JMXPort: -1,
		// Despite its name, Flink sends the time of the last heartbeat.
		TimeSinceLastHeartbeat: t.LastHeartbeat.UnixMilli(), SlotsNumber: t.SlotsTotal, FreeSlots: t.SlotsFree,
		TotalResource: res(t.Resources), FreeResource: res(free),
		Hardware: restapi.Hardware{CPUCores: t.Hardware.CPUCores, PhysicalMemory: t.Hardware.PhysicalMemoryBytes,
			FreeMemory: t.Hardware.FreeMemoryBytes, ManagedMemory: t.Hardware.ManagedMemoryBytes}}
}

func (l rmLister) TaskManagerLogins(ctx context.Context) ([]rest.KerberosLoginMetrics, error) {
	tms, err := l.rm.TaskManagers(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", restapi.ErrUnavailable, err)
	}
	var out []rest.KerberosLoginMetrics
	for _, t := range tms {
		if t.Kerberos != nil {
			out = append(out, loginMetrics(rest.ComponentTaskManager, t.ID, t.Hostname, "", *t.Kerberos))
		}
	}
	return out, nil
}
