package restart

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/sluice/sluice/conf"
)

// FixedDelayOptions configure FixedDelay (restart-strategy.fixed-delay.*).
type FixedDelayOptions struct {
	// Attempts is how many restarts are allowed; the failure after them
	// fails the job (attempts). Flink's default is 1.
	Attempts int
	// Delay between a failure and the restart (delay). Flink's default is 1 s.
	Delay time.Duration
}

// Validate reports every problem of o at once.
func (o FixedDelayOptions) Validate() error {
	var errs []error
	if o.Attempts < 0 {
		errs = append(errs, fmt.Errorf("restart: %s: %d must not be negative", conf.FixedDelayAttempts.Key(), o.Attempts))
	}
	if o.Delay < 0 {
		errs = append(errs, fmt.Errorf("restart: %s: %s must not be negative", conf.FixedDelayDelay.Key(), o.Delay))
	}
	return errors.Join(errs...)
}

// FixedDelay restarts the job a fixed number of times, each after the same
// delay (restart-strategy.type: fixed-delay).
type FixedDelay struct {
	opts     FixedDelayOptions
	failures int
}

// NewFixedDelay returns a fixed-delay strategy, or the problems of o.
func NewFixedDelay(o FixedDelayOptions) (*FixedDelay, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &FixedDelay{opts: o}, nil
}

// Options returns the options s was made with.
func (s *FixedDelay) Options() FixedDelayOptions { return s.opts }

// OnFailure restarts after Delay while attempts are left.
func (s *FixedDelay) OnFailure(now int64, err error) Decision {
	if d, ok := unrecoverable(err); ok {
		return d
	}
	s.failures++
	if s.failures > s.opts.Attempts {
		return Decision{Reason: fmt.Sprintf("not restarted: %s: all %d restart attempts used", conf.RestartFixedDelay, s.opts.Attempts)}
	}
	return Decision{Restart: true, Delay: s.opts.Delay,
		Reason: fmt.Sprintf("%s: restart attempt %d of %d after %s", conf.RestartFixedDelay, s.failures, s.opts.Attempts, s.opts.Delay)}
}

func (s *FixedDelay) String() string {
	return fmt.Sprintf("%s(attempts=%d, delay=%s)", conf.RestartFixedDelay, s.opts.Attempts, s.opts.Delay)
}

// FailureRateOptions configure FailureRate (restart-strategy.failure-rate.*).
type FailureRateOptions struct {
	// MaxFailuresPerInterval is how many failures within Interval are
	// restarted; one more fails the job (max-failures-per-interval).
	// Flink's default is 1; at least 1.
	MaxFailuresPerInterval int
	// Interval the failures are counted in (failure-rate-interval).
	// Flink's default is 1 min; longer than 0.
	Interval time.Duration
	// Delay between a failure and the restart (delay). Flink's default is 1 s.
	Delay time.Duration
}

// Validate reports every problem of o at once.
func (o FailureRateOptions) Validate() error {
	var errs []error
	if o.MaxFailuresPerInterval < 1 {
		errs = append(errs, fmt.Errorf("restart: %s: %d must be at least 1", conf.FailureRateMaxFailuresPerInterval.Key(), o.MaxFailuresPerInterval))
	}
	if o.Interval <= 0 {
		errs = append(errs, fmt.Errorf("restart: %s: %s must be longer than 0", conf.FailureRateInterval.Key(), o.Interval))
	}
	if o.Delay < 0 {
		errs = append(errs, fmt.Errorf("restart: %s: %s must not be negative", conf.FailureRateDelay.Key(), o.Delay))
	}
	return errors.Join(errs...)
}

// FailureRate restarts the job after a fixed delay as long as no more than
// MaxFailuresPerInterval failures happened within any Interval
// (restart-strategy.type: failure-rate). A failure is restarted unless it
// and the MaxFailuresPerInterval failures before it all fall within
// Interval.
type FailureRate struct {
	opts     FailureRateOptions
	interval int64   // ms
	times    []int64 // the last MaxFailuresPerInterval+1 failure times at most
	now      int64
}

// NewFailureRate returns a failure-rate strategy, or the problems of o.
func NewFailureRate(o FailureRateOptions) (*FailureRate, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &FailureRate{opts: o, interval: o.Interval.Milliseconds(),
		times: make([]int64, 0, o.MaxFailuresPerInterval+1), now: math.MinInt64}, nil
}

// Options returns the options s was made with.
func (s *FailureRate) Options() FailureRateOptions { return s.opts }

