// Command sqltablejob is a job program mixing the typed API and SQL
// (sql/table) that the cluster tests run on a standalone cluster: -n
// orders of 4 customers, one every 7 seconds of event time, become a
// table with a rowtime of their timestamps, a SQL TUMBLE aggregation
// totals them per customer and minute, and the totals come back as
// structs, written by a file sink as lines
// "customer HH:MM-HH:MM n=N cents=C".
//
//	sqltablejob -out DIR [-n N]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sluice/sluice/file"
	"github.com/sluice/sluice/sql/table"
	"github.com/sluice/sluice/stream"
)

// Order is an order of the input.
type Order struct {
	Customer string
	Cents    int64
	At       time.Time
}

// Total is a customer's orders in a minute.
type Total struct {
	Customer    string
	WindowStart time.Time `sql:"window_start"`
	WindowEnd   time.Time `sql:"window_end"`
	N           int64
	Cents       int64
}

func main() {
	out := flag.String("out", "", "output directory")
	n := flag.Int("n", 400, "orders")
	flag.Parse()
	start := time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC)
	var orders []Order
	for i := range *n {
		orders = append(orders, Order{Customer: fmt.Sprintf("c%d", i%4), Cents: int64(i * 50), At: start.Add(time.Duration(i) * 7 * time.Second)})
	}
	env := stream.NewEnvironment()
	tenv := table.NewEnvironment(env)
	src := stream.AssignTimestampsAndWatermarks(stream.FromSlice(env, orders),
		stream.ForMonotonousTimestamps[Order]().WithTimestampAssigner(func(o Order, _ stream.Timestamp) stream.Timestamp { return stream.TimestampOf(o.At) }))
	if err := run(env, tenv, src, *out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(env *stream.Environment, tenv *table.Environment, src stream.DataStream[Order], out string) error {
	t, err := table.FromDataStream(tenv, src, table.Rowtime("ts"))
	if err != nil {
		return err
	}
	if err := tenv.CreateTemporaryView("orders", t); err != nil {
		return err
	}
	q, err := tenv.SQLQuery(`SELECT Customer, window_start, window_end, COUNT(*) AS n, SUM(Cents) AS cents
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY Customer, window_start, window_end`)
	if err != nil {
		return err
	}
	totals, err := table.ToDataStream[Total](q)
	if err != nil {
		return err
	}
	sink := file.ForRowFormat(out, func(t Total, w io.Writer) error {
		_, err := fmt.Fprintf(w, "%s %s-%s n=%d cents=%d\n", t.Customer, t.WindowStart.Format("15:04"), t.WindowEnd.Format("15:04"), t.N, t.Cents)
		return err
	}).WithBucketAssigner(file.BasePathBucketAssigner[Total]())
	stream.SinkToCommitting(totals, sink).UID("files")
	res, err := env.Execute("sql table job")
	if err != nil {
		return err
	}
	fmt.Printf("job %s done: %d restarts\n", res.JobID, res.Restarts)
	return nil
}
