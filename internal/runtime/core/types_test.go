package core_test

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/runtime/task"
)

func orders(t testing.TB) *core.Schema {
	t.Helper()
	s, err := core.NewSchema(
		core.Field{Name: "id", Type: core.BigInt},
		core.Field{Name: "price", Type: core.Double},
		core.Field{Name: "item", Type: core.Varchar},
		core.Field{Name: "tag", Type: core.Varbinary},
		core.Field{Name: "paid", Type: core.Boolean},
		core.Field{Name: "rowtime", Type: core.TimestampLTZ},
	)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSchemaReportsEveryProblem(t *testing.T) {
	_, err := core.NewSchema(core.Field{Name: "a", Type: core.BigInt}, core.Field{Name: "a", Type: core.Double}, core.Field{Type: core.Varchar}, core.Field{Name: "z", Type: 99})
	if err == nil {
		t.Fatal("a bad schema was accepted")
	}
	if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != 3 {
		t.Fatalf("%d problems reported, want 3: %v", n, err)
	}
}

func TestRowsRoundTrip(t *testing.T) {
	s := orders(t)
	typ := core.RowType(s)
	if typ.Name() != "ROW<`id` BIGINT, `price` DOUBLE, `item` STRING, `tag` BYTES, `paid` BOOLEAN, `rowtime` TIMESTAMP_LTZ(3)>" {
		t.Fatalf("name %q", typ.Name())
	}
	rows := []core.Row{
		{Kind: core.Insert, Values: []any{int64(1), 2.5, "apple", []byte{0, 1}, true, int64(1_700_000_000_000)}},
		{Kind: core.UpdateBefore, Values: []any{int64(-7), math.Inf(-1), "", []byte{}, false, int64(0)}},
		{Kind: core.Delete, Values: []any{nil, nil, nil, nil, nil, nil}},
	}
	for _, r := range rows {
		enc, err := typ.Encode(nil, core.RowRecord(r))
		if err != nil {
			t.Fatal(err)
		}
		got, err := typ.Decode(enc)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Row(), r) {
			t.Errorf("row %v decoded as %v", r, got.Row())
		}
		if _, err := typ.Decode(enc[:len(enc)-1]); !errors.Is(err, core.ErrCorruptRecord) {
			t.Errorf("row %v truncated: %v", r, err)
		}
	}
	// The network batch codec is the engine's framing around the rows.
	bc, err := typ.Ops().BatchCodec()
	if err != nil {
		t.Fatal(err)
	}
	enc := bc.AppendBatch(nil, &task.Batch[core.Row]{Values: rows, Ts: []int64{1, 2, task.NoTimestamp}})
	data, err := bc.DecodeBatch(enc)
	if err != nil {
		t.Fatal(err)
	}
	if got := data.(*task.Batch[core.Row]).Values; !reflect.DeepEqual(got, rows) {
		t.Fatalf("batch decoded as %v", got)
	}
	bc.ReleaseBatch(data)
}

func TestRecordsAreCheckedAgainstTheirType(t *testing.T) {
	s := orders(t)
	good := []any{int64(1), 2.5, "a", []byte("b"), true, int64(3)}
	for _, tc := range []struct {
		name string
		typ  core.Type
		r    core.Record
		ok   bool
	}{
		{"row", core.RowType(s), core.RowRecord(core.Row{Values: good}), true},
		{"row with an int", core.RowType(s), core.RowRecord(core.Row{Values: []any{1, 2.5, "a", []byte("b"), true, int64(3)}}), false},
		{"short row", core.RowType(s), core.RowRecord(core.Row{Values: good[:2]}), false},
		{"bad row kind", core.RowType(s), core.RowRecord(core.Row{Kind: 9, Values: good}), false},
		{"bytes as a row", core.RowType(s), core.BytesRecord([]byte("x")), false},
		{"bytes", core.Bytes(), core.BytesRecord([]byte("x")), true},
		{"row as bytes", core.Bytes(), core.RowRecord(core.Row{Values: good}), false},
		{"value", core.TypeOf[int64](), core.ValueRecord(int64(3)), true},
		{"value of another type", core.TypeOf[int64](), core.ValueRecord(3), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.typ.Check(tc.r)
			if tc.ok != (err == nil) {
				t.Fatalf("Check(%v) = %v", tc.r, err)
			}
			if err != nil && !errors.Is(err, core.ErrRecordKind) {
				t.Fatalf("error %v does not wrap ErrRecordKind", err)
			}
		})
	}
}

