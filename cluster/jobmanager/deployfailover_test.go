package jobmanager

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice/sluice/cluster/resourcemanager"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
	"github.com/sluice/sluice/internal/runtime/restart"
)

// A deployment that fails is a failover, as a task's failure is: a
// TaskManager lost or a worker that dies while the attempt deploys, or a
// TaskManager that cannot start its worker for now, restarts the job
// through its restart strategy (fixed-delay, 10 attempts), on the
// TaskManagers the ResourceManager offers again; the exception history
// names the failure and its TaskManager. A TaskManager's refusal that no
// restart can fix (the JobMaster has no such binary, or its bytes do not
// match their digest) fails the job at once.
func TestFailedDeploymentIsAFailover(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup prepares attempt 0's faults; fail injects them once the
		// job is submitted.
		setup func(fc *fakeCluster)
		fail  func(t *testing.T, fc *fakeCluster)
		// wantClass is the type of the failure in the exception history;
		// wantTM its TaskManager.
		wantClass, wantTM string
		// wantMessage, if set, is in the exception's message.
		wantMessage string
		// unrecoverable: the job fails at once instead of restarting.
		unrecoverable bool
		// wantFreed are the slots the JobMaster gives back to their
		// TaskManager before the restart.
		wantFreed []string
	}{
		{name: "a TaskManager lost while the attempt deploys",
			setup: func(fc *fakeCluster) { fc.stallWorker(0, "tm-2") },
			fail: func(t *testing.T, fc *fakeCluster) {
				<-fc.connected(0, "tm-2").asked
				fc.d.TaskManagerLost(resourcemanager.LostTaskManager{ID: "tm-2", Reason: "no heartbeat for 50s (heartbeat.timeout)", HeartbeatTimeout: true})
			},
			wantClass: "*jobmanager.TaskManagerLostError", wantTM: "tm-2"},
		{name: "a worker that dies while the attempt deploys",
			setup: func(fc *fakeCluster) { fc.stallWorker(0, "tm-2") },
			fail: func(t *testing.T, fc *fakeCluster) {
				w := fc.connected(0, "tm-2")
				<-w.asked
				w.kill()
			},
			wantClass: "*jobmanager.WorkerLostError", wantTM: "tm-2"},
		{name: "a worker that exits before it connects",
			setup: func(fc *fakeCluster) { fc.crashWorker(0, "tm-2") },
			fail: func(t *testing.T, fc *fakeCluster) {
				// At once: the fake Dispatcher waits 30 s for a worker's
				// Hello; the test would see that timeout's failure.
				fc.d.WorkerExited(fc.crashedWorker(0, "tm-2"))
			},
			wantClass: "*jobmanager.WorkerExitedError", wantTM: "tm-2",
			wantMessage: "exit status 2; the end of its stderr:\npanic: the job binary crashed in worker mode"},
		{name: "a TaskManager that cannot start the worker for now",
			setup: func(fc *fakeCluster) {
				fc.refuseWorker(0, "tm-2", status.Error(codes.Unavailable, "taskmanager: fetch job binary: connection refused"))
			},
			wantClass: "*status.Error", wantFreed: []string{"tm-2/slot-0"}},
		{name: "a job binary the JobMaster does not have",
			setup: func(fc *fakeCluster) {
				fc.refuseWorker(0, "tm-2", status.Error(codes.NotFound, "taskmanager: the JobMaster has no such job binary"))
			},
			wantClass: "*status.Error", unrecoverable: true},
		{name: "a job binary that does not match its digest",
			setup: func(fc *fakeCluster) {
				fc.refuseWorker(0, "tm-2", status.Error(codes.DataLoss, "taskmanager: job binary does not match its digest"))
			},
			wantClass: "*status.Error", unrecoverable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const t0 = 1_700_000_000_000
			fc := newFakeCluster(t, t0)
			tc.setup(fc)
			id := fc.submit(t.TempDir())
			if tc.fail != nil {
				tc.fail(t, fc)
			}
			if tc.unrecoverable {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				in, err := fc.d.Wait(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				var u *restart.Unrecoverable
				if in.Status != jobmaster.StatusFailed || !errors.As(in.Err, &u) || in.Restarts != 0 {
					t.Fatalf("the job ended %s after %d restarts with %v; want FAILED at once with an unrecoverable error", in.Status, in.Restarts, in.Err)
				}
				checkException(t, in, tc.wantClass, tc.wantTM)
				return
			}
			// The job restarts, and its next attempt runs on both
			// TaskManagers.
			fc.worker(1, "tm-1")
			fc.worker(1, "tm-2")
			var in Info
			eventually(t, "the job running its second attempt", func() bool {
				in, _ = fc.d.Job(id)
				return in.Status == jobmaster.StatusRunning && in.Restarts == 1
			})
			checkException(t, in, tc.wantClass, tc.wantTM)
			if !strings.Contains(in.Exceptions[0].Message, tc.wantMessage) {
				t.Errorf("exception message %q, want it to contain %q", in.Exceptions[0].Message, tc.wantMessage)
			}
			// A TaskManager that refused its worker gets its slot back
			// (the ResourceManager offers it again); no other slot is freed
			// while the job runs.
			if got := fc.freedSlots(); !slices.Equal(got, tc.wantFreed) {
				t.Errorf("freed slots %q, want %q", got, tc.wantFreed)
			}
		})
	}
}

