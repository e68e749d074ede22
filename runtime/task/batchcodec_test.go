package task_test

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice/sluice/internal/runtime/task"
)

type reading struct {
	Sensor int32
	Value  float64
	Valid  bool
}

type named struct {
	Name string
	Tags []string
}

func roundTrip[T any](t *testing.T, values []T, ts []int64) {
	t.Helper()
	bc, err := task.TypeOf[T]().BatchCodec()
	if err != nil {
		t.Fatal(err)
	}
	enc := bc.AppendBatch([]byte{0xEE}, &task.Batch[T]{Values: values, Ts: ts})
	if enc[0] != 0xEE {
		t.Fatal("AppendBatch must append")
	}
	got, err := bc.DecodeBatch(enc[1:])
	if err != nil {
		t.Fatal(err)
	}
	b := got.(*task.Batch[T])
	if len(b.Values) != len(values) || len(b.Ts) != len(ts) ||
		(len(values) > 0 && !reflect.DeepEqual(b.Values, values)) || (len(ts) > 0 && !reflect.DeepEqual(b.Ts, ts)) {
		t.Fatalf("got %v %v, want %v %v", b.Values, b.Ts, values, ts)
	}
	bc.ReleaseBatch(got)
}

func TestBatchCodecRoundTrips(t *testing.T) {
	edge := []int64{math.MinInt64, 0, math.MaxInt64, -1, math.MinInt64, 1_700_000_000_000}
	t.Run("int64", func(t *testing.T) { roundTrip(t, []int64{1, -2, 3, math.MaxInt64, math.MinInt64, 0}, edge) })
	t.Run("struct", func(t *testing.T) {
		roundTrip(t, []reading{{1, 2.5, true}, {-3, math.Inf(-1), false}}, []int64{5, 4})
	})
	t.Run("strings", func(t *testing.T) {
		roundTrip(t, []named{{"a", nil}, {"", []string{"x", ""}}}, []int64{math.MinInt64, math.MinInt64})
	})
	t.Run("empty", func(t *testing.T) { roundTrip(t, []int64{}, []int64{}) })
	t.Run("empty struct", func(t *testing.T) { roundTrip(t, []struct{}{{}, {}}, []int64{1, 2}) })
}

func TestBatchCodecNamesTheUnsupportedType(t *testing.T) {
	type withFunc struct {
		OK int
		Fn func()
	}
	_, err := task.TypeOf[withFunc]().BatchCodec()
	if err == nil || !strings.Contains(err.Error(), "task_test.withFunc") || !strings.Contains(err.Error(), ".Fn") {
		t.Fatalf("got %v", err)
	}
}

func TestBatchCodecRejectsCorruptBatches(t *testing.T) {
	bc, err := task.TypeOf[reading]().BatchCodec()
	if err != nil {
		t.Fatal(err)
	}
	enc := bc.AppendBatch(nil, &task.Batch[reading]{Values: []reading{{1, 2, true}, {3, 4, false}}, Ts: []int64{10, 20}})
	cases := map[string][]byte{
		"empty":           {},
		"huge count":      {0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2},
		"trailing bytes":  append(append([]byte{}, enc...), 0),
		"bad varint ts":   {1, 0x80},
		"truncated value": enc[:len(enc)-1],
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := bc.DecodeBatch(b); !errors.Is(err, task.ErrCorruptBatch) || !strings.Contains(err.Error(), "reading") {
				t.Fatalf("got %v", err)
			}
		})
	}
	for i := range enc {
		if _, err := bc.DecodeBatch(enc[:i]); !errors.Is(err, task.ErrCorruptBatch) {
			t.Fatalf("truncated at %d: %v", i, err)
		}
	}
}

// Encoding and decoding allocate per batch at most, never per record, for
// plain types; decoded batches come back from the codec's pool.
func TestBatchCodecDoesNotAllocatePerRecord(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	check := func(t *testing.T, bc task.BatchCodec, data any) {
		buf := bc.AppendBatch(nil, data)
		allocs := testing.AllocsPerRun(50, func() {
			buf = bc.AppendBatch(buf[:0], data)
			got, err := bc.DecodeBatch(buf)
			if err != nil {
				t.Fatal(err)
			}
			bc.ReleaseBatch(got)
		})
		if allocs > 3 {
			t.Fatalf("%v allocations per batch of 512 records", allocs)
		}
	}
	ints := &task.Batch[int64]{}
	rs := &task.Batch[reading]{}
	for i := range 512 {
		ints.Values, ints.Ts = append(ints.Values, int64(i)*7919), append(ints.Ts, int64(1000+i))
		rs.Values, rs.Ts = append(rs.Values, reading{int32(i), float64(i) / 3, i%2 == 0}), append(rs.Ts, int64(1000+i))
	}
	t.Run("int64", func(t *testing.T) {
		bc, _ := task.TypeOf[int64]().BatchCodec()
		check(t, bc, ints)
	})
	t.Run("struct", func(t *testing.T) {
		bc, _ := task.TypeOf[reading]().BatchCodec()
		check(t, bc, rs)
	})
}
