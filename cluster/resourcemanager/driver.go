package resourcemanager

import (
	"context"
	"log/slog"
	"sync"
)

// Driver acquires and releases TaskManagers on a platform (standalone: a
// fixed set started by the user; YARN: containers).
//
// The ResourceManager calls SetRequired and Release from its loop: they must
// return promptly and must not wait for the ResourceManager.
type Driver interface {
	// Run runs the driver until ctx ends, reporting to events.
	Run(ctx context.Context, events DriverEvents) error
	// SetRequired declares how many TaskManagers of the given per-TaskManager
	// resources the cluster needs in total (absolute). Standalone ignores it.
	SetRequired(n int)
	// Release stops the TaskManager with this resource id (idle or surplus).
	Release(resourceID string)
}

// DriverEvents are the platform's reports to the ResourceManager.
//
// Its methods may be called from any goroutine, also from within
// SetRequired or Release: they queue the report and return.
type DriverEvents interface {
	// WorkerStopped reports a TaskManager's resource gone (container
	// completed, preempted, node lost) with the platform's diagnostics.
	WorkerStopped(resourceID, diagnostics string)
}

// Standalone is the driver of a standalone cluster: a fixed set of
// TaskManagers started by hand (cmd/taskmanager) register themselves. It
// cannot start or stop TaskManagers: SetRequired only logs what the demand
// needs, and Release does nothing.
type Standalone struct {
	log *slog.Logger
	mu  struct {
		sync.Mutex
		required int
	}
}

// NewStandalone returns the standalone driver, logging to log.
func NewStandalone(log *slog.Logger) *Standalone {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Standalone{log: log.With("driver", "standalone")}
}

// Run implements Driver: it waits for ctx to end.
func (s *Standalone) Run(ctx context.Context, _ DriverEvents) error {
	<-ctx.Done()
	return nil
}

// SetRequired implements Driver. A standalone cluster cannot start
// TaskManagers; it only notes the number.
func (s *Standalone) SetRequired(n int) {
	s.mu.Lock()
	prev := s.mu.required
	s.mu.required = n
	s.mu.Unlock()
	// Whether the registered TaskManagers fall short is the slot table's to
	// say ("slot demand exceeds the free slots …"): n counts those already
	// running too.
	if n != prev {
		s.log.Debug("TaskManagers required; a standalone cluster runs only those started by hand", "required", n, "before", prev)
	}
}

// Release implements Driver: standalone TaskManagers are never released.
func (s *Standalone) Release(resourceID string) {
	s.log.Debug("idle TaskManager kept: a standalone cluster does not release TaskManagers", "resource", resourceID)
}

// Required returns the last number of TaskManagers the ResourceManager
// asked for.
func (s *Standalone) Required() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.required
}
