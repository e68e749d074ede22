// Package restart decides whether and when a failed job is restarted.
//
// A Strategy is a pure decision function over the history of failures:
// each failure and its time go in, a Decision (restart or not, after what
// delay, and why) comes out. Nothing here sleeps or reads a clock; the
// JobMaster applies the decision. The strategies and their configuration
// keys are Flink's: none, fixed-delay, exponential-delay and failure-rate
// (restart-strategy.*), chosen by FromConfig.
//
// Recoverable is the one place that decides whether a failure can be
// fixed by restarting at all; every strategy consults it first, so an
// unrecoverable failure fails the job without using up an attempt.
package restart

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluice/sluice/conf"
)

// Strategy decides, failure by failure, whether the job is restarted.
// Times are epoch milliseconds and never go backwards (an earlier time
// counts as the latest seen). A Strategy is not safe for concurrent use:
// the JobMaster's loop owns it, one per job.
type Strategy interface {
	// OnFailure records a failure of the job at now and decides. An
	// unrecoverable err (see Recoverable) is never restarted and is not
	// counted.
	OnFailure(now int64, err error) Decision
	// String names the strategy and its settings, for logs.
	String() string
}

// Decision says what to do about a failure.
type Decision struct {
	Restart bool
	// Delay to wait before restarting, when Restart is set.
	Delay time.Duration
	// Reason explains the decision in a sentence, for logs and for the
	// job's failure message when it is not restarted.
	Reason string
}

// FromConfig returns the restart strategy c selects
// (conf.EffectiveRestartStrategy: restart-strategy.type, or, when it is not
// set, exponential-delay if checkpointing is enabled and none otherwise)
// with its options read from the restart-strategy.* keys. Errors name each
// key whose value is wrong. Jitter of exponential-delay comes from a
// random source of its own.
func FromConfig(c *conf.Configuration) (Strategy, error) {
	var errs []error
	note := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	_, typeSet, err := conf.Lookup(c, conf.RestartStrategyType)
	note(err)
	if !typeSet {
		_, _, err := conf.Lookup(c, conf.CheckpointingInterval)
		note(err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	switch kind := conf.EffectiveRestartStrategy(c); kind {
	case conf.RestartNone:
		return NoRestart{}, nil
	case conf.RestartFixedDelay:
		var o FixedDelayOptions
		o.Attempts, _, err = conf.Lookup(c, conf.FixedDelayAttempts)
		note(err)
		o.Delay, _, err = conf.Lookup(c, conf.FixedDelayDelay)
		note(err)
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		return NewFixedDelay(o)
	case conf.RestartExponentialDelay:
		var o ExponentialDelayOptions
		o.InitialBackoff, _, err = conf.Lookup(c, conf.ExponentialDelayInitialBackoff)
		note(err)
		o.MaxBackoff, _, err = conf.Lookup(c, conf.ExponentialDelayMaxBackoff)
		note(err)
		o.BackoffMultiplier, _, err = conf.Lookup(c, conf.ExponentialDelayBackoffMultiplier)
		note(err)
		o.ResetBackoffThreshold, _, err = conf.Lookup(c, conf.ExponentialDelayResetBackoffThreshold)
		note(err)
		o.JitterFactor, _, err = conf.Lookup(c, conf.ExponentialDelayJitterFactor)
		note(err)
		o.AttemptsBeforeResetBackoff, _, err = conf.Lookup(c, conf.ExponentialDelayAttemptsBeforeResetBackoff)
		note(err)
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		return NewExponentialDelay(o, nil)
	case conf.RestartFailureRate:
		var o FailureRateOptions
		o.MaxFailuresPerInterval, _, err = conf.Lookup(c, conf.FailureRateMaxFailuresPerInterval)
		note(err)
		o.Interval, _, err = conf.Lookup(c, conf.FailureRateInterval)
		note(err)
		o.Delay, _, err = conf.Lookup(c, conf.FailureRateDelay)
		note(err)
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		return NewFailureRate(o)
	default:
		return nil, fmt.Errorf("restart: %s: unknown restart strategy %q", conf.RestartStrategyType.Key(), kind)
	}
}

// unrecoverable returns the decision for a failure no restart can fix.
func unrecoverable(err error) (Decision, bool) {
	if Recoverable(err) {
		return Decision{}, false
	}
	return Decision{Reason: fmt.Sprintf("not restarted: the failure is unrecoverable: %v", err)}, true
}

// NoRestart never restarts the job (restart-strategy.type: none).
type NoRestart struct{}

// OnFailure decides not to restart.
func (NoRestart) OnFailure(now int64, err error) Decision {
	if d, ok := unrecoverable(err); ok {
		return d
	}
	return Decision{Reason: "not restarted: " + conf.RestartStrategyType.Key() + " is " + conf.RestartNone}
}

func (NoRestart) String() string { return conf.RestartNone }
