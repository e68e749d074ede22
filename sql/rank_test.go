package sql_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/sql"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func orderAt(id, customer, amount, at string) string {
	return order(id, customer, amount, "2024-01-01 "+at)
}

// SESSION windows merge per customer: a row that bridges two sessions
// merges them; a row behind the watermark whose window merges into an
// open session counts, one whose window is already over is late and
// dropped (Flink's merging-window lateness). The watermark lags a minute.
func TestSessionWindowAggregation(t *testing.T) {
	for _, par := range []string{"1", "2"} {
		t.Run("parallelism "+par, func(t *testing.T) {
			b := newBroker(t)
			b.topic(t, "orders", 1)
			b.topic(t, "sessions", 1)
			script := withBroker(`CREATE TABLE orders (order_id STRING, customer_id STRING, amount DECIMAL(12, 2),
  occurred_at TIMESTAMP(3), WATERMARK FOR occurred_at AS occurred_at - INTERVAL '1' MINUTE)
WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '…', 'format' = 'json',
  'scan.startup.mode' = 'earliest-offset');
CREATE TABLE sessions (customer_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT, total DECIMAL(18, 2))
WITH ('connector' = 'kafka', 'topic' = 'sessions', 'properties.bootstrap.servers' = '…', 'format' = 'json');
INSERT INTO sessions SELECT customer_id, window_start, window_end, COUNT(*), SUM(amount)
FROM TABLE(SESSION(TABLE orders PARTITION BY customer_id, DESCRIPTOR(occurred_at), INTERVAL '30' SECOND))
GROUP BY customer_id, window_start, window_end;`, b.addr)
			job, _ := start(t, script, map[string]string{"parallelism.default": par})
			b.produce(t, "orders", 0,
				orderAt("o1", "c1", "1", "10:00:00"),
				orderAt("o2", "c2", "2", "10:00:10"),
				orderAt("o3", "c1", "3", "10:00:20"),
				orderAt("o4", "c2", "4", "10:00:50"),
				orderAt("o5", "c2", "5", "10:00:30"), // bridges [10:00:10, 10:00:40) and [10:00:50, 10:01:20)
				orderAt("o6", "c1", "6", "10:01:30"),
				orderAt("m1", "c0", "0", "10:02:55")) // watermark 10:01:55
			first := []string{
				` {"customer_id":"c1","window_start":"2024-01-01 10:00:00","window_end":"2024-01-01 10:00:50","n":2,"total":4}`,
				` {"customer_id":"c2","window_start":"2024-01-01 10:00:10","window_end":"2024-01-01 10:01:20","n":3,"total":11}`,
			}
			if got := b.read(t, "sessions", 2); !slices.Equal(got, first) {
				t.Fatalf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(first, "\n"))
			}
			b.produce(t, "orders", 0,
				orderAt("o7", "c3", "7", "10:00:00"), // [10:00:00, 10:00:30) is over: late
				orderAt("o8", "c1", "8", "10:01:40"), // behind the watermark, but merges into [10:01:30, 10:02:00)
				orderAt("o9", "c1", "9", "10:00:40"), // c1's first session fired: late
				orderAt("m2", "c0", "0", "11:00:00")) // fires the rest but m2's own
			want := append(first,
				` {"customer_id":"c0","window_start":"2024-01-01 10:02:55","window_end":"2024-01-01 10:03:25","n":1,"total":0}`,
				` {"customer_id":"c1","window_start":"2024-01-01 10:01:30","window_end":"2024-01-01 10:02:10","n":2,"total":14}`)
			slices.Sort(want)
			if got := b.read(t, "sessions", 4); !slices.Equal(got, want) {
				t.Errorf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			testwait.Eventually(t, 10*time.Second, "2 late records counted", func() bool { return job.Metrics().LateRecordsDropped == 2 })
		})
	}
}

// runPrinted runs script (whose INSERT writes a print table over a
// bounded scan) to its end at parallelism par and returns the printed rows
// per key (the first field), in the order printed: rows of one key keep
// their order whichever subtask printed them.
func runPrinted(t *testing.T, script, par string) map[string][]string {
	t.Helper()
	return runPrintedKeyed(t, script, par, 1)
}

