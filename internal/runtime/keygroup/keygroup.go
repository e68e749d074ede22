// Package keygroup maps keys to key groups and key groups to subtasks.
//
// A key is hashed once to a key group in [0, maxParallelism); a key group is
// owned by exactly one subtask. Keyed state is stored and snapshotted per key
// group, so changing an operator's parallelism moves whole key groups between
// subtasks and never splits a key's state. The mapping is deterministic across
// processes and runs: it depends only on the key's value.
package keygroup

import "fmt"

// DefaultMaxParallelism is used when neither the operator nor the job sets one
// and the parallelism is small (Flink's lower bound).
const DefaultMaxParallelism = 128

// UpperBound is the largest allowed max parallelism (Flink's bound).
const UpperBound = 1 << 15

// Range is an inclusive range of key groups [Start, End]. An empty range has End < Start.
type Range struct{ Start, End int }

// Len is the number of key groups in r.
func (r Range) Len() int {
	if r.End < r.Start {
		return 0
	}
	return r.End - r.Start + 1
}

// Contains reports whether kg is in r.
func (r Range) Contains(kg int) bool { return kg >= r.Start && kg <= r.End }

func (r Range) String() string { return fmt.Sprintf("[%d..%d]", r.Start, r.End) }

// ForHash maps a key hash to its key group.
func ForHash(hash uint64, maxParallelism int) int {
	return int(mix(hash) % uint64(maxParallelism))
}

// mix is the murmur3 finaliser: it spreads weak hashes (small integers) over
// all key groups.
func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// Operator returns the subtask index that owns key group kg.
func Operator(kg, maxParallelism, parallelism int) int {
	return kg * parallelism / maxParallelism
}

// RangeFor returns the key groups owned by subtask of an operator.
func RangeFor(maxParallelism, parallelism, subtask int) Range {
	start := (subtask*maxParallelism + parallelism - 1) / parallelism
	end := ((subtask+1)*maxParallelism+parallelism-1)/parallelism - 1
	return Range{Start: start, End: end}
}

// DefaultMax computes the default max parallelism for an operator of the
// given parallelism: 1.5 × parallelism rounded up to a power of two, within
// [128, 32768], as Flink does.
func DefaultMax(parallelism int) int {
	n := parallelism + parallelism/2
	p := 1
	for p < n {
		p <<= 1
	}
	if p < DefaultMaxParallelism {
		p = DefaultMaxParallelism
	}
	if p > UpperBound {
		p = UpperBound
	}
	return p
}
