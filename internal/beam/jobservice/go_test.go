//go:build integration

package jobservice_test

// Go pipelines on the Sluice runner: testdata/gosdk, a program of the
// real Apache Beam Go SDK (its own module, requiring the SDK version of
// Sluice's go.mod, fetched from the Go module proxy by its first build),
// is built with `go build` once per test binary and submits its
// pipelines to an in-process job service with --runner=universal
// --environment_type=LOOPBACK: its SDK harness runs in the program.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/beam/jobservice"
)

var goSDK struct {
	once      sync.Once
	dir, path string
	err       error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if goSDK.dir != "" {
		os.RemoveAll(goSDK.dir)
	}
	os.Exit(code)
}

// goProgram builds testdata/gosdk (once; the first build of the SDK takes
// minutes) and returns the binary's path. A missing go command or a failed
// build fails the test.
func goProgram(t *testing.T) string {
	t.Helper()
	goSDK.once.Do(func() {
		gocmd, err := exec.LookPath("go")
		if err != nil {
			goSDK.err = fmt.Errorf("the Go SDK tests build testdata/gosdk with the go command: %w", err)
			return
		}
		if goSDK.dir, err = os.MkdirTemp("", "sluice-gosdk-"); err != nil {
			goSDK.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		path := filepath.Join(goSDK.dir, "gosdk")
		cmd := exec.CommandContext(ctx, gocmd, "build", "-o", path, ".")
		cmd.Dir = filepath.Join("testdata", "gosdk")
		// Its own module: not a workspace's, never vendored.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false")
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			goSDK.err = fmt.Errorf("go build in testdata/gosdk: %w\n%s", err, out)
			return
		}
		goSDK.path = path
		fmt.Fprintf(os.Stderr, "built testdata/gosdk in %s\n", time.Since(start).Round(time.Millisecond))
	})
	if goSDK.err != nil {
		t.Fatal(goSDK.err)
	}
	return goSDK.path
}

// runGo runs one of the program's pipelines against svc and returns its
// combined output and error; one that takes longer than timeout fails
// the test.
func runGo(t *testing.T, svc *jobservice.Service, timeout time.Duration, pipeline string, args ...string) (string, error) {
	t.Helper()
	bin := goProgram(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args = append([]string{"--pipeline=" + pipeline,
		"--runner=universal", "--endpoint=" + svc.Endpoint(), "--environment_type=LOOPBACK"}, args...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = t.TempDir()
	// The SDK leaves a file in the temporary directory per LOOPBACK run.
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Errorf("%s did not end within %s:\n%s", pipeline, timeout, out)
		return string(out), fmt.Errorf("%s: %w", pipeline, ctx.Err())
	}
	return string(out), err
}

// TestGoSDKVersionMatchesSluice: testdata/gosdk requires the Beam Go SDK
// whose generated protos Sluice speaks.
func TestGoSDKVersionMatchesSluice(t *testing.T) {
	version := func(path string) string {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "require "))
			if len(fields) >= 2 && fields[0] == "github.com/apache/beam/sdks/v2" {
				return fields[1]
			}
		}
		t.Fatalf("%s does not require github.com/apache/beam/sdks/v2", path)
		return ""
	}
	sluice, program := version("../../../go.mod"), version("testdata/gosdk/go.mod")
	if sluice != program {
		t.Errorf("testdata/gosdk requires Beam %s, Sluice's go.mod %s", program, sluice)
	}
}

// goRuns are the parallelisms and bundle sizes every Go pipeline runs at:
// the server's default, and a job's own --parallelism (the Go SDK's flag).
var goRuns = []struct {
	name string
	opts jobservice.Options
	args []string
}{
	{"parallelism 1", jobservice.Options{Parallelism: 1}, nil},
	{"parallelism 2 (--parallelism), bundles of 7", jobservice.Options{BundleSize: 7}, []string{"--parallelism=2"}},
}

