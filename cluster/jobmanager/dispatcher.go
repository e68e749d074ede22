package jobmanager

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/cluster/resourcemanager"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/ownerloop"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
)

// Errors of the Dispatcher.
var (
	// ErrNoJob is returned for an unknown job id.
	ErrNoJob = errors.New("jobmanager: no such job")
	// ErrJobEnded is returned for requests to a job that has ended.
	ErrJobEnded = errors.New("jobmanager: the job has ended")
	// ErrBadSubmission is wrapped by the errors of invalid submissions.
	ErrBadSubmission = errors.New("jobmanager: invalid job submission")
)

// Config configures a Dispatcher.
type Config struct {
	// Conf is the cluster's configuration; a job's own configuration (from
	// its graph and submission) is applied over it.
	Conf *conf.Configuration
	Log  *slog.Logger
	// RPCAddress is the host:port TaskManagers and workers reach the
	// JobMaster service at.
	RPCAddress string
	// ResourceManager takes the JobMasters' slot demands.
	ResourceManager SlotDeclarer
	// FileSystems resolves checkpoint, savepoint and HA storage URIs.
	FileSystems *fs.Resolver
	// WorkDir holds the job binaries when HA is off.
	WorkDir string
	// Timeouts (defaults: slot.request.timeout 5 min, workers 2 min,
	// cancellation grace 30 s).
	SlotRequestTimeout, WorkerStartTimeout, CancelGrace time.Duration
	// DialOptions are used for connections to TaskManagers. Default:
	// insecure transport credentials, no authentication.
	DialOptions []grpc.DialOption
	// Clock is the JobMasters' one clock (default: clock.System{}): it
	// times the workers' heartbeats (heartbeat.interval and
	// heartbeat.timeout of Conf), and gives their jobs' processing time
	// and every time the REST API reports of their jobs, checkpoints and
	// tasks. A test that drives it drives both.
	Clock clock.Clock
}

type dispatcherConfig struct {
	Config
	rpcAddress                                          string
	slotRequestTimeout, workerStartTimeout, cancelGrace time.Duration
	// live are the heartbeat settings of worker sessions.
	live liveness
}

// SlotDeclarer takes a job's slot demand: the ResourceManager, in the
// JobManager's process.
type SlotDeclarer interface {
	DeclareSlots(ctx context.Context, d *clusterpb.SlotDemand) (*clusterpb.SlotDemandAck, error)
}

// Dispatcher accepts jobs, runs a JobMaster for each, and keeps them in the
// HA store so that a new JobManager recovers them.
//
// Its coordination state, the job table with every job's lifecycle and
// the TaskManager connections (jobTable), is owned by one owner loop
// (ownerloop.Loop), started by NewDispatcher and stopped by Close. Changes
// go through the loop (Call); reads of the jobs go to the view the loop
// publishes (jobs), so that REST and the gRPC handlers never wait for it.
type Dispatcher struct {
	cfg    dispatcherConfig
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	blobs  *blobStore
	ha     *haStore

	loop      *ownerloop.Loop[dEvent, dEffect, dAnswer]
	jobs      atomic.Pointer[jobsView] // published by the loop
	closeOnce sync.Once
}

