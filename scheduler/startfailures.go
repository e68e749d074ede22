package scheduler

// StartFailures decides when to stop asking for new TaskManagers because too
// many failed to start, as Flink's active resource managers do with
// resourcemanager.start-worker.max-failure-rate and .retry-interval: once
// the failures of the last minute reach the rate, new asks wait for the
// retry interval; a failure during the pause, with the rate still reached,
// starts the pause again. Time is epoch milliseconds passed in by the
// caller; StartFailures never reads a clock. It is not safe for concurrent
// use: its owner's loop drives it.
type StartFailures struct {
	rate        float64
	retryMillis int64
	failures    []int64 // times of the failures within the last minute, ascending
	pausedUntil int64
}

// failureWindowMillis is the window the rate counts failures in: a minute.
const failureWindowMillis = 60_000

// NewStartFailures returns the gate for maxPerMinute failures per minute
// and a pause of retryMillis.
func NewStartFailures(maxPerMinute float64, retryMillis int64) *StartFailures {
	return &StartFailures{rate: maxPerMinute, retryMillis: retryMillis}
}

// Record counts a TaskManager that failed to start at now, and reports
// whether the rate is reached (new asks are paused from now on).
func (s *StartFailures) Record(now int64) (paused bool) {
	s.expire(now)
	s.failures = append(s.failures, now)
	if float64(len(s.failures)) >= s.rate {
		s.pausedUntil = max(s.pausedUntil, now+s.retryMillis)
		return true
	}
	return false
}

// Paused reports whether new asks wait at now, and until when.
func (s *StartFailures) Paused(now int64) (paused bool, until int64) {
	if now < s.pausedUntil {
		return true, s.pausedUntil
	}
	return false, 0
}

// Recent returns the number of failures within the minute before now.
func (s *StartFailures) Recent(now int64) int {
	s.expire(now)
	return len(s.failures)
}

func (s *StartFailures) expire(now int64) {
	i := 0
	for i < len(s.failures) && now-s.failures[i] >= failureWindowMillis {
		i++
	}
	s.failures = s.failures[i:]
}