// runPrintedKeyed is runPrinted with the first keyFields fields as the key.
func runPrintedKeyed(t *testing.T, script, par string, keyFields int) map[string][]string {
	t.Helper()
	var out strings.Builder
	jobs, err := sql.NewSession(sql.Options{Stdout: &out, Config: map[string]string{"parallelism.default": par}}).ExecuteScript(ctxT(t), script)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if err := j.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	byKey := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if i := strings.Index(line, "> "); i >= 0 {
			line = line[i+2:] // the subtask's prefix
		}
		if len(line) < 3 || !strings.Contains("+I[-U[+U[-D[", line[:3]) {
			continue // the client's messages
		}
		open := strings.Index(line, "[")
		if open < 0 {
			t.Fatalf("printed %q", line)
		}
		key := strings.Join(strings.SplitN(line[open+1:], ", ", keyFields+1)[:keyFields], ", ")
		byKey[key] = append(byKey[key], line)
	}
	return byKey
}

func checkByKey(t *testing.T, got, want map[string][]string) {
	t.Helper()
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	for k := range keys {
		if !slices.Equal(got[k], want[k]) {
			t.Errorf("key %s printed:\n%s\nwant:\n%s", k, strings.Join(got[k], "\n"), strings.Join(want[k], "\n"))
		}
	}
}

const ordersDDL = `CREATE TABLE orders (order_id STRING, customer_id STRING, amount DECIMAL(12, 2),
  occurred_at TIMESTAMP(3), WATERMARK FOR occurred_at AS occurred_at - INTERVAL '1' MINUTE)
WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '…', 'format' = 'json',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset');
`

// Deduplication by rowtime: keeping the last row replaces it with every
// row not earlier (-U/+U); keeping the first emits the earliest row once
// the watermark passes it (insert-only, as Flink 2 plans it).
func TestDeduplication(t *testing.T) {
	for _, par := range []string{"1", "2"} {
		t.Run("parallelism "+par, func(t *testing.T) {
			b := newBroker(t)
			b.topic(t, "orders", 1)
			b.produce(t, "orders", 0,
				orderAt("o1", "c1", "1", "10:00:00"),
				orderAt("o2", "c2", "2", "10:00:05"),
				orderAt("o3", "c1", "3", "10:00:10"),
				orderAt("o4", "c1", "4", "10:00:02"),
				orderAt("o5", "c2", "5", "10:00:01"),
				orderAt("o6", "c1", "6", "10:00:10"))
			ddl := withBroker(ordersDDL+"CREATE TABLE out (customer_id STRING, order_id STRING, amount DECIMAL(12, 2)) WITH ('connector' = 'print');\n", b.addr)
			for _, tc := range []struct {
				dir  string
				want map[string][]string
			}{
				{"DESC", map[string][]string{
					"c1": {"+I[c1, o1, 1.00]", "-U[c1, o1, 1.00]", "+U[c1, o3, 3.00]", "-U[c1, o3, 3.00]", "+U[c1, o6, 6.00]"},
					"c2": {"+I[c2, o2, 2.00]"},
				}},
				{"ASC", map[string][]string{
					"c1": {"+I[c1, o1, 1.00]"},
					"c2": {"+I[c2, o5, 5.00]"},
				}},
			} {
				got := runPrinted(t, ddl+`INSERT INTO out SELECT customer_id, order_id, amount FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY occurred_at `+tc.dir+`) AS rn FROM orders)
WHERE rn = 1;`, par)
				checkByKey(t, got, tc.want)
			}
		})
	}
}

