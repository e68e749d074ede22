// Package minicluster runs a real Hadoop cluster for Sluice's integration tests: one JVM holding a
// MiniDFSCluster (a NameNode and one DataNode) and a MiniYARNCluster (a ResourceManager and two or
// more NodeManagers), every server on 127.0.0.1 with ephemeral ports, all from Hadoop's own jars
// fetched from Maven Central.
//
// The JVM side lives in this directory's Maven project (pom.xml, src/) and is driven by
// integration/scripts/minicluster.sh, which this package calls: "build" once, then "run" as a
// child process that this package owns. The harness writes core-site.xml, hdfs-site.xml,
// yarn-site.xml and a READY file into its conf dir; see [ParseReady].
//
// Tests normally use [Shared] with [RunMain]:
//
//	func TestMain(m *testing.M) { os.Exit(minicluster.RunMain(m)) }
//
//	func TestSomething(t *testing.T) {
//		c := minicluster.Shared(t)
//		// c.ConfDir is a HADOOP_CONF_DIR; c.ResourceManager, c.NameNode, ... are host:port.
//	}
//
// With SLUICE_HADOOP_CONF_DIR set, [Shared] uses that cluster instead of starting one: a harness
// started by hand (minicluster.sh start DIR) or any Hadoop cluster's client conf dir.
package minicluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice/sluice/integration/internal/harness"
)

// Options configures [Start].
type Options struct {
	// NodeManagers is the number of NodeManagers; default 2.
	NodeManagers int
	// Logf receives progress lines (build, start, stop); default: discarded.
	Logf func(format string, args ...any)
	// Secure starts the cluster in secure mode: a MiniKdc, principals and keytabs, and Kerberos
	// authentication on every server (see [Kerberos]). Default false.
	Secure bool
}

// Cluster is a running Hadoop cluster. Addresses are host:port.
type Cluster struct {
	ConfDir         string // Hadoop client conf dir: core-site.xml, hdfs-site.xml, yarn-site.xml
	ResourceManager string // yarn.resourcemanager.address (ApplicationClientProtocol)
	Scheduler       string // yarn.resourcemanager.scheduler.address (ApplicationMasterProtocol)
	NameNode        string // NameNode RPC (ClientProtocol)
	WebApp          string // ResourceManager web UI and REST API
	// NodeManagers lists the NodeManager RPC addresses when the harness runs them; empty for an
	// external cluster.
	NodeManagers []string
	// Fields holds every key of the READY file (or, for an external cluster, the addresses above
	// under the READY keys).
	Fields map[string]string
	// Kerberos describes the KDC, principals and keytabs of a secure cluster; nil otherwise.
	Kerberos *Kerberos

	proc *process // nil for a cluster this process does not own
}

// Errors of Start and Stop; the returned errors wrap one of these and say what happened.
var (
	// ErrHarness: the harness could not be found or built (scripts, java or mvn missing, or the
	// Maven build failed).
	ErrHarness = harness.ErrUnavailable
	// ErrExited: the harness JVM exited before it was READY.
	ErrExited = harness.ErrExited
	// ErrUncleanStop: Stop had to kill the JVM or found processes left behind.
	ErrUncleanStop = harness.ErrUncleanStop
)

// stopTimeouts: a NodeManager with finished applications takes ~10 s to stop; on a loaded
// 2-core machine the whole cluster can take a minute.
var stopTimeouts = harness.StopTimeouts{AfterStdinClose: 90 * time.Second, AfterTerm: 30 * time.Second}

const pollInterval = 200 * time.Millisecond

// process is the harness JVM owned by a Cluster.
type process struct {
	*harness.Process
	root    string // temp dir holding the conf dir; removed by Stop
	workDir string
	logf    func(string, ...any)

	stopOnce sync.Once
	stopErr  error
}

