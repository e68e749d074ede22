package dockercluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/integration/internal/harness"
)

// EnvDir names the environment variable that points tests at a cluster already started with
// docker-cluster.sh start DIR: [Shared] then uses it and leaves it running.
const EnvDir = "SLUICE_DOCKER_CLUSTER_DIR"

// sharedStartTimeout bounds the start of the shared cluster: dockerd, the images when they are
// not cached (debootstrap and a docker build, about 3 minutes) and seven nodes' daemons.
const sharedStartTimeout = 15 * time.Minute

var shared struct {
	once    sync.Once
	cluster *Cluster
	err     error
}

// Shared returns the cluster of this test process. With $SLUICE_DOCKER_CLUSTER_DIR set it loads
// that cluster; otherwise the first call starts one, which the package's RunMain
// (minicluster.RunMain, the same function) stops after the last test. A cluster that cannot be
// had fails the test: a missing Docker engine is a failure, not a skip.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	if !harness.InMain() {
		t.Fatal("dockercluster: " + harness.NeedMainMessage)
	}
	shared.once.Do(func() {
		logf := func(format string, args ...any) {
			if testing.Verbose() {
				fmt.Fprintf(os.Stderr, format+"\n", args...)
			}
		}
		if dir := os.Getenv(EnvDir); dir != "" {
			shared.cluster, shared.err = Load(dir)
			if shared.cluster != nil {
				shared.cluster.logf = logf
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), sharedStartTimeout)
		defer cancel()
		c, err := Start(ctx, Options{Logf: logf})
		if err != nil {
			shared.err = err
			return
		}
		shared.cluster = c
		harness.AtExit("dockercluster", func(keep bool) error {
			if keep {
				for _, n := range c.Nodes {
					fmt.Fprintf(os.Stderr, "dockercluster: last lines of %s:\n%s\n", n.Name, c.Logs(context.Background(), n.Name, 30))
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			return c.Stop(ctx)
		})
	})
	if shared.err != nil {
		t.Fatalf("dockercluster: no docker cluster for this test: %v", shared.err)
	}
	return shared.cluster
}

// Load describes a cluster started by docker-cluster.sh start dir, which it does not own.
func Load(dir string) (*Cluster, error) {
	script, err := harness.Script("docker-cluster.sh")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScript, err)
	}
	path := filepath.Join(dir, "READY")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dockercluster: %s=%s: %w", EnvDir, dir, err)
	}
	c, err := ParseReady(path, data)
	if err != nil {
		return nil, err
	}
	c.Dir, c.script, c.logf = dir, script, func(string, ...any) {}
	return c, nil
}