// NewDispatcher returns a Dispatcher; Recover then restarts the jobs of
// the HA store.
func NewDispatcher(cfg Config) (*Dispatcher, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Conf == nil {
		cfg.Conf = conf.New()
	}
	if cfg.FileSystems == nil {
		cfg.FileSystems = fs.NewResolver()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	dc := dispatcherConfig{Config: cfg, rpcAddress: cfg.RPCAddress,
		slotRequestTimeout: conf.Get(cfg.Conf, conf.SlotRequestTimeout), workerStartTimeout: 2 * time.Minute, cancelGrace: 30 * time.Second}
	if cfg.SlotRequestTimeout > 0 {
		dc.slotRequestTimeout = cfg.SlotRequestTimeout
	}
	if cfg.WorkerStartTimeout > 0 {
		dc.workerStartTimeout = cfg.WorkerStartTimeout
	}
	if cfg.CancelGrace > 0 {
		dc.cancelGrace = cfg.CancelGrace
	}
	dc.live = liveness{interval: conf.Get(cfg.Conf, conf.HeartbeatInterval), timeout: conf.Get(cfg.Conf, conf.HeartbeatTimeout), clock: cfg.Clock}
	d := &Dispatcher{cfg: dc, log: cfg.Log}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.ha = &haStore{log: cfg.Log, records: map[string]*jobRecord{}}
	switch conf.Get(cfg.Conf, conf.HighAvailabilityType) {
	case conf.HighAvailabilityZooKeeper:
		return nil, errors.New("jobmanager: high-availability.type ZOOKEEPER is not supported; use FILESYSTEM with high-availability.storageDir")
	case conf.HighAvailabilityFileSystem:
		dir := conf.Get(cfg.Conf, conf.HighAvailabilityStorageDir)
		if dir == "" {
			return nil, fmt.Errorf("jobmanager: high-availability.type is %s but high-availability.storageDir is not set", conf.Get(cfg.Conf, conf.HighAvailabilityType))
		}
		fsys, p, err := cfg.FileSystems.For(dir)
		if err != nil {
			return nil, fmt.Errorf("jobmanager: high-availability.storageDir %q: %w", dir, err)
		}
		clusterDir := p + "/" + conf.Get(cfg.Conf, conf.HighAvailabilityClusterID)
		d.ha.fs, d.ha.dir = fsys, clusterDir
		d.blobs = &blobStore{fs: fsys, dir: clusterDir + "/blobs"}
	default:
		wd := cfg.WorkDir
		if wd == "" {
			return nil, errors.New("jobmanager: a working directory is needed to keep job binaries")
		}
		abs, err := filepath.Abs(localBlobDir(wd))
		if err != nil {
			return nil, err
		}
		d.blobs = &blobStore{fs: fs.Local{}, dir: abs}
	}
	d.jobs.Store(&jobsView{byID: map[string]*jobMaster{}})
	d.loop = ownerloop.New(ownerloop.Config[dEvent, dEffect, dAnswer]{Machine: newJobTable(), Apply: d.apply,
		Tick: dTick{}, Clock: cfg.Clock})
	go d.loop.Run(context.Background()) // stopped by Close
	return d, nil
}

// call steps the job table with e on its loop and returns the answer's
// error, or errDispatcherClosed once the loop has stopped.
func (d *Dispatcher) call(e dEvent) (dAnswer, error) {
	a, err := d.loop.Call(context.Background(), e)
	if errors.Is(err, ownerloop.ErrStopped) {
		return a, errDispatcherClosed
	}
	if err != nil {
		return a, err
	}
	return a, a.err
}

// apply carries out the job table's effects, on its loop.
func (d *Dispatcher) apply(fx []dEffect) []dEvent {
	for _, f := range fx {
		switch f := f.(type) {
		case dfPublishJobs:
			d.jobs.Store(f.v)
		case dfPublishJob:
			f.jm.stats.Store(f.st)
		case dfJob:
			d.applyLifecycle(f.id, f.jm, f.f)
		case dfCloseConn:
			f.conn.Close()
		default:
			panic(fmt.Sprintf("jobmanager: unknown job table effect %T", f))
		}
	}
	return nil
}

// applyLifecycle carries out effect f of job id's lifecycle.
func (d *Dispatcher) applyLifecycle(id string, jm *jobMaster, f lcEffect) {
	switch f := f.(type) {
	case lfLog:
		log := jm.log
		if log == nil {
			log = d.log.With("job", id)
		}
		log.Log(context.Background(), f.level, f.msg, f.args...)
	case lfCheckpointInHA:
		d.ha.checkpointCompleted(id, f.path)
	case lfCancelJob:
		// A panic here would end the loop, and the JobManager with it.
		if jm.job == nil {
			d.log.Warn("a job cancelled before its owner loop started is not cancelled", "job", id)
			break
		}
		jm.job.Cancel()
	case lfRemoveFromHA:
		d.ha.remove(id)
	default:
		panic(fmt.Sprintf("jobmanager: unknown lifecycle effect %T", f))
	}
}

// now is the time on the JobMasters' clock, epoch ms.
func (d *Dispatcher) now() int64 { return d.cfg.Clock.NowMillis() }

// Close cancels every job (their checkpoints stay for a new JobManager
// when HA is on) and closes connections.
func (d *Dispatcher) Close() {
	d.closeOnce.Do(func() {
		// Closing first: a job that ends cancelled from now on is
		// suspended, not removed from the HA store.
		a, _ := d.call(dClose{})
		d.cancel()
		for _, jm := range a.jobs {
			<-jm.done
		}
		d.call(dCloseConns{})
		d.loop.Stop(nil)
		<-d.loop.Done()
	})
}

// Submission is a job to run.
type Submission struct {
	// GraphJSON is the job graph (internal/runtime/graph JSON) built by the job
	// program.
	GraphJSON []byte
	// BinaryPath is a local file holding the job binary.
	BinaryPath string
	// Args are the program's arguments; Env extra environment for workers.
	Args []string
	Env  map[string]string
	// Dynamic are configuration overrides (-D), applied over the graph's
	// configuration here and passed to the workers.
	Dynamic map[string]string
	// JobID is the id to use (default: a new random one).
	JobID string
}

func newJobID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Submit starts a job and returns its id.
func (d *Dispatcher) Submit(s Submission) (string, error) {
	g, err := graph.Unmarshal(s.GraphJSON)
	if err != nil {
		return "", fmt.Errorf("%w: the job graph: %w", ErrBadSubmission, err)
	}
	if s.BinaryPath == "" {
		return "", fmt.Errorf("%w: no job binary", ErrBadSubmission)
	}
	if from := s.Dynamic[conf.StateRecoveryPath.Key()]; from != "" {
		// Checked before the job is accepted: a detached submission would
		// otherwise report success for a job that can only fail.
		if err := jobmaster.CheckRestorePath(d.cfg.FileSystems, from); err != nil {
			d.log.Warn("job refused: its savepoint cannot be read", "name", g.Name, "err", err)
			return "", fmt.Errorf("%w: %w", ErrBadSubmission, err)
		}
	}
	bl, err := d.blobs.put(s.BinaryPath)
	if err != nil {
		return "", err
	}
	id := s.JobID
	if id == "" {
		id = newJobID()
	}
	rec := &jobRecord{ID: id, Name: g.Name, BinarySHA256: bl.sha256, BinarySize: bl.size, Args: s.Args, Env: s.Env,
		Dynamic: s.Dynamic, SubmittedAtMS: time.Now().UnixMilli()}
	jm, err := d.newJobMaster(rec, g, s.GraphJSON)
	if err != nil {
		return "", err
	}
	if _, err := d.call(dAdd{id: id, jm: jm}); err != nil {
		return "", err
	}
	if err := d.ha.put(rec, s.GraphJSON); err != nil {
		d.forget(id)
		return "", err
	}
	if err := jm.start(d.ctx, false); err != nil {
		d.ha.remove(id)
		d.forget(id)
		return "", fmt.Errorf("%w: %w", ErrBadSubmission, err)
	}
	d.log.Info("job submitted", "job", id, "name", g.Name, "binary", bl.sha256[:12], "slots", slotsNeeded(jm.plan))
	return id, nil
}

func (d *Dispatcher) forget(id string) { d.call(dForget{id}) }

// newJobMaster prepares the JobMaster of a job.
func (d *Dispatcher) newJobMaster(rec *jobRecord, g *graph.JobGraph, graphJSON []byte) (*jobMaster, error) {
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSubmission, err)
	}
	plan, err := graph.BuildPlan(g)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSubmission, err)
	}
	cfg := d.cfg.Conf.Merge(conf.FromMap(g.Config, conf.Source{Name: "job " + rec.ID})).Merge(conf.FromMap(rec.Dynamic, conf.Source{Name: conf.SourceDynamic}))
	mode, err := jobmaster.ResolveMode(g, conf.Get(cfg, conf.ExecutionRuntimeMode))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSubmission, err)
	}
	opts, err := jobmaster.OptionsFromConfig(cfg, mode, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSubmission, err)
	}
	opts.Clock = d.cfg.Clock
	if opts.Checkpoints != nil && opts.Checkpoints.Dir == "" {
		return nil, fmt.Errorf("%w: job %q checkpoints, but execution.checkpointing.dir is not set: a cluster needs a checkpoint directory every TaskManager can reach (hdfs://… or a shared path)", ErrBadSubmission, g.Name)
	}
	// Workers run the program with the job's whole configuration, so that
	// they build the same graph whatever their own environment.
	workerConf := maps.Clone(g.Config)
	if workerConf == nil {
		workerConf = map[string]string{}
	}
	maps.Copy(workerConf, rec.Dynamic)
	jm := &jobMaster{d: d, id: rec.ID, name: g.Name, graph: g, plan: plan, graphJSON: graphJSON,
		binary: blob{sha256: rec.BinarySHA256, size: rec.BinarySize}, args: rec.Args, env: rec.Env, dynamic: workerConf,
		cfg: cfg, opts: opts, log: d.log.With("job", rec.ID), pool: newSlotPool(), done: make(chan struct{})}
	jm.exec = newRemoteExecutor(jm)
	return jm, nil
}

