package jobmaster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
	"github.com/sluice/sluice/internal/runtime/restart"
)

// outcome is what the scripted executor does with one attempt.
type outcome int

const (
	// deployFails: Deploy returns the attempt's error.
	deployFails outcome = iota
	// taskFails: the attempt deploys and its task fails with the error.
	taskFails
	// finishes: the attempt deploys and its task finishes.
	finishes
	// deployHangs: Deploy waits until the job is cancelled.
	deployHangs
)

// step scripts one attempt.
type step struct {
	outcome outcome
	err     error
}

// scriptedExecutor deploys attempts as its script says, one step per
// attempt; attempts beyond the script fail the test.
type scriptedExecutor struct {
	t      *testing.T
	script []step
	// hanging is closed when an attempt's Deploy waits (deployHangs).
	hanging chan struct{}

	mu       sync.Mutex
	attempts []int
}

func (x *scriptedExecutor) Deploy(ctx context.Context, d jobmaster.Deployment) (jobmaster.Attempt, error) {
	x.mu.Lock()
	x.attempts = append(x.attempts, d.Attempt)
	x.mu.Unlock()
	if d.Attempt >= len(x.script) {
		x.t.Errorf("attempt %d deployed; the script has %d", d.Attempt, len(x.script))
		return nil, &restart.Unrecoverable{Err: errors.New("beyond the script")}
	}
	s := x.script[d.Attempt]
	switch s.outcome {
	case deployFails:
		return nil, s.err
	case deployHangs:
		close(x.hanging)
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
	return &scriptedAttempt{events: d.Events, err: s.err}, nil
}

func (x *scriptedExecutor) deployed() []int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return slices.Clone(x.attempts)
}

// scriptedAttempt has one task, which ends with err once started.
type scriptedAttempt struct {
	events jobmaster.Events
	err    error
}

var theTask = checkpoint.TaskID{}

func (a *scriptedAttempt) Tasks() []checkpoint.TaskID { return []checkpoint.TaskID{theTask} }
func (a *scriptedAttempt) Start()                     { go a.events.TaskEnded(theTask, a.err) }
func (a *scriptedAttempt) TriggerCheckpoint(int64, checkpoint.Kind, []checkpoint.TaskID, *storage.Location) []jobmaster.CoordinatorSnapshot {
	return nil
}
func (a *scriptedAttempt) NotifyComplete(int64)                {}
func (a *scriptedAttempt) Abort(int64)                         {}
func (a *scriptedAttempt) AllFinished()                        {}
func (a *scriptedAttempt) Cancel(error)                        {}
func (a *scriptedAttempt) Close()                              {}
func (a *scriptedAttempt) Metrics() []jobmaster.SubtaskMetrics { return nil }

// statuses records the job's statuses and their causes.
type statuses struct {
	mu  sync.Mutex
	got []string
}

func (l *statuses) StatusChanged(s jobmaster.Status, _ int64, cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if cause != nil {
		l.got = append(l.got, fmt.Sprintf("%s: %v", s, cause))
		return
	}
	l.got = append(l.got, string(s))
}
func (*statuses) CheckpointTriggered(jobmaster.CheckpointStats) {}
func (*statuses) CheckpointCompleted(jobmaster.CheckpointStats) {}
func (*statuses) CheckpointFailed(jobmaster.CheckpointStats)    {}
func (*statuses) Restored(jobmaster.RestoreStats)               {}

// lostError stands for a TaskManager lost while the attempt deploys.
type lostError struct{ tm string }

func (e *lostError) Error() string { return "TaskManager " + e.tm + " lost" }

