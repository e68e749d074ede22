//go:build integration

package yarntest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/yarn"
)

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// unreachableConf is a Hadoop conf dir like the mini cluster's whose
// ResourceManager addresses are a closed port.
func (r *rig) unreachableConf(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"core-site.xml", "hdfs-site.xml"} {
		b, err := os.ReadFile(filepath.Join(r.c.ConfDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", closedPort(t))
	site := `<?xml version="1.0"?>
<configuration>
  <property><name>yarn.resourcemanager.address</name><value>` + addr + `</value></property>
  <property><name>yarn.resourcemanager.scheduler.address</name><value>` + addr + `</value></property>
</configuration>
`
	if err := os.WriteFile(filepath.Join(dir, "yarn-site.xml"), []byte(site), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestBadInput: deployments that cannot work end with a non-zero exit and
// an error naming what is wrong, within a bounded time, and leave no
// application running.
func TestBadInput(t *testing.T) {
	r := newRig(t)
	yc := r.yarnClient(t)
	job := func(extra ...string) []string {
		args := append(append([]string{"run", "--target", "yarn-application"}, small...), extra...)
		return append(args, bins.job, "-out", "hdfs://"+r.hdfs+"/out", "-n", "10")
	}
	for _, tc := range []struct {
		name    string
		args    []string
		confDir string // "unreachable": a yarn-site.xml pointing at a closed port
		want    []string
	}{
		{name: "unknown queue", args: job("-Dyarn.application.queue=no-such-queue"),
			want: []string{"no-such-queue", "queue"}},
		{name: "ApplicationMaster above the cluster maximum", args: job("-Djobmanager.memory.process.size=64g"),
			want: []string{"maximum"}},
		{name: "TaskManager above the cluster maximum", args: job("-Dtaskmanager.memory.process.size=64g"),
			want: []string{"taskmanager.memory.process.size", "maximum"}},
		{name: "vcores above the cluster maximum", args: job("-Dyarn.containers.vcores=1000"),
			want: []string{"maximum"}},
		{name: "missing job binary", args: []string{"run", "--target", "yarn-application", filepath.Join(r.work, "no-such-job")},
			want: []string{filepath.Join(r.work, "no-such-job")}},
		{name: "unreachable ResourceManager", args: job(), confDir: "unreachable",
			want: []string{"cannot reach the ResourceManager", "yarn.resourcemanager.address"}},
		{name: "session with an unknown queue", args: append([]string{"yarn-session", "-Dyarn.application.queue=no-such-queue"}, small...),
			want: []string{"no-such-queue"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := yc.GetApplications(context.Background(), yarn.ApplicationFilter{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			rr := *r
			if tc.confDir == "unreachable" {
				c := *r.c
				c.ConfDir = r.unreachableConf(t)
				rr.c = &c
			}
			began := time.Now()
			p := rr.start(ctx, tc.args...)
			out, err := p.wait()
			t.Logf("sluice %s (%v, %v):\n%s", strings.Join(tc.args, " "), err, time.Since(began).Round(time.Millisecond), out)
			if ctx.Err() != nil {
				t.Fatalf("sluice did not end within the deadline")
			}
			if err == nil {
				t.Fatalf("sluice exited 0")
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the output does not name %q", w)
				}
			}
			if strings.Contains(out, "panic:") || strings.Contains(out, "goroutine ") {
				t.Errorf("sluice crashed instead of reporting the problem")
			}
			after, err := yc.GetApplications(context.Background(), yarn.ApplicationFilter{})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range after {
				if a.FinishTime.IsZero() && !containsApp(before, a.ID.String()) {
					t.Errorf("application %s (%s) was left %s", a.ID, a.Name, a.State)
				}
			}
		})
	}
}

func containsApp(reps []yarn.ApplicationReport, id string) bool {
	for _, a := range reps {
		if a.ID.String() == id {
			return true
		}
	}
	return false
}