// Recover restarts the jobs a previous JobManager left in the HA store,
// each from its latest completed checkpoint.
func (d *Dispatcher) Recover() error {
	recs, graphs, err := d.ha.load()
	if err != nil {
		return err
	}
	for _, rec := range recs {
		g, err := graph.Unmarshal(graphs[rec.ID])
		if err != nil {
			d.log.Error("cannot recover job: its stored graph is unreadable", "job", rec.ID, "err", err)
			continue
		}
		jm, err := d.newJobMaster(rec, g, graphs[rec.ID])
		if err != nil {
			d.log.Error("cannot recover job", "job", rec.ID, "err", err)
			continue
		}
		if _, err := d.call(dAdd{id: rec.ID, jm: jm, recover: true}); err != nil {
			d.log.Error("cannot recover job", "job", rec.ID, "err", err)
			continue
		}
		if err := jm.start(d.ctx, true); err != nil {
			d.log.Error("cannot recover job", "job", rec.ID, "err", err)
			continue
		}
		d.log.Info("recovering job", "job", rec.ID, "name", rec.Name, "latest_checkpoint", rec.LatestCheckpoint)
	}
	return nil
}

// jobEnded is called by a JobMaster whose job reached a terminal status.
func (d *Dispatcher) jobEnded(jm *jobMaster, err error) {
	d.call(dEnded{id: jm.id, cancelled: jobmaster.IsCancelled(err)})
}