// A failed deployment is a failover as in Flink: the restart strategy
// decides and counts it as it counts a task's failure, so the job
// restarts while the strategy allows, and fails with the deployment's
// error when it no longer does; an unrecoverable deployment error fails
// the job at once, and a job cancelled while it deploys ends CANCELED.
func TestFailedDeploymentIsAFailover(t *testing.T) {
	lost := &lostError{tm: "tm-1"}
	mismatch := &restart.Unrecoverable{Err: errors.New("the worker built another job graph")}
	opFailed := errors.New("operator failed")
	for _, tc := range []struct {
		name string
		// attempts is restart-strategy.fixed-delay.attempts.
		attempts int
		script   []step
		cancel   bool
		// wantErr is in the job's error chain (nil: it finished).
		wantErr      error
		wantRestarts int
		wantStatuses []string
	}{
		{name: "a recoverable deployment error restarts the job, which then finishes",
			attempts: 3, script: []step{{deployFails, lost}, {finishes, nil}},
			wantRestarts: 1,
			wantStatuses: []string{"RESTARTING: TaskManager tm-1 lost", "RUNNING", "FINISHED"}},
		{name: "an unrecoverable deployment error fails the job at once",
			attempts: 3, script: []step{{deployFails, mismatch}},
			wantErr:      mismatch,
			wantStatuses: []string{"FAILED: the worker built another job graph"}},
		{name: "deployment errors beyond the restart strategy fail the job with the last",
			attempts: 2, script: []step{{deployFails, lost}, {deployFails, lost}, {deployFails, lost}},
			wantErr: lost, wantRestarts: 2,
			wantStatuses: []string{"RESTARTING: TaskManager tm-1 lost", "RESTARTING: TaskManager tm-1 lost", "FAILED: TaskManager tm-1 lost"}},
		{name: "a failed deployment and a task's failure count against the same strategy",
			attempts: 1, script: []step{{deployFails, lost}, {taskFails, opFailed}},
			wantErr: opFailed, wantRestarts: 1,
			wantStatuses: []string{"RESTARTING: TaskManager tm-1 lost", "RUNNING", "FAILED: jobmaster: operator failed"}},
		{name: "a task's failure, then a failed deployment, then success",
			attempts: 2, script: []step{{taskFails, opFailed}, {deployFails, lost}, {finishes, nil}},
			wantRestarts: 2,
			wantStatuses: []string{"RUNNING", "RESTARTING: operator failed", "RESTARTING: TaskManager tm-1 lost", "RUNNING", "FINISHED"}},
		{name: "a job cancelled while it deploys is cancelled, not restarted",
			attempts: 3, script: []step{{deployHangs, nil}}, cancel: true,
			wantErr:      context.Canceled,
			wantStatuses: []string{"CANCELED: jobmaster: job cancelled: context canceled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			strategy, err := restart.NewFixedDelay(restart.FixedDelayOptions{Attempts: tc.attempts})
			if err != nil {
				t.Fatal(err)
			}
			x := &scriptedExecutor{t: t, script: tc.script, hanging: make(chan struct{})}
			l := &statuses{}
			logs := &syncBuffer{}
			j, err := jobmaster.Start(context.Background(), onePlan(t), jobmaster.Options{JobID: "job", Executor: x, Restart: strategy,
				Clock: clock.NewManual(0), Listener: l, Log: slog.New(slog.NewTextHandler(logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if tc.cancel {
				<-x.hanging
				j.Cancel()
			}
			done := make(chan struct{})
			var res *jobmaster.Result
			go func() {
				res, err = j.Wait()
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("the job did not end; deployed attempts %v", x.deployed())
			}
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("the job failed: %v", err)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("the job ended with %v, want %v in its chain", err, tc.wantErr)
			}
			for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
				if line != "" && strings.Count(line, " job=") != 1 {
					t.Errorf("log line does not name its job once: %s", line)
				}
			}
			if res.Restarts != tc.wantRestarts {
				t.Errorf("%d restarts, want %d", res.Restarts, tc.wantRestarts)
			}
			if want := len(tc.script); len(x.deployed()) != want {
				t.Errorf("deployed attempts %v, want %d", x.deployed(), want)
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			if !slices.Equal(l.got, tc.wantStatuses) {
				t.Errorf("statuses\n  %q\nwant\n  %q", l.got, tc.wantStatuses)
			}
		})
	}
}

// onePlan is the plan of a job with one operator.
func onePlan(t *testing.T) *graph.Plan {
	t.Helper()
	plan, err := graph.BuildPlan(&graph.JobGraph{Name: "job", Nodes: []*graph.Node{{ID: 0, Kind: "source", Name: "src", Parallelism: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// Metrics is read by REST handlers while the owner loop deploys the next
// attempt: each attempt publishes its own slice, so a reader never shares
// memory with a later attempt's assignment (a data race under -race).
func TestMetricsReadWhileTheJobRestarts(t *testing.T) {
	strategy, err := restart.NewFixedDelay(restart.FixedDelayOptions{Attempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	opFailed := errors.New("operator failed")
	x := &scriptedExecutor{t: t, script: []step{{taskFails, opFailed}, {taskFails, opFailed}, {finishes, nil}}, hanging: make(chan struct{})}
	j, err := jobmaster.Start(context.Background(), onePlan(t), jobmaster.Options{JobID: "job", Executor: x, Restart: strategy,
		Clock: clock.NewManual(0), Listener: &statuses{}})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	read := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				read <- n
				return
			default:
				n += len(j.Metrics())
			}
		}
	}()
	if _, err := j.Wait(); err != nil {
		t.Fatalf("the job failed: %v", err)
	}
	close(stop)
	<-read
	if got := x.deployed(); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("deployed attempts %v, want [0 1 2]", got)
	}
}

// syncBuffer is a bytes.Buffer for a logger written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestRestartDelayOnTheJobsClock: a failed job waits for the restart
// strategy's delay on the job's clock (the lifecycle's deadline, armed by
// its owner loop), restarting only once that clock has moved; cancelled
// while it waits, it ends at once without another attempt.
func TestRestartDelayOnTheJobsClock(t *testing.T) {
	opFailed := errors.New("operator failed")
	for _, tc := range []struct {
		name         string
		cancel       bool
		wantErr      error
		wantRestarts int
		wantDeployed []int
		wantStatuses []string
	}{
		{name: "the delay passes: the job restarts and finishes",
			wantRestarts: 1, wantDeployed: []int{0, 1},
			wantStatuses: []string{"RUNNING", "RESTARTING: operator failed", "RUNNING", "FINISHED"}},
		{name: "cancelled during the delay", cancel: true,
			wantErr: context.Canceled, wantDeployed: []int{0},
			wantStatuses: []string{"RUNNING", "RESTARTING: operator failed", "CANCELED: jobmaster: job cancelled: context canceled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			strategy, err := restart.NewFixedDelay(restart.FixedDelayOptions{Attempts: 1, Delay: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			x := &scriptedExecutor{t: t, script: []step{{taskFails, opFailed}, {finishes, nil}}}
			l := &statuses{}
			clk := clock.NewManual(1000)
			j, err := jobmaster.Start(context.Background(), onePlan(t), jobmaster.Options{JobID: "job", Executor: x, Restart: strategy,
				Clock: clk, Listener: l})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := clk.BlockUntilArmedAt(ctx, 11000); err != nil {
				t.Fatalf("no restart timer at 11000 on the job's clock: %v; armed %v", err, clk.Armed())
			}
			if got := x.deployed(); !slices.Equal(got, []int{0}) {
				t.Fatalf("deployed %v before the delay passed, want [0]", got)
			}
			if tc.cancel {
				j.Cancel()
			} else {
				clk.AdvanceBy(10 * time.Second)
			}
			done := make(chan struct{})
			var res *jobmaster.Result
			go func() {
				res, err = j.Wait()
				close(done)
			}()
			select {
			case <-done:
			case <-ctx.Done():
				t.Fatalf("the job did not end; deployed attempts %v", x.deployed())
			}
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("the job failed: %v", err)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("the job ended with %v, want %v in its chain", err, tc.wantErr)
			}
			if res.Restarts != tc.wantRestarts {
				t.Errorf("%d restarts, want %d", res.Restarts, tc.wantRestarts)
			}
			if got := x.deployed(); !slices.Equal(got, tc.wantDeployed) {
				t.Errorf("deployed %v, want %v", got, tc.wantDeployed)
			}
			if !tc.cancel && res.Duration != 10*time.Second {
				t.Errorf("duration %v, want the 10s the job's clock moved", res.Duration)
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			if !slices.Equal(l.got, tc.wantStatuses) {
				t.Errorf("statuses\n  %q\nwant\n  %q", l.got, tc.wantStatuses)
			}
		})
	}
}
