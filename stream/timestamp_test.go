package stream_test

import (
	"testing"
	"time"

	"github.com/sluice/sluice/stream"
)

func TestTimestampConversions(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6_789_000, time.UTC)
	ts := stream.TimestampOf(at)
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"TimestampOf", ts, stream.Timestamp(at.UnixMilli())},
		{"Time", ts.Time().Equal(at.Truncate(time.Millisecond)), true},
		{"Add", ts.Add(1500 * time.Millisecond), ts + 1500},
		{"Add truncates", ts.Add(1999 * time.Microsecond), ts + 1},
		{"Sub", ts.Add(time.Minute).Sub(ts), time.Minute},
		{"window end", stream.TimeWindow{Start: ts, End: ts.Add(time.Second)}.MaxTimestamp(), ts + 999},
		{"global window", stream.GlobalWindow{}.MaxTimestamp(), stream.MaxWatermark},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// TestUserAPITakesTimestamps: the user-facing times of records, watermarks,
// timers and windows are one type, stream.Timestamp (durations are
// time.Duration), so they combine without conversions.
func TestUserAPITakesTimestamps(t *testing.T) {
	var (
		_ func(stream.TimerService, stream.Timestamp)                                         = stream.TimerService.RegisterEventTimeTimer
		_ func(stream.TimerService) stream.Timestamp                                          = stream.TimerService.CurrentWatermark
		_ func(stream.WatermarkOutput, stream.Timestamp)                                      = stream.WatermarkOutput.EmitWatermark
		_ func(stream.WatermarkGenerator[int], int, stream.Timestamp, stream.WatermarkOutput) = stream.WatermarkGenerator[int].OnEvent
		_ func(*stream.ProcessContext) stream.Timestamp                                       = (*stream.ProcessContext).Timestamp
		_ func(stream.TriggerContext) stream.Timestamp                                        = stream.TriggerContext.WindowMaxTimestamp
		_ func(stream.Trigger, stream.Timestamp, stream.TriggerContext) stream.TriggerResult  = stream.Trigger.OnEventTime
		_ func(stream.SinkContext) stream.Timestamp                                           = stream.SinkContext.CurrentProcessingTime
		_ func(stream.SplitOutput[int], int, stream.Timestamp)                                = stream.SplitOutput[int].Collect
		_ stream.Timestamp                                                                    = stream.Record[int]{}.Timestamp
		_ stream.Timestamp                                                                    = stream.TimeWindow{}.Start
	)
	strategy := stream.ForBoundedOutOfOrderness[stream.Record[int]](time.Second).
		WithTimestampAssigner(func(r stream.Record[int], _ stream.Timestamp) stream.Timestamp { return r.Timestamp })
	_ = strategy
}
