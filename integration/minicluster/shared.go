package minicluster

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/integration/internal/harness"
)

// EnvConfDir names the environment variable that points tests at an already running cluster: a
// conf dir holding READY (a harness started with minicluster.sh start DIR) or the *-site.xml
// files of any Hadoop cluster.
const EnvConfDir = "SLUICE_HADOOP_CONF_DIR"

// sharedStartTimeout bounds the build and start of the shared cluster (the first build downloads
// the Hadoop jars from Maven Central).
const sharedStartTimeout = 10 * time.Minute

// shared is the cluster of this test binary (see harness: one TestMain per binary, and the
// cluster must outlive every test in it).
var shared struct {
	once    sync.Once
	cluster *Cluster
	err     error
}

// Shared returns the cluster for this test process. If $SLUICE_HADOOP_CONF_DIR is set it
// describes that cluster (see [Load]); otherwise the first call starts a harness, which [RunMain]
// stops after the last test. A cluster that cannot be had fails the test (t.Fatal): in CI a
// missing component is a failure, not a skip. Shared must be called under [RunMain].
func Shared(t testing.TB) *Cluster {
	t.Helper()
	if !harness.InMain() {
		t.Fatal("minicluster: " + harness.NeedMainMessage)
	}
	shared.once.Do(func() {
		if dir := os.Getenv(EnvConfDir); dir != "" {
			shared.cluster, shared.err = Load(dir)
			if shared.err != nil {
				shared.err = fmt.Errorf("%s=%s: %w", EnvConfDir, dir, shared.err)
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), sharedStartTimeout)
		defer cancel()
		c, err := Start(ctx, Options{Logf: stderrLogf})
		if err != nil {
			shared.err = err
			return
		}
		shared.cluster = c
		harness.AtExit("minicluster", func(keep bool) error {
			err := c.proc.stop(keep)
			if keep && err == nil {
				fmt.Fprintf(os.Stderr, "minicluster: a test failed; cluster files (logs, container logs) kept in %s\n", c.proc.root)
			}
			return err
		})
	})
	if shared.err != nil {
		t.Fatalf("minicluster: no Hadoop cluster for this test: %v", shared.err)
	}
	return shared.cluster
}

// RunMain runs the tests and then stops the servers that [Shared] (and kafkabroker.Shared)
// started. If a test failed, their files are kept and their place printed. If one does not stop
// cleanly the exit code is non-zero even when every test passed. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(minicluster.RunMain(m)) }
func RunMain(m *testing.M) int { return harness.RunMain(m) }

// stderrLogf reports the shared cluster's progress on stderr in verbose runs.
func stderrLogf(format string, args ...any) {
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}
}
