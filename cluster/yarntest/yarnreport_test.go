//go:build integration

package yarntest

import (
	"context"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/integration/minicluster"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/yarn"
)

// yarnClient is a client of the mini cluster's ResourceManager.
func (r *rig) yarnClient(t testing.TB) *yarn.Client {
	t.Helper()
	h, err := hadoop.LoadFromEnvironment(func(k string) string {
		if k == "HADOOP_CONF_DIR" {
			return r.c.ConfDir
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	user, err := hadoop.CurrentUser(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if r.login != nil { // a secure cluster knows the user by the principal's short name
		user = shortName(r.login.Principal())
	}
	rms, err := h.ResourceManagerAddresses()
	if err != nil {
		t.Fatal(err)
	}
	cfg := yarn.ClientConfig{User: user, Logger: slog.New(slog.DiscardHandler)}
	for _, rm := range rms {
		cfg.ResourceManagers = append(cfg.ResourceManagers, rm.Address)
	}
	// On the secure cluster as the client principal.
	if err := yarn.ConfigureKerberos(&cfg, h, r.login); err != nil {
		t.Fatal(err)
	}
	yc, err := yarn.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { yc.Close() })
	return yc
}

// report is the ResourceManager's report of an application.
func report(t testing.TB, ctx context.Context, yc *yarn.Client, appID string) *yarn.ApplicationReport {
	t.Helper()
	id, err := yarn.ParseApplicationID(appID)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := yc.GetApplicationReport(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// checkIdentity checks the application's type, name, queue and tags in the
// ResourceManager's report. The CapacityScheduler reports a queue by its
// path (root.default for default).
func checkIdentity(t *testing.T, rep *yarn.ApplicationReport, typ, name, queue string, tags []string) {
	t.Helper()
	got := slices.Clone(rep.Tags)
	slices.Sort(got)
	want := slices.Clone(tags)
	slices.Sort(want)
	if rep.Type != typ || rep.Name != name || (rep.Queue != queue && rep.Queue != "root."+queue) || !slices.Equal(got, want) {
		t.Errorf("application report: type %q, name %q, queue %q, tags %q; want %q, %q, %q, %q",
			rep.Type, rep.Name, rep.Queue, rep.Tags, typ, name, queue, want)
	}
}

// noContainersLeft waits until the application has ended, the
// ResourceManager's report counts no container of it, and no process runs
// in one of its containers (working directory under the application's
// directory on a NodeManager). Node reports are not used: other packages'
// tests may share the mini cluster.
func noContainersLeft(t *testing.T, ctx context.Context, yc *yarn.Client, appID string) {
	t.Helper()
	var last string
	testwait.Eventually(t, time.Minute, "no containers of "+appID+" left", func() bool {
		rep := report(t, ctx, yc, appID)
		if rep.FinishTime.IsZero() || rep.NumContainers > 0 {
			last = fmt.Sprintf("application %v, %d containers", rep.State, rep.NumContainers)
			return false
		}
		if pids := processesOf(appID); len(pids) > 0 {
			last = fmt.Sprintf("processes %v still run in containers of %s", pids, appID)
			return false
		}
		return true
	})
	if last != "" {
		t.Logf("seen while waiting for the containers to go: %s", last)
	}
}

// processesOf lists the processes whose working directory is in one of
// the application's containers.
func processesOf(appID string) []int {
	var out []int
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range procs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join(d, "cwd")); err == nil && strings.Contains(cwd, "/"+appID+"/") {
			out = append(out, pid)
		}
	}
	return out
}

// hdfsCheckpoints lists the chk-N directories under dir on HDFS.
func (r *rig) hdfsCheckpoints(dir string) []string {
	var out []string
	var walk func(p string, depth int)
	walk = func(p string, depth int) {
		if depth > 3 {
			return
		}
		fis, err := r.fs.ReadDir(p)
		if err != nil {
			return
		}
		for _, fi := range fis {
			q := path.Join(p, fi.Name())
			if fi.IsDir() && strings.HasPrefix(fi.Name(), "chk-") {
				out = append(out, q)
			} else if fi.IsDir() {
				walk(q, depth+1)
			}
		}
	}
	walk(dir, 0)
	return out
}

// harness reports whether the cluster is this project's mini cluster, on
// this machine (its READY names the work_dir holding the NodeManagers' log
// dirs), rather than another Hadoop named by SLUICE_HADOOP_CONF_DIR (e.g.
// integration/docker's).
func (r *rig) harness() bool { return r.c.Fields[minicluster.KeyWorkDir] != "" }

// containerLogs maps each of the application's container log directories
// (under the mini cluster's NodeManager log dirs) to the files it holds;
// it is empty on a cluster that is not the harness's.
func (r *rig) containerLogs(t testing.TB, appID string) map[string][]string {
	t.Helper()
	work := r.c.Fields[minicluster.KeyWorkDir]
	if work == "" {
		return nil // another cluster's NodeManager disks: see harness
	}
	dirs := map[string][]string{}
	filepath.WalkDir(work, func(p string, de iofs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return nil
		}
		dir := filepath.Dir(p)
		if filepath.Base(filepath.Dir(dir)) == appID && strings.HasPrefix(filepath.Base(dir), "container_") {
			dirs[dir] = append(dirs[dir], de.Name())
		}
		return nil
	})
	return dirs
}

// checkTaskManagerLogs checks that every TaskManager container's log
// directory holds taskmanager.out, .err and a taskmanager.log showing its
// start, and that workers wrote their .out and .err there; it returns the
// number of TaskManager containers.
func (r *rig) checkTaskManagerLogs(t *testing.T, appID string) int {
	t.Helper()
	if !r.harness() {
		t.Logf("container log directories not checked: %s is a cluster whose NodeManager disks this test cannot see", r.c.ConfDir)
		return 0
	}
	var tms, workerOut, workerErr int
	for dir, files := range r.containerLogs(t, appID) {
		if !slices.Contains(files, "taskmanager.out") {
			continue // the ApplicationMaster's
		}
		tms++
		for _, f := range []string{"taskmanager.err", "taskmanager.log"} {
			if !slices.Contains(files, f) {
				t.Errorf("%s has no %s: %q", dir, f, files)
			}
		}
		b, err := os.ReadFile(filepath.Join(dir, "taskmanager.log"))
		if err == nil && !strings.Contains(string(b), `msg="TaskManager started"`) {
			t.Errorf("%s/taskmanager.log does not show the start:\n%s", dir, b)
		}
		if err == nil && !strings.Contains(string(b), filepath.Base(dir)) {
			t.Errorf("%s/taskmanager.log does not name its container", dir)
		}
		for _, f := range files {
			if strings.HasPrefix(f, "taskmanager.") {
				continue
			}
			switch filepath.Ext(f) {
			case ".out":
				workerOut++
			case ".err":
				workerErr++
			}
		}
	}
	if tms == 0 {
		t.Errorf("no TaskManager container log directory of %s under %s", appID, r.c.Fields[minicluster.KeyWorkDir])
	}
	if workerOut == 0 || workerErr == 0 {
		t.Errorf("workers' logs in the container log dirs: %d .out, %d .err; want some of each", workerOut, workerErr)
	}
	return tms
}

// checkNoSecretInLogs checks that no file of the application's container
// log directories (the ApplicationMaster's JobManager log among them)
// holds secret, and that the ApplicationMaster logged the program's run
// with the count of its arguments.
func (r *rig) checkNoSecretInLogs(t *testing.T, appID, secret string) {
	t.Helper()
	if !r.harness() {
		t.Logf("container logs not checked for the secret: %s is a cluster whose NodeManager disks this test cannot see", r.c.ConfDir)
		return
	}
	counted := false
	for dir, files := range r.containerLogs(t, appID) {
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Errorf("reading %s/%s: %v", dir, f, err)
				continue
			}
			if strings.Contains(string(b), secret) {
				t.Errorf("%s/%s holds the program's secret argument", dir, f)
			}
			counted = counted || regexp.MustCompile(`msg="running the application" .*binary=\S+ args=\d+`).Match(b)
		}
	}
	if !counted {
		t.Errorf("no container log of %s says it runs the application with the number of its arguments", appID)
	}
}

