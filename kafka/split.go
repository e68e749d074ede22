package kafka

import (
	"math"
	"unicode/utf16"

	"github.com/sluice/sluice/stream"
)

// NoStoppingOffset marks a split that is read for ever (an unbounded source).
const NoStoppingOffset int64 = math.MaxInt64

// PartitionSplit is one Kafka partition and the reader's position in it;
// it is the source's checkpointed state.
//
// Offset is always a concrete offset: the enumerator resolves the starting
// policy (StartingOffsets for the partitions of the first discovery,
// NewPartitionOffsets for those found later) when it creates the split, and
// a split restored from a checkpoint carries the offset it was snapshotted
// with. So a restored position always wins over the starting policy, which
// applies only to partitions the job has never read.
type PartitionSplit struct {
	TopicPartition
	// Offset is the next offset to read.
	Offset int64
	// StoppingOffset is the offset at which the split ends, exclusive
	// (a bounded source); NoStoppingOffset for an unbounded source.
	StoppingOffset int64
}

// SplitID is "topic-partition", as in Flink.
func (s PartitionSplit) SplitID() string { return s.TopicPartition.String() }

// Finished reports whether nothing remains to be read.
func (s PartitionSplit) Finished() bool { return s.Offset >= s.StoppingOffset }

var _ stream.Split = PartitionSplit{}

// javaStringHash is Java's String.hashCode: s[0]*31^(n-1) + ... over the
// UTF-16 code units, in 32-bit arithmetic.
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// partitionOwner is the reader subtask of a partition: Flink's
// KafkaSourceEnumerator.getSplitOwner, so a job moved from Flink, or
// restarted at the same parallelism, reads the same partitions in the same
// subtasks. The partitions of one topic go round-robin over the readers,
// starting at a reader chosen by the topic's hash, so that several topics
// with few partitions do not all pile onto reader 0.
func partitionOwner(tp TopicPartition, parallelism int) int {
	start := int((javaStringHash(tp.Topic)*31)&0x7FFFFFFF) % parallelism
	return (start + int(tp.Partition)) % parallelism
}
