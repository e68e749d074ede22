package restapi

import "github.com/sluice/sluice/internal/flamegraph"

// VertexFlameGraph is the body of GET .../flamegraph (Flink's
// VertexFlameGraph): Data is absent when EndTimestamp is one of the
// FlameGraph* markers.
type VertexFlameGraph struct {
	EndTimestamp int64            `json:"endTimestamp"`
	Data         *flamegraph.Node `json:"data,omitempty"`
}

// Flink's markers of a flame graph without data.
const (
	FlameGraphTerminated = -1 // the vertex (or subtask) has ended
	FlameGraphDisabled   = -2 // rest.flamegraph.enabled is false
	FlameGraphWaiting    = -3 // sampling is under way
)