// checkAggregatedLogs runs Hadoop's own `yarn logs -applicationId` (LogsCLI)
// for an ended application: once the NodeManagers have aggregated its logs
// to HDFS, they hold the ApplicationMaster's and every TaskManager's log,
// stdout and stderr.
func checkAggregatedLogs(t *testing.T, ctx context.Context, r *rig, appID string) {
	t.Helper()
	want := []string{"LogType:jobmanager.log", "LogType:jobmanager.err", "LogType:taskmanager.log", "LogType:taskmanager.out", "LogType:taskmanager.err"}
	var out string
	var lastErr error
	err := testwait.Poll(time.Minute, func() bool {
		out, lastErr = r.c.HadoopCLI(ctx, "org.apache.hadoop.yarn.client.cli.LogsCLI", "-applicationId", appID)
		if lastErr != nil {
			return false
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				return false
			}
		}
		return true
	})
	if err != nil {
		t.Errorf("yarn logs -applicationId %s does not show %q within a minute (last error: %v); it printed:\n%.3000s", appID, want, lastErr, out)
		return
	}
	if !strings.Contains(out, "LogAggregationType: AGGREGATED") {
		t.Errorf("yarn logs -applicationId %s: the logs are not the aggregated ones:\n%.2000s", appID, out)
	}
	if !strings.Contains(out, "registered with the ResourceManager") {
		t.Errorf("yarn logs -applicationId %s: the ApplicationMaster's log does not show its registration:\n%.2000s", appID, out)
	}
	t.Logf("yarn logs -applicationId %s: %d bytes of aggregated logs", appID, len(out))
}