func (d *Dispatcher) job(id string) (*jobMaster, error) {
	jm, ok := d.jobs.Load().byID[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoJob, id)
	}
	return jm, nil
}

// Jobs lists every job, in submission order.
func (d *Dispatcher) Jobs() []Info {
	jms := d.jobs.Load().order
	out := make([]Info, len(jms))
	for i, jm := range jms {
		out[i] = jm.info()
	}
	return out
}

// Job describes one job.
func (d *Dispatcher) Job(id string) (Info, error) {
	jm, err := d.job(id)
	if err != nil {
		return Info{}, err
	}
	return jm.info(), nil
}

// Cancel cancels a job.
func (d *Dispatcher) Cancel(id string) error {
	if _, err := d.call(dCancel{id}); err != nil {
		if errors.Is(err, ErrJobEnded) {
			return fmt.Errorf("%w: %s", err, id)
		}
		return err
	}
	return nil
}

// Savepoint takes a savepoint into dir (default: the configured savepoint
// directory); with stop the job stops after it (stop), with drain too it
// first ends event time (stop --drain). It returns the savepoint's path.
func (d *Dispatcher) Savepoint(ctx context.Context, id, dir string, stop, drain bool) (string, error) {
	jm, err := d.job(id)
	if err != nil {
		return "", err
	}
	return await(ctx, func() (string, error) {
		if !stop {
			return jm.job.TriggerSavepoint(dir)
		}
		return jm.job.StopWithSavepoint(dir, drain)
	})
}

