//go:build integration

package yarntest

import (
	"context"
	"net/url"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/yarn"
)

var (
	reJobID     = regexp.MustCompile(`Job has been submitted with JobID (\S+)`)
	reSavepoint = regexp.MustCompile(`Savepoint completed\. Path: (\S+)`)
)

// listed reports whether a list output's line of job id says state.
func listed(out, id, state string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " : "+id+" : ") && strings.HasSuffix(l, "("+state+")") {
			return true
		}
	}
	return false
}

// TestSessionTwoJobs: three jobs run at once on one yarn-session; list shows
// them running; a savepoint of one lands on HDFS, another is stopped with
// a savepoint on HDFS (FINISHED), and the third is cancelled through the
// CLI while the first keeps running; the session is
// stopped with the first still running: it ends FINISHED, SUCCEEDED, no
// container of it is left and its staging directory is gone. The ResourceManager reports the session's name and type.
func TestSessionTwoJobs(t *testing.T) {
	r := newRig(t)
	yc := r.yarnClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o, err := r.sluice(t, ctx, append([]string{"yarn-session", "-Dyarn.application.name=yarntest-two-jobs", "-Dyarn.tags=two-jobs"}, small...)...)
	if err != nil {
		t.Fatalf("sluice yarn-session: %v", err)
	}
	m := reAppID.FindStringSubmatch(o)
	if m == nil {
		t.Fatal("no application id printed")
	}
	appID := m[1]
	stopped := false
	defer func() {
		if !stopped {
			r.sluice(t, context.Background(), "yarn-session", "--stop", "-Dyarn.application.id="+appID)
		}
	}()
	session := []string{"--target", "yarn-session", "-Dyarn.application.id=" + appID}
	checkIdentity(t, report(t, ctx, yc, appID), "Sluice", "yarntest-two-jobs", "default", []string{"two-jobs"})

	// Three long jobs (100 records/s for a minute), detached.
	var ids []string
	for i, name := range []string{"a", "b", "c"} {
		args := append([]string{"run", "--detached", "-p", "1",
			"-Dexecution.checkpointing.dir=hdfs://" + r.hdfs + "/ckpt-" + name}, session...)
		args = append(args, checkpointed...)
		args = append(args, bins.job, "-out", "hdfs://"+r.hdfs+"/out-"+name, "-n", "6000", "-keys", "2", "-rate", "100")
		o, err := r.sluice(t, ctx, args...)
		if err != nil {
			t.Fatalf("sluice run --detached (job %d): %v", i, err)
		}
		m := reJobID.FindStringSubmatch(o)
		if m == nil {
			t.Fatalf("job %d: no job id printed", i)
		}
		ids = append(ids, m[1])
	}
	if ids[0] == ids[1] || ids[1] == ids[2] || ids[0] == ids[2] {
		t.Fatalf("two jobs share an id: %q", ids)
	}

	testwait.Eventually(t, 2*time.Minute, "list to show the three jobs RUNNING", func() bool {
		o, err := r.start(ctx, append([]string{"list"}, session...)...).wait()
		return err == nil && listed(o, ids[0], "RUNNING") && listed(o, ids[1], "RUNNING") && listed(o, ids[2], "RUNNING")
	})

	spDir := "hdfs://" + r.hdfs + "/savepoints"
	o, err = r.sluice(t, ctx, append(append([]string{"savepoint"}, session...), ids[0], spDir)...)
	if err != nil {
		t.Fatalf("sluice savepoint %s: %v", ids[0], err)
	}
	m = reSavepoint.FindStringSubmatch(o)
	if m == nil {
		t.Fatal("savepoint: no path printed")
	}
	// The JobManager reports the savepoint's path as a URI of the
	// directory's file system (hdfs://...), as Flink does.
	sp, err := url.Parse(m[1])
	if err != nil || sp.Scheme != "hdfs" || !strings.HasPrefix(sp.Path, r.hdfs+"/savepoints/") {
		t.Fatalf("savepoint path %s (%v) is not under %s", m[1], err, spDir)
	}
	if _, err := r.fs.Stat(path.Join(sp.Path, "_metadata")); err != nil {
		t.Errorf("savepoint metadata on HDFS: %v", err)
	}

	// stop with a savepoint (Flink's stop -p): the job ends FINISHED
	// and its savepoint is on HDFS.
	o, err = r.sluice(t, ctx, append(append([]string{"stop", "--savepointPath", spDir}, session...), ids[2])...)
	if err != nil {
		t.Fatalf("sluice stop %s: %v\n%s", ids[2], err, o)
	}
	m = reSavepoint.FindStringSubmatch(o)
	if m == nil {
		t.Fatalf("stop: no savepoint path printed:\n%s", o)
	}
	if sp, err := url.Parse(m[1]); err != nil || sp.Scheme != "hdfs" {
		t.Errorf("stop's savepoint path %s is not on HDFS", m[1])
	} else if _, err := r.fs.Stat(path.Join(sp.Path, "_metadata")); err != nil {
		t.Errorf("stop's savepoint metadata on HDFS: %v", err)
	}
	testwait.Eventually(t, time.Minute, "list --all to show "+ids[2]+" FINISHED", func() bool {
		o, err := r.start(ctx, append([]string{"list", "--all"}, session...)...).wait()
		return err == nil && listed(o, ids[2], "FINISHED")
	})

	if o, err := r.sluice(t, ctx, append(append([]string{"cancel"}, session...), ids[1])...); err != nil || !strings.Contains(o, "Cancelled job "+ids[1]) {
		t.Fatalf("sluice cancel %s: %v", ids[1], err)
	}
	testwait.Eventually(t, time.Minute, "list --all to show "+ids[1]+" CANCELED and "+ids[0]+" RUNNING", func() bool {
		o, err := r.start(ctx, append([]string{"list", "--all"}, session...)...).wait()
		return err == nil && listed(o, ids[1], "CANCELED") && listed(o, ids[0], "RUNNING")
	})

	// Stopping the session with a job still running: the JobManager
	// cancels it and the application ends SUCCEEDED, as Flink's
	// yarn-session stop.
	o, err = r.sluice(t, ctx, "yarn-session", "--stop", "-Dyarn.application.id="+appID)
	if err != nil {
		t.Fatalf("sluice yarn-session --stop: %v", err)
	}
	stopped = true
	if !strings.Contains(o, "Asked the JobManager") || strings.Contains(o, "killing") {
		t.Errorf("the session was not shut down through its JobManager:\n%s", o)
	}
	if rep := report(t, ctx, yc, appID); rep.State != yarn.StateFinished || rep.FinalStatus != yarn.FinalSucceeded {
		t.Errorf("the stopped session is %s, final status %s (%s); want FINISHED, SUCCEEDED", rep.State, rep.FinalStatus, rep.Diagnostics)
	}
	r.stagingGone(t, appID)
	noContainersLeft(t, ctx, yc, appID)
}

