//go:build integration

package jobservice_test

// Python pipelines on the Sluice runner: the real Apache Beam Python SDK
// (the venv integration/scripts/beam-venv.sh builds, path in
// SLUICE_BEAM_PYTHON; `make integration` sets it) submits to an
// in-process job service with --environment_type=LOOPBACK.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluice/sluice/internal/beam/jobservice"
	"github.com/sluice/sluice/internal/testwait"
)

func python(t *testing.T) string {
	t.Helper()
	py := os.Getenv("SLUICE_BEAM_PYTHON")
	if py == "" {
		t.Fatal("SLUICE_BEAM_PYTHON is not set: run integration/scripts/beam-venv.sh (make integration does) and set it to the python it prints")
	}
	return py
}

type tlogWriter struct{ t *testing.T }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func service(t *testing.T, opts jobservice.Options) *jobservice.Service {
	t.Helper()
	opts.Log = slog.New(slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	svc, err := jobservice.Listen("localhost:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := svc.Close(); err != nil {
			t.Errorf("closing the job service: %v", err)
		}
	})
	return svc
}

// runPython runs a script of testdata against svc and returns its
// combined output and error; one that takes longer than timeout fails the
// test (a hang is a failure, never a wait).
func runPython(t *testing.T, svc *jobservice.Service, timeout time.Duration, script string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if module, ok := strings.CutPrefix(script, "-m "); ok {
		args = append([]string{"-m", module}, args...)
	} else {
		abs, err := filepath.Abs(filepath.Join("testdata", script))
		if err != nil {
			t.Fatal(err)
		}
		args = append([]string{abs}, args...)
	}
	args = append(args, "--runner=PortableRunner", "--job_endpoint="+svc.Endpoint(), "--environment_type=LOOPBACK")
	cmd := exec.CommandContext(ctx, python(t), args...)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		// Errorf, not Fatalf: it may run on a goroutine of the test.
		t.Errorf("%s did not end within %s:\n%s", script, timeout, out)
		return string(out), fmt.Errorf("%s: %w", script, ctx.Err())
	}
	return string(out), err
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	slices.Sort(ls)
	return ls
}

// wordCountInput is 3000 lines of words drawn from a small vocabulary,
// so that every word occurs in many bundles and on every subtask, and
// its expected "word: count" lines, sorted.
func wordCountInput() (string, []string) {
	vocab := strings.Fields("the quick brown fox jumps over lazy dog's back and runs away from a big red barn")
	var text strings.Builder
	counts := map[string]int{}
	for i := 0; i < 3000; i++ {
		n := 1 + i%7
		for j := 0; j < n; j++ {
			w := vocab[(i*31+j*17)%len(vocab)]
			counts[w]++
			if j > 0 {
				text.WriteString(" ")
			}
			text.WriteString(w)
		}
		text.WriteString(".\n")
	}
	var want []string
	for w, n := range counts {
		want = append(want, fmt.Sprintf("%s: %d", w, n))
	}
	slices.Sort(want)
	return text.String(), want
}

// TestPythonWordCountExample runs Beam's own WordCount example, whose
// WriteToText reads side inputs, and checks the shards it wrote.
func TestPythonWordCountExample(t *testing.T) {
	text, want := wordCountInput()
	dir := t.TempDir()
	in := filepath.Join(dir, "input.txt")
	if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	svc := service(t, jobservice.Options{Parallelism: 2, BundleSize: 200})
	if log, err := runPython(t, svc, 3*time.Minute, "-m apache_beam.examples.wordcount", "--input", in, "--output", filepath.Join(dir, "counts")); err != nil {
		t.Fatalf("wordcount: %v\n%s", err, log)
	}
	shards, err := filepath.Glob(filepath.Join(dir, "counts-*-of-*"))
	if err != nil || len(shards) == 0 {
		t.Fatalf("no output shards in %s (%v)", dir, err)
	}
	var got []string
	for _, s := range shards {
		got = append(got, lines(t, s)...)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("counts in %d shards:\n got %q\nwant %q", len(shards), got, want)
	}
}

