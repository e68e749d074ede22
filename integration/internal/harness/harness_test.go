package harness

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// script writes an executable shell script into a temp dir.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "server.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStopByClosingStdin(t *testing.T) {
	// A well-behaved server: runs until its stdin closes.
	p, err := Start(script(t, `echo up; cat >/dev/null; echo bye`), nil, filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	err = p.WaitReady(context.Background(), 10*time.Millisecond, func() (bool, error) {
		return strings.Contains(p.LogTail(5), "up"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if problems := p.Stop(StopTimeouts{AfterStdinClose: 10 * time.Second, AfterTerm: time.Second}); problems != nil {
		t.Fatalf("Stop: %v", problems)
	}
	if got := p.LogTail(1); got != "bye" {
		t.Errorf("last log line %q, want bye", got)
	}
	if ProcessAlive(p.Pid()) {
		t.Errorf("pid %d alive after Stop", p.Pid())
	}
}

func TestStopEscalates(t *testing.T) {
	// A server that ignores stdin and SIGTERM, with a child in its process group.
	p, err := Start(script(t, `trap '' TERM; sleep 300 & echo up; while :; do sleep 1; done`), nil,
		filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	err = p.WaitReady(context.Background(), 10*time.Millisecond, func() (bool, error) {
		return strings.Contains(p.LogTail(5), "up"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	problems := p.Stop(StopTimeouts{AfterStdinClose: 200 * time.Millisecond, AfterTerm: 200 * time.Millisecond})
	joined := strings.Join(problems, "; ")
	if !strings.Contains(joined, "sent SIGTERM") || !strings.Contains(joined, "sent SIGKILL") {
		t.Fatalf("Stop problems %q: want SIGTERM then SIGKILL reported", joined)
	}
	if left := groupSettle(p.Pid()); len(left) > 0 {
		t.Errorf("process group %d still has live members %v", p.Pid(), left)
	}
}

func TestWaitReadyReportsExit(t *testing.T) {
	p, err := Start(script(t, `echo failing to start; exit 3`), nil, filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	err = p.WaitReady(context.Background(), 10*time.Millisecond, func() (bool, error) { return false, nil })
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "failing to start") {
		t.Fatalf("WaitReady: %v; want ErrExited with the log tail", err)
	}
	p.Stop(StopTimeouts{AfterStdinClose: time.Second, AfterTerm: time.Second})
}

func TestWaitReadyHonoursContext(t *testing.T) {
	p, err := Start(script(t, `cat >/dev/null`), nil, filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(StopTimeouts{AfterStdinClose: 5 * time.Second, AfterTerm: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = p.WaitReady(ctx, 10*time.Millisecond, func() (bool, error) { return false, nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitReady: %v; want DeadlineExceeded", err)
	}
}

func TestKillUnder(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "work", "container_1")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	// Like a YARN container: its own session, working directory under the work dir.
	cmd := exec.Command("sleep", "300")
	cmd.Dir = work
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	if got := KillUnder(filepath.Join(dir, "elsewhere")); len(got) != 0 {
		t.Fatalf("KillUnder(elsewhere) killed %v", got)
	}
	got := KillUnder(filepath.Join(dir, "work"))
	if len(got) != 1 || got[0] != cmd.Process.Pid {
		t.Fatalf("KillUnder killed %v, want [%d]", got, cmd.Process.Pid)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("sleep not dead 10 s after KillUnder")
	}
}

func TestScriptNotFound(t *testing.T) {
	t.Setenv(EnvIntegrationDir, t.TempDir())
	_, err := Script("minicluster.sh")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), EnvIntegrationDir) {
		t.Fatalf("Script: %v; want ErrUnavailable naming %s", err, EnvIntegrationDir)
	}
}

func TestScriptFound(t *testing.T) {
	s, err := Script("minicluster.sh")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(filepath.Dir(s)) != "scripts" {
		t.Errorf("Script = %s", s)
	}
}
