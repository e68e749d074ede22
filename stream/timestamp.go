package stream

import (
	"math"
	"time"
)

// Timestamp is a point in event or processing time: milliseconds since the
// Unix epoch, the resolution of Flink's timestamps and of the engine. Every
// timestamp, watermark and timer time of the API is one; durations
// (window sizes, out-of-orderness, gaps) are time.Duration. Convert with
// TimestampOf and Time, and move by a duration with Add.
type Timestamp int64

// NoTimestamp marks a record without an event timestamp.
const NoTimestamp Timestamp = math.MinInt64

// MaxWatermark is the watermark that ends event time.
const MaxWatermark Timestamp = math.MaxInt64

// TimestampOf is t as a Timestamp (truncated to the millisecond).
func TimestampOf(t time.Time) Timestamp { return Timestamp(t.UnixMilli()) }

// Time is ts as a time.Time.
func (ts Timestamp) Time() time.Time { return time.UnixMilli(int64(ts)) }

// Add is ts moved by d (truncated to whole milliseconds).
func (ts Timestamp) Add(d time.Duration) Timestamp { return ts + Timestamp(d.Milliseconds()) }

// Sub is the duration ts - u.
func (ts Timestamp) Sub(u Timestamp) time.Duration { return time.Duration(ts-u) * time.Millisecond }

// noTimestamp and maxWatermark are NoTimestamp and MaxWatermark on the
// engine's side, where timestamps are plain int64 milliseconds.
const (
	noTimestamp  int64 = math.MinInt64
	maxWatermark int64 = math.MaxInt64
)
