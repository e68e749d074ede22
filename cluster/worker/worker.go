// Package worker runs a job's tasks inside the job binary, on a
// TaskManager. A TaskManager starts the binary with
// SLUICE_EXECUTION_TARGET=worker; the program builds its job graph as
// always, and stream.Execute hands it to Run instead of running it
// locally. The worker connects to the JobMaster, shows it the graph's
// fingerprint, and runs the subtasks it is given: the records of an
// operator chain stay in this process; exchanges with subtasks in other
// workers go over internal/runtime/netexchange.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/cluster/deployment"
	"github.com/sluice/sluice/cluster/loginwire"
	"github.com/sluice/sluice/cluster/rpcauth"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/flamegraph/sample"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
	"github.com/sluice/sluice/internal/runtime/netexchange"
	"github.com/sluice/sluice/internal/runtime/restart"
	"github.com/sluice/sluice/internal/runtime/task"
	"github.com/sluice/sluice/security/kerberos"
)

// Run runs the worker until the JobMaster ends its session. opts carry the
// program's own settings (clock, logger, batching, file systems, state
// backend); the JobMaster decides the rest.
func Run(ctx context.Context, plan *graph.Plan, opts jobmaster.Options, dep *deployment.WorkerDeployment) error {
	opts.Defaults()
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("job", dep.JobID, "worker", dep.WorkerID)
	login, stopHDFS, err := setUpHDFS(ctx, opts.FileSystems, os.Getenv, dep.Configuration, log)
	if err != nil {
		// Only hdfs:// URIs are affected; a job that uses none runs.
		log.Warn("hdfs:// URIs will not resolve", "err", err)
	}
	// After the tasks have stopped (deferred calls run last first).
	defer stopHDFS()
	host := dep.DataHost
	if host == "" {
		host = "127.0.0.1"
	}
	// The worker authenticates as its TaskManager does: the TaskManager
	// named the secret file (or the certificates) in the deployment.
	sec, err := rpcauth.FromConf(conf.FromMap(dep.Configuration, conf.Source{Name: "worker deployment"}), rpcauth.Options{})
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	ep, err := listenData(host, dep.DataPorts, sec, log)
	if err != nil {
		return err
	}
	defer ep.Close()
	conn, err := grpc.NewClient(dep.JobMasterAddress, sec.DialOptions()...)
	if err != nil {
		return fmt.Errorf("worker: JobMaster address %q: %w", dep.JobMasterAddress, err)
	}
	defer conn.Close()
	// The session's context; the heartbeat loop ends it, with errGivenUp,
	// when it finds the worker was silent for the heartbeat timeout.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stream, err := clusterpb.NewJobMasterClient(conn).ConnectWorker(ctx)
	if err != nil {
		return fmt.Errorf("worker: connecting to the JobMaster at %s: %w", dep.JobMasterAddress, err)
	}
	w := &worker{plan: plan, opts: opts, dep: dep, log: log, ep: ep, stream: stream, login: login,
		writer: jobmaster.NewSnapshotWriter(plan.Graph), wake: make(chan struct{}, 1), sendDone: make(chan error, 1),
		endSession: cancel}
	w.samplingCtx, w.stopSampling = context.WithCancel(ctx)
	go func() { w.sendDone <- w.sender() }()
	w.send(&clusterpb.WorkerMessage{Msg: &clusterpb.WorkerMessage_Hello{Hello: &clusterpb.Hello{
		JobId: dep.JobID, Attempt: dep.Attempt, WorkerId: dep.WorkerID, TaskManagerId: dep.TaskManagerID,
		Fingerprint: plan.Graph.Fingerprint(), DataAddress: ep.Addr(), Pid: int64(os.Getpid()), Heartbeats: true,
	}}})
	err = w.receive(ctx)
	w.shutdown()
	if cause := context.Cause(ctx); errors.Is(cause, errGivenUp) {
		return cause
	}
	if errors.Is(err, errSessionEnded) {
		return nil
	}
	return err
}

