package jobmanager

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/rest"
	"github.com/sluice/sluice/security/kerberos"
)

const principal = "sluice@EXAMPLE.COM"

func testSession(worker, tm, host string) *session {
	s := newSession(&clusterpb.Hello{JobId: "job", WorkerId: worker, TaskManagerId: tm}, nil, liveness{clock: clock.NewManual(0)})
	s.host = host
	return s
}

// endSession ends a session as its stream would.
func endSession(s *session) {
	s.err = errors.New("the worker exited")
	close(s.done)
}

func reported(expiry, relogins int64) *clusterpb.KerberosStatus {
	return &clusterpb.KerberosStatus{Principal: principal, TgtExpiry: expiry, TgtRenewTill: 1_772_460_000, Relogins: relogins}
}

func login(tm, host string, expiry, relogins int64) WorkerLogin {
	return WorkerLogin{TaskManagerID: tm, Host: host,
		Status: kerberos.Status{Principal: principal, TGTExpiry: expiry, TGTRenewTill: 1_772_460_000, Relogins: relogins}}
}

// The JobMaster keeps the latest login each worker reported, one per
// TaskManager, for as long as the worker's session lasts.
func TestWorkerLogins(t *testing.T) {
	a1 := testSession("job-0-tm-1", "tm-1", "nm1")
	b1 := testSession("job-0-tm-2", "tm-2", "nm2")
	a2 := testSession("job-1-tm-1", "tm-1", "nm1") // tm-1's worker of the next attempt
	var w workerLogins
	for _, step := range []struct {
		name string
		do   func()
		want []WorkerLogin
	}{
		{"nothing reported", func() {}, []WorkerLogin{}},
		{"a worker reports", func() { w.report(a1, reported(100, 0)) }, []WorkerLogin{login("tm-1", "nm1", 100, 0)}},
		{"another worker reports", func() { w.report(b1, reported(200, 0)) },
			[]WorkerLogin{login("tm-1", "nm1", 100, 0), login("tm-2", "nm2", 200, 0)}},
		{"the first reports a re-login", func() { w.report(a1, reported(150, 1)) },
			[]WorkerLogin{login("tm-1", "nm1", 150, 1), login("tm-2", "nm2", 200, 0)}},
		{"a report without a login", func() { w.report(b1, nil) }, []WorkerLogin{login("tm-1", "nm1", 150, 1)}},
		{"the next attempt's worker replaces the first", func() { w.report(a2, reported(300, 0)) },
			[]WorkerLogin{login("tm-1", "nm1", 300, 0)}},
		{"the first's session ends after", func() { w.ended(a1) }, []WorkerLogin{login("tm-1", "nm1", 300, 0)}},
		{"a late report without a login from the first", func() { w.report(a1, nil) }, []WorkerLogin{login("tm-1", "nm1", 300, 0)}},
		{"the worker's session ends", func() { w.ended(a2) }, []WorkerLogin{}},
	} {
		step.do()
		if got := w.list(); !reflect.DeepEqual(got, step.want) {
			t.Fatalf("%s: logins %+v, want %+v", step.name, got, step.want)
		}
	}
}

type fakeTMs struct{ logins []rest.KerberosLoginMetrics }

func (f fakeTMs) TaskManagerInfos(context.Context) ([]restapi.TaskManagerInfo, error) {
	return nil, nil
}
func (f fakeTMs) TaskManagerLogins(context.Context) ([]rest.KerberosLoginMetrics, error) {
	return f.logins, nil
}

