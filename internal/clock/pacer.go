package clock

// Pacer spreads events evenly at PerSecond events per second of a clock's
// time, counted from its first Allow; a generator asks it how many it may
// make now. PerSecond ≤ 0 is unlimited. The zero value with PerSecond set
// is ready; a Pacer is not safe for concurrent use.
type Pacer struct {
	PerSecond float64

	begun   bool
	started int64 // ms, the first Allow
	taken   int64
}

// Allow returns how many events, at most limit, may happen at now
// (milliseconds); with none, next is the time (ms, after now) at which the
// next one may.
func (p *Pacer) Allow(now, limit int64) (n, next int64) {
	if p.PerSecond <= 0 {
		return limit, 0
	}
	if !p.begun {
		p.begun, p.started = true, now
	}
	allowed := int64(p.PerSecond*float64(now-p.started)/1000) + 1 - p.taken
	if allowed > 0 {
		return min(allowed, limit), 0
	}
	next = p.started + int64(float64(p.taken)*1000/p.PerSecond)
	return 0, max(next, now+1)
}

// Took records that n events happened.
func (p *Pacer) Took(n int64) { p.taken += n }
