// Package flinksql runs Flink SQL scripts on Apache Flink itself, the
// reference Sluice SQL is compared with: Flink 2.3's TableEnvironment in
// streaming mode on a local MiniCluster, in one JVM for a list of scripts
// that run one after the other, each to its end (Run.java, built from
// Maven Central by integration/scripts/flinksql.sh).
//
//	cp, err := flinksql.Classpath(ctx)
//	res, err := flinksql.Run(ctx, flinksql.Options{Classpath: cp}, "a.sql", "b.sql")
//	// res[i].Err is nil, or Flink's error for script i
//
// A script's INSERTs must read bounded sources ('scan.bounded.mode'), or
// the script says when its output has settled with a comment line
// `-- flinksql: stop-when-idle BOOTSTRAP TOPIC SECONDS` (see Run.java).
package flinksql

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// EnvClasspath names the runner's Java classpath, as flinksql.sh prints it
// (the Makefile's integration target sets it). Unset, Classpath builds it.
const EnvClasspath = "SLUICE_FLINK_SQL_CLASSPATH"

// mainClass is the runner's class in the classpath.
const mainClass = "io.github.sluice.flinksql.Run"

// Errors of the runner, tested with errors.Is.
var (
	// ErrBuild: the runner could not be built (no JDK, Maven or network).
	ErrBuild = errors.New("flinksql: building the Flink SQL runner failed")
	// ErrRunner: the JVM failed before it ran every script, or its output
	// is not the runner's.
	ErrRunner = errors.New("flinksql: the Flink SQL runner failed")
)

// ScriptError is Flink's failure of one script.
type ScriptError struct {
	Script  string
	Message string // Flink's error and its causes, on one line
}

func (e *ScriptError) Error() string {
	return fmt.Sprintf("flinksql: Flink failed script %s: %s", e.Script, e.Message)
}

// Classpath returns $SLUICE_FLINK_SQL_CLASSPATH, or builds the runner with
// integration/scripts/flinksql.sh (Maven Central; cached in
// integration/flinksql/target) and returns the classpath it prints.
func Classpath(ctx context.Context) (string, error) {
	if cp := os.Getenv(EnvClasspath); cp != "" {
		return cp, nil
	}
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("%w: cannot locate integration/scripts/flinksql.sh", ErrBuild)
	}
	script := filepath.Join(filepath.Dir(self), "..", "scripts", "flinksql.sh")
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, script)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v: %s", ErrBuild, script, err, strings.TrimSpace(stderr.String()))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

// Options configure a run of the runner.
type Options struct {
	// Classpath is the runner's Java classpath (see Classpath). Required.
	Classpath string
	// Java is the java command. Empty: $JAVA_HOME/bin/java if JAVA_HOME is
	// set, else java.
	Java string
	// JavaOpts are the JVM's options. Nil: -Xmx1g -XX:+UseSerialGC.
	JavaOpts []string
	// Parallelism is Flink's parallelism.default. 0: 1.
	Parallelism int
	// Stderr receives the JVM's standard error (Flink's WARN logs and the
	// stack traces of failures). Nil: discarded.
	Stderr io.Writer
	// Started, when set, is called with the JVM's process id once it runs.
	Started func(pid int)
	// Exited, when set, is called with the JVM's state once it ended (its
	// SysUsage has the JVM's CPU time).
	Exited func(*os.ProcessState)
}

// Result is the outcome of one script.
type Result struct {
	Script  string
	Elapsed time.Duration // the script's run in the JVM (0 when it failed)
	// CPU is the JVM's CPU time (all threads) over the script's run:
	// planning, the local MiniCluster and the jobs (0 when it failed).
	CPU time.Duration
	Err error // nil, or a *ScriptError
}

// Run runs the scripts in one JVM, in order, and returns one Result per
// script. The error is non-nil only when the JVM failed as a whole: then
// the results of the scripts that did not run are missing.
func Run(ctx context.Context, o Options, scripts ...string) ([]Result, error) {
	if o.Classpath == "" {
		return nil, fmt.Errorf("%w: no classpath", ErrRunner)
	}
	java := o.Java
	if java == "" {
		java = "java"
		if h := os.Getenv("JAVA_HOME"); h != "" {
			java = filepath.Join(h, "bin", "java")
		}
	}
	opts := o.JavaOpts
	if opts == nil {
		opts = []string{"-Xmx1g", "-XX:+UseSerialGC"}
	}
	par := o.Parallelism
	if par == 0 {
		par = 1
	}
	args := append(append([]string{}, opts...), "-cp", o.Classpath, mainClass, "--parallelism", strconv.Itoa(par))
	args = append(args, scripts...)
	cmd := exec.CommandContext(ctx, java, args...)
	cmd.Stderr = o.Stderr
	cmd.WaitDelay = 10 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRunner, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: starting %s: %v", ErrRunner, java, err)
	}
	if o.Started != nil {
		o.Started(cmd.Process.Pid)
	}
	results, perr := parse(stdout)
	_, _ = io.Copy(io.Discard, stdout)
	werr := cmd.Wait()
	if o.Exited != nil && cmd.ProcessState != nil {
		o.Exited(cmd.ProcessState)
	}
	if perr != nil {
		return results, fmt.Errorf("%w: %v", ErrRunner, perr)
	}
	if len(results) != len(scripts) {
		return results, fmt.Errorf("%w: ran %d of %d scripts: %v", ErrRunner, len(results), len(scripts), werr)
	}
	failed := false
	for _, r := range results {
		failed = failed || r.Err != nil
	}
	var exit *exec.ExitError
	if werr != nil && !(failed && errors.As(werr, &exit) && exit.ExitCode() == 1) {
		return results, fmt.Errorf("%w: %v", ErrRunner, werr)
	}
	return results, nil
}

// parse reads the runner's `SCRIPT <path> OK <ms> <cpu ms>` and `SCRIPT
// <path> FAILED <message>` lines.
func parse(r io.Reader) ([]Result, error) {
	var out []Result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "SCRIPT ")
		if !ok {
			continue // Flink or a library printing to standard output
		}
		f := strings.SplitN(rest, " ", 3)
		if len(f) < 2 {
			return out, fmt.Errorf("malformed line %q", line)
		}
		switch f[1] {
		case "OK":
			var ms []int64
			if len(f) == 3 {
				for _, x := range strings.Fields(f[2]) {
					v, err := strconv.ParseInt(x, 10, 64)
					if err != nil {
						return out, fmt.Errorf("malformed line %q", line)
					}
					ms = append(ms, v)
				}
			}
			r := Result{Script: f[0]}
			if len(ms) > 0 {
				r.Elapsed = time.Duration(ms[0]) * time.Millisecond
			}
			if len(ms) > 1 {
				r.CPU = time.Duration(ms[1]) * time.Millisecond
			}
			out = append(out, r)
		case "FAILED":
			msg := ""
			if len(f) == 3 {
				msg = f[2]
			}
			out = append(out, Result{Script: f[0], Err: &ScriptError{Script: f[0], Message: msg}})
		default:
			return out, fmt.Errorf("malformed line %q", line)
		}
	}
	return out, sc.Err()
}