var errSessionEnded = errors.New("worker: the JobMaster ended the session")

// errGivenUp is wrapped by the error of a worker that found it had sent
// its JobMaster nothing for heartbeat.timeout: the JobMaster has failed its
// tasks and restarts them elsewhere, so it stops at once instead of running
// on beside them.
var errGivenUp = errors.New("worker: silent for heartbeat.timeout, so given up by the JobMaster")

type worker struct {
	plan   *graph.Plan
	opts   jobmaster.Options
	dep    *deployment.WorkerDeployment
	log    *slog.Logger
	ep     *netexchange.Endpoint
	stream clusterpb.JobMaster_ConnectWorkerClient
	writer *jobmaster.SnapshotWriter
	// login is the worker's Kerberos login for hdfs://, reported with its
	// metrics; nil without one.
	login *kerberos.Login

	host    *jobmaster.Host
	here    map[checkpoint.TaskID]bool
	closers []func()
	// netIn and netOut are the network side of the tasks here: the gate
	// of each task with remote inputs and its senders to other workers,
	// whose byte counts the metrics report.
	netIn  map[checkpoint.TaskID]*netexchange.Gate
	netOut map[checkpoint.TaskID][]*netexchange.Sender
	stopMx chan struct{}
	mxDone chan struct{}
	// stopHB and hbDone stop and wait for the heartbeat loop; endSession
	// ends the session.
	stopHB     chan struct{}
	hbDone     chan struct{}
	endSession context.CancelCauseFunc

	mu       sync.Mutex
	queue    []*clusterpb.WorkerMessage
	closed   bool
	wake     chan struct{}
	sendDone chan error
	// failure is a worker-side error that cancelled the tasks.
	failure error

	// sampler takes the profiles of flame graphs (samples.go), on
	// goroutines (samplers) that end with samplingCtx.
	sampler      sample.Sampler
	samplers     sync.WaitGroup
	samplingCtx  context.Context
	stopSampling context.CancelFunc
}

// send queues a message to the JobMaster; it never blocks.
func (w *worker) send(m *clusterpb.WorkerMessage) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.queue = append(w.queue, m)
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *worker) sender() error {
	for {
		w.mu.Lock()
		q, closed := w.queue, w.closed
		w.queue = nil
		w.mu.Unlock()
		for _, m := range q {
			if err := w.stream.Send(m); err != nil {
				return err
			}
		}
		if closed && len(q) == 0 {
			return w.stream.CloseSend()
		}
		if len(q) == 0 {
			select {
			case <-w.wake:
			case <-w.stream.Context().Done():
				return w.stream.Context().Err()
			}
		}
	}
}

