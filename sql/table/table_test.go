package table_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/sql/table"
	"github.com/sluice/sluice/stream"
)

type order struct {
	Customer string
	Amount   float64
	Cents    int64 `sql:"amount_cents"`
	At       time.Time
	note     string // unexported: not a column
}

type total struct {
	Customer    string
	WindowStart time.Time `sql:"window_start"`
	WindowEnd   time.Time `sql:"window_end"`
	N           int64
	Cents       int64
}

var start = time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC)

// orders are 40 orders of 4 customers, one every 7 seconds of event time.
func orders() []order {
	var out []order
	for i := range 40 {
		out = append(out, order{Customer: fmt.Sprintf("c%d", i%4), Amount: float64(i) / 2, Cents: int64(i * 50),
			At: start.Add(time.Duration(i) * 7 * time.Second), note: "x"})
	}
	return out
}

// orderStream is orders with their At as timestamps and watermarks.
func orderStream(env *stream.Environment) stream.DataStream[order] {
	return stream.AssignTimestampsAndWatermarks(stream.FromSlice(env, orders()),
		stream.ForMonotonousTimestamps[order]().WithTimestampAssigner(func(o order, _ stream.Timestamp) stream.Timestamp {
			return stream.TimestampOf(o.At)
		}))
}

// TestWindowAggregateBetweenDataStreams: a typed source's records become a
// table with a rowtime of their timestamps, a SQL TUMBLE aggregation runs
// over it, and its rows come back as typed structs to a typed sink, all
// in one job of the stream.Environment; the output is exact.
func TestWindowAggregateBetweenDataStreams(t *testing.T) {
	for _, par := range []int{1, 2} {
		t.Run(fmt.Sprintf("parallelism %d", par), func(t *testing.T) {
			env := stream.NewEnvironment(stream.WithParallelism(par))
			tenv := table.NewEnvironment(env)
			tbl, err := table.FromDataStream(tenv, orderStream(env), table.Rowtime("ts"))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := strings.Join(tbl.Columns(), ", "),
				"Customer STRING NOT NULL, Amount DOUBLE NOT NULL, amount_cents BIGINT NOT NULL, At TIMESTAMP(3) NOT NULL, ts TIMESTAMP(3) NOT NULL *ROWTIME*"; got != want {
				t.Errorf("columns:\n%s\nwant:\n%s", got, want)
			}
			if err := tenv.CreateTemporaryView("orders", tbl); err != nil {
				t.Fatal(err)
			}
			q, err := tenv.SQLQuery(`SELECT Customer, window_start, window_end, COUNT(*) AS n, SUM(amount_cents) AS cents
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY Customer, window_start, window_end`)
			if err != nil {
				t.Fatal(err)
			}
			out, err := table.ToDataStream[total](q)
			if err != nil {
				t.Fatal(err)
			}
			// A typed operator after the query.
			labelled := stream.Map(out, func(tt total) string {
				return fmt.Sprintf("%s %s-%s n=%d cents=%d", tt.Customer, tt.WindowStart.Format("15:04"), tt.WindowEnd.Format("15:04"), tt.N, tt.Cents)
			})
			got := stream.Collect(labelled)
			if _, err := env.Execute("mixed"); err != nil {
				t.Fatal(err)
			}
			want := map[string]int64{}
			counts := map[string]int64{}
			for _, o := range orders() {
				w := o.At.Truncate(time.Minute)
				k := fmt.Sprintf("%s %s-%s", o.Customer, w.Format("15:04"), w.Add(time.Minute).Format("15:04"))
				want[k] += o.Cents
				counts[k]++
			}
			var wantLines []string
			for k, c := range want {
				wantLines = append(wantLines, fmt.Sprintf("%s n=%d cents=%d", k, counts[k], c))
			}
			slices.Sort(wantLines)
			lines := got.Values()
			slices.Sort(lines)
			if !slices.Equal(lines, wantLines) {
				t.Errorf("output:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(wantLines, "\n"))
			}
		})
	}
}

// An updating query comes back as a changelog of generic rows, and is
// refused as an insert-only stream.
func TestChangelogStream(t *testing.T) {
	env := stream.NewEnvironment(stream.WithParallelism(1))
	tenv := table.NewEnvironment(env)
	small := stream.FromSlice(env, []order{{Customer: "a", Cents: 1}, {Customer: "b", Cents: 2}, {Customer: "a", Cents: 3}})
	tbl, err := table.FromDataStream(tenv, small)
	if err != nil {
		t.Fatal(err)
	}
	if err := tenv.CreateTemporaryView("orders", tbl); err != nil {
		t.Fatal(err)
	}
	q, err := tenv.SQLQuery("SELECT Customer, SUM(amount_cents) AS cents FROM orders GROUP BY Customer")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := table.ToDataStream[total](q); !errors.Is(err, table.ErrUpdating) {
		t.Errorf("ToDataStream of an updating query: %v, want ErrUpdating", err)
	}
	cl, err := table.ToChangelogStream(q)
	if err != nil {
		t.Fatal(err)
	}
	got := stream.Collect(stream.Map(cl, func(r table.Row) string { return r.String() }))
	if _, err := env.Execute("changelog"); err != nil {
		t.Fatal(err)
	}
	want := []string{"+I[a 1]", "+I[b 2]", "-U[a 1]", "+U[a 4]"}
	if !slices.Equal(got.Values(), want) {
		t.Errorf("changelog: %q, want %q", got.Values(), want)
	}
}

// A type whose fields cannot all be columns is refused, naming the field.
func TestTypesThatCannotMapToColumns(t *testing.T) {
	type withMap struct {
		ID    string
		Attrs map[string]string
	}
	type withUint struct{ N uint64 }
	type narrow struct{ Customer int64 }
	env := stream.NewEnvironment(stream.WithParallelism(1))
	tenv := table.NewEnvironment(env)
	for _, tc := range []struct {
		name string
		from func() error
		want string
	}{
		{"map field", func() error {
			_, err := table.FromDataStream(tenv, stream.FromSlice(env, []withMap{{}}))
			return err
		}, "table: field Attrs of table_test.withMap cannot map to a column: a map[string]string has no SQL type"},
		{"uint64 field", func() error {
			_, err := table.FromDataStream(tenv, stream.FromSlice(env, []withUint{{}}))
			return err
		}, "field N of table_test.withUint cannot map to a column: a uint64 has no SQL type"},
		{"not a struct", func() error {
			_, err := table.FromDataStream(tenv, stream.FromSlice(env, []string{"a"}))
			return err
		}, "table: string cannot map to columns: it is a string, not a struct"},
		{"a column into a field of another type", func() error {
			tbl, err := table.FromDataStream(tenv, stream.FromSlice(env, orders()))
			if err != nil {
				return err
			}
			_, err = table.ToDataStream[narrow](tbl)
			return err
		}, "field Customer of table_test.narrow cannot map to a column: column Customer: a STRING NOT NULL column cannot go into a int64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.from()
			var te *table.TypeError
			if !errors.As(err, &te) || !errors.Is(err, table.ErrType) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want a *TypeError with %q", err, tc.want)
			}
		})
	}
}
