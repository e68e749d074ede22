package file_test

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/file"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/stream"
)

// fileSinkCtx is a SinkContext for driving a file sink writer directly:
// processing time moves only when the test advances it, and due timers
// then fire in deadline order, as on a task.
type fileSinkCtx struct {
	subtask int
	now     int64
	seq     int
	timers  []*fileSinkTimer
	// fileSystems resolves the sink's base URI (nil: local paths only).
	fileSystems *fs.Resolver
}

type fileSinkTimer struct {
	at, seq   int64
	fn        func(stream.Timestamp) error
	cancelled bool
}

func (c *fileSinkCtx) Subtask() int                            { return c.subtask }
func (c *fileSinkCtx) Parallelism() int                        { return 1 }
func (c *fileSinkCtx) JobName() string                         { return "file sink test" }
func (c *fileSinkCtx) CurrentProcessingTime() stream.Timestamp { return stream.Timestamp(c.now) }
func (c *fileSinkCtx) FileSystems() *fs.Resolver               { return c.fileSystems }
func (c *fileSinkCtx) MetricGroup() stream.MetricGroup         { return nopGauges{} }

// nopGauges is a MetricGroup that keeps nothing: the file sink publishes
// no gauges.
type nopGauges struct{}

func (nopGauges) SetGauge(string, float64) {}
func (nopGauges) RemoveGauge(string)       {}
func (c *fileSinkCtx) RegisterProcessingTimer(at stream.Timestamp, fn func(stream.Timestamp) error) func() {
	c.seq++
	tm := &fileSinkTimer{at: int64(at), seq: int64(c.seq), fn: fn}
	c.timers = append(c.timers, tm)
	return func() { tm.cancelled = true }
}

func (c *fileSinkCtx) advance(t *testing.T, ms int64) {
	t.Helper()
	c.now += ms
	for {
		due := -1
		for i, tm := range c.timers {
			if tm.at <= c.now && (due < 0 || tm.at < c.timers[due].at || tm.at == c.timers[due].at && tm.seq < c.timers[due].seq) {
				due = i
			}
		}
		if due < 0 {
			return
		}
		tm := c.timers[due]
		c.timers = slices.Delete(c.timers, due, due+1)
		if tm.cancelled {
			continue
		}
		if err := tm.fn(stream.Timestamp(c.now)); err != nil {
			t.Fatalf("timer at %d: %v", tm.at, err)
		}
	}
}

type fileWriter = stream.CommittingWriter[string, file.Committable]

func openFileWriter(t *testing.T, sink *file.RowSink[string], ctx *fileSinkCtx) fileWriter {
	t.Helper()
	w, err := sink.CreateWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w.(fileWriter)
}

// filesUnder maps every file under dir (by slash path relative to dir,
// hidden ones included) to its content.
func filesUnder(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d iofs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

const uuidRE = `[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}`

var (
	finalPartRE      = regexp.MustCompile(`^(?:(.*)/)?part-(` + uuidRE + `)-(\d+)-(\d+)$`)
	inProgressPartRE = regexp.MustCompile(`^(?:(.*)/)?\.part-(` + uuidRE + `)-(\d+)-(\d+)\.inprogress\.` + uuidRE + `$`)
)

// partsInOrder returns the contents of the final part files under dir in
// counter order, failing on any other file.
func partsInOrder(t *testing.T, dir string) []string {
	t.Helper()
	type part struct {
		counter int
		content string
	}
	var parts []part
	for name, content := range filesUnder(t, dir) {
		m := finalPartRE.FindStringSubmatch(name)
		if m == nil {
			t.Fatalf("unexpected file %s", name)
		}
		n, _ := strconv.Atoi(m[4])
		parts = append(parts, part{n, content})
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].counter < parts[j].counter })
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = p.content
	}
	return out
}

