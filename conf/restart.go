package conf

import (
	"errors"
	"math"
	"time"
)

// Restart strategy options: whether and when a failed job is restarted.

// Values of RestartStrategyType.
const (
	RestartNone             = "none"
	RestartFixedDelay       = "fixed-delay"
	RestartExponentialDelay = "exponential-delay"
	RestartFailureRate      = "failure-rate"
)

var (
	// RestartStrategyType selects the restart strategy; see EffectiveRestartStrategy for the default.
	RestartStrategyType = enumWithAliases("restart-strategy.type", "",
		[]string{RestartNone, RestartFixedDelay, RestartExponentialDelay, RestartFailureRate},
		map[string]string{
			"off": RestartNone, "disable": RestartNone,
			"fixeddelay": RestartFixedDelay, "exponentialdelay": RestartExponentialDelay, "failurerate": RestartFailureRate,
		},
		"Restart strategy for failed jobs: none (fail the job), fixed-delay, exponential-delay or failure-rate. "+
			"Flink's spellings off, disable, fixeddelay, exponentialdelay and failurerate are accepted.").
		WithDefaultDoc("(none): exponential-delay if checkpointing is enabled, none otherwise").
		WithDeprecatedKeys("restart-strategy")

	// FixedDelayAttempts is how many restarts fixed-delay allows before the job fails.
	FixedDelayAttempts = Int("restart-strategy.fixed-delay.attempts", 1,
		"Number of restart attempts before the job is declared failed, for fixed-delay.").
		WithCheck(AtLeast(0))

	// FixedDelayDelay is the wait between restarts for fixed-delay.
	FixedDelayDelay = Duration("restart-strategy.fixed-delay.delay", time.Second,
		"Delay between two restart attempts, for fixed-delay.")

	// ExponentialDelayInitialBackoff is the first wait for exponential-delay.
	ExponentialDelayInitialBackoff = Duration("restart-strategy.exponential-delay.initial-backoff", time.Second,
		"Delay before the first restart, for exponential-delay.")

	// ExponentialDelayMaxBackoff caps the wait for exponential-delay.
	ExponentialDelayMaxBackoff = Duration("restart-strategy.exponential-delay.max-backoff", time.Minute,
		"Longest delay between restarts, for exponential-delay.")

	// ExponentialDelayBackoffMultiplier grows the wait after each failure.
	ExponentialDelayBackoffMultiplier = Float("restart-strategy.exponential-delay.backoff-multiplier", 1.5,
		"Factor the delay is multiplied by after each failure, until max-backoff, for exponential-delay.").
		WithCheck(AtLeast(1.0))

	// ExponentialDelayResetBackoffThreshold is how long a job must run without failure for the backoff to reset.
	ExponentialDelayResetBackoffThreshold = Duration("restart-strategy.exponential-delay.reset-backoff-threshold", time.Hour,
		"Time the job must run without failure for the delay to return to initial-backoff, for exponential-delay.")

	// ExponentialDelayJitterFactor randomises the wait to spread restarts out.
	ExponentialDelayJitterFactor = Float("restart-strategy.exponential-delay.jitter-factor", 0.1,
		"Fraction by which each delay is randomly varied up or down, for exponential-delay.").
		WithCheck(Between(0.0, 1.0))

	// ExponentialDelayAttemptsBeforeResetBackoff bounds the restarts of exponential-delay.
	ExponentialDelayAttemptsBeforeResetBackoff = Int("restart-strategy.exponential-delay.attempts-before-reset-backoff", math.MaxInt32,
		"Number of restarts allowed before the backoff resets; once exceeded the job fails, for exponential-delay.").
		WithDefaultDoc("2147483647 (unlimited)").
		WithCheck(AtLeast(0))

	// FailureRateMaxFailuresPerInterval is how many failures failure-rate allows per interval.
	FailureRateMaxFailuresPerInterval = Int("restart-strategy.failure-rate.max-failures-per-interval", 1,
		"Number of restarts within failure-rate-interval before the job is declared failed, for failure-rate.").
		WithCheck(AtLeast(1))

	// FailureRateInterval is the window failure-rate counts failures in.
	FailureRateInterval = Duration("restart-strategy.failure-rate.failure-rate-interval", time.Minute,
		"Time window in which failures are counted, for failure-rate.").
		WithCheck(func(d time.Duration) error {
			if d <= 0 {
				return errors.New("must be longer than 0")
			}
			return nil
		})

	// FailureRateDelay is the wait between restarts for failure-rate.
	FailureRateDelay = Duration("restart-strategy.failure-rate.delay", time.Second,
		"Delay between two restart attempts, for failure-rate.")
)

func restartOptions() []AnyOption {
	return []AnyOption{
		RestartStrategyType, FixedDelayAttempts, FixedDelayDelay,
		ExponentialDelayInitialBackoff, ExponentialDelayMaxBackoff, ExponentialDelayBackoffMultiplier,
		ExponentialDelayResetBackoffThreshold, ExponentialDelayJitterFactor, ExponentialDelayAttemptsBeforeResetBackoff,
		FailureRateMaxFailuresPerInterval, FailureRateInterval, FailureRateDelay,
	}
}

// EffectiveRestartStrategy returns the restart strategy c selects: the value
// of restart-strategy.type if set, otherwise, as in Flink,
// exponential-delay when checkpointing is enabled and none when it is not.
func EffectiveRestartStrategy(c *Configuration) string {
	if s := Get(c, RestartStrategyType); s != "" {
		return s
	}
	if Get(c, CheckpointingInterval) > 0 {
		return RestartExponentialDelay
	}
	return RestartNone
}
