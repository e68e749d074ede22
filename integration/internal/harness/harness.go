// Package harness runs the external servers of Sluice's integration tests (the Hadoop
// minicluster JVM, the Kafka broker) as child processes of the test binary, and stops them
// after the last test. It is shared by integration/minicluster and integration/kafkabroker.
//
// A server is started through a script in integration/scripts ("SCRIPT build", then
// "SCRIPT run DIR ... --exit-on-stdin-eof"). The child runs in a process group of its own and
// watches its standard input, whose write end only this process holds: when the test binary
// exits, however it exits, the pipe closes and the server stops itself.
package harness

import (
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
	"sync"
	"syscall"
	"time"

	"github.com/sluice/sluice/internal/testwait"
)

// Errors of this package; returned errors wrap one of them.
var (
	// ErrUnavailable: the harness scripts cannot be found, or their build failed (JDK or Maven
	// missing, no network for the first download, ...).
	ErrUnavailable = errors.New("harness: unavailable")
	// ErrExited: the server process exited before it was ready.
	ErrExited = errors.New("harness: server exited before it was ready")
	// ErrUncleanStop: Stop had to signal or kill, or found processes left behind.
	ErrUncleanStop = errors.New("harness: server did not stop cleanly")
)

// EnvIntegrationDir, if set, names the integration/ directory of the Sluice source tree; by
// default it is found from the working directory (tests run inside the module) or this file.
const EnvIntegrationDir = "SLUICE_INTEGRATION_DIR"

// Script returns the path of integration/scripts/<name>.
func Script(name string) (string, error) {
	var candidates []string
	if d := os.Getenv(EnvIntegrationDir); d != "" {
		candidates = append(candidates, d)
	} else {
		if wd, err := os.Getwd(); err == nil {
			for d := wd; ; d = filepath.Dir(d) {
				if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
					candidates = append(candidates, filepath.Join(d, "integration"))
					break
				}
				if filepath.Dir(d) == d {
					break
				}
			}
		}
		if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
			// integration/internal/harness/harness.go
			candidates = append(candidates, filepath.Dir(filepath.Dir(filepath.Dir(file))))
		}
	}
	for _, d := range candidates {
		s := filepath.Join(d, "scripts", name)
		if st, err := os.Stat(s); err == nil && st.Mode()&0o111 != 0 {
			return s, nil
		}
	}
	return "", fmt.Errorf("%w: scripts/%s not found under %v; set %s to the integration/ directory",
		ErrUnavailable, name, candidates, EnvIntegrationDir)
}

// Build runs "SCRIPT build", which does nothing when the build is current.
func Build(ctx context.Context, script string, logf func(string, ...any)) error {
	cmd := exec.CommandContext(ctx, script, "build")
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	began := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: %s build: %v\n%s", ErrUnavailable, script, err, out.String())
	}
	if s := strings.TrimSpace(out.String()); s != "" {
		logf("%s (build took %s)", s, time.Since(began).Round(time.Millisecond))
	}
	return nil
}

// Process is a server child process.
type Process struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	logFile *os.File
	// LogPath is the file receiving the child's stdout and stderr.
	LogPath string

	done    chan struct{} // closed once the child has been waited for
	waitErr error         // valid after done is closed
}

// Start runs script with args in a process group of its own, stdout and stderr appended to
// logPath, and stdin a pipe that stays open until Stop.
func Start(script string, args []string, logPath string) (*Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	cmd := exec.Command(script, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("harness: %w", err)
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("%w: starting %s: %v", ErrUnavailable, script, err)
	}
	p := &Process{cmd: cmd, stdin: stdin, logFile: logFile, LogPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid is the child's process id (and process group id).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the child has exited and been waited for.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitErr is the child's exit error; valid once Done is closed.
func (p *Process) ExitErr() error { return p.waitErr }

// WaitReady calls ready every interval until it reports true or an error, the child exits, or
// ctx ends. Errors carry the tail of the child's log.
func (p *Process) WaitReady(ctx context.Context, interval time.Duration, ready func() (bool, error)) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		ok, err := ready()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%w (%v); last lines of %s:\n%s", ErrExited, p.waitErr, p.LogPath, p.LogTail(40))
		case <-ctx.Done():
			return fmt.Errorf("harness: not ready: %w; last lines of %s:\n%s", ctx.Err(), p.LogPath, p.LogTail(40))
		case <-tick.C:
		}
	}
}

// StopTimeouts are the waits of Stop.
type StopTimeouts struct {
	AfterStdinClose time.Duration // then SIGTERM to the group
	AfterTerm       time.Duration // then SIGKILL to the group
}

