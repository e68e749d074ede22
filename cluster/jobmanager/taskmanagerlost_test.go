package jobmanager

import (
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/cluster/resourcemanager"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
)

// ended is a task end an attempt reported.
type ended struct {
	task checkpoint.TaskID
	err  error
}

// recordedEvents records what an attempt reports to its job.
type recordedEvents struct{ ended chan ended }

func (r recordedEvents) TaskEnded(id checkpoint.TaskID, err error)           { r.ended <- ended{id, err} }
func (recordedEvents) TaskFinished(checkpoint.TaskID)                        {}
func (recordedEvents) Acknowledged(checkpoint.TaskID, int64, jobmaster.Ack)  {}
func (recordedEvents) Declined(checkpoint.TaskID, int64, error)              {}
func (recordedEvents) CoordinatorState(int64, jobmaster.CoordinatorSnapshot) {}

// testJob is a job whose current attempt runs subtask 0 of each of its two
// chains in a worker on tm-a and subtask 1 on tm-b; the job also holds a
// slot on tm-c, where nothing runs. Its workers' sessions are in memory.
type testJob struct {
	d        *Dispatcher
	jm       *jobMaster
	a        *remoteAttempt
	events   recordedEvents
	sessions map[string]*runningSession // by TaskManager
}

func newTestJob(t *testing.T, tmAddr func(tm string) string) *testJob {
	t.Helper()
	d, err := NewDispatcher(Config{WorkDir: t.TempDir(), Log: testLogger(t), Clock: clock.NewManual(0)})
	if err != nil {
		t.Fatal(err)
	}
	plan := &graph.Plan{Chains: []*graph.Chain{{ID: 0, Name: "source", Parallelism: 2}, {ID: 1, Name: "sink", Parallelism: 2}}}
	jm := &jobMaster{d: d, id: "job", name: "test", plan: plan, pool: newSlotPool(), log: testLogger(t), done: make(chan struct{})}
	jm.exec = newRemoteExecutor(jm)
	d.mu.Lock()
	d.jobs[jm.id], d.order = jm, append(d.order, jm.id)
	d.mu.Unlock()
	var offered []slot
	for i, tm := range []string{"tm-a", "tm-b", "tm-c"} {
		offered = append(offered, slot{allocation: "alloc-" + tm, tm: tm, tmAddr: tmAddr(tm), index: int32(i)})
	}
	jm.pool.offer(offered)

	j := &testJob{d: d, jm: jm, events: recordedEvents{ended: make(chan ended, 16)}, sessions: map[string]*runningSession{}}
	j.a = newRemoteAttempt(jm.exec, 0, j.events, plan)
	for k, tm := range []string{"tm-a", "tm-b"} {
		j.a.onTaskManager(tm, tmAddr(tm))
		r := startSession(t, &clusterpb.Hello{JobId: "job", WorkerId: workerID("job", 0, tm), TaskManagerId: tm},
			liveness{interval: time.Second, timeout: 5 * time.Second, clock: clock.NewManual(0)})
		j.a.connected(r.s, tm)
		for _, c := range plan.Chains {
			j.a.where[checkpoint.TaskID{Vertex: c.ID, Subtask: k}] = r.s
		}
		j.sessions[tm] = r
	}
	for _, r := range j.sessions {
		r.s.setHandler(j.a.handler(r.s, make(chan error, 1)))
	}
	jm.exec.setCurrent(j.a)
	j.a.Start()
	t.Cleanup(func() {
		close(jm.done) // the job has no owner loop to end it
		d.Close()
	})
	return j
}

