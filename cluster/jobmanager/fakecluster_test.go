package jobmanager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/cluster/resourcemanager"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
	"github.com/sluice/sluice/internal/runtime/task"
)

// fakeCluster is a real Dispatcher, with its JobMasters' gRPC service, on
// loopback, whose ResourceManager, TaskManagers and workers are played by
// the test: the ResourceManager offers one slot on each of the
// TaskManagers tm-1 and tm-2 (both served by the same gRPC server), a
// TaskManager asked to start a worker starts a fakeWorker, and a worker
// deploys, starts, acknowledges checkpoints and ends its tasks on
// cancellation as a real one does, and otherwise reports what the test
// tells it to.
type fakeCluster struct {
	t     *testing.T
	d     *Dispatcher
	addr  string
	clock *clock.Manual

	mu sync.Mutex
	// workers are the workers started, by attempt and TaskManager.
	workers map[string]*fakeWorker
	// holding parks checkpoint triggers instead of acknowledging them.
	holding bool
	parked  []func()
	changed chan struct{} // closed and replaced on every change
	// refuse are the errors the TaskManagers answer SubmitTasks with, and
	// stall the workers that never answer their Deploy, by attempt and
	// TaskManager ("0/tm-2").
	refuse map[string]error
	stall  map[string]bool
	// crash are the workers that never connect (their process exits
	// first), and crashed the requests that started them.
	crash   map[string]bool
	crashed map[string]*clusterpb.SubmitTasksRequest
	// freed are the allocations the JobMaster freed, in order.
	freed []string
	// sampleBusy has the workers answer a sampling that their process
	// already runs a CPU profile; sampleSilent, not answer at all.
	sampleBusy, sampleSilent bool
}

var taskManagerIDs = []string{"tm-1", "tm-2"}

func newFakeCluster(t *testing.T, start int64) *fakeCluster {
	t.Helper()
	fc := &fakeCluster{t: t, clock: clock.NewManual(start), workers: map[string]*fakeWorker{}, changed: make(chan struct{}),
		refuse: map[string]error{}, stall: map[string]bool{}, crash: map[string]bool{}, crashed: map[string]*clusterpb.SubmitTasksRequest{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fc.addr = ln.Addr().String()
	d, err := NewDispatcher(Config{WorkDir: t.TempDir(), RPCAddress: fc.addr, ResourceManager: fakeSlots{fc},
		Clock: fc.clock, CancelGrace: 10 * time.Second, WorkerStartTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	fc.d = d
	srv := grpc.NewServer()
	d.Register(srv)
	clusterpb.RegisterTaskManagerServer(srv, fakeTaskManagers{fc: fc})
	go srv.Serve(ln)
	t.Cleanup(func() {
		d.Close()
		srv.Stop()
	})
	return fc
}

func (fc *fakeCluster) signalLocked() {
	close(fc.changed)
	fc.changed = make(chan struct{})
}

// refuseWorker has TaskManager tm answer the request to start the worker
// of attempt with err.
func (fc *fakeCluster) refuseWorker(attempt int, tm string, err error) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.refuse[fmt.Sprintf("%d/%s", attempt, tm)] = err
}

// stallWorker has the worker of attempt on TaskManager tm connect but
// never answer its Deploy.
func (fc *fakeCluster) stallWorker(attempt int, tm string) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.stall[fmt.Sprintf("%d/%s", attempt, tm)] = true
}

// crashWorker has the worker of attempt on TaskManager tm start but never
// connect, as a worker process that exits at once.
func (fc *fakeCluster) crashWorker(attempt int, tm string) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.crash[fmt.Sprintf("%d/%s", attempt, tm)] = true
}

// await waits until found, called with fc.mu held, reports true, and
// fails the test with failure after 30 s.
func (fc *fakeCluster) await(failure string, found func() bool) {
	fc.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		fc.mu.Lock()
		ok, ch := found(), fc.changed
		fc.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			fc.t.Fatal(failure)
		}
	}
}

