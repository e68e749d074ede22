package exec

import (
	"sync/atomic"

	"github.com/sluice/sluice/internal/sql/planner"
	"github.com/sluice/sluice/internal/sql/types"
)

// Metrics are the counters of a SQL job's operators, shared by their
// subtasks in this process.
type Metrics struct {
	// SkippedRecords counts source records skipped as malformed
	// (json.ignore-parse-errors = 'true').
	SkippedRecords atomic.Int64
	// NulledFields counts fields set to NULL because they could not be
	// read (json.ignore-parse-errors = 'true').
	NulledFields atomic.Int64
	// LateRecordsDropped counts rows dropped because the watermark had
	// passed their window (window aggregations, SESSION window functions,
	// window Top-N and deduplication) or their time (deduplication keeping
	// the first row by rowtime).
	LateRecordsDropped atomic.Int64
}

func toText(v any, f planner.Field) string {
	if f.Type.IsTimestamp() {
		return types.FormatTimestampCast(v.(int64), f.Type.Precision)
	}
	return types.ToString(v, f.Type)
}
