//go:build integration

package yarntest

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/yarn"
)

// appMasters are the pids of the ApplicationMaster processes of an
// application (their working directory is a container's of it).
func appMasters(appID string) []int {
	var out []int
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range procs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join(d, "exe"))
		if err != nil || filepath.Base(exe) != "appmaster" {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join(d, "cwd")); err == nil && strings.Contains(cwd, appID) {
			out = append(out, pid)
		}
	}
	return out
}

// TestApplicationMasterKilled: the ApplicationMaster killed mid-job, by
// kill -9 or by SIGTERM (as a NodeManager stops a container whose attempt
// the ResourceManager has not ended: a node decommissioned); YARN starts a
// second attempt (yarn.application-attempts=2), whose JobManager recovers
// the job from the HA metadata in the staging directory (which the first
// attempt, asked on SIGTERM, kept: its attempt was not over) and its
// latest checkpoint; the job finishes with exactly-once output and the
// application SUCCEEDS.
func TestApplicationMasterKilled(t *testing.T) {
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
	}{{"SIGKILL", syscall.SIGKILL}, {"SIGTERM", syscall.SIGTERM}} {
		t.Run(tc.name, func(t *testing.T) { applicationMasterKilled(t, tc.name, tc.sig) })
	}
}

func applicationMasterKilled(t *testing.T, name string, sig syscall.Signal) {
	r := newRig(t)
	yc := r.yarnClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := r.hdfs + "/out"
	// 24000 records at 1000/s: the job runs for about 24 s, so that the
	// kill lands mid-job even on a slow machine (a job that had already
	// finished would leave the second attempt nothing to recover).
	const n, keys = 24000, 6
	args := append([]string{"run", "--target", "yarn-application", "-p", "2", "-Dyarn.application-attempts=2",
		"-Dexecution.checkpointing.dir=hdfs://" + r.hdfs + "/ckpt", "-Dyarn.application.name=yarntest-am-" + name}, small...)
	args = append(args, checkpointed...)
	args = append(args, bins.job, "-out", "hdfs://"+out, "-n", strconv.Itoa(n), "-keys", strconv.Itoa(keys), "-rate", "1000")
	p, appID, _, rc, job := r.deploy(t, ctx, args...)
	testwait.Eventually(t, time.Minute, "a completed checkpoint on HDFS", func() bool { return hasCompletedCheckpoint(ctx, rc, job) })
	first := report(t, ctx, yc, appID).CurrentAttempt
	if st, err := rc.Job(ctx, job); err != nil {
		t.Fatalf("job %s before the kill: %v", job, err)
	} else if string(st.State) != "RUNNING" {
		t.Fatalf("job %s is %s before the kill; the kill must land while it runs", job, st.State)
	}
	ams := appMasters(appID)
	if len(ams) != 1 {
		t.Fatalf("ApplicationMaster processes of %s: %v, want one", appID, ams)
	}
	if err := syscall.Kill(ams[0], sig); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	t.Logf("killed the ApplicationMaster (pid %d, attempt %v) with %v", ams[0], first, sig)
	testwait.Eventually(t, 2*time.Minute, "a second attempt", func() bool {
		rep := report(t, ctx, yc, appID)
		return rep.CurrentAttempt != first
	})
	t.Logf("second attempt %v %v after the kill", report(t, ctx, yc, appID).CurrentAttempt, time.Since(killed).Round(time.Millisecond))
	succeeded(t, p, appID)
	checkExactlyOnce(t, r.fs, out, n, keys)
	// The second attempt's ApplicationMaster recovered the job (same id)
	// with a checkpoint, and did not run the program again.
	recovered, kept := false, false
	var logs []string
	for dir, files := range r.containerLogs(t, appID) {
		if !slices.Contains(files, "jobmanager.log") {
			continue
		}
		b, _ := os.ReadFile(filepath.Join(dir, "jobmanager.log"))
		log := string(b)
		logs = append(logs, filepath.Base(dir)+":\n"+log)
		if sig == syscall.SIGTERM && strings.Contains(log, "keeping the staging directory for another") {
			kept = true
		}
		if strings.Contains(log, `msg="recovering job"`) && strings.Contains(log, "job="+job) &&
			strings.Contains(log, "not running the program again") && strings.Contains(log, `msg="recovering from checkpoint"`) {
			recovered = true
			t.Logf("%s recovered job %s", filepath.Base(dir), job)
		}
	}
	if !recovered {
		t.Errorf("no ApplicationMaster log of %s shows job %s recovered from a checkpoint; the logs:\n%s", appID, job, strings.Join(logs, "\n"))
	}
	if sig == syscall.SIGTERM && !kept {
		t.Errorf("the first ApplicationMaster's log does not say it kept the staging directory on SIGTERM")
	}
	r.stagingGone(t, appID)
	noContainersLeft(t, ctx, yc, appID)
}