// receive handles the JobMaster's messages until the session ends.
func (w *worker) receive(ctx context.Context) error {
	for {
		m, err := w.stream.Recv()
		if err != nil {
			if ctx.Err() == nil && isEOF(err) {
				return errSessionEnded
			}
			return fmt.Errorf("worker: the JobMaster session ended: %w", err)
		}
		switch m := m.Msg.(type) {
		case *clusterpb.JobMasterMessage_Accepted:
			w.startHeartbeats(m.Accepted.GetHeartbeatIntervalMs(), m.Accepted.GetHeartbeatTimeoutMs())
		case *clusterpb.JobMasterMessage_Deploy:
			err := w.deploy(ctx, m.Deploy)
			d := &clusterpb.Deployed{}
			if err != nil {
				w.log.Error("deploying the tasks failed", "err", err)
				d.Error, d.Unrecoverable = err.Error(), !restart.Recoverable(err)
			}
			w.send(&clusterpb.WorkerMessage{Msg: &clusterpb.WorkerMessage_Deployed{Deployed: d}})
		case *clusterpb.JobMasterMessage_Start:
			if w.host != nil {
				w.host.Start()
				w.startMetrics()
			}
		case *clusterpb.JobMasterMessage_Trigger:
			w.trigger(m.Trigger)
		case *clusterpb.JobMasterMessage_CheckpointCoordinators:
			w.trigger(m.CheckpointCoordinators.Trigger)
		case *clusterpb.JobMasterMessage_Complete:
			if w.host != nil {
				w.host.NotifyComplete(m.Complete.CheckpointId)
			}
		case *clusterpb.JobMasterMessage_Abort:
			if w.host != nil {
				w.host.Abort(m.Abort.CheckpointId)
			}
		case *clusterpb.JobMasterMessage_OperatorEvent:
			if w.host != nil {
				ev := m.OperatorEvent
				if err := w.host.HandleOperatorEvent(taskID(ev.Task), ev.Payload); err != nil {
					w.fail(fmt.Errorf("worker: a coordinator failed: %w", err))
				}
			}
		case *clusterpb.JobMasterMessage_CoordinatorEvent:
			if w.host != nil {
				w.host.DeliverCoordinatorEvent(taskID(m.CoordinatorEvent.Task), m.CoordinatorEvent.Payload)
			}
		case *clusterpb.JobMasterMessage_AllFinished:
			if w.host != nil {
				w.host.AllFinished()
			}
		case *clusterpb.JobMasterMessage_Cancel:
			if w.host != nil {
				w.host.Cancel(errors.New(m.Cancel.Reason))
			}
		case *clusterpb.JobMasterMessage_Sample:
			w.sampleTasks(m.Sample)
		}
	}
}

func isEOF(err error) bool {
	return err != nil && (err.Error() == "EOF" || strings.HasSuffix(err.Error(), "EOF"))
}

// fail cancels the tasks because of a worker-side error, which they then
// report as their failure.
func (w *worker) fail(err error) {
	w.mu.Lock()
	if w.failure == nil {
		w.failure = err
	}
	w.mu.Unlock()
	w.host.Cancel(err)
}

func taskID(k *clusterpb.TaskKey) checkpoint.TaskID {
	return checkpoint.TaskID{Vertex: int(k.GetChain()), Subtask: int(k.GetSubtask())}
}

func key(t checkpoint.TaskID) *clusterpb.TaskKey {
	return &clusterpb.TaskKey{Chain: int32(t.Vertex), Subtask: int32(t.Subtask)}
}

// deploy builds the tasks of the deployment.
func (w *worker) deploy(ctx context.Context, d *clusterpb.Deployment) error {
	if w.host != nil {
		return errors.New("worker: deployed twice")
	}
	opts := w.opts
	switch d.RuntimeMode {
	case task.BatchMode.String():
		opts.Mode = task.BatchMode
	case task.StreamingMode.String(), "":
		opts.Mode = task.StreamingMode
	default:
		return fmt.Errorf("worker: unknown runtime mode %q", d.RuntimeMode)
	}
	w.here = map[checkpoint.TaskID]bool{}
	var tasks []checkpoint.TaskID
	for _, k := range d.Tasks {
		t := taskID(k)
		if t.Vertex < 0 || t.Vertex >= len(w.plan.Chains) || t.Subtask < 0 || t.Subtask >= w.plan.Chains[t.Vertex].Parallelism {
			return fmt.Errorf("worker: the deployment names task %s, which the job does not have", t)
		}
		w.here[t] = true
		tasks = append(tasks, t)
	}
	peers := map[checkpoint.TaskID]string{}
	for _, p := range d.Placement {
		peers[taskID(p.Task)] = p.DataAddress
	}
	var restore *jobmaster.Restore
	if d.RestorePath != "" {
		fsys, p, err := opts.FileSystems.For(d.RestorePath)
		if err != nil {
			return fmt.Errorf("worker: restoring from %q: %w", d.RestorePath, err)
		}
		if restore, err = jobmaster.ReadRestore(w.plan, fsys, p, d.AllowNonRestoredState, w.log); err != nil {
			return err
		}
	}
	wire, closers, err := w.wiring(ctx, peers)
	w.closers = closers
	if err != nil {
		return err
	}
	cfg := jobmaster.HostConfig{
		JobID: w.dep.JobID, Plan: w.plan, Tasks: tasks, Wire: wire, Remote: remote{w}, Reporter: reporter{w}, Restore: restore,
		Mode: opts.Mode, Clock: opts.Clock, Log: w.log, BatchSize: opts.BatchSize,
		BufferTimeout: opts.BufferTimeout, AutoWatermarkInterval: opts.AutoWatermarkInterval,
		StateBackend: opts.StateBackend, Writer: w.writer, FileSystems: opts.FileSystems,
	}
	for _, ch := range d.Coordinators {
		cfg.Coordinators = append(cfg.Coordinators, int(ch))
	}
	if d.CheckpointingMode != "" {
		mode, err := checkpoint.ParseMode(d.CheckpointingMode)
		if err != nil {
			return fmt.Errorf("worker: %w", err)
		}
		cfg.Checkpointing = &jobmaster.HostCheckpointing{Mode: mode, Incremental: d.Incremental}
	}
	h, err := jobmaster.NewHost(ctx, cfg)
	if err != nil {
		return err
	}
	w.host = h
	return nil
}

