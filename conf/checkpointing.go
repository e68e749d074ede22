package conf

import (
	"errors"
	"time"
)

// Checkpointing options. Flink 2 moved several "state.*" keys under
// "execution.checkpointing."; both names are accepted, the older one with a
// deprecation warning.

// Values of CheckpointingMode.
const (
	ExactlyOnce = "EXACTLY_ONCE"
	AtLeastOnce = "AT_LEAST_ONCE"
)

// Values of CheckpointingExternalizedRetention.
const (
	DeleteOnCancellation      = "DELETE_ON_CANCELLATION"
	RetainOnCancellation      = "RETAIN_ON_CANCELLATION"
	NoExternalizedCheckpoints = "NO_EXTERNALIZED_CHECKPOINTS"
)

var (
	// CheckpointingInterval is the time between checkpoints; 0 disables checkpointing.
	CheckpointingInterval = Duration("execution.checkpointing.interval", 0,
		"Interval at which checkpoints are triggered. Triggering may be delayed by "+
			"execution.checkpointing.max-concurrent-checkpoints and execution.checkpointing.min-pause. "+
			"Unset or 0 disables checkpointing.").
		WithDefaultDoc("(none): checkpointing disabled").
		WithCheck(func(d time.Duration) error {
			if d != 0 && d < 10*time.Millisecond {
				return errors.New("must be 0 (disabled) or at least 10 ms")
			}
			return nil
		})

	// CheckpointingMode selects exactly-once or at-least-once checkpoints.
	CheckpointingMode = Enum("execution.checkpointing.mode", ExactlyOnce, []string{ExactlyOnce, AtLeastOnce},
		"Checkpointing guarantee. EXACTLY_ONCE aligns barriers; AT_LEAST_ONCE does not, and may replay records after recovery.")

	// CheckpointingTimeout is how long a checkpoint may take before it is discarded.
	CheckpointingTimeout = Duration("execution.checkpointing.timeout", 10*time.Minute,
		"Maximum time a checkpoint may take before it is discarded.").
		WithCheck(AtLeast(10 * time.Millisecond))

	// CheckpointingMinPause is the least time between the end of one checkpoint and the start of the next.
	CheckpointingMinPause = Duration("execution.checkpointing.min-pause", 0,
		"Minimum pause between the end of one checkpoint and the start of the next.")

	// CheckpointingMaxConcurrent bounds the checkpoints in flight at once.
	CheckpointingMaxConcurrent = Int("execution.checkpointing.max-concurrent-checkpoints", 1,
		"Maximum number of checkpoints in progress at the same time.").
		WithCheck(AtLeast(1))

	// CheckpointingTolerableFailures is how many consecutive checkpoint failures are tolerated before the job fails over.
	CheckpointingTolerableFailures = Int("execution.checkpointing.tolerable-failed-checkpoints", 0,
		"Number of consecutive checkpoint failures tolerated before the job fails over. 0 tolerates none.").
		WithCheck(AtLeast(0))

	// CheckpointingExternalizedRetention says whether checkpoints outlive a cancelled job.
	CheckpointingExternalizedRetention = Enum("execution.checkpointing.externalized-checkpoint-retention",
		NoExternalizedCheckpoints, []string{DeleteOnCancellation, RetainOnCancellation, NoExternalizedCheckpoints},
		"Whether completed checkpoints are kept when the job ends. RETAIN_ON_CANCELLATION keeps them "+
			"on cancellation and failure; DELETE_ON_CANCELLATION keeps them only when the job fails; "+
			"NO_EXTERNALIZED_CHECKPOINTS deletes them when the job ends.")

	// CheckpointingDir is where checkpoint data and metadata are written.
	CheckpointingDir = String("execution.checkpointing.dir", "",
		"Directory for checkpoint data and metadata, e.g. hdfs:///sluice/checkpoints. "+
			"Must be reachable from the ApplicationMaster and every TaskManager.").
		WithDefaultDoc("(none)").
		WithDeprecatedKeys("state.checkpoints.dir")

	// CheckpointingSavepointDir is the default directory for savepoints.
	CheckpointingSavepointDir = String("execution.checkpointing.savepoint-dir", "",
		"Default directory for savepoints, used when a savepoint is triggered without a target directory.").
		WithDefaultDoc("(none)").
		WithDeprecatedKeys("state.savepoints.dir")

	// CheckpointingNumRetained is how many completed checkpoints are kept.
	CheckpointingNumRetained = Int("execution.checkpointing.num-retained", 1,
		"Number of completed checkpoints to keep.").
		WithCheck(AtLeast(1)).
		WithDeprecatedKeys("state.checkpoints.num-retained")

	// CheckpointingIncremental makes checkpoints store only what changed since the last one.
	CheckpointingIncremental = Bool("execution.checkpointing.incremental", false,
		"Whether checkpoints store only the changes since the previous checkpoint, where the state backend "+
			"supports it (pebble does; hashmap ignores this option).").
		WithDeprecatedKeys("state.backend.incremental")
)

func checkpointingOptions() []AnyOption {
	return []AnyOption{
		CheckpointingInterval, CheckpointingMode, CheckpointingTimeout, CheckpointingMinPause,
		CheckpointingMaxConcurrent, CheckpointingTolerableFailures, CheckpointingExternalizedRetention,
		CheckpointingDir, CheckpointingSavepointDir, CheckpointingNumRetained, CheckpointingIncremental,
	}
}