// crashedWorker waits for the crashing worker of attempt on TaskManager
// tm to have been started, and returns the TaskManager's report of its
// exit.
func (fc *fakeCluster) crashedWorker(attempt int, tm string) resourcemanager.ExitedWorker {
	fc.t.Helper()
	var r *clusterpb.SubmitTasksRequest
	fc.await(fmt.Sprintf("no worker of attempt %d started on %s", attempt, tm), func() bool {
		r = fc.crashed[fmt.Sprintf("%d/%s", attempt, tm)]
		return r != nil
	})
	return resourcemanager.ExitedWorker{TaskManager: tm, Job: r.JobId, Attempt: int(r.Attempt), Worker: r.WorkerId,
		Status: "exit status 2", StderrTail: "panic: the job binary crashed in worker mode\n\ngoroutine 1 [running]:"}
}

// connected waits for the worker of an attempt on a TaskManager to have
// connected to its JobMaster.
func (fc *fakeCluster) connected(attempt int, tm string) *fakeWorker {
	fc.t.Helper()
	var w *fakeWorker
	fc.await(fmt.Sprintf("no worker of attempt %d on %s", attempt, tm), func() bool {
		w = fc.workers[fmt.Sprintf("%d/%s", attempt, tm)]
		return w != nil
	})
	return w
}

// worker waits for the worker of an attempt on a TaskManager to have
// started its tasks.
func (fc *fakeCluster) worker(attempt int, tm string) *fakeWorker {
	fc.t.Helper()
	w := fc.connected(attempt, tm)
	select {
	case <-w.started:
		return w
	case <-time.After(30 * time.Second):
		fc.t.Fatalf("the worker of attempt %d on %s did not start its tasks", attempt, tm)
		return nil
	}
}

// hold parks checkpoint triggers until release.
func (fc *fakeCluster) hold() {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.holding = true
}

// release acknowledges the parked triggers and those to come.
func (fc *fakeCluster) release() {
	fc.mu.Lock()
	parked := fc.parked
	fc.holding, fc.parked = false, nil
	fc.mu.Unlock()
	for _, ack := range parked {
		ack()
	}
}