// trigger starts a checkpoint at tasks here (and, through their
// coordinators here, elsewhere).
func (w *worker) trigger(t *clusterpb.TriggerCheckpoint) {
	if w.host == nil {
		return
	}
	var tasks []checkpoint.TaskID
	for _, k := range t.Tasks {
		tasks = append(tasks, taskID(k))
	}
	loc, err := w.location(t.CheckpointId, storage.Kind(t.LocationKind), t.Location)
	if err != nil {
		for _, id := range tasks {
			if w.here[id] {
				w.send(declineMsg(id, t.CheckpointId, err))
			}
		}
		return
	}
	w.host.TriggerCheckpoint(t.CheckpointId, checkpoint.Kind(t.Kind), tasks, loc, func(s jobmaster.CoordinatorSnapshot) {
		cs := &clusterpb.CoordinatorState{CheckpointId: t.CheckpointId, Chain: int32(s.Chain), State: s.State}
		if s.Err != nil {
			cs.Error = s.Err.Error()
		}
		w.send(&clusterpb.WorkerMessage{Msg: &clusterpb.WorkerMessage_CoordinatorState{CoordinatorState: cs}})
	})
}

func (w *worker) location(id int64, kind storage.Kind, dir string) (*storage.Location, error) {
	fsys, p, err := w.opts.FileSystems.For(dir)
	if err != nil {
		return nil, fmt.Errorf("worker: checkpoint location %q: %w", dir, err)
	}
	return storage.OpenLocation(fsys, kind, id, p)
}

func declineMsg(id checkpoint.TaskID, cp int64, err error) *clusterpb.WorkerMessage {
	return &clusterpb.WorkerMessage{Msg: &clusterpb.WorkerMessage_Decline{Decline: &clusterpb.CheckpointDecline{Task: key(id), CheckpointId: cp, Reason: err.Error()}}}
}

// startMetrics reports the subtasks' metrics, and the state of the
// worker's Kerberos login, every second.
func (w *worker) startMetrics() {
	w.stopMx, w.mxDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.mxDone)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-w.stopMx:
				w.reportMetrics()
				return
			case <-t.C:
				w.reportMetrics()
			}
		}
	}()
}