// A worker's metrics report carries its login into the JobMaster's view,
// which GET /metrics exports with the JobManager's and the TaskManagers'
// logins and the delegation tokens; nothing without Kerberos.
func TestBackendMetricsLogins(t *testing.T) {
	d, err := NewDispatcher(Config{WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	jm := &jobMaster{d: d, id: "job", name: "word count", plan: &graph.Plan{}, done: make(chan struct{})}
	defer func() {
		close(jm.done) // the job has no owner loop to end it
		d.Close()
	}()
	addTestJob(t, d, jm)
	a := newRemoteAttempt(newRemoteExecutor(jm), 0, nil, jm.plan)
	s := testSession("job-0-tm-1", "tm-1", "nm1.example.com")
	handle := a.handler(s, nil)
	handle(&clusterpb.WorkerMessage{Msg: &clusterpb.WorkerMessage_Metrics{Metrics: &clusterpb.MetricsReport{Kerberos: reported(1_772_377_200, 2)}}})

	tmLogin := rest.KerberosLoginMetrics{Component: rest.ComponentTaskManager, TaskManagerID: "tm-1", Host: "nm1.example.com",
		Principal: principal, TGTExpiry: 1_772_373_600}
	jmStatus := kerberos.Status{Principal: "sluice/am@EXAMPLE.COM", TGTExpiry: 1_772_370_000, ReloginFailures: 1}
	tokens := DelegationTokenStatus{Expiry: 1_772_400_000, Obtained: 3,
		TaskManagers: map[string]int64{"tm-2": 1_772_400_000, "tm-1": 1_772_300_000}}
	secure := Backend{D: d, TMs: fakeTMs{[]rest.KerberosLoginMetrics{tmLogin}}, Host: "am.example.com",
		Kerberos: func() kerberos.Status { return jmStatus }, DelegationTokens: func() DelegationTokenStatus { return tokens }}
	worker := rest.KerberosLoginMetrics{Component: rest.ComponentWorker, TaskManagerID: "tm-1", Host: "nm1.example.com", JobID: "job",
		Principal: principal, TGTExpiry: 1_772_377_200, TGTRenewTill: 1_772_460_000, Relogins: 2}
	for _, tc := range []struct {
		name       string
		b          Backend
		wantLogins []rest.KerberosLoginMetrics
		wantTokens *rest.DelegationTokenMetrics
		wantTMs    []rest.DelegationTokenMetrics
	}{
		{"secure", secure, []rest.KerberosLoginMetrics{
			{Component: rest.ComponentJobManager, Host: "am.example.com", Principal: "sluice/am@EXAMPLE.COM", TGTExpiry: 1_772_370_000, ReloginFailures: 1},
			tmLogin, worker},
			&rest.DelegationTokenMetrics{Component: rest.ComponentJobManager, Expiry: 1_772_400_000, Obtained: 3},
			[]rest.DelegationTokenMetrics{ // sorted by TaskManager
				{Component: rest.ComponentTaskManager, TaskManagerID: "tm-1", Expiry: 1_772_300_000},
				{Component: rest.ComponentTaskManager, TaskManagerID: "tm-2", Expiry: 1_772_400_000}}},
		// Only the worker reported a login here (the JobManager and the
		// TaskManagers have none).
		{"a worker's login only", Backend{D: d, TMs: fakeTMs{}}, []rest.KerberosLoginMetrics{worker}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap, err := tc.b.Metrics(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(snap.KerberosLogins, tc.wantLogins) {
				t.Errorf("logins\n%+v\nwant\n%+v", snap.KerberosLogins, tc.wantLogins)
			}
			if !reflect.DeepEqual(snap.DelegationTokens, tc.wantTokens) {
				t.Errorf("delegation tokens %+v, want %+v", snap.DelegationTokens, tc.wantTokens)
			}
			if !reflect.DeepEqual(snap.TaskManagerTokens, tc.wantTMs) {
				t.Errorf("TaskManagers' delegation tokens %+v, want %+v", snap.TaskManagerTokens, tc.wantTMs)
			}
		})
	}

	// The worker exits: its login is no longer exported.
	endSession(s)
	testwait.EventuallyNil(t, 10*time.Second, "the ended session's login to leave the metrics", func() error {
		snap, err := (Backend{D: d}).Metrics(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(snap.KerberosLogins) != 0 || snap.DelegationTokens != nil {
			return fmt.Errorf("after the worker's session ended: logins %+v", snap.KerberosLogins)
		}
		return nil
	})
}