// TestSessionKilled: sluice yarn-session --kill kills a session through
// YARN; the ApplicationMaster, its attempt ended, deletes the staging
// directory on the SIGTERM, and the CLI, which deletes it too, takes it
// gone without complaint. The application is KILLED, no container is left.
func TestSessionKilled(t *testing.T) {
	r := newRig(t)
	yc := r.yarnClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o, err := r.sluice(t, ctx, append([]string{"yarn-session", "-Dyarn.application.name=yarntest-session-killed"}, small...)...)
	if err != nil {
		t.Fatalf("sluice yarn-session: %v", err)
	}
	m := reAppID.FindStringSubmatch(o)
	if m == nil {
		t.Fatal("no application id printed")
	}
	appID := m[1]
	o, err = r.sluice(t, ctx, "yarn-session", "--kill", "-Dyarn.application.id="+appID)
	if err != nil {
		t.Fatalf("sluice yarn-session --kill: %v\n%s", err, o)
	}
	if rep := report(t, ctx, yc, appID); rep.State != yarn.StateKilled {
		t.Errorf("%s is %s after --kill, want KILLED", appID, rep.State)
	}
	r.stagingGone(t, appID)
	noContainersLeft(t, ctx, yc, appID)
	deleted := false
	for _, f := range containerLogs(t, r.c, appID, "jobmanager.log") {
		b, _ := os.ReadFile(f)
		deleted = deleted || strings.Contains(string(b), "the ResourceManager ended the attempt (killed); deleting the staging directory")
	}
	if !deleted {
		t.Error("the ApplicationMaster's log does not say it deleted the staging directory on the kill")
	}
}