func (w *worker) reportMetrics() {
	r := &clusterpb.MetricsReport{Kerberos: kerberosStatus(w.login)}
	for i, m := range w.host.Metrics() {
		id := w.host.Tasks()[i]
		var in, out int64
		if g := w.netIn[id]; g != nil {
			in = g.BytesReceived()
		}
		for _, x := range w.netOut[id] {
			out += x.BytesSent()
		}
		r.Subtasks = append(r.Subtasks, &clusterpb.SubtaskMetrics{Task: key(id),
			RecordsIn: m.RecordsIn.Load(), RecordsOut: m.RecordsOut.Load(), BytesIn: in, BytesOut: out,
			BusyMs: m.BusyNanos.Load() / 1e6, BackpressuredMs: m.BackpressuredNanos.Load() / 1e6, IdleMs: m.IdleNanos.Load() / 1e6,
			Watermark: m.Watermark.Load(), OutputWatermark: m.OutputWatermark.Load(), Gauges: m.Gauges.Snapshot()})
	}
	w.send(&clusterpb.WorkerMessage{Msg: &clusterpb.WorkerMessage_Metrics{Metrics: r}})
}

// kerberosStatus is the state of a login for the JobMaster; nil without a
// login.
func kerberosStatus(l *kerberos.Login) *clusterpb.KerberosStatus {
	if l == nil {
		return nil
	}
	return loginwire.Message(l.Status())
}

// startHeartbeats starts the heartbeat loop with the JobMaster's settings
// (once): its own goroutine, so that busy or blocked tasks do not hold
// the heartbeats back.
func (w *worker) startHeartbeats(interval, timeout int64) {
	if w.stopHB != nil || interval <= 0 || timeout <= interval {
		return
	}
	w.stopHB, w.hbDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.hbDone)
		heartbeats(newMonotonic(), interval, timeout, w.stopHB,
			func(seq int64) {
				w.send(&clusterpb.WorkerMessage{Msg: &clusterpb.WorkerMessage_Heartbeat{Heartbeat: &clusterpb.Heartbeat{Seq: seq}}})
			},
			func(gap int64) {
				err := fmt.Errorf("%w: nothing sent for %v (the process was stopped or starved)", errGivenUp, time.Duration(gap)*time.Millisecond)
				w.log.Error("stopping the tasks: the JobMaster has failed them", "err", err)
				w.endSession(err)
			})
	}()
}

// heartbeats calls beat every interval (ms on clk) until stop is closed.
// A tick that finds the one before timeout or more ago means the process
// was stopped (SIGSTOP, a frozen host) or starved for that long, so that
// its JobMaster heard nothing for its heartbeat timeout and gave it up:
// silent is called with the gap and the loop ends.
func heartbeats(clk clock.Clock, interval, timeout int64, stop <-chan struct{}, beat func(seq int64), silent func(gap int64)) {
	last := clk.NowMillis()
	for seq := int64(1); ; seq++ {
		tick, cancel := clk.AfterMillis(last + interval)
		select {
		case <-stop:
			cancel()
			return
		case <-tick:
		}
		now := clk.NowMillis()
		if gap := now - last; gap >= timeout {
			silent(gap)
			return
		}
		beat(seq)
		last = now
	}
}

// monotonic is a clock.Clock on the process's monotonic time, which
// wall-clock steps do not move: a step forward must not look like a
// silence.
type monotonic struct{ start time.Time }

func newMonotonic() monotonic { return monotonic{start: time.Now()} }

func (m monotonic) NowMillis() int64 { return time.Since(m.start).Milliseconds() }

func (m monotonic) AfterMillis(deadline int64) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	d := time.Duration(deadline-m.NowMillis()) * time.Millisecond
	if d <= 0 {
		ch <- struct{}{}
		return ch, func() {}
	}
	t := time.AfterFunc(d, func() { ch <- struct{}{} })
	return ch, func() { t.Stop() }
}

