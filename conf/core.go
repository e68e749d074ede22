package conf

import "time"

// Core options: where and how a job runs.

// Values of ExecutionRuntimeMode.
const (
	RuntimeModeStreaming = "STREAMING"
	RuntimeModeBatch     = "BATCH"
	RuntimeModeAutomatic = "AUTOMATIC"
)

// Values of ExecutionTarget.
const (
	TargetLocal           = "local"
	TargetRemote          = "remote"
	TargetYarnSession     = "yarn-session"
	TargetYarnApplication = "yarn-application"
)

var (
	// ParallelismDefault is the parallelism of operators that do not set their own.
	ParallelismDefault = Int("parallelism.default", 1,
		"Default parallelism of operators that do not set one.").
		WithCheck(AtLeast(1))

	// ExecutionRuntimeMode selects streaming or batch execution.
	ExecutionRuntimeMode = Enum("execution.runtime-mode", RuntimeModeStreaming,
		[]string{RuntimeModeStreaming, RuntimeModeBatch, RuntimeModeAutomatic},
		"Runtime execution mode. AUTOMATIC runs in BATCH mode when every source is bounded, STREAMING otherwise.")

	// ExecutionBufferTimeoutEnabled turns the periodic flushing of output buffers on or off.
	ExecutionBufferTimeoutEnabled = Bool("execution.buffer-timeout.enabled", true,
		"Whether output buffers are flushed every execution.buffer-timeout.interval. "+
			"When false, a buffer is sent only when full, maximising throughput at the cost of latency.")

	// ExecutionBufferTimeout bounds how long a record may wait in a
	// partly filled output buffer.
	ExecutionBufferTimeout = Duration("execution.buffer-timeout.interval", 100*time.Millisecond,
		"Maximum time a record waits in an output buffer before the buffer is sent. "+
			"0 sends every record at once: lowest latency, lowest throughput.").
		WithDeprecatedKeys("execution.buffer-timeout")

	// ExecutionTarget names where the client runs the job.
	ExecutionTarget = Enum("execution.target", TargetLocal,
		[]string{TargetLocal, TargetRemote, TargetYarnSession, TargetYarnApplication},
		"Where the client runs the job: local (an embedded cluster in the client process), "+
			"remote (a standalone cluster at rest.address:rest.port), yarn-session (a running "+
			"session cluster, yarn.application.id) or yarn-application (a new YARN application for this job).")

	// ExecutionAttached tells the client whether to wait for the job to finish.
	ExecutionAttached = Bool("execution.attached", false,
		"Whether the client waits for the job to finish (attached) or returns once it is submitted (detached).")
)

func coreOptions() []AnyOption {
	return []AnyOption{
		ParallelismDefault, ExecutionRuntimeMode, ExecutionBufferTimeoutEnabled, ExecutionBufferTimeout,
		ExecutionTarget, ExecutionAttached,
	}
}
