package taskmanager

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sluice/sluice/cluster/resourcemanager"
)

// leftovers lists the TaskManager working directories under tmp.
func leftovers(t *testing.T, tmp string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(tmp, workDirPattern+"*"))
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range dirs {
		dirs[i] = filepath.Base(d)
	}
	return dirs
}

// A TaskManager with no working directory configured makes its own under
// the temporary directory and leaves nothing there when it stops, when it
// is closed unrun, or (after a kill) once the next TaskManager starts.
func TestTaskManagerLeavesNoWorkingDirectory(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	r := startRM(t, 50*time.Millisecond, time.Second)
	cfg := func() Config {
		_, log := newLogs(t)
		return Config{ResourceManagerAddress: r.addr, Host: "127.0.0.1", Slots: 1, StopGrace: 100 * time.Millisecond, Logger: log}
	}

	t.Run("run and stopped", func(t *testing.T) {
		tm, err := New(cfg())
		if err != nil {
			t.Fatal(err)
		}
		if got := leftovers(t, tmp); len(got) != 1 {
			t.Fatalf("working directories while it runs: %v", got)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- tm.Run(ctx) }()
		eventually(t, "the TaskManager to register", r.seenAs(t, tm.ID(), &resourcemanager.TaskManagerInfo{}))
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := leftovers(t, tmp); len(got) != 0 {
			t.Fatalf("left after it stopped: %v", got)
		}
	})

	t.Run("closed unrun", func(t *testing.T) {
		tm, err := New(cfg())
		if err != nil {
			t.Fatal(err)
		}
		if err := tm.Close(); err != nil {
			t.Fatal(err)
		}
		if got := leftovers(t, tmp); len(got) != 0 {
			t.Fatalf("left after Close: %v", got)
		}
	})

	t.Run("killed, then the next one starts", func(t *testing.T) {
		// A killed TaskManager's directory: its lock file, held by no one.
		dead := filepath.Join(tmp, workDirPattern+"killed")
		if err := os.MkdirAll(filepath.Join(dead, "blobs"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dead, lockFileName), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		// A running one's (its lock held) and one not known to be ours
		// (no lock file) stay.
		alive := filepath.Join(tmp, workDirPattern+"alive")
		if err := os.MkdirAll(alive, 0o755); err != nil {
			t.Fatal(err)
		}
		held, ok, err := tryLock(alive)
		if err != nil || !ok {
			t.Fatalf("locking %s: %v %v", alive, ok, err)
		}
		defer held.Close()
		foreign := filepath.Join(tmp, workDirPattern+"foreign")
		if err := os.MkdirAll(foreign, 0o755); err != nil {
			t.Fatal(err)
		}

		tm, err := New(cfg())
		if err != nil {
			t.Fatal(err)
		}
		own := filepath.Base(tm.ownWorkDir.path)
		if got, want := leftovers(t, tmp), []string{own, workDirPattern + "alive", workDirPattern + "foreign"}; !sameSet(got, want) {
			t.Fatalf("working directories after the start: %v, want %v", got, want)
		}
		tm.Close()
		if got, want := leftovers(t, tmp), []string{workDirPattern + "alive", workDirPattern + "foreign"}; !sameSet(got, want) {
			t.Fatalf("working directories after Close: %v, want %v", got, want)
		}
	})
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