func TestPythonWordCount(t *testing.T) {
	text, want := wordCountInput()
	for _, tc := range []struct {
		name   string
		par    int
		bundle int
	}{
		{"parallelism 1, default bundles", 1, 0},
		{"parallelism 2, bundles of 100", 2, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in, out := filepath.Join(dir, "input.txt"), filepath.Join(dir, "counts.txt")
			if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			svc := service(t, jobservice.Options{Parallelism: tc.par, BundleSize: tc.bundle})
			start := time.Now()
			if log, err := runPython(t, svc, 3*time.Minute, "wordcount.py", "--input", in, "--output", out); err != nil {
				t.Fatalf("wordcount: %v\n%s", err, log)
			}
			t.Logf("WordCount of %d bytes took %s", len(text), time.Since(start))
			if got := lines(t, out); !slices.Equal(got, want) {
				t.Errorf("counts:\n got %q\nwant %q", got, want)
			}
		})
	}
}

// fixedWindowGroups are the "key [start,end) v1,v2,..." lines, sorted,
// of the events (key k(i%3), value i, at i*7%45 s) for i < 60 grouped by
// key in fixed windows of 10 s: what windowed_gbk.py and gosdk's windowed
// pipeline write.
func fixedWindowGroups() []string {
	groups := map[string][]int{}
	var keys []string
	for i := 0; i < 60; i++ {
		ts := i * 7 % 45
		start := ts - ts%10
		k := fmt.Sprintf("k%d [%d,%d)", i%3, start, start+10)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], i)
	}
	var want []string
	for _, k := range keys {
		vs := groups[k]
		slices.Sort(vs)
		s := make([]string, len(vs))
		for i, v := range vs {
			s[i] = fmt.Sprint(v)
		}
		want = append(want, k+" "+strings.Join(s, ","))
	}
	slices.Sort(want)
	return want
}

func TestPythonFixedWindowGroupByKey(t *testing.T) {
	want := fixedWindowGroups()
	out := filepath.Join(t.TempDir(), "groups.txt")
	svc := service(t, jobservice.Options{Parallelism: 2, BundleSize: 7})
	if log, err := runPython(t, svc, 3*time.Minute, "windowed_gbk.py", "--output", out); err != nil {
		t.Fatalf("windowed_gbk: %v\n%s", err, log)
	}
	if got := lines(t, out); !slices.Equal(got, want) {
		t.Errorf("groups:\n got %q\nwant %q", got, want)
	}
}

func TestPythonUnknownURNFailsPrepare(t *testing.T) {
	svc := service(t, jobservice.Options{})
	log, err := runPython(t, svc, 2*time.Minute, "unknown_urn.py")
	if err == nil {
		t.Fatalf("a pipeline with an unknown URN ran:\n%s", log)
	}
	want := regexp.MustCompile(`transform "TheMystery" \(URN beam:transform:sluice_test_mystery:v1\): the Sluice runner does not know this URN`)
	if !want.MatchString(log) {
		t.Errorf("the client's error does not name the transform and its URN (%s):\n%s", want, log)
	}
}

func TestPythonHarnessErrorFailsJob(t *testing.T) {
	svc := service(t, jobservice.Options{})
	log, err := runPython(t, svc, 2*time.Minute, "failing.py")
	if err == nil {
		t.Fatalf("a pipeline whose DoFn raises succeeded:\n%s", log)
	}
	for _, want := range []string{
		"ValueError: sluice test: element 7 is cursed", // the harness's error text
		"failed in state FAILED",                       // the job's terminal state as the client saw it
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the client's output lacks %q:\n%s", want, log)
		}
	}
}

