package stream

import (
	"github.com/sluice/sluice/internal/typed"
)

// AssignTimestampsAndWatermarks gives the records of in event timestamps
// (with the strategy's timestamp assigner, if any) and generates watermarks
// from them after the source, for streams whose timestamps are only known
// after some processing. Each subtask runs one watermark generator; its
// periodic emission runs every pipeline.auto-watermark-interval of
// processing time (WithAutoWatermarkInterval), and watermarks a generator
// emits from OnEvent go out at once. Watermarks from upstream are dropped,
// except the final one that ends event time, as in Flink. WithIdleness
// marks the subtask's output idle after that much processing time without
// records.
//
// As in Flink, the operator takes its input's parallelism (not the
// environment's default) and chains to it, so each watermark generator sees
// exactly one upstream subtask's records in their order. SetParallelism on
// the result changes that, and records are then redistributed.
//
// In BATCH mode only timestamps are assigned: event time ends with the
// final watermark at the end of the input.
func AssignTimestampsAndWatermarks[T any](in DataStream[T], strategy WatermarkStrategy[T]) DataStream[T] {
	out := procOneInput(in, "timestamps-watermarks", "Timestamps/Watermarks", typed.Assigner(strategy.typedStrategy()))
	out.node.AssignsWatermarks = strategy.generatesWatermarks()
	out.node.Parallelism = in.node.Parallelism
	return out
}