// OnFailure restarts after Delay unless the failure rate is exceeded.
func (s *FailureRate) OnFailure(now int64, err error) Decision {
	if d, ok := unrecoverable(err); ok {
		return d
	}
	s.now = max(s.now, now)
	if len(s.times) > s.opts.MaxFailuresPerInterval {
		s.times = append(s.times[:0], s.times[1:]...)
	}
	s.times = append(s.times, s.now)
	if len(s.times) > s.opts.MaxFailuresPerInterval && s.now-s.times[0] <= s.interval {
		return Decision{Reason: fmt.Sprintf("not restarted: %s: %d failures within %s, at most %d allowed",
			conf.RestartFailureRate, len(s.times), s.opts.Interval, s.opts.MaxFailuresPerInterval)}
	}
	return Decision{Restart: true, Delay: s.opts.Delay,
		Reason: fmt.Sprintf("%s: restart after %s", conf.RestartFailureRate, s.opts.Delay)}
}

func (s *FailureRate) String() string {
	return fmt.Sprintf("%s(max-failures-per-interval=%d, failure-rate-interval=%s, delay=%s)",
		conf.RestartFailureRate, s.opts.MaxFailuresPerInterval, s.opts.Interval, s.opts.Delay)
}

// ExponentialDelayOptions configure ExponentialDelay
// (restart-strategy.exponential-delay.*).
type ExponentialDelayOptions struct {
	// InitialBackoff is the delay of the first restart (initial-backoff).
	// Flink's default is 1 s; at least 1 ms.
	InitialBackoff time.Duration
	// MaxBackoff caps the delay (max-backoff). Flink's default is 1 min; at
	// least InitialBackoff.
	MaxBackoff time.Duration
	// BackoffMultiplier grows the delay after each restart
	// (backoff-multiplier). Flink's default is 1.5; at least 1.
	BackoffMultiplier float64
	// ResetBackoffThreshold: a failure this long after the last restart
	// was due starts again from InitialBackoff (reset-backoff-threshold).
	// Flink's default is 1 h; at least 1 ms.
	ResetBackoffThreshold time.Duration
	// JitterFactor varies each delay at random by up to this fraction, up
	// or down (jitter-factor). Flink's default is 0.1; between 0 and 1.
	JitterFactor float64
	// AttemptsBeforeResetBackoff is how many restarts are allowed before
	// the backoff resets; the failure after them fails the job
	// (attempts-before-reset-backoff). Flink's default is 2147483647.
	AttemptsBeforeResetBackoff int
}

// Validate reports every problem of o at once.
func (o ExponentialDelayOptions) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("restart: %s: %s", key, fmt.Sprintf(format, args...)))
	}
	if o.InitialBackoff < time.Millisecond {
		bad(conf.ExponentialDelayInitialBackoff.Key(), "%s must be at least 1 ms", o.InitialBackoff)
	}
	if o.MaxBackoff < o.InitialBackoff {
		bad(conf.ExponentialDelayMaxBackoff.Key(), "%s must be at least %s (%s)",
			o.MaxBackoff, conf.ExponentialDelayInitialBackoff.Key(), o.InitialBackoff)
	}
	if !(o.BackoffMultiplier >= 1) || math.IsInf(o.BackoffMultiplier, 1) {
		bad(conf.ExponentialDelayBackoffMultiplier.Key(), "%v must be a number of at least 1", o.BackoffMultiplier)
	}
	if o.ResetBackoffThreshold < time.Millisecond {
		bad(conf.ExponentialDelayResetBackoffThreshold.Key(), "%s must be at least 1 ms", o.ResetBackoffThreshold)
	}
	if !(o.JitterFactor >= 0 && o.JitterFactor <= 1) {
		bad(conf.ExponentialDelayJitterFactor.Key(), "%v must be between 0 and 1", o.JitterFactor)
	}
	if o.AttemptsBeforeResetBackoff < 0 {
		bad(conf.ExponentialDelayAttemptsBeforeResetBackoff.Key(), "%d must not be negative", o.AttemptsBeforeResetBackoff)
	}
	return errors.Join(errs...)
}

// Rand is a source of random numbers for jitter; *rand.Rand of
// math/rand/v2 is one. Int64N returns a number in [0, n).
type Rand interface{ Int64N(n int64) int64 }

// globalRand draws from math/rand/v2's goroutine-safe top-level source.
type globalRand struct{}

func (globalRand) Int64N(n int64) int64 { return rand.Int64N(n) }