// checkException checks the job's only exception: its type and
// TaskManager.
func checkException(t *testing.T, in Info, class, tm string) {
	t.Helper()
	if len(in.Exceptions) != 1 {
		t.Fatalf("exceptions %+v, want one", in.Exceptions)
	}
	if e := in.Exceptions[0]; e.Class != class || e.TaskManagerID != tm {
		t.Errorf("exception %+v, want class %s on TaskManager %q", e, class, tm)
	}
}

// TestWorkerExitOfAnotherAttempt checks that only the exit of a worker of
// the current attempt fails it: the report of an older attempt's worker
// (its session already ended, the job restarted), or of a worker the
// attempt does not have, changes nothing; the exit of a running worker of
// the current attempt fails its tasks, with the cause.
func TestWorkerExitOfAnotherAttempt(t *testing.T) {
	fc := newFakeCluster(t, 1_700_000_000_000)
	fc.crashWorker(0, "tm-2")
	id := fc.submit(t.TempDir())
	old := fc.crashedWorker(0, "tm-2")
	fc.d.WorkerExited(old)
	fc.worker(1, "tm-1")
	fc.worker(1, "tm-2")
	var in Info
	eventually(t, "the job running its second attempt", func() bool {
		in, _ = fc.d.Job(id)
		return in.Status == jobmaster.StatusRunning && in.Restarts == 1
	})

	// Attempt 0's report again, and reports of workers attempt 1 does
	// not have.
	other := old
	other.Attempt = 1 // not attempt 1's worker id
	unknown := old
	unknown.Attempt, unknown.TaskManager, unknown.Worker = 1, "tm-9", workerID(id, 1, "tm-9")
	jm, err := fc.d.job(id)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []resourcemanager.ExitedWorker{old, other, unknown} {
		// The decision is taken at once, by the report's caller.
		xe := &WorkerExitedError{TaskManager: e.TaskManager, Worker: e.Worker, Status: e.Status, StderrTail: e.StderrTail}
		if jm.exec.workerExited(e.Attempt, xe) {
			t.Errorf("the report of worker %s of attempt %d on %s failed attempt 1", e.Worker, e.Attempt, e.TaskManager)
		}
		fc.d.WorkerExited(e)
	}
	if in, _ = fc.d.Job(id); in.Status != jobmaster.StatusRunning || in.Restarts != 1 || len(in.Exceptions) != 1 {
		t.Fatalf("after reports of other attempts' workers: %s, %d restarts, exceptions %+v", in.Status, in.Restarts, in.Exceptions)
	}

	// The exit of attempt 1's running worker on tm-1 fails its tasks.
	fc.d.WorkerExited(resourcemanager.ExitedWorker{TaskManager: "tm-1", Job: id, Attempt: 1, Worker: workerID(id, 1, "tm-1"),
		Status: "signal: killed", StderrTail: "out of memory"})
	fc.worker(2, "tm-1")
	fc.worker(2, "tm-2")
	eventually(t, "the job running its third attempt", func() bool {
		in, _ = fc.d.Job(id)
		return in.Status == jobmaster.StatusRunning && in.Restarts == 2
	})
	if len(in.Exceptions) != 2 {
		t.Fatalf("exceptions %+v, want two", in.Exceptions)
	}
	var found bool
	for _, e := range in.Exceptions {
		if e.Class == "*jobmanager.WorkerExitedError" && e.TaskManagerID == "tm-1" && strings.Contains(e.Message, "signal: killed") &&
			strings.Contains(e.Message, "out of memory") {
			found = true
		}
	}
	if !found {
		t.Errorf("exceptions %+v, want one of the exit of the worker on tm-1", in.Exceptions)
	}
}
