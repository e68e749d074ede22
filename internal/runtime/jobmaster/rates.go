package jobmaster

import (
	"sync"

	"github.com/sluice/sluice/internal/runtime/task"
)

// Flink's windows for per-second figures: a meter (numRecordsInPerSecond
// and the like) is the rate over the last minute (MeterView's time span);
// a timer gauge (busyTimeMsPerSecond and the like) over the last update
// interval of its view, 5 s.
const (
	MeterWindowMillis = 60_000
	TimerWindowMillis = 5_000
)

// RateSample is a subtask's cumulative counters at one moment, epoch ms.
type RateSample struct {
	At                                          int64
	RecordsIn, RecordsOut, BytesIn, BytesOut    int64
	BusyMillis, BackpressuredMillis, IdleMillis int64
}

// SampleOf reads m's counters at time at.
func SampleOf(at int64, m *task.Metrics) RateSample {
	return RateSample{At: at, RecordsIn: m.RecordsIn.Load(), RecordsOut: m.RecordsOut.Load(),
		BytesIn: m.BytesIn.Load(), BytesOut: m.BytesOut.Load(),
		BusyMillis: m.BusyNanos.Load() / 1e6, BackpressuredMillis: m.BackpressuredNanos.Load() / 1e6, IdleMillis: m.IdleNanos.Load() / 1e6}
}

// PerSecond are a subtask's rates, by Flink's metric names.
type PerSecond struct {
	RecordsIn, RecordsOut, BytesIn, BytesOut float64 // per second
	// BusyTimeMs, BackPressuredTimeMs and IdleTimeMs are ms per second,
	// 0 to 1000.
	BusyTimeMs, BackPressuredTimeMs, IdleTimeMs float64
}

// RatesOf computes the rates of samples (in time order): meters over the
// span from the newest sample back to the oldest within
// MeterWindowMillis, timers likewise within TimerWindowMillis. It reports
// false until there are two samples apart in time. A counter that went
// back (the subtask restarted) counts from its new value.
func RatesOf(samples []RateSample) (PerSecond, bool) {
	if len(samples) < 2 {
		return PerSecond{}, false
	}
	last := samples[len(samples)-1]
	base := func(window int64) (RateSample, float64) {
		for _, s := range samples {
			if last.At-s.At <= window && s.At < last.At {
				return s, float64(last.At-s.At) / 1000
			}
		}
		return last, 0
	}
	rate := func(now, then int64, secs float64) float64 {
		if secs <= 0 {
			return 0
		}
		d := now - then
		if d < 0 {
			d = now
		}
		return float64(d) / secs
	}
	m, ms := base(MeterWindowMillis)
	t, ts := base(TimerWindowMillis)
	if ms == 0 || ts == 0 {
		return PerSecond{}, false
	}
	clamp := func(x float64) float64 { return min(max(x, 0), 1000) }
	return PerSecond{
		RecordsIn: rate(last.RecordsIn, m.RecordsIn, ms), RecordsOut: rate(last.RecordsOut, m.RecordsOut, ms),
		BytesIn: rate(last.BytesIn, m.BytesIn, ms), BytesOut: rate(last.BytesOut, m.BytesOut, ms),
		BusyTimeMs:          clamp(rate(last.BusyMillis, t.BusyMillis, ts)),
		BackPressuredTimeMs: clamp(rate(last.BackpressuredMillis, t.BackpressuredMillis, ts)),
		IdleTimeMs:          clamp(rate(last.IdleMillis, t.IdleMillis, ts)),
	}, true
}

// Rates keeps a subtask's recent samples, for its per-second figures.
// Methods may be called from any goroutine; a nil *Rates has none.
type Rates struct {
	mu struct {
		sync.Mutex
		samples []RateSample
	}
}

// Observe adds a sample, dropping those older than the meter window
// needs. A sample not newer than the last is ignored.
func (r *Rates) Observe(s RateSample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.mu.samples); n > 0 && s.At <= r.mu.samples[n-1].At {
		return
	}
	r.mu.samples = append(r.mu.samples, s)
	// Keep the newest sample at or beyond the window's start, and those after it.
	keep := 0
	for i, x := range r.mu.samples {
		if s.At-x.At >= MeterWindowMillis {
			keep = i
		}
	}
	r.mu.samples = append(r.mu.samples[:0], r.mu.samples[keep:]...)
}

// PerSecond returns the current rates; false until there are enough
// samples.
func (r *Rates) PerSecond() (PerSecond, bool) {
	if r == nil {
		return PerSecond{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return RatesOf(r.mu.samples)
}