// Top-N by amount: with the row number selected every moved rank is
// updated; without it the row pushed out is deleted.
func TestTopN(t *testing.T) {
	for _, par := range []string{"1", "2"} {
		t.Run("parallelism "+par, func(t *testing.T) {
			b := newBroker(t)
			b.topic(t, "orders", 1)
			b.produce(t, "orders", 0,
				orderAt("o1", "c1", "5", "10:00:00"),
				orderAt("o2", "c1", "3", "10:00:01"),
				orderAt("o3", "c1", "7", "10:00:02"),
				orderAt("o4", "c1", "4", "10:00:03"),
				orderAt("o5", "c2", "1", "10:00:04"),
				orderAt("o6", "c1", "1", "10:00:05"))
			ddl := withBroker(ordersDDL+`CREATE TABLE ranked (customer_id STRING, rn BIGINT, order_id STRING, amount DECIMAL(12, 2)) WITH ('connector' = 'print');
CREATE TABLE top (customer_id STRING, order_id STRING, amount DECIMAL(12, 2)) WITH ('connector' = 'print');
`, b.addr)
			got := runPrinted(t, ddl+`INSERT INTO ranked SELECT customer_id, rownum, order_id, amount FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY amount DESC) AS rownum FROM orders)
WHERE rownum <= 2;`, par)
			checkByKey(t, got, map[string][]string{
				"c1": {"+I[c1, 1, o1, 5.00]", "+I[c1, 2, o2, 3.00]",
					"-U[c1, 1, o1, 5.00]", "+U[c1, 1, o3, 7.00]", "-U[c1, 2, o2, 3.00]", "+U[c1, 2, o1, 5.00]"},
				"c2": {"+I[c2, 1, o5, 1.00]"},
			})
			got = runPrinted(t, ddl+`INSERT INTO top SELECT customer_id, order_id, amount FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY amount DESC) AS rownum FROM orders)
WHERE rownum < 3;`, par)
			checkByKey(t, got, map[string][]string{
				"c1": {"+I[c1, o1, 5.00]", "+I[c1, o2, 3.00]", "-D[c1, o2, 3.00]", "+I[c1, o3, 7.00]"},
				"c2": {"+I[c2, o5, 1.00]"},
			})
			// A rank range with an offset: only ranks 2 and 3 are emitted.
			got = runPrinted(t, ddl+`INSERT INTO ranked SELECT customer_id, rownum, order_id, amount FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY amount DESC) AS rownum FROM orders)
WHERE rownum > 1 AND rownum <= 3;`, par)
			checkByKey(t, got, map[string][]string{
				"c1": {"+I[c1, 2, o2, 3.00]", "-U[c1, 2, o2, 3.00]", "+U[c1, 2, o1, 5.00]", "+I[c1, 3, o2, 3.00]",
					"-U[c1, 3, o2, 3.00]", "+U[c1, 3, o4, 4.00]"},
			})
			// A Top-1 (Flink's FastTop1Function): a strictly better row
			// updates the key's row.
			got = runPrinted(t, ddl+`INSERT INTO top SELECT customer_id, order_id, amount FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY amount DESC) AS rownum FROM orders)
WHERE rownum <= 1;`, par)
			checkByKey(t, got, map[string][]string{
				"c1": {"+I[c1, o1, 5.00]", "-U[c1, o1, 5.00]", "+U[c1, o3, 7.00]"},
				"c2": {"+I[c2, o5, 1.00]"},
			})
			// Without PARTITION BY one subtask ranks everything; the sink
			// runs at its parallelism, so the changes keep their order.
			got = runPrinted(t, ddl+`INSERT INTO top SELECT 'all', order_id, amount FROM (
  SELECT order_id, amount, ROW_NUMBER() OVER (ORDER BY amount DESC) AS rownum FROM orders)
WHERE rownum <= 2;`, par)
			checkByKey(t, got, map[string][]string{
				"all": {"+I[all, o1, 5.00]", "+I[all, o2, 3.00]", "-D[all, o2, 3.00]", "+I[all, o3, 7.00]"},
			})
		})
	}
}

