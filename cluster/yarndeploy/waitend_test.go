package yarndeploy

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/yarn"
)

// reportsRM answers the reports of one application from a script (the
// last one repeated).
type reportsRM struct {
	fakeRM
	script []yarn.ApplicationReport
	n      int
}

func (r *reportsRM) GetApplicationReport(context.Context, yarn.ApplicationID) (*yarn.ApplicationReport, error) {
	rep := r.script[min(r.n, len(r.script)-1)]
	r.n++
	return &rep, nil
}

// TestWaitEndTellsOfANewAttempt: the client following an application
// says when YARN replaced its ApplicationMaster with a new attempt, and
// where the new one runs; the first RUNNING it attached to is not repeated.
func TestWaitEndTellsOfANewAttempt(t *testing.T) {
	app := yarn.ApplicationID{ClusterTimestamp: 1700000000000, ID: 7}
	at := func(n int32) yarn.ApplicationAttemptID {
		return yarn.ApplicationAttemptID{Application: app, Attempt: n}
	}
	for _, tc := range []struct {
		name   string
		script []yarn.ApplicationReport
		want   []string
	}{
		{name: "one attempt",
			script: []yarn.ApplicationReport{
				{State: yarn.StateRunning, CurrentAttempt: at(1), Host: "node1"},
				{State: yarn.StateFinished, FinalStatus: yarn.FinalSucceeded, CurrentAttempt: at(1), Diagnostics: "the jobs finished"},
			},
			want: []string{
				"application_1700000000000_0007 is FINISHED",
				"application_1700000000000_0007 ended FINISHED, final status SUCCEEDED: the jobs finished",
			}},
		{name: "the ApplicationMaster's host died",
			script: []yarn.ApplicationReport{
				{State: yarn.StateRunning, CurrentAttempt: at(1), Host: "node1"},
				{State: yarn.StateAccepted, CurrentAttempt: at(2), Host: "N/A",
					Diagnostics: "AM Container for appattempt_1700000000000_0007_000001 exited with exitCode: -100\nmore"},
				{State: yarn.StateRunning, CurrentAttempt: at(2), Host: "node3"},
				{State: yarn.StateFinished, FinalStatus: yarn.FinalSucceeded, CurrentAttempt: at(2), Diagnostics: "the jobs finished"},
			},
			want: []string{
				"application_1700000000000_0007: ApplicationMaster attempt 1 ended; YARN started attempt 2, which recovers the jobs: AM Container for appattempt_1700000000000_0007_000001 exited with exitCode: -100",
				"application_1700000000000_0007 is ACCEPTED",
				"application_1700000000000_0007 is RUNNING: ApplicationMaster attempt 2 on node3",
				"application_1700000000000_0007 is FINISHED",
				"application_1700000000000_0007 ended FINISHED, final status SUCCEEDED: the jobs finished",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			d := &Deployer{rm: &reportsRM{script: tc.script}, out: &out, opts: Options{PollInterval: time.Millisecond}}
			if _, err := d.WaitEnd(context.Background(), app); err != nil {
				t.Fatal(err)
			}
			if got := strings.Split(strings.TrimSpace(out.String()), "\n"); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("printed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
