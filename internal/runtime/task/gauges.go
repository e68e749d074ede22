package task

import (
	"maps"
	"sync"
)

// Gauges are the metrics a subtask's operators publish of their own (a
// connector's per-partition offsets and lag, its open transactions),
// Flink's operator metric group: values by name, set and removed by the
// operators and read by whoever reports the subtask's metrics (a worker,
// to its JobMaster). Safe for concurrent use; the zero value is empty and
// ready.
type Gauges struct {
	mu sync.Mutex
	m  map[string]float64
}

// Set sets the gauge name to v.
func (g *Gauges) Set(name string, v float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]float64{}
	}
	g.m[name] = v
}

// Remove drops the gauge name (a released partition, an ended
// transaction).
func (g *Gauges) Remove(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.m, name)
}

// Snapshot returns a copy of the gauges; nil when there are none.
func (g *Gauges) Snapshot() map[string]float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.m) == 0 {
		return nil
	}
	return maps.Clone(g.m)
}

// Replace makes the gauges exactly m's (a JobMaster keeping what a
// worker reported); m is copied.
func (g *Gauges) Replace(m map[string]float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.m = maps.Clone(m)
}
