// Package flinkcmp is Sluice's side-by-side benchmark against Apache Flink
// (make bench-flink; the command is cmd/flinkcmp). The same workloads —
// Nexmark-style q0, q1, q2, q3 (a regular join of persons and auctions),
// q5, q7, q8 (a window join), q11 (session windows) and q19 (a windowed
// Top-N) over the generator of package nexmark,
// and a Kafka → keyed stateful process → Kafka pipeline with EXACTLY_ONCE
// delivery — run as Flink Java jobs on Flink's local MiniCluster
// (bench/flink) and as Sluice jobs (package jobs, cmd/sluicebench), each
// run in an OS process of its own so that its CPU time (user+sys, from
// the child's rusage) and peak resident memory (ru_maxrss) are its own.
// A raw franz-go consume → produce loop is the ceiling of the Kafka
// pipeline.
//
// Runs alternate between the engines over several repetitions. The
// report gives records/s, CPU seconds, records per CPU second and peak
// RSS per engine, and the ratios Sluice/Flink (min/median/max over the
// repetitions), as a table and as JSON. It never fails on a ratio; it
// fails when an engine's output differs from nexmark.Reference (and so
// from the other engine's).
//
// What is measured:
//   - records/s: records over the processing, from the first input
//     record entering the job (generated, or read from Kafka) to the end
//     of input at the sinks, each engine timing itself the same way
//     (jobs.Result); cluster start-up, the final checkpoint and the final
//     commit are outside;
//   - CPU s: the whole process's user+sys time (the child's rusage): JVM
//     start, JIT, cluster start and shut-down included; proc CPU s: the
//     process's CPU time over the processing only;
//   - peak RSS: the process's VmHWM, read by the process as it ends.
//
// Both engines run at the same parallelism with the same settings:
// exactly-once checkpoints every 10 s to a local directory, heap state
// (Flink's hashmap backend, Sluice's hashmap), Flink's default memory
// settings of a local MiniCluster in a JVM with -Xmx1g, and Flink's
// pipeline.object-reuse on (as Flink's own Nexmark setup runs it). The
// Kafka topics have Partitions partitions and no compression.
package flinkcmp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/sluice/sluice/bench/flinkcmp/jobs"
)

// Engine names.
const (
	Flink  = "flink"
	Sluice = "sluice"
	// RawKafka is the raw franz-go loop (run by the sluicebench binary).
	RawKafka = "raw"
)

// Errors of this package; returned errors wrap one of them.
var (
	// ErrBuild: an engine could not be built (Go, JDK or Maven missing, no
	// network for Maven's first download).
	ErrBuild = errors.New("flinkcmp: build failed")
	// ErrRun: an engine's process failed or printed no result.
	ErrRun = errors.New("flinkcmp: run failed")
	// ErrMismatch: an engine's output differs from the reference.
	ErrMismatch = errors.New("flinkcmp: engines disagree")
)

// Engines locates the built engines.
type Engines struct {
	// SluiceBin is the sluicebench binary.
	SluiceBin string
	// Java is the java launcher; FlinkClasspath the Flink jobs' classpath.
	Java           string
	FlinkClasspath string
	// FlinkJVMOpts are the JVM options of a Flink run (default -Xmx1g).
	FlinkJVMOpts []string
}

// RepoRoot returns the directory holding go.mod at or above dir.
func RepoRoot(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("flinkcmp: no go.mod at or above %s", dir)
		}
		d = filepath.Dir(d)
	}
}

// Build builds the sluicebench binary into workDir and the Flink jobs
// (mvn package in bench/flink; Maven fetches Flink from Maven Central the
// first time) and returns where they are.
func Build(ctx context.Context, root, workDir string, logf func(string, ...any)) (Engines, error) {
	var e Engines
	e.SluiceBin = filepath.Join(workDir, "sluicebench")
	logf("flinkcmp: building %s", e.SluiceBin)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", e.SluiceBin, "./bench/flinkcmp/cmd/sluicebench")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return e, fmt.Errorf("%w: go build sluicebench: %v\n%s", ErrBuild, err, out)
	}
	java, err := findJava()
	if err != nil {
		return e, err
	}
	e.Java = java
	if _, err := exec.LookPath("mvn"); err != nil {
		return e, fmt.Errorf("%w: mvn not found: install Maven 3 (apt-get install maven)", ErrBuild)
	}
	flinkDir := filepath.Join(root, "bench", "flink")
	logf("flinkcmp: building the Flink jobs in %s (Maven; the first build downloads Flink)", flinkDir)
	// A clean lib/ so that no jar of an older dependency set lingers on the classpath.
	if err := os.RemoveAll(filepath.Join(flinkDir, "target", "lib")); err != nil {
		return e, fmt.Errorf("%w: %v", ErrBuild, err)
	}
	cmd = exec.CommandContext(ctx, "mvn", "-B", "-q", "-f", filepath.Join(flinkDir, "pom.xml"), "package")
	if out, err := cmd.CombinedOutput(); err != nil {
		return e, fmt.Errorf("%w: mvn package in %s: %v\n%s", ErrBuild, flinkDir, err, tail(out, 60))
	}
	e.FlinkClasspath = filepath.Join(flinkDir, "target", "classes") + string(os.PathListSeparator) +
		filepath.Join(flinkDir, "target", "lib", "*")
	e.FlinkJVMOpts = []string{"-Xmx1g"}
	return e, nil
}