func TestBytesBatchesShareOneCopy(t *testing.T) {
	bc, err := core.Bytes().Ops().BatchCodec()
	if err != nil {
		t.Fatal(err)
	}
	vals := [][]byte{[]byte("a"), {}, []byte("longer record")}
	enc := bc.AppendBatch(nil, &task.Batch[[]byte]{Values: vals, Ts: []int64{1, 2, 3}})
	data, err := bc.DecodeBatch(enc)
	if err != nil {
		t.Fatal(err)
	}
	got := data.(*task.Batch[[]byte]).Values
	for i := range enc {
		enc[i] = 0xFF // the exchange reuses its buffer
	}
	if len(got) != 3 || string(got[0]) != "a" || len(got[1]) != 0 || string(got[2]) != "longer record" {
		t.Fatalf("decoded %q", got)
	}
	bc.ReleaseBatch(data)
	if _, err := bc.DecodeBatch([]byte{2, 0, 0, 5, 'a'}); !errors.Is(err, task.ErrCorruptBatch) {
		t.Fatalf("a record longer than the batch: %v", err)
	}
}

func TestTypeOfIsTheEnginesType(t *testing.T) {
	type reading struct {
		Sensor int32
		Value  float64
	}
	typ := core.TypeOf[reading]()
	if typ.Name() != task.TypeOf[reading]().TypeName() || typ.Kind() != core.KindValue {
		t.Fatalf("name %q kind %s", typ.Name(), typ.Kind())
	}
	enc, err := typ.Encode(nil, core.ValueRecord(reading{3, 1.5}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := typ.Decode(enc)
	if err != nil || got.Value() != (reading{3, 1.5}) {
		t.Fatalf("decoded %v, %v", got, err)
	}
	if _, err := core.TypeOf[func()]().Encode(nil, core.ValueRecord(func() {})); err == nil {
		t.Fatal("a func was encoded")
	}
}

// TestBatchAllocs: across the network a typed plain struct keeps the
// engine's allocation-free batches, and a batch of Bytes records costs one
// allocation (its copy) whatever its size.
func TestBatchAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops pooled batches")
	}
	type reading struct {
		Sensor int32
		Value  float64
	}
	for _, tc := range []struct {
		name  string
		typ   core.Type
		batch any
		want  float64
	}{
		{"plain struct", core.TypeOf[reading](), &task.Batch[reading]{Values: make([]reading, 256), Ts: make([]int64, 256)}, 0},
		{"bytes", core.Bytes(), &task.Batch[[]byte]{Values: make([][]byte, 256), Ts: make([]int64, 256)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bc, err := tc.typ.Ops().BatchCodec()
			if err != nil {
				t.Fatal(err)
			}
			buf := bc.AppendBatch(nil, tc.batch)
			allocs := testing.AllocsPerRun(100, func() {
				buf = bc.AppendBatch(buf[:0], tc.batch)
				data, err := bc.DecodeBatch(buf)
				if err != nil {
					t.Fatal(err)
				}
				bc.ReleaseBatch(data)
			})
			if allocs > tc.want {
				t.Fatalf("%.1f allocations per batch of 256, want %.0f", allocs, tc.want)
			}
		})
	}
}

func FuzzDecodeRow(f *testing.F) {
	s := orders(f)
	f.Add(s.AppendRow(nil, core.Row{Values: []any{int64(1), 2.5, "apple", []byte{0, 1}, true, int64(7)}}))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, _, err := s.DecodeRow(b)
		if err != nil {
			return
		}
		if err := s.Check(r); err != nil {
			t.Fatalf("decoded a row that does not fit its schema: %v", err)
		}
		// Compared by encoding: NaN is not equal to itself.
		enc := s.AppendRow(nil, r)
		again, rest, err := s.DecodeRow(enc)
		if err != nil || len(rest) != 0 || string(s.AppendRow(nil, again)) != string(enc) {
			t.Fatalf("re-encoding %v gave %v (%d bytes left), %v", r, again, len(rest), err)
		}
	})
}