// TestKilledThroughYARNResumes: `yarn application -kill` of a running
// yarn-application (the ResourceManager ends the attempt, then its
// NodeManager stops the ApplicationMaster with SIGTERM) suspends the job as
// Flink does: its checkpoints stay on HDFS, so the job resumes in a new
// application with run -s from its latest checkpoint and the output is
// exactly once across both. The ApplicationMaster, told by the
// ResourceManager that its attempt is over, deletes the staging directory
// on the SIGTERM. A staging directory of an ended application that is left
// anyway (its ApplicationMaster SIGKILLed first; made here again in its
// place) is deleted by the next submission, which says so.
func TestKilledThroughYARNResumes(t *testing.T) {
	r := newRig(t)
	yc := r.yarnClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	out, ckpt := r.hdfs+"/out", r.hdfs+"/ckpt"
	const n, keys = 24000, 6
	args := func(name string, extra ...string) []string {
		a := append([]string{"run", "--target", "yarn-application", "-p", "2", "-Dexecution.checkpointing.dir=hdfs://" + ckpt,
			"-Dyarn.application.name=" + name}, small...)
		a = append(a, checkpointed...)
		a = append(a, extra...)
		return append(a, bins.job, "-out", "hdfs://"+out, "-n", strconv.Itoa(n), "-keys", strconv.Itoa(keys), "-rate", "1000")
	}
	p, appID, _, rc, job := r.deploy(t, ctx, args("yarntest-yarn-kill")...)
	testwait.Eventually(t, time.Minute, "a completed checkpoint", func() bool { return hasCompletedCheckpoint(ctx, rc, job) })
	id, err := yarn.ParseApplicationID(appID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := yc.ForceKillApplication(ctx, id, "killed by TestKilledThroughYARNResumes"); err != nil {
		t.Fatal(err)
	}
	if rep, err := yc.WaitForState(ctx, id, 200*time.Millisecond, yarn.StateKilled, yarn.StateFinished, yarn.StateFailed); err != nil {
		t.Fatal(err)
	} else if rep.State != yarn.StateKilled {
		t.Fatalf("%s is %s after the kill, want KILLED", appID, rep.State)
	}
	if outText, err := p.wait(); err == nil {
		t.Errorf("sluice run of the killed application exited 0:\n%s", outText)
	}
	noContainersLeft(t, ctx, yc, appID)
	r.stagingGone(t, appID)
	swept := false
	for _, f := range containerLogs(t, r.c, appID, "jobmanager.log") {
		b, _ := os.ReadFile(f)
		swept = swept || (strings.Contains(string(b), "the ResourceManager ended the attempt (killed); deleting the staging directory") &&
			strings.Contains(string(b), `msg="yarnam: deleted the staging directory"`))
		var lines []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "staging directory") || strings.Contains(l, "not unregistering") {
				lines = append(lines, l)
			}
		}
		t.Logf("the ApplicationMaster on the kill:\n%s", strings.Join(lines, "\n"))
	}
	if !swept {
		t.Errorf("the ApplicationMaster's log does not say it deleted the staging directory on the kill")
	}
	user, err := hadoop.CurrentUser(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.fs.MkdirAllPrivate(path.Join("/user", user, ".sluice", appID)); err != nil {
		t.Fatal(err)
	}

	// The latest completed checkpoint is still there.
	latest, latestN := "", -1
	for _, c := range r.hdfsCheckpoints(ckpt) {
		k, err := strconv.Atoi(strings.TrimPrefix(path.Base(c), "chk-"))
		if err != nil {
			continue
		}
		if _, err := r.fs.Stat(path.Join(c, "_metadata")); err == nil && k > latestN {
			latest, latestN = c, k
		}
	}
	if latest == "" {
		t.Fatalf("no completed checkpoint (chk-N with _metadata) left in hdfs://%s after the kill: %q", ckpt, r.hdfsCheckpoints(ckpt))
	}
	t.Logf("resuming from hdfs://%s", latest)

	p2 := r.start(ctx, args("yarntest-yarn-kill-resumed", "-s", "hdfs://"+latest)...)
	appID2 := match(t, p2, reAppID, 2*time.Minute)
	succeeded(t, p2, appID2)
	if want := "Deleted the staging directory of ended application " + appID + " (KILLED)"; !strings.Contains(p2.out.String(), want) {
		t.Errorf("the resuming submission did not say %q", want)
	}
	r.stagingGone(t, appID)
	r.stagingGone(t, appID2)
	checkExactlyOnce(t, r.fs, out, n, keys)
	noContainersLeft(t, ctx, yc, appID2)
}