// TestTaskManagerLostFailsTheTasksThere: the ResourceManager losing a
// TaskManager fails exactly the tasks the job's attempt ran there, with a
// *TaskManagerLostError naming it (and matching ErrHeartbeatTimeout when
// it was silent), ends their worker's session, and drops its slots; the
// attempt's other worker keeps running. Each failure is a *TaskFailure
// naming its subtask and the TaskManager, for the exception history. The job's owner loop then fails
// the attempt and restarts it as for any task failure.
func TestTaskManagerLostFailsTheTasksThere(t *testing.T) {
	for _, tc := range []struct {
		name        string
		lost        resourcemanager.LostTaskManager
		wantEnded   []checkpoint.TaskID
		wantTimeout bool
		wantWords   []string
	}{
		{name: "silent for heartbeat.timeout",
			lost:      resourcemanager.LostTaskManager{ID: "tm-a", Reason: "no heartbeat for 3s (heartbeat.timeout)", HeartbeatTimeout: true},
			wantEnded: []checkpoint.TaskID{{Vertex: 0, Subtask: 0}, {Vertex: 1, Subtask: 0}}, wantTimeout: true,
			wantWords: []string{"TaskManager tm-a lost", "heartbeat timeout", "no heartbeat for 3s"}},
		{name: "its connection closed",
			lost:      resourcemanager.LostTaskManager{ID: "tm-b", Reason: "the TaskManager closed its session"},
			wantEnded: []checkpoint.TaskID{{Vertex: 0, Subtask: 1}, {Vertex: 1, Subtask: 1}},
			wantWords: []string{"TaskManager tm-b lost", "closed its session"}},
		{name: "a TaskManager where the attempt runs nothing",
			lost: resourcemanager.LostTaskManager{ID: "tm-c", Reason: "no heartbeat for 3s (heartbeat.timeout)", HeartbeatTimeout: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newTestJob(t, func(tm string) string { return "127.0.0.1:1" })
			j.d.TaskManagerLost(tc.lost)

			var got []checkpoint.TaskID
			for range tc.wantEnded {
				select {
				case e := <-j.events.ended:
					got = append(got, e.task)
					var lost *TaskManagerLostError
					if !errors.As(e.err, &lost) || lost.TaskManager != tc.lost.ID {
						t.Fatalf("task %s ended with %v, want a *TaskManagerLostError of %s", e.task, e.err, tc.lost.ID)
					}
					// The exception history names the failure's type, its
					// subtask and the lost TaskManager.
					var tf *TaskFailure
					if !errors.As(e.err, &tf) || tf.Class != "*jobmanager.TaskManagerLostError" || tf.TaskManagerID != tc.lost.ID || tf.TaskName == "" {
						t.Errorf("task %s ended with %#v, want a *TaskFailure of class *jobmanager.TaskManagerLostError on %s", e.task, e.err, tc.lost.ID)
					}
					if errors.Is(e.err, ErrHeartbeatTimeout) != tc.wantTimeout {
						t.Errorf("errors.Is(%v, ErrHeartbeatTimeout) = %v, want %v", e.err, !tc.wantTimeout, tc.wantTimeout)
					}
					for _, w := range tc.wantWords {
						if !strings.Contains(e.err.Error(), w) {
							t.Errorf("%q does not say %q", e.err, w)
						}
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("tasks ended: %v; want %v", got, tc.wantEnded)
				}
			}
			slices.SortFunc(got, checkpoint.TaskID.Compare)
			if !slices.Equal(got, tc.wantEnded) {
				t.Fatalf("ended tasks %v, want %v", got, tc.wantEnded)
			}
			// The other sessions run on, so their tasks have not ended.
			for tm, r := range j.sessions {
				select {
				case <-r.s.done:
					if tm != tc.lost.ID {
						t.Errorf("the session on %s ended: %v", tm, r.s.err)
					}
				default:
					if tm == tc.lost.ID {
						t.Errorf("the session on the lost %s did not end", tm)
					}
				}
			}
			select {
			case e := <-j.events.ended:
				t.Fatalf("task %s on a live TaskManager ended: %v", e.task, e.err)
			default:
			}
			for _, s := range j.jm.pool.close() {
				if s.tm == tc.lost.ID {
					t.Errorf("the job still holds the lost TaskManager's slot %s", s.allocation)
				}
			}
		})
	}
}

// TestKillingWorkersSkipsALostTaskManager: closing an attempt asks its
// TaskManagers to stop its workers, and waits for them; a TaskManager
// that does not answer (frozen) is waited for only until it is lost, so
// the restart is not held up by it.
func TestKillingWorkersSkipsALostTaskManager(t *testing.T) {
	// A TaskManager that accepts connections and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	j := newTestJob(t, func(tm string) string {
		if tm == "tm-a" {
			return ln.Addr().String()
		}
		return "127.0.0.1:1" // refuses at once
	})
	killed := make(chan struct{})
	start := time.Now()
	go func() {
		j.a.killWorkers()
		close(killed)
	}()
	select {
	case <-killed:
		t.Fatal("killing the workers did not wait for the silent TaskManager")
	case <-time.After(200 * time.Millisecond): // it waits: a silent peer cannot be told apart from a slow one
	}
	j.d.TaskManagerLost(resourcemanager.LostTaskManager{ID: "tm-a", Reason: "no heartbeat for 3s (heartbeat.timeout)", HeartbeatTimeout: true})
	select {
	case <-killed:
	case <-time.After(5 * time.Second):
		t.Fatal("killing the workers still waits for a lost TaskManager")
	}
	if d := time.Since(start); d >= 10*time.Second {
		t.Fatalf("killing the workers took %v: the lost TaskManager was waited for until the RPC timeout", d)
	}
	// Once lost, it is not asked at all.
	start = time.Now()
	j.a.killWorkers()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("killing the workers again took %v", d)
	}
}