// TestPythonCancel cancels a running job through the job API: it ends
// CANCELLED, the client sees it, and the service closes cleanly after.
func TestPythonCancel(t *testing.T) {
	svc := service(t, jobservice.Options{BundleSize: 10})
	cc, err := grpc.NewClient(svc.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	c := jobpb.NewJobServiceClient(cc)
	type result struct {
		log string
		err error
	}
	done := make(chan result, 1)
	go func() {
		log, err := runPython(t, svc, 3*time.Minute, "slow.py")
		done <- result{log, err}
	}()
	var id string
	testwait.EventuallyNil(t, 2*time.Minute, "the job is RUNNING", func() error {
		jobs, err := c.GetJobs(context.Background(), &jobpb.GetJobsRequest{})
		if err != nil {
			return err
		}
		for _, j := range jobs.GetJobInfo() {
			if j.GetState() == jobpb.JobState_RUNNING {
				id = j.GetJobId()
				return nil
			}
		}
		return fmt.Errorf("no running job in %v", jobs.GetJobInfo())
	})
	start := time.Now()
	if _, err := c.Cancel(context.Background(), &jobpb.CancelJobRequest{JobId: id}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	t.Logf("the client ended %s after Cancel", time.Since(start))
	if r.err == nil || !strings.Contains(r.log, "CANCELLED") {
		t.Errorf("the client of a cancelled job: %v\n%s", r.err, r.log)
	}
	st, err := c.GetState(context.Background(), &jobpb.GetJobStateRequest{JobId: id})
	if err != nil || st.GetState() != jobpb.JobState_CANCELLED {
		t.Errorf("state after Cancel: %v (%v), want CANCELLED", st.GetState(), err)
	}
}

// TestPythonBagUserState runs a stateful DoFn whose bag and combining
// state the runner keeps: every key counts 1..20, on whichever subtask.
func TestPythonBagUserState(t *testing.T) {
	var want []string
	for k := 0; k < 5; k++ {
		for n := 1; n <= 20; n++ {
			want = append(want, fmt.Sprintf("k%d %d seen", k, n))
		}
	}
	slices.Sort(want)
	out := filepath.Join(t.TempDir(), "counts.txt")
	svc := service(t, jobservice.Options{Parallelism: 2, BundleSize: 9})
	if log, err := runPython(t, svc, 3*time.Minute, "stateful.py", "--output", out); err != nil {
		t.Fatalf("stateful: %v\n%s", err, log)
	}
	if got := lines(t, out); !slices.Equal(got, want) {
		t.Errorf("running counts:\n got %q\nwant %q", got, want)
	}
}

func TestPythonSideInputs(t *testing.T) {
	out := filepath.Join(t.TempDir(), "joined.txt")
	svc := service(t, jobservice.Options{Parallelism: 2})
	if log, err := runPython(t, svc, 3*time.Minute, "side_inputs.py", "--output", out); err != nil {
		t.Fatalf("side_inputs: %v\n%s", err, log)
	}
	want := []string{
		"a total=6 items=3 dict=3 multi=[1, 3]",
		"b total=6 items=3 dict=2 multi=[2]",
		"c total=6 items=3 dict=None multi=[]",
	}
	if got := lines(t, out); !slices.Equal(got, want) {
		t.Errorf("joined:\n got %q\nwant %q", got, want)
	}
}

// TestPythonEventTimeTimer buffers values in bag state until an
// event-time timer fires: once per key, with every value.
func TestPythonEventTimeTimer(t *testing.T) {
	var want []string
	for k := 0; k < 4; k++ {
		sum := 0
		for i := k; i < 40; i += 4 {
			sum += i
		}
		want = append(want, fmt.Sprintf("k%d sum=%d count=10", k, sum))
	}
	out := filepath.Join(t.TempDir(), "flushed.txt")
	svc := service(t, jobservice.Options{Parallelism: 2, BundleSize: 7})
	if log, err := runPython(t, svc, 3*time.Minute, "timers.py", "--output", out); err != nil {
		t.Fatalf("timers: %v\n%s", err, log)
	}
	if got := lines(t, out); !slices.Equal(got, want) {
		t.Errorf("flushed:\n got %q\nwant %q", got, want)
	}
}

// TestPythonTestStream runs teststream.py's cases: a TestStream through
// windows, triggers and allowed lateness, each group written with the
// PaneInfo the DoFn sees. Parallelism 1: count triggers see elements in
// the order the TestStream gives them.
func TestPythonTestStream(t *testing.T) {
	cases := []struct {
		name string
		want []string
	}{
		{"late", []string{
			"k [0,10) 1,2 ON_TIME first=True last=False index=0 nonspec=0",
			"k [0,10) 3 LATE first=False last=False index=1 nonspec=1",
			"k [20,30) 6 ON_TIME first=True last=True index=0 nonspec=0",
		}},
		{"early_accumulating", []string{
			"k [0,10) 1,2 EARLY first=True last=False index=0 nonspec=-1",
			"k [0,10) 1,2,3 ON_TIME first=False last=True index=1 nonspec=0",
		}},
		{"early_discarding", []string{
			"k [0,10) 1,2 EARLY first=True last=False index=0 nonspec=-1",
			"k [0,10) 3 ON_TIME first=False last=True index=1 nonspec=0",
		}},
		{"early_late", []string{
			"k [0,10) 1,2 EARLY first=True last=False index=0 nonspec=-1",
			"k [0,10) 1,2,3 ON_TIME first=False last=False index=1 nonspec=0",
			"k [0,10) 1,2,3,4 LATE first=False last=False index=2 nonspec=1",
		}},
		{"repeated", []string{
			"k global 1,2 EARLY first=True last=False index=0 nonspec=-1",
			"k global 3,4 EARLY first=False last=False index=1 nonspec=-1",
			"k global 5 ON_TIME first=False last=True index=2 nonspec=0",
		}},
		{"sessions", []string{
			// 12 is not late (its window ends at 22, after the watermark
			// 20) but [1,15) was emitted at 20: it starts a session.
			"k [1,15) 1,2 ON_TIME first=True last=True index=0 nonspec=0",
			"k [12,22) 5 ON_TIME first=True last=True index=0 nonspec=0",
			"k [30,45) 3,4 ON_TIME first=True last=True index=0 nonspec=0",
		}},
		{"strings", []string{
			// "late" (3 s at watermark 10 s) is dropped.
			"k [0,10) a,bb ON_TIME first=True last=True index=0 nonspec=0",
			"k [10,20) ccc ON_TIME first=True last=True index=0 nonspec=0",
		}},
		{"after_count_finished", []string{
			// 4, 5 and 6 are dropped: the window closed when AfterCount(3) fired.
			"A [0,10) 1,2,3 EARLY first=True last=True index=0 nonspec=-1",
			"B [0,10) 1,2,3 EARLY first=True last=True index=0 nonspec=-1",
		}},
	}
	svc := service(t, jobservice.Options{Parallelism: 1})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "groups.txt")
			if log, err := runPython(t, svc, 3*time.Minute, "teststream.py", "--case", c.name, "--output", out); err != nil {
				t.Fatalf("teststream.py --case %s: %v\n%s", c.name, err, log)
			}
			want := slices.Clone(c.want)
			slices.Sort(want)
			if got := lines(t, out); !slices.Equal(got, want) {
				t.Errorf("groups:\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestPythonProcessingTimeTriggerFailsPrepare(t *testing.T) {
	svc := service(t, jobservice.Options{})
	log, err := runPython(t, svc, 2*time.Minute, "teststream.py", "--case", "proctime", "--output", filepath.Join(t.TempDir(), "x"))
	if err == nil {
		t.Fatalf("a pipeline with a processing-time trigger ran:\n%s", log)
	}
	want := regexp.MustCompile(`transform "Group" \(URN beam:transform:group_by_key:v1\): windowing strategy .*AfterProcessingTime \(processing-time triggers\) is not supported yet`)
	if !want.MatchString(log) {
		t.Errorf("the client's error does not name the transform and the trigger (%s):\n%s", want, log)
	}
}