// shutdown stops the tasks, flushes what is queued for the JobMaster and
// closes the exchanges.
func (w *worker) shutdown() {
	w.stopSampling()
	w.samplers.Wait()
	if w.host != nil {
		w.host.Cancel(errors.New("the worker is shutting down"))
		w.host.Close()
	}
	if w.stopMx != nil {
		close(w.stopMx)
		<-w.mxDone
	}
	if w.stopHB != nil {
		close(w.stopHB)
		<-w.hbDone
	}
	for _, c := range w.closers {
		c()
	}
	w.mu.Lock()
	w.closed = true
	select {
	case w.wake <- struct{}{}:
	default:
	}
	w.mu.Unlock()
	select {
	case <-w.sendDone:
	case <-time.After(5 * time.Second):
	}
}

// reporter sends the tasks' reports to the JobMaster.
type reporter struct{ w *worker }

func (r reporter) TaskEnded(id checkpoint.TaskID, err error) {
	// The subtasks' last counts go ahead of the end: once every task has
	// ended the JobMaster ends the job, and a finished job's vertices
	// would otherwise keep the counts of the last periodic report (none
	// for a job shorter than a second).
	r.w.reportMetrics()
	te := &clusterpb.TaskEnded{Task: key(id)}
	r.w.mu.Lock()
	failure := r.w.failure
	r.w.mu.Unlock()
	switch {
	case err == nil:
	case failure != nil:
		te.Error, te.Recoverable, te.ErrorType = failure.Error(), restart.Recoverable(failure), clusterpb.ErrorClass(failure)
	case errors.Is(err, context.Canceled):
		te.Canceled = true
	default:
		te.Error, te.Recoverable, te.ErrorType = err.Error(), restart.Recoverable(err), clusterpb.ErrorClass(err)
	}
	r.w.send(&clusterpb.WorkerMessage{Msg: &clusterpb.WorkerMessage_TaskEnded{TaskEnded: te}})
}

func (r reporter) TaskFinished(id checkpoint.TaskID) {
	r.w.send(&clusterpb.WorkerMessage{Msg: &clusterpb.WorkerMessage_Finished{Finished: &clusterpb.TaskFinished{Task: key(id)}}})
}

func (r reporter) Acknowledged(id checkpoint.TaskID, cp int64, ack jobmaster.Ack) {
	r.w.send(&clusterpb.WorkerMessage{Msg: &clusterpb.WorkerMessage_Ack{Ack: &clusterpb.CheckpointAck{Task: key(id), CheckpointId: cp,
		Handle: ack.Handle, Shared: ack.Shared, Bytes: ack.Bytes}}})
}

func (r reporter) Declined(id checkpoint.TaskID, cp int64, err error) {
	r.w.send(declineMsg(id, cp, err))
}

// remote reaches tasks and coordinators in other workers through the
// JobMaster.
type remote struct{ w *worker }

func (r remote) TriggerCheckpoint(id int64, kind checkpoint.Kind, tasks []checkpoint.TaskID, loc *storage.Location) {
	t := &clusterpb.TriggerCheckpoint{CheckpointId: id, Kind: int32(kind), Location: r.w.opts.FileSystems.URI(loc.FileSystem(), loc.Dir()), LocationKind: int32(loc.Kind())}
	for _, id := range tasks {
		t.Tasks = append(t.Tasks, key(id))
	}
	r.w.send(&clusterpb.WorkerMessage{Msg: &clusterpb.WorkerMessage_Trigger{Trigger: t}})
}

func (r remote) CoordinatorEvent(to checkpoint.TaskID, ev []byte) {
	r.w.send(&clusterpb.WorkerMessage{Msg: &clusterpb.WorkerMessage_CoordinatorEvent{CoordinatorEvent: &clusterpb.OperatorEvent{Task: key(to), Payload: ev}}})
}

func (r remote) OperatorEvent(from checkpoint.TaskID, ev []byte) error {
	r.w.send(&clusterpb.WorkerMessage{Msg: &clusterpb.WorkerMessage_OperatorEvent{OperatorEvent: &clusterpb.OperatorEvent{Task: key(from), Payload: ev}}})
	return nil
}
