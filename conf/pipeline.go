package conf

import (
	"errors"
	"time"
)

// Pipeline options: properties of the job's dataflow.

var (
	// PipelineName names the job.
	PipelineName = String("pipeline.name", "",
		"Name of the job, shown in the web UI, logs and metrics.").
		WithDefaultDoc("(none): the name given in the program")

	// PipelineMaxParallelism bounds rescaling and fixes the number of key groups.
	PipelineMaxParallelism = Int("pipeline.max-parallelism", -1,
		"Maximum parallelism of the job: the upper limit for rescaling and the number of key groups keyed state "+
			"is split into. Changing it makes savepoints incompatible. -1 derives it from the parallelism "+
			"(1.5 × parallelism rounded up to a power of two, at least 128, at most 32768), as Flink does.").
		WithCheck(func(v int) error {
			if v == -1 || v >= 1 && v <= 32768 {
				return nil
			}
			return errors.New("must be -1 (derived from the parallelism) or between 1 and 32768")
		})

	// PipelineAutoWatermarkInterval is how often periodic watermarks are emitted.
	PipelineAutoWatermarkInterval = Duration("pipeline.auto-watermark-interval", 200*time.Millisecond,
		"Interval at which sources emit periodic watermarks. 0 disables periodic watermarks.")

	// PipelineObjectReuse lets chained operators pass records without copying.
	PipelineObjectReuse = Bool("pipeline.object-reuse", false,
		"Whether chained operators may pass the same record value on without copying it. "+
			"Only safe when no function keeps or modifies a record after emitting it.")
)

func pipelineOptions() []AnyOption {
	return []AnyOption{PipelineName, PipelineMaxParallelism, PipelineAutoWatermarkInterval, PipelineObjectReuse}
}