// Window Top-N over a window aggregation and window deduplication (keep
// last and first) over a window TVF are insert-only: each window's rows
// once, when it closes. The watermark lags ten minutes, so however the
// two partitions are polled no row is late.
func TestWindowTopNAndDeduplication(t *testing.T) {
	bid := func(supplier, price, at string) string {
		return fmt.Sprintf(`{"supplier":%q,"price":%s,"bidtime":"2024-01-01 %s"}`, supplier, price, at)
	}
	for _, par := range []string{"1", "2"} {
		t.Run("parallelism "+par, func(t *testing.T) {
			b := newBroker(t)
			b.topic(t, "bids", 2)
			b.produce(t, "bids", 0,
				bid("s1", "4", "10:01:00"),
				bid("s2", "5", "10:03:00"),
				bid("s1", "2", "10:05:00"),
				bid("s3", "3", "10:12:00"))
			b.produce(t, "bids", 1,
				bid("s3", "1", "10:07:00"),
				bid("s1", "1", "10:11:00"),
				bid("s3", "9", "10:04:00"))
			ddl := withBroker(`CREATE TABLE bids (supplier STRING, price DECIMAL(10, 2), bidtime TIMESTAMP(3),
  WATERMARK FOR bidtime AS bidtime - INTERVAL '10' MINUTE)
WITH ('connector' = 'kafka', 'topic' = 'bids', 'properties.bootstrap.servers' = '…', 'format' = 'json',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset');
CREATE TABLE top2 (window_start TIMESTAMP(3), supplier STRING, total DECIMAL(20, 2), rn BIGINT) WITH ('connector' = 'print');
CREATE TABLE lastbid (supplier STRING, price DECIMAL(10, 2), bidtime TIMESTAMP(3), window_start TIMESTAMP(3)) WITH ('connector' = 'print');
`, b.addr)
			got := runPrinted(t, ddl+`INSERT INTO top2 SELECT window_start, supplier, total, rn FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY total DESC) AS rn
  FROM (SELECT window_start, window_end, supplier, SUM(price) AS total
    FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(bidtime), INTERVAL '10' MINUTE))
    GROUP BY window_start, window_end, supplier))
WHERE rn <= 2;`, par)
			// One ranking subtask (no key besides the window) feeds every
			// sink subtask: a window's rows in any order.
			for _, rows := range got {
				slices.Sort(rows)
			}
			checkByKey(t, got, map[string][]string{
				"2024-01-01 10:00:00.000": {"+I[2024-01-01 10:00:00.000, s1, 6.00, 2]", "+I[2024-01-01 10:00:00.000, s3, 10.00, 1]"},
				"2024-01-01 10:10:00.000": {"+I[2024-01-01 10:10:00.000, s1, 1.00, 2]", "+I[2024-01-01 10:10:00.000, s3, 3.00, 1]"},
			})
			// Per supplier, windows in the order they close.
			for _, tc := range []struct {
				dir  string
				want map[string][]string
			}{
				{"DESC", map[string][]string{
					"s1": {"+I[s1, 2.00, 2024-01-01 10:05:00.000, 2024-01-01 10:00:00.000]", "+I[s1, 1.00, 2024-01-01 10:11:00.000, 2024-01-01 10:10:00.000]"},
					"s2": {"+I[s2, 5.00, 2024-01-01 10:03:00.000, 2024-01-01 10:00:00.000]"},
					"s3": {"+I[s3, 1.00, 2024-01-01 10:07:00.000, 2024-01-01 10:00:00.000]", "+I[s3, 3.00, 2024-01-01 10:12:00.000, 2024-01-01 10:10:00.000]"},
				}},
				{"ASC", map[string][]string{
					"s1": {"+I[s1, 4.00, 2024-01-01 10:01:00.000, 2024-01-01 10:00:00.000]", "+I[s1, 1.00, 2024-01-01 10:11:00.000, 2024-01-01 10:10:00.000]"},
					"s2": {"+I[s2, 5.00, 2024-01-01 10:03:00.000, 2024-01-01 10:00:00.000]"},
					"s3": {"+I[s3, 9.00, 2024-01-01 10:04:00.000, 2024-01-01 10:00:00.000]", "+I[s3, 3.00, 2024-01-01 10:12:00.000, 2024-01-01 10:10:00.000]"},
				}},
			} {
				got = runPrinted(t, ddl+`INSERT INTO lastbid SELECT supplier, price, bidtime, window_start FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, supplier ORDER BY bidtime `+tc.dir+`) AS rn
  FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(bidtime), INTERVAL '10' MINUTE)))
WHERE rn = 1;`, par)
				checkByKey(t, got, tc.want)
			}
		})
	}
}

// readUntil returns "key value" of the records of topic in order, up to
// and including the first whose value contains last.
func (b *broker) readUntil(t *testing.T, topic, last string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []string
	ctx := ctxT(t)
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("no record with %q in %s: %v", last, topic, out)
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			if done {
				return
			}
			out = append(out, string(r.Key)+" "+string(r.Value))
			done = strings.Contains(string(r.Value), last)
		})
		if done {
			return out
		}
	}
}