// CancelWithSavepoint takes a savepoint into dir (default: the configured
// savepoint directory) and then cancels the job, as Flink's
// cancel-with-savepoint (POST /jobs/:jobid/savepoints with cancel-job):
// the job ends CANCELED, where a stop ends it FINISHED. A job whose
// savepoint fails keeps running. It returns the savepoint's path.
func (d *Dispatcher) CancelWithSavepoint(ctx context.Context, id, dir string) (string, error) {
	jm, err := d.job(id)
	if err != nil {
		return "", err
	}
	return await(ctx, func() (string, error) {
		p, err := jm.job.TriggerSavepoint(dir)
		if err == nil {
			jm.log.Info("savepoint taken; cancelling the job", "savepoint", p)
			jm.job.Cancel()
		}
		return p, err
	})
}

// await runs a request to a job's owner loop, which answers when the
// checkpoint completes, and gives up waiting (not the request) when ctx
// ends.
func await(ctx context.Context, request func() (string, error)) (string, error) {
	type result struct {
		p   string
		err error
	}
	ch := make(chan result, 1)
	go func() {
		p, err := request()
		ch <- result{p, err}
	}()
	select {
	case r := <-ch:
		return r.p, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Checkpoint takes a checkpoint of kind checkpoint.Checkpoint (as the job
// checkpoints) or checkpoint.FullCheckpoint now and returns its ID.
func (d *Dispatcher) Checkpoint(ctx context.Context, id string, kind checkpoint.Kind) (int64, error) {
	jm, err := d.job(id)
	if err != nil {
		return 0, err
	}
	p, err := await(ctx, func() (string, error) { return jm.job.TriggerCheckpoint(kind) })
	if err != nil {
		return 0, err
	}
	n, ok := strings.CutPrefix(path.Base(p), "chk-")
	cid, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil {
		return 0, fmt.Errorf("jobmanager: checkpoint path %q has no checkpoint ID", p)
	}
	return cid, nil
}

// Wait blocks until job id ends and returns its final status and error.
func (d *Dispatcher) Wait(ctx context.Context, id string) (Info, error) {
	jm, err := d.job(id)
	if err != nil {
		return Info{}, err
	}
	select {
	case <-jm.done:
		return jm.info(), nil
	case <-ctx.Done():
		return Info{}, ctx.Err()
	}
}

// TaskManagerLostError fails the tasks an attempt ran on a TaskManager
// that the ResourceManager lost. It matches ErrHeartbeatTimeout when the
// TaskManager was lost for silence.
type TaskManagerLostError struct {
	TaskManager string
	// Reason is the ResourceManager's: the connection closed, no heartbeat
	// within heartbeat.timeout, or the platform stopped it.
	Reason string
	// HeartbeatTimeout: it sent no heartbeat within heartbeat.timeout.
	HeartbeatTimeout bool
}

func (e *TaskManagerLostError) Error() string {
	if e.HeartbeatTimeout {
		return fmt.Sprintf("jobmanager: TaskManager %s lost: heartbeat timeout: %s", e.TaskManager, e.Reason)
	}
	return fmt.Sprintf("jobmanager: TaskManager %s lost: %s", e.TaskManager, e.Reason)
}

// Is matches ErrHeartbeatTimeout for a TaskManager lost for silence.
func (e *TaskManagerLostError) Is(target error) bool {
	return target == ErrHeartbeatTimeout && e.HeartbeatTimeout
}

// TaskManagerLost handles a TaskManager the ResourceManager lost: its
// slots are dropped, and every job's attempt with tasks on it fails with
// a *TaskManagerLostError, which its restart strategy handles as any task
// failure (a restart from the latest checkpoint, on the slots left).
// Without this, a TaskManager frozen with its workers (SIGSTOP, a stalled
// host) would keep its tasks' streams open and the job stuck.
func (d *Dispatcher) TaskManagerLost(l resourcemanager.LostTaskManager) {
	jms := d.jobs.Load().order
	err := &TaskManagerLostError{TaskManager: l.ID, Reason: l.Reason, HeartbeatTimeout: l.HeartbeatTimeout}
	for _, jm := range jms {
		// The slots go first: the restart that follows must not pick them.
		if jm.pool.dropTaskManager(l.ID) {
			jm.log.Info("TaskManager lost; its slots are gone", "taskmanager", l.ID)
		}
		if jm.exec.taskManagerLost(err) {
			jm.log.Warn("TaskManager lost; failing the tasks the attempt ran there", "taskmanager", l.ID, "reason", l.Reason)
		}
	}
}

// WorkerExitedError fails the deployment, or the tasks, of a worker
// whose process exited without being asked to stop (the job binary
// panicked or exited in worker mode, before or after connecting to its
// JobMaster), as its TaskManager reported it: with its exit status and
// the end of its stderr, so that the cause shows in the exception history.
type WorkerExitedError struct {
	// TaskManager and Worker name the TaskManager and the worker.
	TaskManager, Worker string
	// Status is the process's exit status, e.g. "exit status 2".
	Status string
	// StderrTail is the end of its stderr (at most 20 lines, 4 KiB).
	StderrTail string
}

func (e *WorkerExitedError) Error() string {
	msg := fmt.Sprintf("jobmanager: worker %s on TaskManager %s exited: %s", e.Worker, e.TaskManager, e.Status)
	if e.StderrTail != "" {
		msg += "; the end of its stderr:\n" + e.StderrTail
	}
	return msg
}

// WorkerExited handles a TaskManager's report that a worker exited
// without being asked to stop: if the worker is of its job's current
// attempt, deploying or running, the deployment, or the worker's tasks,
// fail with a *WorkerExitedError, which the job's restart strategy
// handles as any task failure. A report of an older attempt's worker, or
// of an attempt already closed, changes nothing.
func (d *Dispatcher) WorkerExited(e resourcemanager.ExitedWorker) {
	jm, err := d.job(e.Job)
	if err != nil {
		return
	}
	xe := &WorkerExitedError{TaskManager: e.TaskManager, Worker: e.Worker, Status: e.Status, StderrTail: e.StderrTail}
	if jm.exec.workerExited(e.Attempt, xe) {
		jm.log.Warn("worker exited; failing its deployment or tasks", "taskmanager", e.TaskManager, "worker", e.Worker,
			"attempt", e.Attempt, "status", e.Status)
	} else {
		jm.log.Info("a worker that is not of the current attempt exited; ignored", "taskmanager", e.TaskManager,
			"worker", e.Worker, "attempt", e.Attempt, "status", e.Status)
	}
}

// taskManager returns a client of the TaskManager at addr.
func (d *Dispatcher) taskManager(addr string) (clusterpb.TaskManagerClient, error) {
	a, err := d.call(dConn{addr})
	if err != nil {
		return nil, err
	}
	if a.conn == nil {
		opts := d.cfg.DialOptions
		if opts == nil {
			opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
		}
		c, err := grpc.NewClient(addr, opts...)
		if err != nil {
			return nil, err
		}
		if a, err = d.call(dDialed{addr: addr, conn: c}); err != nil {
			c.Close()
			return nil, err
		}
	}
	return clusterpb.NewTaskManagerClient(a.conn), nil
}

func (d *Dispatcher) submitTasks(ctx context.Context, addr string, req *clusterpb.SubmitTasksRequest) error {
	c, err := d.taskManager(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err = c.SubmitTasks(ctx, req)
	return err
}

func (d *Dispatcher) cancelJob(ctx context.Context, addr, job string, attempt int) error {
	c, err := d.taskManager(addr)
	if err != nil {
		return err
	}
	_, err = c.CancelJob(ctx, &clusterpb.CancelJobRequest{JobId: job, UpToAttempt: int32(attempt)})
	return err
}

// offer handles a TaskManager's slot offer.
func (d *Dispatcher) offer(o *clusterpb.SlotOffer) []string {
	jm, err := d.job(o.JobId)
	if err != nil {
		return nil
	}
	ss := make([]slot, len(o.Slots))
	for i, s := range o.Slots {
		ss[i] = slot{allocation: s.AllocationId, tm: o.TaskManagerId, tmAddr: o.TaskManagerAddress, host: o.Hostname, index: s.Index}
	}
	return jm.pool.offer(ss)
}
