//go:build integration

package yarntest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/rest/restclient"
	"github.com/sluice/sluice/yarn"
)

var (
	reDistShell = regexp.MustCompile(`distshell: app=(\S+) containers=(\d+) status=SUCCEEDED elapsed_ms=(\d+)`)
	reRequested = regexp.MustCompile(`msg="yarndriver: requesting TaskManager containers".* count=(\d+)`)
)

// BenchmarkYarnApplicationToRunning (make bench-yarn) times `sluice run
// --target yarn-application --detached` until the job is RUNNING (polling
// REST /jobs), against Hadoop's DistributedShell running a trivial command
// in as many containers on the same mini cluster, and reports the
// TaskManager containers the driver requested and launched against the
// number the job needs. The mini cluster is SLUICE_HADOOP_CONF_DIR's, or
// one started by TestMain.
func BenchmarkYarnApplicationToRunning(b *testing.B) {
	r := newRig(b)
	yc := r.yarnClient(b)
	const parallelism, slotsPerTM = 2, 1
	var sluiceMS, dsMS, requested, launched float64
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		args := append([]string{"run", "--target", "yarn-application", "--detached", "-p", strconv.Itoa(parallelism),
			"-Dtaskmanager.numberOfTaskSlots=" + strconv.Itoa(slotsPerTM), "-Dyarn.application.name=bench-yarn"}, small...)
		args = append(args, bins.job, "-out", "hdfs://"+r.hdfs+"/out-"+strconv.Itoa(i), "-n", "1000000", "-rate", "1000")
		began := time.Now()
		p := r.start(ctx, args...)
		appID := match(b, p, reAppID, 2*time.Minute)
		addr := match(b, p, reREST, time.Second)
		rc, err := restclient.New(addr)
		if err != nil {
			b.Fatal(err)
		}
		runningJob(b, ctx, rc, 2*time.Minute)
		elapsed := time.Since(began)
		sluiceMS += float64(elapsed.Milliseconds())
		id, _ := yarn.ParseApplicationID(appID)
		if _, err := yc.ForceKillApplication(ctx, id, "bench-yarn: measured"); err != nil {
			b.Fatal(err)
		}
		p.wait()
		req, lau := r.containersOf(b, appID)
		requested += float64(req)
		launched += float64(lau)

		ds := exec.CommandContext(ctx, "../../integration/scripts/distshell.sh", r.c.ConfDir,
			"-n", strconv.Itoa(parallelism/slotsPerTM), "--", "echo", "distshell-ok")
		out, err := ds.Output()
		m := reDistShell.FindStringSubmatch(string(out))
		if err != nil || m == nil {
			b.Fatalf("distshell.sh: %v\n%s", err, out)
		}
		ms, _ := strconv.Atoi(m[3])
		dsMS += float64(ms)
		b.Logf("run %d: sluice %s → job RUNNING %v (TaskManager containers requested %d, launched %d, needed %d); DistributedShell %s (%s containers) %d ms",
			i, appID, elapsed.Round(time.Millisecond), req, lau, parallelism/slotsPerTM, m[1], m[2], ms)
		cancel()
	}
	n := float64(b.N)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(sluiceMS/n, "sluice-to-running-ms")
	b.ReportMetric(dsMS/n, "distshell-ms")
	b.ReportMetric(sluiceMS/dsMS, "ratio")
	b.ReportMetric(requested/n, "containers-requested")
	b.ReportMetric(launched/n, "containers-launched")
	b.ReportMetric(float64(parallelism/slotsPerTM), "containers-needed")
}

// containersOf reads the first ApplicationMaster's log of an application:
// the TaskManager containers its driver requested (its largest absolute
// ask) and launched.
func (r *rig) containersOf(t testing.TB, appID string) (requested, launched int) {
	t.Helper()
	if !r.harness() {
		t.Logf("containers not counted: the ApplicationMaster's log is on a NodeManager disk this benchmark cannot see")
		return -1, -1
	}
	var log string
	testwait.Eventually(t, 30*time.Second, "the ApplicationMaster's log of "+appID, func() bool {
		for dir, files := range r.containerLogs(t, appID) {
			if strings.HasSuffix(dir, "_01_000001") && slices.Contains(files, "jobmanager.log") {
				b, _ := os.ReadFile(filepath.Join(dir, "jobmanager.log"))
				log = string(b)
				return strings.Contains(log, "launching TaskManager")
			}
		}
		return false
	})
	// Asks are absolute (the outstanding count, re-sent as it changes),
	// so what was requested is the largest ask, not their sum.
	for _, m := range reRequested.FindAllStringSubmatch(log, -1) {
		n, _ := strconv.Atoi(m[1])
		requested = max(requested, n)
	}
	return requested, strings.Count(log, `msg="yarndriver: launching TaskManager"`)
}