func TestFileSinkRollsBySizeAndCommitsIdempotently(t *testing.T) {
	dir := t.TempDir()
	sink := file.ForRowFormat(dir, file.SimpleStringEncoder[string]()).
		WithBucketAssigner(file.BasePathBucketAssigner[string]()).
		WithRollingPolicy(file.DefaultRollingPolicy{MaxPartSize: 10, RolloverInterval: -1, InactivityInterval: -1})
	w := openFileWriter(t, sink, &fileSinkCtx{subtask: 3, now: 1_000_000})
	for _, v := range []string{"aaaa", "bbbb", "cccc", "dddd", "eeee"} {
		if err := w.Write(context.Background(), v, stream.NoTimestamp); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	// Before the commit, parts exist only under hidden in-progress names.
	inProgress := map[string]string{}
	for name, content := range filesUnder(t, dir) {
		m := inProgressPartRE.FindStringSubmatch(name)
		if m == nil || m[3] != "3" {
			t.Fatalf("before the commit: unexpected file %s", name)
		}
		inProgress[m[4]] = content
	}
	if want := map[string]string{"0": "aaaa\nbbbb\n", "1": "cccc\ndddd\n", "2": "eeee\n"}; !mapsEqualS(inProgress, want) {
		t.Fatalf("in-progress parts %q, want %q", inProgress, want)
	}
	cs, err := w.PrepareCommit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 3 {
		t.Fatalf("%d committables, want 3: %v", len(cs), cs)
	}
	committer, err := sink.CreateCommitter()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"aaaa\nbbbb\n", "cccc\ndddd\n", "eeee\n"}
	for round := 1; round <= 2; round++ { // the second commit finds everything committed
		if err := committer.Commit(context.Background(), cs); err != nil {
			t.Fatalf("commit %d: %v", round, err)
		}
		if got := partsInOrder(t, dir); !slices.Equal(got, want) {
			t.Fatalf("after commit %d: parts %q, want %q", round, got, want)
		}
	}
	// Nothing more to commit.
	if cs, err := w.PrepareCommit(context.Background()); err != nil || len(cs) != 0 {
		t.Fatalf("second PrepareCommit: %v, %v", cs, err)
	}
}