// Start builds the harness if needed, starts its JVM and waits until it is READY or ctx ends.
// The JVM lives until [Cluster.Stop], or until this process exits (it watches its stdin).
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.NodeManagers == 0 {
		opts.NodeManagers = 2
	}
	if opts.NodeManagers < 0 {
		return nil, fmt.Errorf("minicluster: Options.NodeManagers = %d; want >= 1", opts.NodeManagers)
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	script, err := harness.Script("minicluster.sh")
	if err != nil {
		return nil, err
	}
	if err := harness.Build(ctx, script, logf); err != nil {
		return nil, err
	}

	root, err := os.MkdirTemp("", "sluice-minicluster-")
	if err != nil {
		return nil, fmt.Errorf("minicluster: %w", err)
	}
	confDir := filepath.Join(root, "conf")
	harnessDir := filepath.Join(confDir, ".harness")
	if err := os.MkdirAll(harnessDir, 0o755); err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("minicluster: %w", err)
	}
	began := time.Now()
	args := []string{"run", confDir, "--exit-on-stdin-eof", "--nodemanagers", strconv.Itoa(opts.NodeManagers)}
	if opts.Secure {
		args = append(args, "--secure")
	}
	hp, err := harness.Start(script, args,
		filepath.Join(harnessDir, "minicluster.log"))
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	p := &process{Process: hp, root: root, workDir: filepath.Join(harnessDir, "work"), logf: logf}
	logf("minicluster: started JVM pid %d, conf dir %s", hp.Pid(), confDir)

	readyPath := filepath.Join(confDir, ReadyFile)
	var c *Cluster
	err = hp.WaitReady(ctx, pollInterval, func() (bool, error) {
		data, err := os.ReadFile(readyPath)
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("minicluster: reading %s: %w", readyPath, err)
		}
		f, err := ParseReady(readyPath, data)
		if err != nil {
			return false, err
		}
		c = clusterFromReady(confDir, f)
		return true, nil
	})
	if err != nil {
		p.stop(true)
		return nil, fmt.Errorf("minicluster: %w (files kept in %s)", err, root)
	}
	c.proc = p
	logf("minicluster: READY in %s (RM %s, NameNode %s, web %s)",
		time.Since(began).Round(time.Millisecond), c.ResourceManager, c.NameNode, c.WebApp)
	return c, nil
}

// Stop ends a cluster started by [Start]: it closes the JVM's stdin (the harness then stops every
// server and exits), sends SIGTERM to its process group if it is still alive after 90 s and
// SIGKILL 30 s later, kills any YARN container process left running under the cluster's work
// dir, and removes the cluster's temp dir. It returns once the JVM has been waited for. Stop is a
// no-op for a cluster described by [Load] and is safe to call more than once.
func (c *Cluster) Stop() error {
	if c == nil || c.proc == nil {
		return nil
	}
	return c.proc.stop(false)
}

// stop runs once; keep leaves the temp dir (logs) in place, as does a stop with problems.
func (p *process) stop(keep bool) error {
	p.stopOnce.Do(func() {
		problems := p.Stop(stopTimeouts, p.workDir)
		if keep || len(problems) > 0 {
			p.logf("minicluster: stopped; files kept in %s", p.root)
		} else if err := os.RemoveAll(p.root); err != nil {
			problems = append(problems, fmt.Sprintf("removing %s: %v", p.root, err))
		} else {
			p.logf("minicluster: stopped")
		}
		if len(problems) > 0 {
			p.stopErr = fmt.Errorf("minicluster: %w: %s (files kept in %s)",
				ErrUncleanStop, strings.Join(problems, "; "), p.root)
		}
	})
	return p.stopErr
}

// processAlive reports whether a process with this pid exists.
func processAlive(pid int) bool { return harness.ProcessAlive(pid) }

// HadoopCLI runs one of Hadoop's own command-line classes (main class and
// arguments, e.g. org.apache.hadoop.yarn.client.cli.LogsCLI -applicationId
// ID, which is what `yarn logs` runs) against the cluster, with the harness's
// Hadoop jars and the cluster's *-site.xml files first on the class path, as
// Hadoop's scripts run it. It returns the command's standard output, and an
// error carrying its standard error when it fails.
func (c *Cluster) HadoopCLI(ctx context.Context, class string, args ...string) (string, error) {
	script, err := harness.Script("minicluster.sh")
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, script, append([]string{"hadoop", c.ConfDir, class}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("minicluster: %s %s: %w:\n%s", class, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}
