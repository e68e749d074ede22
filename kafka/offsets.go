package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice/sluice/stream"
)

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String is "topic-partition", the form of Flink's split ids.
func (tp TopicPartition) String() string { return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) }

func compareTP(a, b TopicPartition) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// OffsetResetStrategy says where to start in a partition that has no
// committed offset (Kafka's auto.offset.reset).
type OffsetResetStrategy int

// Reset strategies.
const (
	// ResetEarliest starts at the oldest retained record.
	ResetEarliest OffsetResetStrategy = iota
	// ResetLatest starts after the newest record.
	ResetLatest
	// ResetNone fails the job.
	ResetNone
)

func (r OffsetResetStrategy) String() string {
	switch r {
	case ResetEarliest:
		return "earliest"
	case ResetLatest:
		return "latest"
	case ResetNone:
		return "none"
	}
	return "OffsetResetStrategy(" + strconv.Itoa(int(r)) + ")"
}

type offsetsKind int

const (
	kindEarliest offsetsKind = iota
	kindLatest
	kindTimestamp
	kindCommitted
	kindSpecific
)

// OffsetsInitializer says where reading starts (StartingOffsets,
// NewPartitionOffsets) or stops (Bounded) in each partition (Flink's
// OffsetsInitializer). The enumerator turns it into concrete offsets when
// it creates a partition's split.
type OffsetsInitializer struct {
	kind     offsetsKind
	ts       int64
	specific map[TopicPartition]int64
	reset    OffsetResetStrategy
}

// Earliest is the oldest retained record of each partition.
func Earliest() OffsetsInitializer { return OffsetsInitializer{kind: kindEarliest} }

// Latest is the end of each partition when the split is created: the high
// watermark, or the last stable offset when reading ReadCommitted.
func Latest() OffsetsInitializer { return OffsetsInitializer{kind: kindLatest} }

// Timestamp is the first record whose timestamp is at or after ts, or the
// end of the partition if there is none.
func Timestamp(ts stream.Timestamp) OffsetsInitializer {
	return OffsetsInitializer{kind: kindTimestamp, ts: int64(ts)}
}

// CommittedOffsets is the group's committed offset (GroupID required);
// partitions without one follow reset.
func CommittedOffsets(reset OffsetResetStrategy) OffsetsInitializer {
	return OffsetsInitializer{kind: kindCommitted, reset: reset}
}

// SpecificOffsets gives the offset of each listed partition; other
// partitions start at the earliest offset (as a starting position; change
// with WithReset) and are an error as a stopping position.
func SpecificOffsets(offsets map[TopicPartition]int64) OffsetsInitializer {
	return OffsetsInitializer{kind: kindSpecific, specific: maps.Clone(offsets), reset: ResetEarliest}
}

// WithReset sets the strategy of SpecificOffsets for unlisted partitions.
func (o OffsetsInitializer) WithReset(r OffsetResetStrategy) OffsetsInitializer {
	o.reset = r
	return o
}

func (o OffsetsInitializer) String() string {
	switch o.kind {
	case kindEarliest:
		return "earliest"
	case kindLatest:
		return "latest"
	case kindTimestamp:
		return "timestamp(" + strconv.FormatInt(o.ts, 10) + ")"
	case kindCommitted:
		return "committed(reset=" + o.reset.String() + ")"
	case kindSpecific:
		return fmt.Sprintf("specific(%d partitions, reset=%s)", len(o.specific), o.reset)
	}
	return "?"
}

func (o OffsetsInitializer) validate(what string, add func(string, ...any)) {
	if o.kind == kindSpecific {
		for tp, off := range o.specific {
			if off < 0 {
				add("%s: offset %d of %s is negative", what, off, tp)
			}
		}
	}
	if o.reset < ResetEarliest || o.reset > ResetNone {
		add("%s: unknown reset strategy %d", what, int(o.reset))
	}
}

// offsetLister is what resolving offsets needs from the admin client.
type offsetLister struct {
	adm       *kadm.Client
	group     string
	committed bool // ReadCommitted: latest is the last stable offset
}

