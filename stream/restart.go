package stream

import (
	"time"

	"github.com/sluice/sluice/conf"
)

// RestartStrategy is how a job recovers from failures: Flink's
// restart-strategy.* settings, made with NoRestart, FixedDelayRestart,
// ExponentialDelayRestart or FailureRateRestart and given with
// WithRestartStrategy. It wins over the configuration's restart-strategy.*.
type RestartStrategy struct {
	settings []func(*conf.Configuration) *conf.Configuration
}

func (s RestartStrategy) apply(c *conf.Configuration) *conf.Configuration {
	for _, set := range s.settings {
		c = set(c)
	}
	return c
}

func setting[T any](o conf.Option[T], v T) func(*conf.Configuration) *conf.Configuration {
	return func(c *conf.Configuration) *conf.Configuration { return conf.With(c, o, v) }
}

// NoRestart fails the job at its first failure (restart-strategy.type: none).
func NoRestart() RestartStrategy {
	return RestartStrategy{[]func(*conf.Configuration) *conf.Configuration{setting(conf.RestartStrategyType, conf.RestartNone)}}
}

// FixedDelayRestart restarts the job up to attempts times, each after delay
// (restart-strategy.type: fixed-delay); the failure after the last attempt
// fails the job.
func FixedDelayRestart(attempts int, delay time.Duration) RestartStrategy {
	return RestartStrategy{[]func(*conf.Configuration) *conf.Configuration{
		setting(conf.RestartStrategyType, conf.RestartFixedDelay),
		setting(conf.FixedDelayAttempts, attempts),
		setting(conf.FixedDelayDelay, delay),
	}}
}

// ExponentialDelayRestart restarts the job after a backoff that starts at
// initial and grows by multiplier up to max (restart-strategy.type:
// exponential-delay; the other exponential-delay settings keep their
// configured values). It is Flink's default when checkpointing is on.
func ExponentialDelayRestart(initial, max time.Duration, multiplier float64) RestartStrategy {
	return RestartStrategy{[]func(*conf.Configuration) *conf.Configuration{
		setting(conf.RestartStrategyType, conf.RestartExponentialDelay),
		setting(conf.ExponentialDelayInitialBackoff, initial),
		setting(conf.ExponentialDelayMaxBackoff, max),
		setting(conf.ExponentialDelayBackoffMultiplier, multiplier),
	}}
}

// FailureRateRestart restarts the job after delay unless more than
// maxFailures failures happened within interval, which fails it
// (restart-strategy.type: failure-rate).
func FailureRateRestart(maxFailures int, interval, delay time.Duration) RestartStrategy {
	return RestartStrategy{[]func(*conf.Configuration) *conf.Configuration{
		setting(conf.RestartStrategyType, conf.RestartFailureRate),
		setting(conf.FailureRateMaxFailuresPerInterval, maxFailures),
		setting(conf.FailureRateInterval, interval),
		setting(conf.FailureRateDelay, delay),
	}}
}