// submit submits a job of two chains: "numbers" (parallelism 2, an
// unbounded source) rebalancing to "print" (parallelism 2), checkpointing
// on request only (the interval is an hour of the manual clock) into
// ckptDir, restarting at once after a failure.
func (fc *fakeCluster) submit(ckptDir string) string {
	fc.t.Helper()
	g := &graph.JobGraph{
		Name: "numbers",
		Nodes: []*graph.Node{
			{ID: 0, Kind: "source", Name: "numbers", Parallelism: 2, Chaining: graph.ChainAlways, OutType: "int"},
			{ID: 1, Kind: "sink", Name: "print", Parallelism: 2, Chaining: graph.ChainAlways, Inputs: 1, OutType: "int"},
		},
		Edges: []*graph.Edge{{From: 0, To: 1, Partitioning: graph.Rebalance}},
		Config: map[string]string{"execution.checkpointing.interval": "1 h", "execution.checkpointing.dir": "file://" + ckptDir,
			"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "10", "restart-strategy.fixed-delay.delay": "0 ms"},
	}
	b, err := g.Marshal()
	if err != nil {
		fc.t.Fatal(err)
	}
	bin := filepath.Join(fc.t.TempDir(), "job")
	if err := os.WriteFile(bin, []byte("a job binary"), 0o755); err != nil {
		fc.t.Fatal(err)
	}
	id, err := fc.d.Submit(Submission{GraphJSON: b, BinaryPath: bin})
	if err != nil {
		fc.t.Fatal(err)
	}
	return id
}

// fakeSlots is the ResourceManager: a job that needs slots is offered
// one on each TaskManager (the same ones again for every demand).
type fakeSlots struct{ fc *fakeCluster }

func (f fakeSlots) DeclareSlots(_ context.Context, d *clusterpb.SlotDemand) (*clusterpb.SlotDemandAck, error) {
	if d.Slots > 0 {
		go func() {
			for _, tm := range taskManagerIDs {
				f.fc.d.offer(&clusterpb.SlotOffer{JobId: d.JobId, TaskManagerId: tm, TaskManagerAddress: f.fc.addr, Hostname: "host-" + tm,
					Slots: []*clusterpb.OfferedSlot{{Index: 0, AllocationId: tm + "/slot-0"}}})
			}
		}()
	}
	return &clusterpb.SlotDemandAck{}, nil
}

// fakeTaskManagers serves both TaskManagers: SubmitTasks starts a
// fakeWorker, the rest is acknowledged.
type fakeTaskManagers struct {
	clusterpb.UnimplementedTaskManagerServer
	fc *fakeCluster
}

func (f fakeTaskManagers) SubmitTasks(_ context.Context, r *clusterpb.SubmitTasksRequest) (*clusterpb.SubmitTasksResponse, error) {
	tm, _, _ := strings.Cut(r.AllocationIds[0], "/")
	f.fc.mu.Lock()
	refused, stall := f.fc.refuse[fmt.Sprintf("%d/%s", r.Attempt, tm)], f.fc.stall[fmt.Sprintf("%d/%s", r.Attempt, tm)]
	crash := f.fc.crash[fmt.Sprintf("%d/%s", r.Attempt, tm)]
	f.fc.mu.Unlock()
	if refused != nil {
		return nil, refused
	}
	if crash {
		f.fc.mu.Lock()
		f.fc.crashed[fmt.Sprintf("%d/%s", r.Attempt, tm)] = r
		f.fc.signalLocked()
		f.fc.mu.Unlock()
		return &clusterpb.SubmitTasksResponse{}, nil
	}
	jm, err := f.fc.d.job(r.JobId)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(f.fc.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := clusterpb.NewJobMasterClient(conn).ConnectWorker(ctx)
	if err != nil {
		cancel()
		conn.Close()
		return nil, err
	}
	w := &fakeWorker{fc: f.fc, tm: tm, plan: jm.plan, stream: stream, kill: cancel, started: make(chan struct{}), stall: stall, asked: make(chan struct{}),
		writer: jobmaster.NewSnapshotWriter(jm.plan.Graph), ended: map[checkpoint.TaskID]bool{}}
	w.send(&clusterpb.WorkerMessage{Msg: &clusterpb.WorkerMessage_Hello{Hello: &clusterpb.Hello{JobId: r.JobId, Attempt: r.Attempt,
		WorkerId: r.WorkerId, TaskManagerId: tm, Fingerprint: jm.graph.Fingerprint(), DataAddress: "127.0.0.1:1"}}})
	f.fc.mu.Lock()
	f.fc.workers[fmt.Sprintf("%d/%s", r.Attempt, tm)] = w
	f.fc.signalLocked()
	f.fc.mu.Unlock()
	go func() {
		defer conn.Close()
		defer cancel()
		w.run()
	}()
	return &clusterpb.SubmitTasksResponse{}, nil
}

func (fakeTaskManagers) CancelJob(context.Context, *clusterpb.CancelJobRequest) (*clusterpb.CancelJobResponse, error) {
	return &clusterpb.CancelJobResponse{}, nil
}

func (f fakeTaskManagers) FreeSlots(_ context.Context, r *clusterpb.FreeSlotsRequest) (*clusterpb.FreeSlotsResponse, error) {
	f.fc.mu.Lock()
	defer f.fc.mu.Unlock()
	f.fc.freed = append(f.fc.freed, r.AllocationIds...)
	return &clusterpb.FreeSlotsResponse{}, nil
}

// freedSlots are the allocations the JobMaster freed so far.
func (fc *fakeCluster) freedSlots() []string {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return slices.Clone(fc.freed)
}

// fakeWorker is a worker whose tasks do nothing: it deploys and starts
// them, acknowledges checkpoints with empty snapshots, reports canceled
// tasks when cancelled, and sends what the test gives it.
type fakeWorker struct {
	fc      *fakeCluster
	tm      string
	plan    *graph.Plan
	stream  clusterpb.JobMaster_ConnectWorkerClient
	kill    context.CancelFunc // breaks the stream, as the worker's death
	writer  *jobmaster.SnapshotWriter
	started chan struct{}
	// stall: the worker never answers its Deploy; asked is closed when
	// it gets it.
	stall bool
	asked chan struct{}

	mu    sync.Mutex // sending, and the tasks
	tasks []checkpoint.TaskID
	ended map[checkpoint.TaskID]bool
}

func (w *fakeWorker) send(m *clusterpb.WorkerMessage) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sendLocked(m)
}

// REQUIRES: w.mu held.
func (w *fakeWorker) sendLocked(m *clusterpb.WorkerMessage) {
	if err := w.stream.Send(m); err != nil && !errors.Is(err, io.EOF) {
		w.fc.t.Logf("worker on %s: send: %v", w.tm, err)
	}
}

// taskEnded reports a task's end (failed with errType and msg, or
// canceled if msg is empty), once.
func (w *fakeWorker) taskEnded(t checkpoint.TaskID, errType, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended[t] {
		return
	}
	w.ended[t] = true
	te := &clusterpb.TaskEnded{Task: key(t), Canceled: msg == "", Error: msg, ErrorType: errType, Recoverable: true}
	w.sendLocked(&clusterpb.WorkerMessage{Msg: &clusterpb.WorkerMessage_TaskEnded{TaskEnded: te}})
}

func (w *fakeWorker) run() {
	for {
		m, err := w.stream.Recv()
		if err != nil {
			return
		}
		switch m := m.Msg.(type) {
		case *clusterpb.JobMasterMessage_Deploy:
			close(w.asked)
			if w.stall {
				break
			}
			w.mu.Lock()
			for _, k := range m.Deploy.Tasks {
				w.tasks = append(w.tasks, taskID(k))
			}
			w.mu.Unlock()
			w.send(&clusterpb.WorkerMessage{Msg: &clusterpb.WorkerMessage_Deployed{Deployed: &clusterpb.Deployed{}}})
		case *clusterpb.JobMasterMessage_Start:
			close(w.started)
		case *clusterpb.JobMasterMessage_Trigger:
			w.trigger(m.Trigger)
		case *clusterpb.JobMasterMessage_Cancel:
			w.mu.Lock()
			tasks := w.tasks
			w.mu.Unlock()
			for _, t := range tasks {
				w.taskEnded(t, "", "")
			}
		case *clusterpb.JobMasterMessage_Sample:
			w.sample(m.Sample)
		}
	}
}

// sample answers a sampling with a stack per task asked for: its
// worker's TaskManager, then the task ("task 1.0"), then "cpu" for a CPU
// profile; or as the cluster's sampleBusy and sampleSilent say.
func (w *fakeWorker) sample(r *clusterpb.SampleTasks) {
	w.fc.mu.Lock()
	busy, silent := w.fc.sampleBusy, w.fc.sampleSilent
	w.fc.mu.Unlock()
	if silent {
		return
	}
	out := &clusterpb.TaskSamples{Id: r.Id, Names: []string{"worker " + w.tm, "cpu"}}
	if busy {
		out.Error, out.CpuBusy = "worker on "+w.tm+": a CPU profile is already being taken in this process", true
	}
	for _, k := range r.Tasks {
		out.Names = append(out.Names, "task "+taskID(k).String())
		st := &clusterpb.StackSample{Frames: []int32{0, int32(len(out.Names) - 1)}, Count: 1}
		if r.Cpu {
			st.Frames = append(st.Frames, 1)
		}
		out.Stacks = append(out.Stacks, st)
	}
	w.send(&clusterpb.WorkerMessage{Msg: &clusterpb.WorkerMessage_Samples{Samples: out}})
}

// trigger acknowledges checkpoint t at every task of the worker (the
// barrier of its source reaches its sink here), unless the cluster holds
// acknowledgements.
func (w *fakeWorker) trigger(t *clusterpb.TriggerCheckpoint) {
	ack := func() {
		fsys, p, err := fs.NewResolver().For(t.Location)
		if err == nil {
			var loc *storage.Location
			if loc, err = storage.OpenLocation(fsys, storage.Kind(t.LocationKind), t.CheckpointId, p); err == nil {
				w.mu.Lock()
				tasks := w.tasks
				w.mu.Unlock()
				for _, id := range tasks {
					a, werr := w.writer.Write(loc, id, &task.Snapshot{ID: t.CheckpointId, Kind: checkpoint.Kind(t.Kind)})
					if werr != nil {
						err = werr
						break
					}
					w.send(&clusterpb.WorkerMessage{Msg: &clusterpb.WorkerMessage_Ack{Ack: &clusterpb.CheckpointAck{
						Task: key(id), CheckpointId: t.CheckpointId, Handle: a.Handle, Bytes: a.Bytes}}})
				}
			}
		}
		if err != nil {
			w.fc.t.Errorf("worker on %s: checkpoint %d: %v", w.tm, t.CheckpointId, err)
		}
	}
	w.fc.mu.Lock()
	if w.fc.holding {
		w.fc.parked = append(w.fc.parked, ack)
		w.fc.mu.Unlock()
		return
	}
	w.fc.mu.Unlock()
	ack()
}