// A Top-N stopped with a savepoint half-way and run again from it, at the
// same parallelism and rescaled to 2: the restored ranks go on changing as
// in an uninterrupted run, and no upsert is written twice.
func TestTopNSavepointAndRestore(t *testing.T) {
	for _, par := range []string{"1", "2"} {
		t.Run("restored at parallelism "+par, func(t *testing.T) {
			b := newBroker(t)
			b.topic(t, "orders", 1)
			b.topic(t, "top2", 1)
			b.produce(t, "orders", 0,
				orderAt("o1", "c1", "5", "10:00:00"),
				orderAt("o2", "c1", "3", "10:00:01"),
				orderAt("o5", "c2", "1", "10:00:04"))
			b.commit(t, "top-sql", "orders", 1)
			dir := t.TempDir()
			cfg := map[string]string{
				"execution.checkpointing.interval": "20 ms",
				"execution.checkpointing.dir":      "file://" + dir + "/cp",
			}
			script := withBroker(`CREATE TABLE orders (order_id STRING, customer_id STRING, amount DECIMAL(12, 2),
  occurred_at TIMESTAMP(3), WATERMARK FOR occurred_at AS occurred_at)
WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '…', 'format' = 'json',
  'properties.group.id' = 'top-sql', 'scan.startup.mode' = 'group-offsets');
CREATE TABLE top2 (customer_id STRING, rn BIGINT, order_id STRING, amount DECIMAL(12, 2), PRIMARY KEY (customer_id, rn) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = 'top2', 'properties.bootstrap.servers' = '…', 'key.format' = 'json', 'value.format' = 'json');
INSERT INTO top2 SELECT customer_id, rownum, order_id, amount FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY amount DESC) AS rownum FROM orders)
WHERE rownum <= 2;`, b.addr)
			jobs, err := sql.NewSession(sql.Options{Config: cfg}).ExecuteScript(ctxT(t), script)
			if err != nil {
				t.Fatal(err)
			}
			testwait.Eventually(t, 20*time.Second, "the first orders read and checkpointed", func() bool {
				offs, err := b.adm.FetchOffsets(ctxT(t), "top-sql")
				if err != nil {
					return false
				}
				o, _ := offs.Lookup("orders", 0)
				return o.At == 3
			})
			path, err := jobs[0].StopWithSavepoint("file://" + dir + "/sp")
			if err != nil {
				t.Fatal(err)
			}
			if err := jobs[0].Wait(); err != nil {
				t.Fatal(err)
			}
			b.produce(t, "orders", 0,
				orderAt("o3", "c1", "7", "10:00:02"),
				orderAt("o4", "c1", "4", "10:00:03"),
				orderAt("o6", "c1", "1", "10:00:05"),
				orderAt("o7", "c3", "2", "10:00:06"))
			// The group's offset goes back to o2: only the savepoint's
			// position and ranks give the uninterrupted run's output.
			offs := kadm.Offsets{}
			offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 1, LeaderEpoch: -1})
			if resp, err := b.adm.CommitOffsets(ctxT(t), "top-sql", offs); err != nil || resp.Error() != nil {
				t.Fatal(err, resp.Error())
			}
			restored := maps.Clone(cfg)
			restored["parallelism.default"] = par
			start(t, "SET 'execution.state-recovery.path' = '"+path+"';\n"+script, restored)
			want := map[string][]string{
				`{"customer_id":"c1","rn":1}`: {`{"customer_id":"c1","rn":1,"order_id":"o1","amount":5}`, `{"customer_id":"c1","rn":1,"order_id":"o3","amount":7}`},
				`{"customer_id":"c1","rn":2}`: {`{"customer_id":"c1","rn":2,"order_id":"o2","amount":3}`, `{"customer_id":"c1","rn":2,"order_id":"o1","amount":5}`},
				`{"customer_id":"c2","rn":1}`: {`{"customer_id":"c2","rn":1,"order_id":"o5","amount":1}`},
				`{"customer_id":"c3","rn":1}`: {`{"customer_id":"c3","rn":1,"order_id":"o7","amount":2}`},
			}
			got := map[string][]string{}
			for _, r := range b.readOrdered(t, "top2", 6) {
				k, v, _ := strings.Cut(r, " ")
				got[k] = append(got[k], v)
			}
			checkByKey(t, got, want)
		})
	}
}

// readOrdered returns "key value" of the first n records of topic, in the
// order read (one partition: the order written).
func (b *broker) readOrdered(t *testing.T, topic string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []string
	ctx := ctxT(t)
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records of %s: %v", len(out), n, topic, out)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Key)+" "+string(r.Value)) })
	}
	return out
}