// runGoPipeline runs pipeline at each of goRuns and compares the sorted
// lines of its --output with want; the program's output must contain
// each of wantLog.
func runGoPipeline(t *testing.T, pipeline string, want, wantLog []string, args ...string) {
	for _, run := range goRuns {
		t.Run(run.name, func(t *testing.T) {
			goProgram(t) // built before the clock starts
			out := filepath.Join(t.TempDir(), "out.txt")
			svc := service(t, run.opts)
			start := time.Now()
			log, err := runGo(t, svc, 3*time.Minute, pipeline, append(append([]string{"--output=" + out}, args...), run.args...)...)
			if err != nil {
				t.Fatalf("%s: %v\n%s", pipeline, err, log)
			}
			t.Logf("Go %s took %s", pipeline, time.Since(start).Round(time.Millisecond))
			if got := lines(t, out); !slices.Equal(got, want) {
				t.Errorf("%s output:\n got %q\nwant %q", pipeline, got, want)
			}
			for _, w := range wantLog {
				if !strings.Contains(log, w) {
					t.Errorf("the program's output lacks %q:\n%s", w, log)
				}
			}
		})
	}
}

func TestGoWordCount(t *testing.T) {
	text, want := wordCountInput()
	in := filepath.Join(t.TempDir(), "input.txt")
	if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// Its counter of words, read back through the job's metrics.
	words := 0
	for _, l := range want {
		var n int
		if _, err := fmt.Sscanf(l[strings.LastIndex(l, " ")+1:], "%d", &n); err != nil {
			t.Fatal(err)
		}
		words += n
	}
	runGoPipeline(t, "wordcount", want, []string{fmt.Sprintf("counter gosdk/words committed=%d", words)}, "--input="+in)
}

func TestGoFixedWindowGroupByKey(t *testing.T) {
	runGoPipeline(t, "windowed", fixedWindowGroups(), nil)
}

func TestGoSideInputs(t *testing.T) {
	runGoPipeline(t, "sideinputs", []string{
		"a total=6 pairs=3 values=[1 3]",
		"b total=6 pairs=3 values=[2]",
		"c total=6 pairs=3 values=[]",
	}, nil)
}

// TestGoCombinePerKey runs beam.CombinePerKey with a CombineFn of its own
// accumulator type over 0..99 keyed by i%4.
func TestGoCombinePerKey(t *testing.T) {
	var want []string
	for k := 0; k < 4; k++ {
		sum := 0
		for i := k; i < 100; i += 4 {
			sum += i
		}
		want = append(want, fmt.Sprintf("k%d sum=%d count=25", k, sum))
	}
	runGoPipeline(t, "combine", want, nil)
}

// TestGoStatefulTimer buffers each key's values in bag state until an
// event-time timer fires: once per key, with every value.
func TestGoStatefulTimer(t *testing.T) {
	var want []string
	for k := 0; k < 4; k++ {
		sum := 0
		for i := k; i < 40; i += 4 {
			sum += i
		}
		want = append(want, fmt.Sprintf("k%d sum=%d count=10", k, sum))
	}
	runGoPipeline(t, "stateful", want, nil)
}

// TestGoMapSetState tallies each key's words in map state and its
// distinct words in set state.
func TestGoMapSetState(t *testing.T) {
	counts := map[string]map[string]int{}
	for i := 0; i < 30; i++ {
		k, w := fmt.Sprintf("k%d", i%2), string(rune('a'+(i/2)%4))
		if counts[k] == nil {
			counts[k] = map[string]int{}
		}
		counts[k][w]++
	}
	var want []string
	for k, ws := range counts {
		line := k
		for _, w := range []string{"a", "b", "c", "d"} {
			if n, ok := ws[w]; ok {
				line += fmt.Sprintf(" %s=%d", w, n)
			}
		}
		want = append(want, fmt.Sprintf("%s seen=%d", line, len(ws)))
	}
	slices.Sort(want)
	runGoPipeline(t, "mapstate", want, nil)
}

// TestGoSessionWindows groups by key in session windows (gap 5 s) of the
// events (k(i%2), i) at (i%10)*2 + (i/10)*60 s.
func TestGoSessionWindows(t *testing.T) {
	type event struct{ ts, v int }
	byKey := map[string][]event{}
	for i := 0; i < 20; i++ {
		k := fmt.Sprintf("k%d", i%2)
		byKey[k] = append(byKey[k], event{(i%10)*2 + (i/10)*60, i})
	}
	var want []string
	for k, evs := range byKey {
		slices.SortFunc(evs, func(a, b event) int { return a.ts - b.ts })
		for i := 0; i < len(evs); {
			start, end := evs[i].ts, evs[i].ts+5
			var vs []string
			for ; i < len(evs) && evs[i].ts < end; i++ {
				end = max(end, evs[i].ts+5)
				vs = append(vs, fmt.Sprint(evs[i].v))
			}
			want = append(want, fmt.Sprintf("%s [%d,%d) %s", k, start, end, strings.Join(vs, ",")))
		}
	}
	slices.Sort(want)
	runGoPipeline(t, "sessions", want, nil)
}

