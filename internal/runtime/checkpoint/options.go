package checkpoint

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluice/sluice/conf"
)

// Options configure a Coordinator. They mirror Flink's
// execution.checkpointing.* options; the zero value is Flink's defaults
// with periodic checkpoints off.
type Options struct {
	// Interval between periodic checkpoints (execution.checkpointing.interval).
	// Default 0: periodic checkpoints off; savepoints still work. Otherwise
	// at least 10 ms.
	Interval time.Duration
	// Timeout after which a checkpoint that is not acknowledged by all
	// running tasks is aborted (execution.checkpointing.timeout).
	// Default (0): 10 minutes. Otherwise at least 10 ms.
	Timeout time.Duration
	// MinPause is the least time from the completion of one checkpoint to
	// the periodic trigger of the next (execution.checkpointing.min-pause).
	// Default 0.
	MinPause time.Duration
	// MaxConcurrent bounds the checkpoints and savepoints in progress for a
	// periodic checkpoint to be triggered
	// (execution.checkpointing.max-concurrent-checkpoints). Savepoints are
	// triggered regardless. Default (0): 1.
	MaxConcurrent int
	// TolerableFailures is how many consecutive checkpoint failures are
	// tolerated; one more fails the job
	// (execution.checkpointing.tolerable-failed-checkpoints). Default 0.
	TolerableFailures int
	// Mode is the guarantee (execution.checkpointing.mode). Default ExactlyOnce.
	Mode Mode
}

// Defaults of Options fields whose zero value means "default".
const (
	DefaultTimeout       = 10 * time.Minute
	DefaultMaxConcurrent = 1
)

// Validate reports every problem of o at once, each naming its Flink key.
func (o Options) Validate() error {
	var errs []error
	bad := func(key string, format string, args ...any) {
		errs = append(errs, fmt.Errorf("checkpoint: %s: %s", key, fmt.Sprintf(format, args...)))
	}
	if o.Interval < 0 || (o.Interval > 0 && o.Interval < 10*time.Millisecond) {
		bad(conf.CheckpointingInterval.Key(), "%s must be 0 (disabled) or at least 10 ms", o.Interval)
	}
	if o.Timeout < 0 || (o.Timeout > 0 && o.Timeout < 10*time.Millisecond) {
		bad(conf.CheckpointingTimeout.Key(), "%s must be at least 10 ms", o.Timeout)
	}
	if o.MinPause < 0 {
		bad(conf.CheckpointingMinPause.Key(), "%s must not be negative", o.MinPause)
	}
	if o.MaxConcurrent < 0 {
		bad(conf.CheckpointingMaxConcurrent.Key(), "%d must be at least 1", o.MaxConcurrent)
	}
	if o.TolerableFailures < 0 {
		bad(conf.CheckpointingTolerableFailures.Key(), "%d must not be negative", o.TolerableFailures)
	}
	if o.Mode != ExactlyOnce && o.Mode != AtLeastOnce {
		bad(conf.CheckpointingMode.Key(), "%v is not %s or %s", o.Mode, conf.ExactlyOnce, conf.AtLeastOnce)
	}
	return errors.Join(errs...)
}

// withDefaults replaces zero values that mean "default".
func (o Options) withDefaults() Options {
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxConcurrent == 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	return o
}

// OptionsFromConfig reads the execution.checkpointing.* options of c,
// reporting every value that does not parse or is out of range.
func OptionsFromConfig(c *conf.Configuration) (Options, error) {
	var errs []error
	get := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var o Options
	var err error
	o.Interval, _, err = conf.Lookup(c, conf.CheckpointingInterval)
	get(err)
	o.Timeout, _, err = conf.Lookup(c, conf.CheckpointingTimeout)
	get(err)
	o.MinPause, _, err = conf.Lookup(c, conf.CheckpointingMinPause)
	get(err)
	o.MaxConcurrent, _, err = conf.Lookup(c, conf.CheckpointingMaxConcurrent)
	get(err)
	o.TolerableFailures, _, err = conf.Lookup(c, conf.CheckpointingTolerableFailures)
	get(err)
	mode, _, err := conf.Lookup(c, conf.CheckpointingMode)
	get(err)
	if err == nil {
		o.Mode, err = ParseMode(mode)
		get(err)
	}
	if len(errs) == 0 {
		get(o.Validate())
	}
	if len(errs) > 0 {
		return Options{}, errors.Join(errs...)
	}
	return o, nil
}