// ExponentialDelay restarts the job after a delay that starts at
// InitialBackoff and is multiplied by BackoffMultiplier per restart up to
// MaxBackoff, randomly varied by JitterFactor but never below
// InitialBackoff (restart-strategy.type: exponential-delay), as Flink 1.19+
// does:
//
//   - a failure while a restart is still due (at or before the time it is
//     due) belongs to that restart: it restarts at the same time and does not
//     count as another attempt;
//   - a failure ResetBackoffThreshold or longer after the last restart was
//     due resets the delay to InitialBackoff and the attempt count;
//   - the failure after AttemptsBeforeResetBackoff restarts without a reset
//     fails the job.
type ExponentialDelay struct {
	opts             ExponentialDelayOptions
	rnd              Rand
	initial, maxB    int64 // ms
	threshold        int64 // ms
	attempt          int   // restarts since the last reset
	nextRestart      int64 // when the last restart is due
	restartScheduled bool
	now              int64
}

// NewExponentialDelay returns an exponential-delay strategy drawing its
// jitter from rnd (nil: math/rand/v2's top-level source), or the problems
// of o.
func NewExponentialDelay(o ExponentialDelayOptions, rnd Rand) (*ExponentialDelay, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if rnd == nil {
		rnd = globalRand{}
	}
	return &ExponentialDelay{
		opts:      o,
		rnd:       rnd,
		initial:   o.InitialBackoff.Milliseconds(),
		maxB:      o.MaxBackoff.Milliseconds(),
		threshold: o.ResetBackoffThreshold.Milliseconds(),
		now:       math.MinInt64,
	}, nil
}

// Options returns the options s was made with.
func (s *ExponentialDelay) Options() ExponentialDelayOptions { return s.opts }

// OnFailure decides as described on ExponentialDelay.
func (s *ExponentialDelay) OnFailure(now int64, err error) Decision {
	if d, ok := unrecoverable(err); ok {
		return d
	}
	s.now = max(s.now, now)
	if s.restartScheduled && s.now <= s.nextRestart {
		if s.attempt > s.opts.AttemptsBeforeResetBackoff {
			return s.exhausted()
		}
		delay := time.Duration(s.nextRestart-s.now) * time.Millisecond
		return Decision{Restart: true, Delay: delay,
			Reason: fmt.Sprintf("%s: failure before restart attempt %d, which is due after %s", conf.RestartExponentialDelay, s.attempt, delay)}
	}
	if s.restartScheduled && s.now-s.nextRestart >= s.threshold {
		s.attempt = 0
	}
	backoff := s.backoff()
	s.nextRestart, s.restartScheduled = s.now+backoff, true
	s.attempt++
	if s.attempt > s.opts.AttemptsBeforeResetBackoff {
		return s.exhausted()
	}
	delay := time.Duration(backoff) * time.Millisecond
	return Decision{Restart: true, Delay: delay,
		Reason: fmt.Sprintf("%s: restart attempt %d after %s", conf.RestartExponentialDelay, s.attempt, delay)}
}

func (s *ExponentialDelay) exhausted() Decision {
	return Decision{Reason: fmt.Sprintf("not restarted: %s: %d restart attempts used without a reset (%s)",
		conf.RestartExponentialDelay, s.opts.AttemptsBeforeResetBackoff, conf.ExponentialDelayAttemptsBeforeResetBackoff.Key())}
}

// backoff returns the delay in ms of the next restart: initial ×
// multiplier^attempt, plus jitter of up to ± that × JitterFactor, capped at
// the maximum and at least the initial backoff.
func (s *ExponentialDelay) backoff() int64 {
	const ceiling = 1 << 60 // far above any max-backoff; leaves room for jitter
	f := float64(s.initial) * math.Pow(s.opts.BackoffMultiplier, float64(s.attempt))
	cur := int64(ceiling)
	if f < ceiling {
		cur = int64(f)
	}
	if offset := int64(float64(cur) * s.opts.JitterFactor); offset > 0 {
		cur += s.rnd.Int64N(2*offset+1) - offset
	}
	return max(s.initial, min(cur, s.maxB))
}

func (s *ExponentialDelay) String() string {
	o := s.opts
	return fmt.Sprintf("%s(initial-backoff=%s, max-backoff=%s, backoff-multiplier=%v, reset-backoff-threshold=%s, jitter-factor=%v, attempts-before-reset-backoff=%d)",
		conf.RestartExponentialDelay, o.InitialBackoff, o.MaxBackoff, o.BackoffMultiplier, o.ResetBackoffThreshold, o.JitterFactor, o.AttemptsBeforeResetBackoff)
}
