package stream_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/stream"
)

type keyCount struct {
	Key   int64
	Count int64
}

// countingJob is a bounded generator → per-key counter with keyed state →
// collect sink. progress counts records the counter processed.
func countingJob(par int, n, keys int64, progress *atomic.Int64, opts ...stream.Option) (*stream.Environment, *stream.Collected[keyCount]) {
	env, counted := countingStream(par, n, keys, progress, opts...)
	return env, stream.Collect(counted)
}

func countingStream(par int, n, keys int64, progress *atomic.Int64, opts ...stream.Option) (*stream.Environment, stream.DataStream[keyCount]) {
	opts = append([]stream.Option{stream.WithParallelism(par), stream.WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	env := stream.NewEnvironment(opts...)
	src := stream.DataGen(env, n, 20000, func(i int64) int64 { return i }).UID("numbers")
	count := stream.NewValueDescriptor[int64]("count")
	counted := stream.KeyedProcess(stream.KeyBy(src, func(i int64) int64 { return i % keys }),
		stream.KeyedProcessFuncs[int64, int64, keyCount]{Element: func(ctx *stream.KeyedContext[int64], v int64, out stream.Collector[keyCount]) error {
			st := stream.Value(ctx, count)
			c, err := st.Value()
			if err != nil {
				return err
			}
			c++
			progress.Add(1)
			out.Collect(keyCount{ctx.CurrentKey(), c})
			return st.Update(c)
		}}).UID("counter")
	return env, counted
}

func waitProgress(t *testing.T, p *atomic.Int64, atLeast int64) {
	t.Helper()
	testwait.EventuallyNil(t, 20*time.Second, fmt.Sprintf("the job to process %d records", atLeast), func() error {
		if n := p.Load(); n < atLeast {
			return fmt.Errorf("the job processed only %d records", n)
		}
		return nil
	})
}

// TestStopWithSavepointAndRescale2To3To1 stops a job with a savepoint,
// resumes it at another parallelism twice, and checks that every key's
// count runs 1..n/keys exactly once over the three runs: keyed state moved
// by key group, and source positions resumed.
func TestStopWithSavepointAndRescale2To3To1(t *testing.T) {
	const n, keys = 30000, 50
	dir := t.TempDir()
	all := map[int64][]int64{}
	collect := func(c *stream.Collected[keyCount]) {
		for _, kc := range c.Values() {
			all[kc.Key] = append(all[kc.Key], kc.Count)
		}
	}
	savepoint := ""
	for i, par := range []int{2, 3, 1} {
		var progress atomic.Int64
		opts := []stream.Option{stream.WithCheckpointing(time.Hour, filepath.Join(dir, "checkpoints"))}
		if savepoint != "" {
			opts = append(opts, stream.WithSavepoint(savepoint, false))
		}
		env, got := countingJob(par, n, keys, &progress, opts...)
		client, err := env.ExecuteAsync(context.Background(), fmt.Sprintf("run %d", i))
		if err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			waitProgress(t, &progress, 3000)
			savepoint, err = client.StopWithSavepoint(filepath.Join(dir, "savepoints"), false)
			if err != nil {
				t.Fatalf("run %d: stop with savepoint: %v", i, err)
			}
			if _, err := os.Stat(filepath.Join(savepoint, "_metadata")); err != nil {
				t.Fatalf("savepoint %s has no metadata: %v", savepoint, err)
			}
		}
		res, err := client.Wait()
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if i < 2 && res.Savepoint != savepoint {
			t.Fatalf("run %d: result names savepoint %q, want %q", i, res.Savepoint, savepoint)
		}
		collect(got)
	}
	for k := int64(0); k < keys; k++ {
		cs := all[k]
		if int64(len(cs)) != n/keys {
			t.Fatalf("key %d: %d counts over three runs, want %d", k, len(cs), n/keys)
		}
		seen := map[int64]bool{}
		for _, c := range cs {
			if c < 1 || c > n/keys || seen[c] {
				t.Fatalf("key %d: count %d duplicated or out of range", k, c)
			}
			seen[c] = true
		}
	}
}

func TestRestoreRejectsStateOfMissingOperators(t *testing.T) {
	dir := t.TempDir()
	var progress atomic.Int64
	env, _ := countingJob(2, 1_000_000, 10, &progress, stream.WithCheckpointing(time.Hour, filepath.Join(dir, "checkpoints")))
	client, err := env.ExecuteAsync(context.Background(), "first")
	if err != nil {
		t.Fatal(err)
	}
	waitProgress(t, &progress, 100)
	sp, err := client.StopWithSavepoint(filepath.Join(dir, "savepoints"), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Wait(); err != nil {
		t.Fatal(err)
	}
	// The same job without the counter (its UID is gone).
	build := func(allow bool) error {
		env := stream.NewEnvironment(stream.WithParallelism(2), stream.WithLogger(slog.New(slog.DiscardHandler)), stream.WithSavepoint(sp, allow))
		src := stream.DataGen(env, 100, 0, func(i int64) int64 { return i }).UID("numbers")
		stream.Discard(stream.Map(src, func(i int64) int64 { return i }).UID("something-else"))
		_, err := env.Execute("second")
		return err
	}
	err = build(false)
	if !errors.Is(err, jobmaster.ErrUnmatchedState) || !strings.Contains(err.Error(), "uid:counter") {
		t.Fatalf("want an error naming the unmatched operator uid:counter, got %v", err)
	}
	if err := build(true); err != nil {
		t.Fatalf("with allowNonRestoredState the restore must drop the state: %v", err)
	}
}

// TestCorruptCheckpointFallsBackToThePreviousOne corrupts the newest
// checkpoint just before a failure: recovery must skip it (naming the
// file) and restore the one before, so the final state is still exact.
func TestCorruptCheckpointFallsBackToThePreviousOne(t *testing.T) {
	const n, keys = 20000, 5
	dir := t.TempDir()
	var logs strings.Builder
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg := conf.New().Set("execution.checkpointing.num-retained", "3").Set("restart-strategy.type", "fixed-delay").
		Set("restart-strategy.fixed-delay.attempts", "3").Set("restart-strategy.fixed-delay.delay", "0 ms")
	var progress atomic.Int64
	var corrupted atomic.Bool
	var corruptedFile atomic.Value
	env, counted := countingStream(2, n, keys, &progress, stream.WithConfiguration(cfg), stream.WithLogger(logger),
		stream.WithCheckpointing(10*time.Millisecond, filepath.Join(dir, "checkpoints")))
	// Fail once, after at least two checkpoints exist, corrupting the newest.
	got := stream.Collect(stream.Map(counted, func(kc keyCount) keyCount {
		if progress.Load() > n/2 && !corrupted.Load() {
			chks, _ := filepath.Glob(filepath.Join(dir, "checkpoints", "*", "chk-*", "_metadata"))
			if len(chks) >= 2 && corrupted.CompareAndSwap(false, true) {
				sort.Strings(chks)
				newest := chks[len(chks)-1]
				for _, c := range chks {
					if chkNum(c) > chkNum(newest) {
						newest = c
					}
				}
				files, _ := filepath.Glob(filepath.Join(filepath.Dir(newest), "task-*"))
				os.WriteFile(files[0], []byte("garbage"), 0o644)
				corruptedFile.Store(files[0])
				panic("injected failure after corrupting " + files[0])
			}
		}
		return kc
	}))
	res, err := env.Execute("fallback")
	if err != nil {
		t.Fatal(err)
	}
	if !corrupted.Load() || res.Restarts != 1 {
		t.Fatalf("corrupted=%v restarts=%d; the test did not exercise recovery", corrupted.Load(), res.Restarts)
	}
	logMu.Lock()
	l := logs.String()
	logMu.Unlock()
	// A checkpoint in flight at the failure may complete after the
	// corruption; recovery then rightly uses that newer one. Otherwise it
	// must skip the corrupt one, naming the file, for an older one.
	corrupt := chkNum(filepath.Join(filepath.Dir(corruptedFile.Load().(string)), "_metadata"))
	var recovered int
	if i := strings.Index(l, "recovering from checkpoint"); i >= 0 {
		fmt.Sscanf(l[i+strings.Index(l[i:], "checkpoint=")+len("checkpoint="):], "%d", &recovered)
	}
	switch {
	case recovered == corrupt:
		t.Fatalf("recovery restored the corrupt checkpoint %d", corrupt)
	case recovered < corrupt && (!strings.Contains(l, "skipping an unusable checkpoint") || !strings.Contains(l, corruptedFile.Load().(string))):
		t.Fatalf("recovery fell back to %d without reporting the corrupt file %v:\n%s", recovered, corruptedFile.Load(), l)
	}
	final := map[int64]int64{}
	for _, kc := range got.Values() {
		final[kc.Key] = max(final[kc.Key], kc.Count)
	}
	for k := int64(0); k < keys; k++ {
		if final[k] != n/keys {
			t.Errorf("key %d: final count %d, want %d", k, final[k], n/keys)
		}
	}
}

func chkNum(p string) int {
	var n int
	fmt.Sscanf(filepath.Base(filepath.Dir(p)), "chk-%d", &n)
	return n
}

type lockedWriter struct {
	w  *strings.Builder
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestStopWithDrainFiresWindows: stop --drain ends event time before the
// savepoint, so every open window fires; a plain stop leaves them for the
// restored job.
func TestStopWithDrainFiresWindows(t *testing.T) {
	for _, drain := range []bool{false, true} {
		t.Run(fmt.Sprintf("drain=%v", drain), func(t *testing.T) {
			dir := t.TempDir()
			var progress atomic.Int64
			env := stream.NewEnvironment(stream.WithParallelism(2), stream.WithLogger(slog.New(slog.DiscardHandler)),
				stream.WithCheckpointing(time.Hour, filepath.Join(dir, "checkpoints")))
			// Timestamps far in the future of the stream's progress: windows
			// of one hour never close while the job runs.
			strategy := stream.ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(i int64, _ stream.Timestamp) stream.Timestamp { return stream.Timestamp(i) })
			src := stream.DataGenWithWatermarks(env, 1_000_000, 20000, func(i int64) int64 { progress.Add(1); return i }, strategy)
			sum := stream.AggregateFuncs[int64, int64, int64]{AddFn: func(v, a int64) int64 { return a + 1 }, ResultFn: func(a int64) int64 { return a }, MergeFn: func(a, b int64) int64 { return a + b }}
			counts := stream.Collect(stream.WindowAggregate(stream.Window(stream.KeyBy(src, func(i int64) int64 { return i % 3 }),
				stream.TumblingEventTimeWindows(time.Hour)), sum))
			client, err := env.ExecuteAsync(context.Background(), "drain")
			if err != nil {
				t.Fatal(err)
			}
			waitProgress(t, &progress, 2000)
			if _, err := client.StopWithSavepoint(filepath.Join(dir, "sp"), drain); err != nil {
				t.Fatal(err)
			}
			if _, err := client.Wait(); err != nil {
				t.Fatal(err)
			}
			var total int64
			for _, c := range counts.Values() {
				total += c
			}
			if drain && (len(counts.Values()) != 3 || total < 2000) {
				t.Fatalf("drain: windows emitted %v, want one count per key covering every record", counts.Values())
			}
			if !drain && len(counts.Values()) != 0 {
				t.Fatalf("stop without drain fired windows: %v", counts.Values())
			}
		})
	}
}

// TestBroadcastStateSurvivesARescaledRestore: the rules arrive once, are
// kept in broadcast state, and after a stop-with-savepoint and a restore at
// another parallelism (the rules source has finished and sends nothing
// again) every element still sees them.
func TestBroadcastStateSurvivesARescaledRestore(t *testing.T) {
	dir := t.TempDir()
	rules := stream.NewMapDescriptor[string, int64]("factors")
	sp := ""
	for i, par := range []int{2, 3} {
		var progress atomic.Int64
		opts := []stream.Option{stream.WithParallelism(par), stream.WithLogger(slog.New(slog.DiscardHandler)),
			stream.WithCheckpointing(time.Hour, filepath.Join(dir, "checkpoints"))}
		if sp != "" {
			opts = append(opts, stream.WithSavepoint(sp, false))
		}
		env := stream.NewEnvironment(opts...)
		factors := stream.Broadcast(stream.FromElements(env, "x10").UID("rules").SetParallelism(1), rules)
		elems := stream.DataGen(env, 40000, 20000, func(i int64) int64 { return i }).UID("elements")
		out := stream.KeyedBroadcastProcess(stream.ConnectKeyedBroadcast(stream.KeyBy(elems, func(i int64) int64 { return i % 7 }), factors),
			stream.KeyedBroadcastProcessFuncs[int64, int64, string, int64]{
				Broadcast: func(ctx *stream.KeyedBroadcastContext[int64], r string, _ stream.Collector[int64]) error {
					stream.BroadcastStateOf(ctx, rules).Put("factor", 10)
					return nil
				},
				Element: func(ctx *stream.KeyedBroadcastReadOnlyContext[int64], v int64, out stream.Collector[int64]) error {
					f, _ := stream.ReadOnlyBroadcastStateOf(ctx, rules).Get("factor")
					progress.Add(1)
					out.Collect(f)
					return nil
				},
			}).UID("apply-rules")
		got := stream.Collect(out)
		client, err := env.ExecuteAsync(context.Background(), fmt.Sprintf("run %d", i))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			waitProgress(t, &progress, 2000)
			if sp, err = client.StopWithSavepoint(filepath.Join(dir, "sp"), false); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := client.Wait(); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			vals := got.Values()
			if len(vals) == 0 {
				t.Fatal("the restored job processed nothing")
			}
			for _, f := range vals {
				if f != 10 {
					t.Fatalf("after the restore an element saw factor %d: the broadcast state was lost", f)
				}
			}
		}
	}
}

// TestRetainedCheckpointOnCancellationResumesTheJob: with
// RETAIN_ON_CANCELLATION a cancelled job's checkpoints stay, and a new job
// started from the latest one continues its state; without it they are
// removed. A savepoint can be disposed, and a checkpoint cannot.
func TestRetainedCheckpointOnCancellationResumesTheJob(t *testing.T) {
	for _, retain := range []bool{false, true} {
		t.Run(fmt.Sprintf("retain=%v", retain), func(t *testing.T) {
			dir := t.TempDir()
			cfg := conf.New()
			if retain {
				cfg = cfg.Set("execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION")
			}
			var progress atomic.Int64
			env, first := countingJob(2, 1_000_000, 10, &progress, stream.WithConfiguration(cfg),
				stream.WithCheckpointing(20*time.Millisecond, filepath.Join(dir, "chk")))
			client, err := env.ExecuteAsync(context.Background(), "cancelled")
			if err != nil {
				t.Fatal(err)
			}
			var chks []string
			testwait.Eventually(t, 20*time.Second, "a completed checkpoint (no checkpoint completed)", func() bool {
				chks, _ = filepath.Glob(filepath.Join(dir, "chk", "*", "chk-*", "_metadata"))
				return len(chks) > 0
			})
			client.Cancel()
			if _, err := client.Wait(); err == nil {
				t.Fatal("a cancelled job reported success")
			}
			chks, _ = filepath.Glob(filepath.Join(dir, "chk", "*", "chk-*", "_metadata"))
			if !retain {
				if len(chks) != 0 {
					t.Fatalf("checkpoints %v outlived the cancelled job", chks)
				}
				return
			}
			if len(chks) != 1 {
				t.Fatalf("retained checkpoints %v, want the one latest", chks)
			}
			if err := stream.DisposeSavepoint(filepath.Dir(chks[0]), nil); err == nil {
				t.Fatal("disposing a checkpoint as a savepoint must be refused")
			}
			if len(first.Values()) == 0 {
				t.Fatal("the first run processed nothing")
			}
			var progress2 atomic.Int64
			env2, second := countingJob(2, 1_000_000, 10, &progress2, stream.WithSavepoint(filepath.Dir(chks[0]), false),
				stream.WithCheckpointing(time.Hour, filepath.Join(dir, "chk2")))
			c2, err := env2.ExecuteAsync(context.Background(), "resumed")
			if err != nil {
				t.Fatal(err)
			}
			waitProgress(t, &progress2, 100)
			sp, err := c2.StopWithSavepoint(filepath.Join(dir, "sp"), false)
			if err != nil {
				t.Fatal(err)
			}
			c2.Wait()
			// The resumed counts continue from the checkpoint: the smallest
			// count per key in the second run is above 1.
			for _, kc := range second.Values() {
				if kc.Count == 1 {
					t.Fatalf("key %d started again from 1: the checkpoint's state was not restored", kc.Key)
				}
			}
			if err := stream.DisposeSavepoint(sp, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(sp); !os.IsNotExist(err) {
				t.Fatalf("savepoint %s still exists after dispose: %v", sp, err)
			}
		})
	}
}

// TestSavepointRestoresAcrossStateBackends: a savepoint taken with the
// hashmap backend restores into pebble, and a savepoint of that job back
// into the hashmap, with every key's count continuing exactly.
func TestSavepointRestoresAcrossStateBackends(t *testing.T) {
	const n, keys = 24000, 20
	dir := t.TempDir()
	all := map[int64][]int64{}
	sp := ""
	for i, backend := range []string{"hashmap", "pebble", "hashmap"} {
		var progress atomic.Int64
		cfg := conf.New().Set("state.backend.type", backend).Set("state.backend.pebble.localdir", filepath.Join(dir, "pebble"))
		opts := []stream.Option{stream.WithConfiguration(cfg), stream.WithCheckpointing(time.Hour, filepath.Join(dir, "chk"))}
		if sp != "" {
			opts = append(opts, stream.WithSavepoint(sp, false))
		}
		env, got := countingJob(2, n, keys, &progress, opts...)
		client, err := env.ExecuteAsync(context.Background(), backend)
		if err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			waitProgress(t, &progress, 2000)
			if sp, err = client.StopWithSavepoint(filepath.Join(dir, "sp"), false); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := client.Wait(); err != nil {
			t.Fatalf("%s: %v", backend, err)
		}
		for _, kc := range got.Values() {
			all[kc.Key] = append(all[kc.Key], kc.Count)
		}
	}
	for k := int64(0); k < keys; k++ {
		seen := map[int64]bool{}
		for _, c := range all[k] {
			if seen[c] {
				t.Fatalf("key %d: count %d twice", k, c)
			}
			seen[c] = true
		}
		if int64(len(seen)) != n/keys {
			t.Fatalf("key %d: %d counts, want %d", k, len(seen), n/keys)
		}
	}
}

// TestIncrementalPebbleCheckpointsRecoverExactly is the failure test on
// the pebble backend with incremental checkpoints.
func TestIncrementalPebbleCheckpointsRecoverExactly(t *testing.T) {
	const n, keys = 20000, 6
	dir := t.TempDir()
	cfg := conf.New().Set("state.backend.type", "pebble").Set("state.backend.pebble.localdir", filepath.Join(dir, "pebble")).
		Set("execution.checkpointing.incremental", "true").Set("restart-strategy.type", "fixed-delay").
		Set("restart-strategy.fixed-delay.delay", "0 ms").Set("restart-strategy.fixed-delay.attempts", "3").
		Set("execution.checkpointing.num-retained", "2")
	var progress atomic.Int64
	var failed atomic.Bool
	var sharedAtFailure atomic.Int64
	env, counted := countingStream(2, n, keys, &progress, stream.WithConfiguration(cfg),
		stream.WithCheckpointing(20*time.Millisecond, filepath.Join(dir, "chk")))
	got := stream.Collect(stream.Map(counted, func(kc keyCount) keyCount {
		if progress.Load() > n/2 {
			shared, _ := filepath.Glob(filepath.Join(dir, "chk", "*", "shared", "*.sst"))
			if len(shared) > 0 && failed.CompareAndSwap(false, true) {
				sharedAtFailure.Store(int64(len(shared)))
				panic("injected failure")
			}
		}
		return kc
	}))
	res, err := env.Execute("incremental")
	if err != nil {
		t.Fatal(err)
	}
	// The failure waits for SST files in shared storage: the recovery
	// restores from an incremental checkpoint.
	if res.Restarts != 1 || sharedAtFailure.Load() == 0 {
		t.Fatalf("restarts %d, shared SST files at the failure %d: the job did not recover from an incremental checkpoint", res.Restarts, sharedAtFailure.Load())
	}
	final := map[int64]int64{}
	for _, kc := range got.Values() {
		final[kc.Key] = max(final[kc.Key], kc.Count)
	}
	for k := int64(0); k < keys; k++ {
		if want := int64((n - int(k) + keys - 1) / keys); final[k] != want {
			t.Errorf("key %d: final count %d, want %d", k, final[k], want)
		}
	}
}