func mapsEqualS(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

func TestFileSinkRollsByProcessingTime(t *testing.T) {
	type step struct {
		write   string
		advance time.Duration
	}
	w := func(s string) step { return step{write: s} }
	adv := func(d time.Duration) step { return step{advance: d} }
	tests := []struct {
		name   string
		policy file.DefaultRollingPolicy
		steps  []step
		want   []string
	}{
		{
			name:   "inactivity",
			policy: file.DefaultRollingPolicy{MaxPartSize: -1, RolloverInterval: time.Hour, InactivityInterval: 10 * time.Second},
			steps:  []step{w("a"), adv(5 * time.Second), w("b"), adv(9 * time.Second), w("c"), adv(10 * time.Second), w("d")},
			want:   []string{"a\nb\nc\n", "d\n"},
		},
		{
			name:   "inactivity, several parts",
			policy: file.DefaultRollingPolicy{MaxPartSize: -1, RolloverInterval: time.Hour, InactivityInterval: 10 * time.Second},
			steps:  []step{w("a"), adv(30 * time.Second), w("b"), w("c"), adv(11 * time.Second), w("d"), adv(3 * time.Second), w("e")},
			want:   []string{"a\n", "b\nc\n", "d\ne\n"},
		},
		{
			name:   "rollover",
			policy: file.DefaultRollingPolicy{MaxPartSize: -1, RolloverInterval: 10 * time.Second, InactivityInterval: time.Hour},
			steps:  []step{w("a"), adv(4 * time.Second), w("b"), adv(4 * time.Second), w("c"), adv(4 * time.Second), w("d"), adv(4 * time.Second), w("e")},
			want:   []string{"a\nb\nc\n", "d\ne\n"},
		},
		{
			name:   "neither",
			policy: file.DefaultRollingPolicy{MaxPartSize: -1, RolloverInterval: time.Minute, InactivityInterval: 30 * time.Second},
			steps:  []step{w("a"), adv(20 * time.Second), w("b"), adv(20 * time.Second), w("c")},
			want:   []string{"a\nb\nc\n"},
		},
		{
			name:   "default policy: one minute",
			policy: file.DefaultRollingPolicy{},
			steps:  []step{w("a"), adv(59 * time.Second), w("b"), adv(time.Second), w("c")},
			want:   []string{"a\nb\n", "c\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			sink := file.ForRowFormat(dir, file.SimpleStringEncoder[string]()).
				WithBucketAssigner(file.BasePathBucketAssigner[string]()).
				WithRollingPolicy(tt.policy).
				WithBucketCheckInterval(time.Second)
			ctx := &fileSinkCtx{now: 1_000_000}
			fw := openFileWriter(t, sink, ctx)
			for _, s := range tt.steps {
				if s.advance > 0 {
					ctx.advance(t, s.advance.Milliseconds())
					continue
				}
				if err := fw.Write(context.Background(), s.write, stream.NoTimestamp); err != nil {
					t.Fatal(err)
				}
			}
			cs, err := fw.PrepareCommit(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			c, _ := sink.CreateCommitter()
			if err := c.Commit(context.Background(), cs); err != nil {
				t.Fatal(err)
			}
			if got := partsInOrder(t, dir); !slices.Equal(got, tt.want) {
				t.Fatalf("parts %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFileSinkDateTimeBuckets(t *testing.T) {
	dir := t.TempDir()
	assigner, err := file.DateTimeBucketAssigner[string](file.DefaultDateTimeBucketFormat, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	sink := file.ForRowFormat(dir, file.SimpleStringEncoder[string]()).WithBucketAssigner(assigner)
	ctx := &fileSinkCtx{now: time.Date(2024, 3, 5, 13, 59, 59, 0, time.UTC).UnixMilli()}
	w := openFileWriter(t, sink, ctx)
	w.Write(context.Background(), "a", stream.NoTimestamp)
	w.Write(context.Background(), "b", stream.NoTimestamp)
	ctx.advance(t, 1000)
	w.Write(context.Background(), "c", stream.NoTimestamp)
	cs, err := w.PrepareCommit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c, _ := sink.CreateCommitter()
	if err := c.Commit(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for name, content := range filesUnder(t, dir) {
		m := finalPartRE.FindStringSubmatch(name)
		if m == nil {
			t.Fatalf("unexpected file %s", name)
		}
		got[m[1]] += content
	}
	if want := map[string]string{"2024-03-05--13": "a\nb\n", "2024-03-05--14": "c\n"}; !mapsEqualS(got, want) {
		t.Fatalf("buckets %q, want %q", got, want)
	}
}

func TestDateTimeBucketFormat(t *testing.T) {
	at := time.Date(2024, 3, 5, 13, 4, 7, 123_456_789, time.UTC)
	tests := []struct {
		format, want, err string
	}{
		{format: "yyyy-MM-dd--HH", want: "2024-03-05--13"},
		{format: "yy/M/d", want: "24/3/5"},
		{format: "yyyyMMdd'T'HHmmss", want: "20240305T130407"},
		{format: "'hour='HH/'min='mm", want: "hour=13/min=04"},
		{format: "MMM-MMMM", want: "Mar-March"},
		{format: "H:m:s.SSS", want: "13:4:7.123"},
		{format: "''yyyy'''s'", want: "'2024's"},
		{format: "", err: "the format is empty"},
		{format: "yyyy-ww", err: `position 5: unsupported pattern letter 'w'`},
		{format: "'dt=yyyy", err: "position 0: unterminated quoted text"},
		{format: "ddd", err: `position 0: 'd' repeated 3 times`},
	}
	for _, tt := range tests {
		a, err := file.DateTimeBucketAssigner[int](tt.format, time.UTC)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), strconv.Quote(tt.format)) {
				t.Errorf("%q: got error %v, want one containing %q and the format", tt.format, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.format, err)
			continue
		}
		if got := a.BucketID(0, file.BucketContext{CurrentProcessingTime: at.UnixMilli()}); got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.format, got, tt.want)
		}
	}
	// Another zone gives another hour.
	a, _ := file.DateTimeBucketAssigner[int]("HH", time.FixedZone("UTC+2", 2*3600))
	if got := a.BucketID(0, file.BucketContext{CurrentProcessingTime: at.UnixMilli()}); got != "15" {
		t.Errorf("in UTC+2: got %q, want 15", got)
	}
}

func TestFileSinkCloseRemovesInProgressButKeepsPending(t *testing.T) {
	dir := t.TempDir()
	sink := file.ForRowFormat(dir, file.SimpleStringEncoder[string]()).WithBucketAssigner(file.BasePathBucketAssigner[string]())
	w, err := sink.CreateWriter(&fileSinkCtx{})
	if err != nil {
		t.Fatal(err)
	}
	fw := w.(fileWriter)
	fw.Write(context.Background(), "committed later", stream.NoTimestamp)
	cs, err := fw.PrepareCommit(context.Background())
	if err != nil || len(cs) != 1 {
		t.Fatalf("PrepareCommit: %v, %v", cs, err)
	}
	fw.Write(context.Background(), "abandoned", stream.NoTimestamp)
	fw.Flush(context.Background(), false)
	if n := len(filesUnder(t, dir)); n != 2 {
		t.Fatalf("%d files before Close, want 2", n)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	files := filesUnder(t, dir)
	if len(files) != 1 || files[strings.TrimPrefix(cs[0].PendingPath, dir+"/")] != "committed later\n" {
		t.Fatalf("after Close: %q, want only the pending part %s", files, cs[0].PendingPath)
	}
}

func TestFileSinkErrors(t *testing.T) {
	t.Run("commit of a part that is neither pending nor committed", func(t *testing.T) {
		dir := t.TempDir()
		c, err := file.ForRowFormat(dir, file.SimpleStringEncoder[string]()).CreateCommitter()
		if err != nil {
			t.Fatal(err)
		}
		final := filepath.Join(dir, "part-x-0-0")
		err = c.Commit(context.Background(), []file.Committable{{PendingPath: filepath.Join(dir, ".part-x-0-0.inprogress.y"), FinalPath: final}})
		if !errors.Is(err, iofs.ErrNotExist) || !strings.Contains(err.Error(), final) {
			t.Fatalf("got %v, want a not-exist error naming %s", err, final)
		}
	})
	t.Run("bucket outside the base path", func(t *testing.T) {
		dir := t.TempDir()
		sink := file.ForRowFormat(filepath.Join(dir, "out"), file.SimpleStringEncoder[string]()).
			WithBucketAssigner(file.BucketAssignerFunc[string](func(v string, _ file.BucketContext) string { return v }))
		w := openFileWriter(t, sink, &fileSinkCtx{})
		for _, id := range []string{"../escape", "/abs", "a/../../b"} {
			if err := w.Write(context.Background(), id, stream.NoTimestamp); err == nil || !strings.Contains(err.Error(), strconv.Quote(id)) {
				t.Errorf("bucket %q: got %v, want an error naming it", id, err)
			}
		}
		if err := w.Write(context.Background(), "a/b", stream.NoTimestamp); err != nil {
			t.Errorf("nested bucket: %v", err)
		}
	})
	t.Run("bad configuration", func(t *testing.T) {
		sink := file.ForRowFormat[string]("", nil).WithBucketCheckInterval(0)
		_, err := sink.CreateWriter(&fileSinkCtx{})
		for _, want := range []string{"base path is empty", "encoder is nil", "bucket check interval must be positive"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v does not contain %q", err, want)
			}
		}
	})
}

// A bounded job commits every part at its end: only final files remain,
// holding every record exactly once, in order per subtask.
func TestFileSinkBoundedJob(t *testing.T) {
	const n, maxPart, lineLen = 500, 200, 10
	var lines []string
	for i := 0; i < n; i++ {
		lines = append(lines, fmt.Sprintf("line-%04d", i)) // 10 bytes with "\n"
	}
	partRE := regexp.MustCompile(`^out-(` + uuidRE + `)-(\d+)-(\d+)\.txt$`)
	for _, par := range []int{1, 4} {
		t.Run(fmt.Sprintf("p%d", par), func(t *testing.T) {
			dir := t.TempDir()
			env := asyncTestEnv(stream.WithParallelism(par))
			sink := file.ForRowFormat(dir, file.SimpleStringEncoder[string]()).
				WithBucketAssigner(file.BasePathBucketAssigner[string]()).
				WithRollingPolicy(file.DefaultRollingPolicy{MaxPartSize: maxPart}).
				WithOutputFileConfig(file.OutputFileConfig{PartPrefix: "out", PartSuffix: ".txt"})
			stream.SinkToCommitting(stream.FromSlice(env, lines), sink).Name("files")
			if _, err := env.Execute("file sink"); err != nil {
				t.Fatal(err)
			}
			type part struct {
				counter int
				content string
			}
			writers := map[string][]part{} // uuid → its parts
			subtasks := map[string]bool{}
			for name, content := range filesUnder(t, dir) {
				m := partRE.FindStringSubmatch(name)
				if m == nil {
					t.Fatalf("unexpected file %q (in-progress or pending parts must not survive a finished job)", name)
				}
				counter, _ := strconv.Atoi(m[3])
				writers[m[1]] = append(writers[m[1]], part{counter, content})
				subtasks[m[2]] = true
			}
			// (A subtask may get no split, and then writes nothing.)
			if len(writers) == 0 || len(writers) > par || len(subtasks) != len(writers) {
				t.Fatalf("parts from %d writers and %d subtasks, want one writer per subtask, at most %d", len(writers), len(subtasks), par)
			}
			var all []string
			for _, parts := range writers {
				sort.Slice(parts, func(i, j int) bool { return parts[i].counter < parts[j].counter })
				var content strings.Builder
				for i, p := range parts {
					if p.counter != i {
						t.Fatalf("part counters %v are not 0, 1, 2, ...", parts)
					}
					if size := len(p.content); i < len(parts)-1 && (size < maxPart || size >= maxPart+lineLen) {
						t.Fatalf("part %d holds %d bytes; parts roll at %d", i, size, maxPart)
					}
					content.WriteString(p.content)
				}
				got := strings.Split(strings.TrimSuffix(content.String(), "\n"), "\n")
				if !slices.IsSorted(got) {
					t.Fatalf("a subtask's records are out of order: %v", got)
				}
				all = append(all, got...)
			}
			slices.Sort(all)
			if !slices.Equal(all, lines) {
				t.Fatalf("got %d records, want %d, exactly once", len(all), len(lines))
			}
		})
	}
}

// Buckets follow the task's clock.
func TestFileSinkJobBucketsByTaskClock(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(time.Date(2024, 3, 5, 13, 45, 0, 0, time.UTC).UnixMilli())
	env := asyncTestEnv(stream.WithParallelism(2), stream.WithClock(clk))
	assigner, err := file.DateTimeBucketAssigner[int](file.DefaultDateTimeBucketFormat, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	stream.SinkToCommitting(stream.FromSlice(env, asyncInputs(100)),
		file.ForRowFormat(dir, file.SimpleStringEncoder[int]()).WithBucketAssigner(assigner))
	if _, err := env.Execute("file sink"); err != nil {
		t.Fatal(err)
	}
	var got []int
	for name, content := range filesUnder(t, dir) {
		m := finalPartRE.FindStringSubmatch(name)
		if m == nil || m[1] != "2024-03-05--13" {
			t.Fatalf("unexpected file %s", name)
		}
		for _, l := range strings.Fields(content) {
			v, _ := strconv.Atoi(l)
			got = append(got, v)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, asyncInputs(100)) {
		t.Fatalf("got %v", got)
	}
}

func TestFileSinkUnwritableBasePathFailsJobNamingPath(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "blocker")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(blocker, "out") // a directory under a regular file
	env := asyncTestEnv(stream.WithParallelism(2))
	stream.SinkToCommitting(stream.FromSlice(env, []string{"a", "b"}),
		file.ForRowFormat(base, file.SimpleStringEncoder[string]())).Name("files")
	_, err := env.Execute("file sink")
	if err == nil || !strings.Contains(err.Error(), base) || !strings.Contains(err.Error(), `operator "files"`) {
		t.Fatalf("want an error naming the operator and %s, got %v", base, err)
	}
}