func findJava() (string, error) {
	if h := os.Getenv("JAVA_HOME"); h != "" {
		j := filepath.Join(h, "bin", "java")
		if _, err := os.Stat(j); err != nil {
			return "", fmt.Errorf("%w: JAVA_HOME=%s has no bin/java", ErrBuild, h)
		}
		return j, nil
	}
	j, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("%w: java not found: install a JDK 17 (apt-get install openjdk-17-jdk-headless) or set JAVA_HOME", ErrBuild)
	}
	return j, nil
}

func tail(b []byte, lines int) []byte {
	ls := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return bytes.Join(ls, []byte("\n"))
}

// Spec is one run of one engine.
type Spec struct {
	Engine   string
	Workload string
	Records  int64
	Seed     uint64
	// Parallelism of every operator.
	Parallelism int
	// CheckpointInterval (0: off) and CheckpointDir.
	CheckpointInterval time.Duration
	CheckpointDir      string
	// Kafka workloads.
	Bootstrap, InTopic, OutTopic, TxnPrefix string
	// CPUProfile, for a Sluice run, is where to write its CPU profile.
	CPUProfile string
	// Timeout ends the run (the process is killed); default 10 minutes.
	Timeout time.Duration
}

// Measurement is one run: what the job printed and what the process cost.
type Measurement struct {
	jobs.Result
	// Wall is the process's lifetime, start-up and shut-down included.
	Wall time.Duration
	// CPU is the process's user+sys time (rusage of the child).
	CPU time.Duration
	// MaxRSS is the process's peak resident set size in bytes, as the
	// process read its VmHWM at its end (jobs.PeakRSS says why not the
	// child's ru_maxrss).
	MaxRSS int64
}

// Command returns the command line of a run.
func (e Engines) Command(s Spec) ([]string, error) {
	if s.Parallelism <= 0 {
		return nil, fmt.Errorf("%w: parallelism %d", ErrRun, s.Parallelism)
	}
	switch s.Engine {
	case Sluice, RawKafka:
		w := s.Workload
		if s.Engine == RawKafka {
			w = jobs.Raw
		}
		args := []string{e.SluiceBin, "-workload", w, "-records", strconv.FormatInt(s.Records, 10),
			"-seed", strconv.FormatUint(s.Seed, 10), "-parallelism", strconv.Itoa(s.Parallelism)}
		if s.CheckpointInterval > 0 {
			args = append(args, "-checkpoint-interval", s.CheckpointInterval.String(), "-checkpoint-dir", s.CheckpointDir)
		}
		if s.Bootstrap != "" {
			args = append(args, "-bootstrap", s.Bootstrap, "-in-topic", s.InTopic, "-out-topic", s.OutTopic, "-txn-prefix", s.TxnPrefix)
		}
		if s.CPUProfile != "" {
			args = append(args, "-cpuprofile", s.CPUProfile)
		}
		return args, nil
	case Flink:
		args := append([]string{e.Java}, e.FlinkJVMOpts...)
		args = append(args, "-cp", e.FlinkClasspath, "io.github.sluice.flinkbench.FlinkBench",
			"--workload", s.Workload, "--records", strconv.FormatInt(s.Records, 10),
			"--seed", strconv.FormatUint(s.Seed, 10), "--parallelism", strconv.Itoa(s.Parallelism))
		if s.CheckpointInterval > 0 {
			args = append(args, "--checkpoint-interval-ms", strconv.FormatInt(s.CheckpointInterval.Milliseconds(), 10),
				"--checkpoint-dir", s.CheckpointDir)
		}
		if s.Bootstrap != "" {
			args = append(args, "--bootstrap", s.Bootstrap, "--in-topic", s.InTopic, "--out-topic", s.OutTopic, "--txn-prefix", s.TxnPrefix)
		}
		return args, nil
	}
	return nil, fmt.Errorf("%w: unknown engine %q", ErrRun, s.Engine)
}

// Exec runs one engine process to its end and measures it.
func (e Engines) Exec(ctx context.Context, s Spec) (Measurement, error) {
	args, err := e.Command(s)
	if err != nil {
		return Measurement{}, err
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	what := fmt.Sprintf("%s %s (%d records)", s.Engine, s.Workload, s.Records)
	if err != nil {
		return Measurement{}, fmt.Errorf("%w: %s: %v\n%s", ErrRun, what, err, tail(stderr.Bytes(), 40))
	}
	m := Measurement{Wall: wall}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	res, err := ParseResult(stdout.Bytes())
	if err != nil {
		return Measurement{}, fmt.Errorf("%s: %w\nstderr:\n%s", what, err, tail(stderr.Bytes(), 40))
	}
	if res.PeakRSSBytes <= 0 {
		return Measurement{}, fmt.Errorf("%w: %s reported no peak RSS", ErrRun, what)
	}
	m.Result = res
	m.MaxRSS = res.PeakRSSBytes
	return m, nil
}

// ParseResult finds the "RESULT {json}" line a job prints and decodes it.
func ParseResult(stdout []byte) (jobs.Result, error) {
	var found []byte
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("RESULT ")); ok {
			if found != nil {
				return jobs.Result{}, fmt.Errorf("%w: more than one RESULT line", ErrRun)
			}
			found = append([]byte(nil), rest...)
		}
	}
	if found == nil {
		return jobs.Result{}, fmt.Errorf("%w: no RESULT line in the output (%q)", ErrRun, tail(stdout, 5))
	}
	var r jobs.Result
	dec := json.NewDecoder(bytes.NewReader(found))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return jobs.Result{}, fmt.Errorf("%w: RESULT line %q: %v", ErrRun, found, err)
	}
	if r.Engine == "" || r.Workload == "" || r.Records <= 0 {
		return jobs.Result{}, fmt.Errorf("%w: RESULT line %q lacks engine, workload or records", ErrRun, found)
	}
	return r, nil
}