// Deduplication by processing time: the first row of each key to arrive
// is insert-only, so the append-only kafka sink takes it; keeping the last
// row is a changelog of every arrival.
func TestProctimeDeduplication(t *testing.T) {
	for _, par := range []string{"1", "2"} {
		t.Run("parallelism "+par, func(t *testing.T) {
			b := newBroker(t)
			b.topic(t, "orders", 1)
			b.topic(t, "firsts", 1)
			b.produce(t, "orders", 0,
				orderAt("o1", "c1", "1", "10:00:00"),
				orderAt("o2", "c2", "2", "10:00:05"),
				orderAt("o1", "c1", "3", "09:00:00"), // a redelivery, with an earlier time
				orderAt("o3", "c1", "4", "10:00:02"),
				orderAt("o2", "c2", "5", "10:00:01"))
			ddl := withBroker(`CREATE TABLE orders (order_id STRING, customer_id STRING, amount DECIMAL(12, 2),
  occurred_at TIMESTAMP(3), pt AS PROCTIME())
WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '…', 'format' = 'json',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset');
CREATE TABLE firsts (order_id STRING, amount DECIMAL(12, 2))
WITH ('connector' = 'kafka', 'topic' = 'firsts', 'properties.bootstrap.servers' = '…', 'format' = 'json');
CREATE TABLE lasts (customer_id STRING, order_id STRING, amount DECIMAL(12, 2)) WITH ('connector' = 'print');
`, b.addr)
			jobs, err := sql.NewSession(sql.Options{Config: map[string]string{"parallelism.default": par}}).ExecuteScript(ctxT(t), ddl+`INSERT INTO firsts SELECT order_id, amount FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY order_id ORDER BY pt) AS rn FROM orders)
WHERE rn = 1;`)
			if err != nil {
				t.Fatal(err)
			}
			if err := jobs[0].Wait(); err != nil {
				t.Fatal(err)
			}
			want := []string{` {"order_id":"o1","amount":1}`, ` {"order_id":"o2","amount":2}`, ` {"order_id":"o3","amount":4}`}
			if got := b.read(t, "firsts", 3); !slices.Equal(got, want) {
				t.Errorf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			got := runPrinted(t, ddl+`INSERT INTO lasts SELECT customer_id, order_id, amount FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY pt DESC) AS rn FROM orders)
WHERE rn = 1;`, par)
			checkByKey(t, got, map[string][]string{
				"c1": {"+I[c1, o1, 1.00]", "-U[c1, o1, 1.00]", "+U[c1, o1, 3.00]", "-U[c1, o1, 3.00]", "+U[c1, o3, 4.00]"},
				"c2": {"+I[c2, o2, 2.00]", "-U[c2, o2, 2.00]", "+U[c2, o2, 5.00]"},
			})
			// A Top-N by processing time ascending is the first N rows to
			// arrive (Flink's AppendOnlyFirstNFunction).
			got = runPrinted(t, ddl+`CREATE TABLE firstn (customer_id STRING, rn BIGINT, amount DECIMAL(12, 2)) WITH ('connector' = 'print');
INSERT INTO firstn SELECT customer_id, rn, amount FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY pt) AS rn FROM orders)
WHERE rn <= 2;`, par)
			checkByKey(t, got, map[string][]string{
				"c1": {"+I[c1, 1, 1.00]", "+I[c1, 2, 3.00]"},
				"c2": {"+I[c2, 1, 2.00]", "+I[c2, 2, 5.00]"},
			})
		})
	}
}

// Open sessions survive a savepoint: after the restore a row bridges a
// restored session and its own window, and the merged session is written
// once.
func TestSessionSavepointAndRestore(t *testing.T) {
	b := newBroker(t)
	b.topic(t, "orders", 1)
	b.topic(t, "sessions", 1)
	b.produce(t, "orders", 0,
		orderAt("o1", "c1", "1", "10:00:00"),
		orderAt("o2", "c1", "2", "10:00:20"),
		orderAt("o3", "c2", "3", "10:00:10"))
	b.commit(t, "session-sql", "orders", 1)
	dir := t.TempDir()
	cfg := map[string]string{
		"execution.checkpointing.interval": "20 ms",
		"execution.checkpointing.dir":      "file://" + dir + "/cp",
	}
	script := withBroker(`CREATE TABLE orders (order_id STRING, customer_id STRING, amount DECIMAL(12, 2),
  occurred_at TIMESTAMP(3), WATERMARK FOR occurred_at AS occurred_at - INTERVAL '1' MINUTE)
WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '…', 'format' = 'json',
  'properties.group.id' = 'session-sql', 'scan.startup.mode' = 'group-offsets');
CREATE TABLE sessions (customer_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT, total DECIMAL(18, 2))
WITH ('connector' = 'kafka', 'topic' = 'sessions', 'properties.bootstrap.servers' = '…', 'format' = 'json');
INSERT INTO sessions SELECT customer_id, window_start, window_end, COUNT(*), SUM(amount)
FROM TABLE(SESSION(TABLE orders PARTITION BY customer_id, DESCRIPTOR(occurred_at), INTERVAL '30' SECOND))
GROUP BY customer_id, window_start, window_end;`, b.addr)
	jobs, err := sql.NewSession(sql.Options{Config: cfg}).ExecuteScript(ctxT(t), script)
	if err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 20*time.Second, "the first orders read and checkpointed", func() bool {
		offs, err := b.adm.FetchOffsets(ctxT(t), "session-sql")
		if err != nil {
			return false
		}
		o, _ := offs.Lookup("orders", 0)
		return o.At == 3
	})
	path, err := jobs[0].StopWithSavepoint("file://" + dir + "/sp")
	if err != nil {
		t.Fatal(err)
	}
	if err := jobs[0].Wait(); err != nil {
		t.Fatal(err)
	}
	b.produce(t, "orders", 0,
		orderAt("o4", "c1", "4", "10:00:45"), // merges into the restored [10:00:00, 10:00:50)
		orderAt("o5", "c2", "5", "10:00:35"), // merges into the restored [10:00:10, 10:00:40)
		orderAt("m1", "c0", "0", "11:00:00"),
		orderAt("m2", "c0", "0", "12:00:00"))
	start(t, "SET 'execution.state-recovery.path' = '"+path+"';\n"+script, cfg)
	want := []string{
		` {"customer_id":"c2","window_start":"2024-01-01 10:00:10","window_end":"2024-01-01 10:01:05","n":2,"total":8}`,
		` {"customer_id":"c1","window_start":"2024-01-01 10:00:00","window_end":"2024-01-01 10:01:15","n":3,"total":7}`,
		` {"customer_id":"c0","window_start":"2024-01-01 11:00:00","window_end":"2024-01-01 11:00:30","n":1,"total":0}`,
	}
	if got := b.readUntil(t, "sessions", "11:00:30"); !slices.Equal(got, want) {
		t.Errorf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Keeping the first row by rowtime is insert-only: the append-only kafka
// sink takes it. A key's earliest row is written when the watermark
// passes it; a row behind the watermark is late (dropped, counted), and a
// key written once is never written again.
func TestRowtimeKeepFirstIntoAppendOnlySink(t *testing.T) {
	for _, par := range []string{"1", "2"} {
		t.Run("parallelism "+par, func(t *testing.T) {
			b := newBroker(t)
			b.topic(t, "orders", 1)
			b.topic(t, "firsts", 1)
			script := withBroker(`CREATE TABLE orders (order_id STRING, customer_id STRING, amount DECIMAL(12, 2),
  occurred_at TIMESTAMP(3), WATERMARK FOR occurred_at AS occurred_at - INTERVAL '1' MINUTE)
WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '…', 'format' = 'json',
  'scan.startup.mode' = 'earliest-offset');
CREATE TABLE firsts (customer_id STRING, order_id STRING)
WITH ('connector' = 'kafka', 'topic' = 'firsts', 'properties.bootstrap.servers' = '…', 'format' = 'json');
INSERT INTO firsts SELECT customer_id, order_id FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY occurred_at) AS rn FROM orders)
WHERE rn = 1;`, b.addr)
			job, _ := start(t, script, map[string]string{"parallelism.default": par})
			b.produce(t, "orders", 0,
				orderAt("o1", "c1", "1", "10:00:10"),
				orderAt("o2", "c1", "2", "10:00:05"), // earlier: replaces o1 before anything is written
				orderAt("o3", "c2", "3", "10:00:30"),
				orderAt("m1", "c0", "0", "10:02:00")) // watermark 10:01:00
			first := []string{` {"customer_id":"c1","order_id":"o2"}`, ` {"customer_id":"c2","order_id":"o3"}`}
			if got := b.read(t, "firsts", 2); !slices.Equal(got, first) {
				t.Fatalf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(first, "\n"))
			}
			b.produce(t, "orders", 0,
				orderAt("o4", "c1", "4", "10:00:01"), // behind the watermark: late
				orderAt("o5", "c1", "5", "10:01:30"), // c1 was written
				orderAt("o6", "c3", "6", "10:01:20"),
				orderAt("m2", "c0", "0", "10:05:00")) // watermark 10:04:00
			want := append(first, ` {"customer_id":"c0","order_id":"m1"}`, ` {"customer_id":"c3","order_id":"o6"}`)
			slices.Sort(want)
			if got := b.read(t, "firsts", 4); !slices.Equal(got, want) {
				t.Errorf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			testwait.Eventually(t, 10*time.Second, "1 late record counted", func() bool { return job.Metrics().LateRecordsDropped == 1 })
		})
	}
}

// A SESSION TVF on its own holds each partition key's rows until the
// session closes, then emits them with its bounds; grouped by keys other
// than its PARTITION BY columns it is no window aggregation (Flink's
// rule): the sessions are the TVF's (here over all rows) and the GROUP BY
// a regular one over them, a changelog.
func TestSessionWindowTableFunction(t *testing.T) {
	for _, par := range []string{"1", "2"} {
		t.Run("parallelism "+par, func(t *testing.T) {
			b := newBroker(t)
			b.topic(t, "orders", 1)
			b.produce(t, "orders", 0,
				orderAt("o1", "c1", "1", "10:00:00"),
				orderAt("o2", "c1", "2", "10:00:20"),
				orderAt("o3", "c2", "3", "10:00:10"),
				orderAt("o4", "c1", "4", "10:01:30"),
				orderAt("o5", "c2", "5", "10:00:35"))
			ddl := withBroker(ordersDDL+`CREATE TABLE rows_out (customer_id STRING, order_id STRING, ws TIMESTAMP(3), we TIMESTAMP(3)) WITH ('connector' = 'print');
CREATE TABLE counts (customer_id STRING, ws TIMESTAMP(3), n BIGINT) WITH ('connector' = 'print');
`, b.addr)
			got := runPrinted(t, ddl+`INSERT INTO rows_out SELECT customer_id, order_id, window_start, window_end
FROM TABLE(SESSION(TABLE orders PARTITION BY customer_id, DESCRIPTOR(occurred_at), INTERVAL '30' SECOND));`, par)
			checkByKey(t, got, map[string][]string{
				"c1": {
					"+I[c1, o1, 2024-01-01 10:00:00.000, 2024-01-01 10:00:50.000]",
					"+I[c1, o2, 2024-01-01 10:00:00.000, 2024-01-01 10:00:50.000]",
					"+I[c1, o4, 2024-01-01 10:01:30.000, 2024-01-01 10:02:00.000]"},
				"c2": {
					"+I[c2, o3, 2024-01-01 10:00:10.000, 2024-01-01 10:01:05.000]",
					"+I[c2, o5, 2024-01-01 10:00:10.000, 2024-01-01 10:01:05.000]"},
			})
			got = runPrintedKeyed(t, ddl+`INSERT INTO counts SELECT customer_id, window_start, COUNT(*)
FROM TABLE(SESSION(TABLE orders, DESCRIPTOR(occurred_at), INTERVAL '30' SECOND))
GROUP BY customer_id, window_start, window_end;`, par, 2)
			checkByKey(t, got, map[string][]string{
				"c1, 2024-01-01 10:00:00.000": {"+I[c1, 2024-01-01 10:00:00.000, 1]", "-U[c1, 2024-01-01 10:00:00.000, 1]", "+U[c1, 2024-01-01 10:00:00.000, 2]"},
				"c2, 2024-01-01 10:00:00.000": {"+I[c2, 2024-01-01 10:00:00.000, 1]", "-U[c2, 2024-01-01 10:00:00.000, 1]", "+U[c2, 2024-01-01 10:00:00.000, 2]"},
				"c1, 2024-01-01 10:01:30.000": {"+I[c1, 2024-01-01 10:01:30.000, 1]"},
			})
		})
	}
}
