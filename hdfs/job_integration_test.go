//go:build integration

package hdfs_test

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/hdfs"
	"github.com/sluice/sluice/integration/minicluster"
	"github.com/sluice/sluice/internal/runtime/restart"
	"github.com/sluice/sluice/stream"
)

// TestJobCheckpointsToHDFSAndRecovers runs a keyed job that checkpoints to
// hdfs:// on the real MiniDFSCluster, fails it mid-stream, and checks that
// it recovers from the checkpoint on HDFS with every key's count exact.
func TestJobCheckpointsToHDFSAndRecovers(t *testing.T) {
	c := minicluster.Shared(t)
	r := fs.NewResolver()
	if err := hdfs.Register(r, hdfs.Config{Hadoop: clusterConf(t, c)}); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dir := fmt.Sprintf("hdfs://%s/tmp/sluice-job-%d", c.NameNode, time.Now().UnixNano())
	strategy, err := restart.NewFixedDelay(restart.FixedDelayOptions{Attempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	const n, keys = 20000, 4
	env := stream.NewEnvironment(stream.WithParallelism(2), stream.WithLogger(slog.New(slog.DiscardHandler)),
		stream.WithFileSystems(r), stream.WithCheckpointing(50*time.Millisecond, dir), stream.WithRestartStrategy(strategy))
	src := stream.DataGen(env, n, 10000, func(i int64) int64 { return i }).UID("numbers")
	count := stream.NewValueDescriptor[int64]("count")
	var processed atomic.Int64
	var failed atomic.Bool
	counted := stream.KeyedProcess(stream.KeyBy(src, func(i int64) int64 { return i % keys }),
		stream.KeyedProcessFuncs[int64, int64, [2]int64]{Element: func(ctx *stream.KeyedContext[int64], v int64, out stream.Collector[[2]int64]) error {
			if processed.Add(1) > n/2 && failed.CompareAndSwap(false, true) {
				return fmt.Errorf("injected failure")
			}
			st := stream.Value(ctx, count)
			c, err := st.Value()
			if err != nil {
				return err
			}
			out.Collect([2]int64{ctx.CurrentKey(), c + 1})
			return st.Update(c + 1)
		}}).UID("counter")
	got := stream.Collect(counted)
	res, err := env.Execute("hdfs checkpoints")
	if err != nil {
		t.Fatal(err)
	}
	if res.Restarts != 1 || res.Checkpoints == 0 {
		t.Fatalf("restarts %d, checkpoints %d: the job did not recover from a checkpoint", res.Restarts, res.Checkpoints)
	}
	final := map[int64]int64{}
	for _, kc := range got.Values() {
		final[kc[0]] = max(final[kc[0]], kc[1])
	}
	for k := int64(0); k < keys; k++ {
		if final[k] != n/keys {
			t.Errorf("key %d: final count %d, want %d", k, final[k], n/keys)
		}
	}
}