func TestGoFlattenReshuffle(t *testing.T) {
	runGoPipeline(t, "flatten", []string{"a", "b", "c", "d", "e", "f"}, nil)
}

// TestGoDoFnErrorFailsJob: a DoFn's error fails the job, and its text
// reaches the Go client's error.
func TestGoDoFnErrorFailsJob(t *testing.T) {
	for _, run := range goRuns {
		t.Run(run.name, func(t *testing.T) {
			svc := service(t, run.opts)
			out := filepath.Join(t.TempDir(), "out.txt")
			log, err := runGo(t, svc, 2*time.Minute, "failing", append([]string{"--output=" + out}, run.args...)...)
			if err == nil {
				t.Fatalf("a pipeline whose DoFn returns an error succeeded:\n%s", log)
			}
			// main prints "pipeline failed: " and the error beam.Run returned,
			// which the SDK builds from the job's FAILED state and error message.
			_, failure, ok := strings.Cut(log, "pipeline failed: ")
			if !ok {
				t.Fatalf("the program did not report a failed pipeline (%v):\n%s", err, log)
			}
			for _, want := range []string{" failed:", "sluice test: element 7 is cursed"} {
				if !strings.Contains(failure, want) {
					t.Errorf("the client's error lacks %q:\n%s", want, failure)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("the failed job wrote %s", out)
			}
		})
	}
}

// TestGoDockerEnvironmentRefused: the Go SDK's default environment
// (DOCKER) fails at submission, naming the environment and the flag to use.
func TestGoDockerEnvironmentRefused(t *testing.T) {
	svc := service(t, jobservice.Options{})
	out := filepath.Join(t.TempDir(), "out.txt")
	// The later flag wins; --worker_binary spares the SDK a cross-compile.
	log, err := runGo(t, svc, 2*time.Minute, "flatten", "--output="+out, "--environment_type=DOCKER", "--worker_binary="+goProgram(t))
	if err == nil {
		t.Fatalf("a pipeline in a DOCKER environment ran:\n%s", log)
	}
	for _, want := range []string{`environment "go" is beam:env:docker:v1`, "submit with --environment_type=LOOPBACK"} {
		if !strings.Contains(log, want) {
			t.Errorf("the client's error lacks %q:\n%s", want, log)
		}
	}
}

// TestGoTestStream runs the Go SDK's teststream package through fixed
// windows with early (AfterCount(2)) and late (AfterCount(1)) firings,
// accumulating, and 5 s of allowed lateness; each pane is written with
// the PaneInfo the DoFn sees. Parallelism 1 only: a count trigger's panes
// depend on the order elements reach the GroupByKey.
func TestGoTestStream(t *testing.T) {
	want := []string{
		"k [0,10) a,b EARLY first=true last=false index=0 nonspec=-1",
		"k [0,10) a,b,c ON_TIME first=false last=false index=1 nonspec=0",
		"k [0,10) a,b,c,d LATE first=false last=false index=2 nonspec=1",
		// f arrives with the watermark past its window's end: its first
		// pane is the on-time one. e (4 s, at watermark 30 s) is dropped.
		"k [20,30) f ON_TIME first=true last=false index=0 nonspec=0",
	}
	goProgram(t)
	out := filepath.Join(t.TempDir(), "out.txt")
	svc := service(t, jobservice.Options{Parallelism: 1})
	if log, err := runGo(t, svc, 3*time.Minute, "teststream", "--output="+out); err != nil {
		t.Fatalf("teststream: %v\n%s", err, log)
	}
	if got := lines(t, out); !slices.Equal(got, want) {
		t.Errorf("teststream output:\n got %q\nwant %q", got, want)
	}
}