// Stop closes the child's stdin (it then stops by itself), sends SIGTERM to its process group if
// it is alive after t.AfterStdinClose and SIGKILL after t.AfterTerm more, waits for it, kills
// whatever is left in its group, and SIGKILLs leftover processes whose working directory lies
// under any of workDirs (YARN containers run in sessions of their own). It returns the problems
// met, nil for a clean stop.
func (p *Process) Stop(t StopTimeouts, workDirs ...string) []string {
	var problems []string
	pgid := p.cmd.Process.Pid
	p.stdin.Close()
	if !p.waitDone(t.AfterStdinClose) {
		problems = append(problems, fmt.Sprintf("alive %s after stdin closed; sent SIGTERM", t.AfterStdinClose))
		syscall.Kill(-pgid, syscall.SIGTERM)
		if !p.waitDone(t.AfterTerm) {
			problems = append(problems, fmt.Sprintf("alive %s after SIGTERM; sent SIGKILL", t.AfterTerm))
			syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.done
		}
	}
	if len(problems) == 0 && p.waitErr != nil {
		problems = append(problems, fmt.Sprintf("exit: %v (see %s)", p.waitErr, p.LogPath))
	}
	if left := groupSettle(pgid); len(left) > 0 {
		problems = append(problems, fmt.Sprintf("processes %v left in the server's process group; sent SIGKILL", left))
		syscall.Kill(-pgid, syscall.SIGKILL)
		if left := groupSettle(pgid); len(left) > 0 {
			problems = append(problems, fmt.Sprintf("processes %v survive SIGKILL", left))
		}
	}
	for _, d := range workDirs {
		if pids := KillUnder(d); len(pids) > 0 {
			problems = append(problems, fmt.Sprintf("killed leftover processes %v under %s", pids, d))
		}
	}
	p.logFile.Close()
	return problems
}

func (p *Process) waitDone(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// LogTail returns the last n lines of the child's log.
func (p *Process) LogTail(n int) string { return FileTail(p.LogPath, n) }

// FileTail returns the last n lines of a file.
func FileTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// KillUnder SIGKILLs every process whose working directory lies under dir and returns their
// pids. Linux only (it reads /proc); elsewhere it finds nothing.
func KillUnder(dir string) []int {
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	prefix := filepath.Clean(dir) + string(filepath.Separator)
	self := os.Getpid()
	var killed []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil || !strings.HasPrefix(cwd+string(filepath.Separator), prefix) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed = append(killed, pid)
		}
	}
	return killed
}

// ProcessAlive reports whether a process with this pid exists and is not a zombie (an exited
// child nobody has reaped yet; where pid 1 is slow to reap orphans, those linger).
func ProcessAlive(pid int) bool {
	if st, err := readStat(pid); err == nil {
		return st.state != 'Z'
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// GroupMembers lists the live (non-zombie) processes of process group pgid. Linux only (it
// reads /proc); elsewhere it finds nothing.
func GroupMembers(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readStat(pid); err == nil && st.pgrp == pgid && st.state != 'Z' {
			pids = append(pids, pid)
		}
	}
	return pids
}

// groupSettle gives the members of a process group that are already dying a moment to go, and
// returns those still alive after it.
func groupSettle(pgid int) []int {
	var left []int
	// Polling /proc: no event announces another process's death. Those
	// left after groupSettleTime are the answer, not a failure.
	_ = testwait.Poll(groupSettleTime, func() bool { left = GroupMembers(pgid); return len(left) == 0 })
	return left
}

const groupSettleTime = 2 * time.Second

type procStat struct {
	state byte
	pgrp  int
}

// readStat reads the state and process group of pid from /proc/PID/stat, whose second field
// (the command name, in parentheses) may itself hold spaces and parentheses.
func readStat(pid int) (procStat, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("harness: /proc/%d/stat: no command name", pid)
	}
	// After the name: state ppid pgrp ...
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 3 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("harness: /proc/%d/stat: malformed", pid)
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil {
		return procStat{}, fmt.Errorf("harness: /proc/%d/stat: pgrp %q", pid, f[2])
	}
	return procStat{state: f[0][0], pgrp: pgrp}, nil
}

// The registry of servers to stop after the tests of this binary. It is the one piece of
// process-wide state here: a test binary has exactly one TestMain, and shared servers must
// outlive every test in it.
var registry struct {
	mu       sync.Mutex
	inMain   bool
	stoppers []stopper
}

type stopper struct {
	name string
	stop func(keep bool) error
}

// InMain reports whether RunMain is running the tests.
func InMain() bool {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return registry.inMain
}

// AtExit registers stop to run after the last test; keep is true when a test failed (the server
// should leave its logs in place). Stoppers run in reverse order of registration.
func AtExit(name string, stop func(keep bool) error) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	registry.stoppers = append(registry.stoppers, stopper{name, stop})
}

// RunMain runs the tests, then every stopper registered with AtExit. A stopper's error makes
// the exit code non-zero even when every test passed.
func RunMain(m interface{ Run() int }) int {
	registry.mu.Lock()
	registry.inMain = true
	registry.mu.Unlock()

	code := m.Run()

	registry.mu.Lock()
	registry.inMain = false
	stoppers := registry.stoppers
	registry.stoppers = nil
	registry.mu.Unlock()
	for i := len(stoppers) - 1; i >= 0; i-- {
		if err := stoppers[i].stop(code != 0); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", stoppers[i].name, err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// NeedMainMessage is the failure message of a Shared call outside RunMain.
const NeedMainMessage = "shared test servers need the package's TestMain to run the tests through RunMain: " +
	"func TestMain(m *testing.M) { os.Exit(minicluster.RunMain(m)) } (kafkabroker.RunMain is the same function)"