// resolve returns the offset of each partition. stop says the offsets are
// stopping offsets: then an unlisted partition of SpecificOffsets is an
// error.
func (o OffsetsInitializer) resolve(ctx context.Context, l offsetLister, tps []TopicPartition, stop bool) (map[TopicPartition]int64, error) {
	out := make(map[TopicPartition]int64, len(tps))
	if len(tps) == 0 {
		return out, nil
	}
	var rest []TopicPartition // partitions the reset strategy decides
	switch o.kind {
	case kindEarliest, kindLatest, kindTimestamp:
		return l.list(ctx, o.kind, o.ts, tps)
	case kindCommitted:
		if l.group == "" {
			return nil, fmt.Errorf("%w: committed offsets need a group id (kafka.GroupID)", ErrInvalidConfig)
		}
		fetched, err := l.adm.FetchOffsets(ctx, l.group)
		if errors.Is(err, kerr.GroupIDNotFound) {
			fetched, err = nil, nil // a group that never committed
		}
		if err != nil {
			return nil, fmt.Errorf("kafka: fetching the committed offsets of group %q: %w", l.group, err)
		}
		for _, tp := range tps {
			r, ok := fetched.Lookup(tp.Topic, tp.Partition)
			if ok && r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
				return nil, fmt.Errorf("kafka: committed offset of %s for group %q: %w", tp, l.group, r.Err)
			}
			if ok && r.Err == nil && r.At >= 0 {
				out[tp] = r.At
			} else {
				rest = append(rest, tp)
			}
		}
	case kindSpecific:
		for _, tp := range tps {
			if off, ok := o.specific[tp]; ok {
				out[tp] = off
			} else {
				rest = append(rest, tp)
			}
		}
		if stop && len(rest) > 0 {
			return nil, permanent{fmt.Errorf("%w: no stopping offset given for %s", ErrNoOffset, joinTPs(rest))}
		}
	}
	if len(rest) == 0 {
		return out, nil
	}
	var kind offsetsKind
	switch o.reset {
	case ResetEarliest:
		kind = kindEarliest
	case ResetLatest:
		kind = kindLatest
	default:
		if o.kind == kindCommitted {
			return nil, permanent{fmt.Errorf("%w: group %q has no committed offset for %s and the reset strategy is none: commit offsets for the group, or start with kafka.CommittedOffsets(kafka.ResetEarliest) or ResetLatest", ErrNoOffset, l.group, joinTPs(rest))}
		}
		return nil, permanent{fmt.Errorf("%w: no offset given for %s and the reset strategy is none", ErrNoOffset, joinTPs(rest))}
	}
	reset, err := l.list(ctx, kind, 0, rest)
	if err != nil {
		return nil, err
	}
	maps.Copy(out, reset)
	return out, nil
}

// list asks the partition leaders for the earliest, latest or by-time offsets.
func (l offsetLister) list(ctx context.Context, kind offsetsKind, ts int64, tps []TopicPartition) (map[TopicPartition]int64, error) {
	topics := map[string]bool{}
	for _, tp := range tps {
		topics[tp.Topic] = true
	}
	names := slices.Sorted(maps.Keys(topics))
	var (
		listed kadm.ListedOffsets
		err    error
		what   string
	)
	switch kind {
	case kindEarliest:
		what = "earliest"
		listed, err = l.adm.ListStartOffsets(ctx, names...)
	case kindLatest:
		if l.committed {
			what = "last stable"
			listed, err = l.adm.ListCommittedOffsets(ctx, names...)
		} else {
			what = "latest"
			listed, err = l.adm.ListEndOffsets(ctx, names...)
		}
	case kindTimestamp:
		what = "by-timestamp"
		listed, err = l.adm.ListOffsetsAfterMilli(ctx, ts, names...)
	}
	if err != nil {
		return nil, fmt.Errorf("kafka: listing %s offsets of %v: %w", what, names, err)
	}
	out := make(map[TopicPartition]int64, len(tps))
	for _, tp := range tps {
		lo, ok := listed.Lookup(tp.Topic, tp.Partition)
		switch {
		case !ok:
			if bad, ok := listed.Lookup(tp.Topic, -1); ok && bad.Err != nil {
				return nil, fmt.Errorf("kafka: listing %s offsets of %s: %w", what, tp, bad.Err)
			}
			return nil, fmt.Errorf("kafka: listing %s offsets: the broker returned nothing for %s", what, tp)
		case lo.Err != nil:
			return nil, fmt.Errorf("kafka: listing %s offsets of %s: %w", what, tp, lo.Err)
		case lo.Offset < 0:
			return nil, fmt.Errorf("kafka: listing %s offsets of %s: no offset (%d)", what, tp, lo.Offset)
		}
		out[tp] = lo.Offset
	}
	return out, nil
}

func joinTPs(tps []TopicPartition) string {
	tps = slices.Clone(tps)
	slices.SortFunc(tps, compareTP)
	s := ""
	for i, tp := range tps {
		if i > 0 {
			s += ", "
		}
		if i == 10 {
			return s + fmt.Sprintf("and %d more", len(tps)-10)
		}
		s += tp.String()
	}
	return s
}
