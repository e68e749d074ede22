package minicluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice/sluice/integration/internal/harness"
)

func TestMain(m *testing.M) { os.Exit(RunMain(m)) }

// getJSON fetches a ResourceManager REST resource into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %.300s", url, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v in %.300s", url, err, body)
	}
}

func TestResourceManagerREST(t *testing.T) {
	c := Shared(t)

	// Layouts as a real ResourceManager serves them (Hadoop's RM REST API documentation).
	var info struct {
		ClusterInfo struct {
			State                  string `json:"state"`
			ResourceManagerVersion string `json:"resourceManagerVersion"`
		} `json:"clusterInfo"`
	}
	getJSON(t, "http://"+c.WebApp+"/ws/v1/cluster/info", &info)
	if info.ClusterInfo.State != "STARTED" {
		t.Errorf("clusterInfo.state = %q, want STARTED", info.ClusterInfo.State)
	}
	t.Logf("ResourceManager %s, version %s", c.WebApp, info.ClusterInfo.ResourceManagerVersion)

	var nodes struct {
		Nodes struct {
			Node []struct {
				ID    string `json:"id"`
				State string `json:"state"`
			} `json:"node"`
		} `json:"nodes"`
	}
	getJSON(t, "http://"+c.WebApp+"/ws/v1/cluster/nodes", &nodes)
	running := map[string]bool{}
	for _, n := range nodes.Nodes.Node {
		if n.State == "RUNNING" {
			running[n.ID] = true
		}
	}
	if len(running) < 2 {
		t.Fatalf("RUNNING nodes = %v of %+v; want >= 2", running, nodes.Nodes.Node)
	}
	// For a harness cluster, the RM's nodes are exactly the NodeManagers READY lists.
	for _, nm := range c.NodeManagers {
		if !running[nm] {
			t.Errorf("NodeManager %s from READY is not a RUNNING node of the RM (%v)", nm, running)
		}
	}
}

func TestNameNodeAcceptsConnections(t *testing.T) {
	c := Shared(t)
	conn, err := net.DialTimeout("tcp", c.NameNode, 10*time.Second)
	if err != nil {
		t.Fatalf("NameNode %s: %v", c.NameNode, err)
	}
	conn.Close()
}

func TestReadyDescribesCluster(t *testing.T) {
	c := Shared(t)
	for name, addr := range map[string]string{
		"ResourceManager": c.ResourceManager, "Scheduler": c.Scheduler,
		"NameNode": c.NameNode, "WebApp": c.WebApp,
	} {
		if err := checkHostPort(addr); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, name := range []string{"core-site.xml", "hdfs-site.xml", "yarn-site.xml"} {
		if _, err := os.Stat(filepath.Join(c.ConfDir, name)); err != nil {
			t.Errorf("conf dir: %v", err)
		}
	}
	// The site files and READY agree: loading the conf dir without READY gives the same addresses.
	props, err := siteProps(filepath.Join(c.ConfDir, "yarn-site.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := props["yarn.resourcemanager.address"]; got != c.ResourceManager {
		t.Errorf("yarn-site.xml yarn.resourcemanager.address = %q, READY says %q", got, c.ResourceManager)
	}
	if got := props["yarn.resourcemanager.scheduler.address"]; got != c.Scheduler {
		t.Errorf("yarn-site.xml yarn.resourcemanager.scheduler.address = %q, READY says %q", got, c.Scheduler)
	}
	core, err := siteProps(filepath.Join(c.ConfDir, "core-site.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := core["fs.defaultFS"], "hdfs://"+c.NameNode; got != want {
		t.Errorf("core-site.xml fs.defaultFS = %q, want %q", got, want)
	}
	if c.proc != nil {
		// Every server the harness runs listens on loopback.
		for _, addr := range append([]string{c.ResourceManager, c.Scheduler, c.NameNode, c.WebApp}, c.NodeManagers...) {
			host, _, _ := net.SplitHostPort(addr)
			ips, err := net.LookupIP(host)
			if err != nil {
				t.Fatalf("%s: %v", addr, err)
			}
			for _, ip := range ips {
				if !ip.IsLoopback() {
					t.Errorf("%s resolves to non-loopback %s", addr, ip)
				}
			}
		}
	}
}

var distshellLine = regexp.MustCompile(`(?m)^distshell: app=(application_\d+_\d+) containers=(\d+) status=(\w+) elapsed_ms=(\d+)$`)

// TestDistributedShellRunsContainers runs Hadoop's DistributedShell through
// scripts/distshell.sh: its ApplicationMaster and shell containers must really launch.
func TestDistributedShellRunsContainers(t *testing.T) {
	c := Shared(t)
	distshell, err := harness.Script("distshell.sh")
	if err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("sluice-distshell-%d", time.Now().UnixNano())
	const containers = 2

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, distshell, c.ConfDir, "-n", strconv.Itoa(containers), "--", "echo", marker)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err = cmd.Run()
	m := distshellLine.FindStringSubmatch(stdout.String())
	if err != nil || m == nil {
		t.Fatalf("distshell.sh: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if m[3] != "SUCCEEDED" || m[2] != strconv.Itoa(containers) {
		t.Fatalf("distshell result %q", m[0])
	}
	t.Logf("%s", m[0])

	// Each shell container wrote the marker to its stdout in the NodeManagers' log dirs, which lie
	// under the harness's work dir (READY work_dir). An external cluster keeps them elsewhere.
	workDir := c.Fields[KeyWorkDir]
	if st, err := os.Stat(workDir); workDir == "" || err != nil || !st.IsDir() {
		t.Logf("container logs not on this machine (work_dir %q); checked the exit status only", workDir)
		return
	}
	var hits []string
	err = filepath.WalkDir(workDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "stdout" || !strings.Contains(path, m[1]) {
			return err
		}
		data, err := os.ReadFile(path)
		if err == nil && strings.TrimSpace(string(data)) == marker {
			hits = append(hits, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != containers {
		t.Fatalf("found the marker in %d container stdout files, want %d: %q", len(hits), containers, hits)
	}
}

// TestStartStop starts a second, one-NodeManager cluster of its own and checks that Stop ends
// the JVM, frees its ports and removes its files.
func TestStartStop(t *testing.T) {
	if os.Getenv(EnvConfDir) != "" {
		t.Logf("%s is set; starting a private harness anyway", EnvConfDir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{NodeManagers: 1, Logf: t.Logf})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			c.Stop()
		}
	}()
	if got := c.Fields["nodemanagers"]; got != "1" || len(c.NodeManagers) != 1 {
		t.Errorf("READY nodemanagers = %q, NodeManagers = %q; want 1", got, c.NodeManagers)
	}
	pid := c.proc.Pid()
	if readyPID := c.Fields[KeyPID]; readyPID != strconv.Itoa(pid) {
		t.Errorf("READY pid = %s, but the JVM child is %d", readyPID, pid)
	}
	root := c.proc.root

	began := time.Now()
	err = c.Stop()
	stopped = true
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("Stop took %s", time.Since(began).Round(time.Millisecond))
	if processAlive(pid) {
		t.Errorf("JVM %d still alive after Stop", pid)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("%s still exists after Stop (%v)", root, err)
	}
	for _, addr := range []string{c.ResourceManager, c.NameNode, c.WebApp} {
		if conn, err := net.DialTimeout("tcp", addr, 2*time.Second); err == nil {
			conn.Close()
			t.Errorf("%s still accepts connections after Stop", addr)
		}
	}
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}
