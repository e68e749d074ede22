package sql_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/sql"
)

// syncBuffer is a print sink's output, read while the job writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// rows are the printed rows, without the subtask prefix.
func (s *syncBuffer) rows() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, line := range strings.Split(s.b.String(), "\n") {
		if i := strings.Index(line, "> "); i >= 0 {
			line = line[i+2:]
		}
		if len(line) >= 3 && strings.Contains("+I[-U[+U[-D[", line[:3]) {
			out = append(out, line)
		}
	}
	return out
}

// startPrinting starts script's job (one INSERT into a print table) and
// returns what it prints.
func startPrinting(t *testing.T, script string, config map[string]string) *syncBuffer {
	t.Helper()
	out := &syncBuffer{}
	jobs, err := sql.NewSession(sql.Options{Config: config, Stdout: out}).ExecuteScript(ctxT(t), script)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 {
		t.Fatalf("%d jobs, want 1", len(jobs))
	}
	t.Cleanup(func() { jobs[0].Cancel(); _ = jobs[0].Wait() })
	return out
}

// joinStep writes a record to a topic and names the rows the join prints
// for it, in order (none: the next step's rows show it printed nothing).
type joinStep struct {
	topic, value string
	want         []string
}

// runSteps plays steps one at a time, each after the previous one's rows
// were printed, and checks the whole changelog after each.
func runSteps(t *testing.T, b *broker, out *syncBuffer, steps []joinStep) {
	t.Helper()
	want := out.rows() // checked by the steps before
	for i, s := range steps {
		b.produce(t, s.topic, 0, s.value)
		want = append(want, s.want...)
		if len(s.want) == 0 {
			continue
		}
		testwait.Eventually(t, 20*time.Second, fmt.Sprintf("step %d's rows %v", i+1, s.want), func() bool { return len(out.rows()) >= len(want) })
		if got := out.rows(); !slices.Equal(got, want) {
			t.Fatalf("after step %d (%s %s) printed:\n%s\nwant:\n%s", i+1, s.topic, s.value, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// nullKeyOrder is an order without a customer.
const nullKeyOrder = `{"order_id":"o5","customer_id":null,"amount":1,"occurred_at":"2024-01-01 10:00:00"}`

func cust(id, name string) string { return fmt.Sprintf(`{"id":%q,"name":%q}`, id, name) }

const joinDDL = `CREATE TABLE orders (order_id STRING, customer_id STRING, amount DECIMAL(12, 2), occurred_at TIMESTAMP(3))
WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '…', 'format' = 'json',
  'scan.startup.mode' = 'earliest-offset');
CREATE TABLE customers (id STRING, name STRING)
WITH ('connector' = 'kafka', 'topic' = 'customers', 'properties.bootstrap.servers' = '…', 'format' = 'json',
  'scan.startup.mode' = 'earliest-offset');
`

// Each kind of regular join over two insert-only inputs, a row at a
// time: Flink's changelog (StreamingJoinOperator) — an outer side's row
// without a match is printed padded with NULLs and deleted (-D) when its
// first match comes; an inner join is insert-only. A step that prints
// nothing is followed by steps whose rows do not depend on when it is
// read (the two topics are read independently).
func TestRegularJoinChangelogs(t *testing.T) {
	o := func(id, c string) string { return order(id, c, "1", "2024-01-01 10:00:00") }
	for _, tc := range []struct {
		kind  string
		steps []joinStep
	}{
		{"INNER", []joinStep{
			{"orders", o("o1", "c1"), nil},
			{"customers", cust("c1", "Ann"), []string{"+I[o1, c1, c1, Ann]"}},
			{"orders", o("o2", "c1"), []string{"+I[o2, c1, c1, Ann]"}},
			{"customers", cust("c1", "Ann2"), []string{"+I[o1, c1, c1, Ann2]", "+I[o2, c1, c1, Ann2]"}},
			{"customers", cust("c9", "Zed"), nil},
			{"orders", o("o3", "c7"), nil},
			{"orders", nullKeyOrder, nil}, // a NULL key equals nothing
			{"orders", o("o4", "c1"), []string{"+I[o4, c1, c1, Ann]", "+I[o4, c1, c1, Ann2]"}},
		}},
		{"LEFT", []joinStep{
			{"orders", o("o1", "c1"), []string{"+I[o1, c1, NULL, NULL]"}},
			{"customers", cust("c1", "Ann"), []string{"-D[o1, c1, NULL, NULL]", "+I[o1, c1, c1, Ann]"}},
			{"orders", o("o2", "c1"), []string{"+I[o2, c1, c1, Ann]"}},
			{"customers", cust("c1", "Ann2"), []string{"+I[o1, c1, c1, Ann2]", "+I[o2, c1, c1, Ann2]"}},
			{"customers", cust("c9", "Zed"), nil},
			{"orders", o("o3", "c7"), []string{"+I[o3, c7, NULL, NULL]"}},
			{"orders", nullKeyOrder, []string{"+I[o5, NULL, NULL, NULL]"}},
			{"orders", o("o4", "c1"), []string{"+I[o4, c1, c1, Ann]", "+I[o4, c1, c1, Ann2]"}},
		}},
		{"RIGHT", []joinStep{
			{"customers", cust("c1", "Ann"), []string{"+I[NULL, NULL, c1, Ann]"}},
			{"orders", o("o1", "c1"), []string{"-D[NULL, NULL, c1, Ann]", "+I[o1, c1, c1, Ann]"}},
			{"customers", cust("c1", "Ann2"), []string{"+I[o1, c1, c1, Ann2]"}},
			{"orders", o("o2", "c1"), []string{"+I[o2, c1, c1, Ann]", "+I[o2, c1, c1, Ann2]"}},
			{"orders", o("o3", "c7"), nil},
			{"customers", cust("c9", "Zed"), []string{"+I[NULL, NULL, c9, Zed]"}},
			{"customers", cust("c1", "Bea"), []string{"+I[o1, c1, c1, Bea]", "+I[o2, c1, c1, Bea]"}},
		}},
		{"FULL", []joinStep{
			{"orders", o("o1", "c1"), []string{"+I[o1, c1, NULL, NULL]"}},
			{"customers", cust("c1", "Ann"), []string{"-D[o1, c1, NULL, NULL]", "+I[o1, c1, c1, Ann]"}},
			{"orders", o("o2", "c1"), []string{"+I[o2, c1, c1, Ann]"}},
			{"customers", cust("c9", "Zed"), []string{"+I[NULL, NULL, c9, Zed]"}},
			{"orders", o("o3", "c7"), []string{"+I[o3, c7, NULL, NULL]"}},
			{"orders", o("o4", "c9"), []string{"-D[NULL, NULL, c9, Zed]", "+I[o4, c9, c9, Zed]"}},
			{"customers", cust("c1", "Ann2"), []string{"+I[o1, c1, c1, Ann2]", "+I[o2, c1, c1, Ann2]"}},
		}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			b := newBroker(t)
			b.topic(t, "orders", 1)
			b.topic(t, "customers", 1)
			out := startPrinting(t, withBroker(joinDDL+`CREATE TABLE out (order_id STRING, customer_id STRING, id STRING, name STRING) WITH ('connector' = 'print');
INSERT INTO out SELECT o.order_id, o.customer_id, c.id, c.name FROM orders AS o `+tc.kind+` JOIN customers c ON o.customer_id = c.id;`, b.addr), nil)
			runSteps(t, b, out, tc.steps)
		})
	}
}

// An updating input (a GROUP BY) on the inner side of a LEFT JOIN: its
// -U retracts the joined row (-U, as Flink forwards an inner side's
// kind) and, the left row's last match gone, inserts it padded again;
// its +U deletes the padded row and inserts the new joined one.
func TestJoinOfUpdatingInput(t *testing.T) {
	for _, par := range []string{"1", "2"} {
		t.Run("parallelism "+par, func(t *testing.T) {
			b := newBroker(t)
			b.topic(t, "orders", 1)
			b.topic(t, "customers", 1)
			out := startPrinting(t, withBroker(joinDDL+`CREATE TABLE out (id STRING, name STRING, total DECIMAL(38, 2)) WITH ('connector' = 'print');
CREATE VIEW spent AS SELECT customer_id, SUM(amount) AS total FROM orders GROUP BY customer_id;
INSERT INTO out SELECT c.id, c.name, s.total FROM customers c LEFT JOIN spent s ON c.id = s.customer_id;`, b.addr),
				map[string]string{"parallelism.default": par})
			runSteps(t, b, out, []joinStep{
				{"customers", cust("c1", "Ann"), []string{"+I[c1, Ann, NULL]"}},
				{"orders", order("o1", "c1", "10", "2024-01-01 10:00:00"), []string{"-D[c1, Ann, NULL]", "+I[c1, Ann, 10.00]"}},
				{"orders", order("o2", "c1", "5", "2024-01-01 10:00:01"), []string{
					"-U[c1, Ann, 10.00]", "+I[c1, Ann, NULL]", "-D[c1, Ann, NULL]", "+I[c1, Ann, 15.00]"}},
			})
		})
	}
}

// materialized reads topic's upserts until the table they make (key →
// last value; a tombstone deletes) is want.
func (b *broker) materialized(t *testing.T, topic string, want map[string]string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string]string{}
	ctx := ctxT(t)
	for !maps.Equal(got, want) {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%s holds %v, want %v", topic, got, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Value == nil {
				delete(got, string(r.Key))
			} else {
				got[string(r.Key)] = string(r.Value)
			}
		})
	}
}

// A LEFT JOIN of two GROUP BYs into upsert-kafka: the join's upsert key is
// the left's group key (the right is unique on its join key), the sink's
// primary key; the topic's final table is the join's result however the
// rows of both inputs interleave.
func TestJoinIntoUpsertKafka(t *testing.T) {
	b := newBroker(t)
	b.topic(t, "orders", 1)
	b.topic(t, "customers", 1)
	b.topic(t, "totals", 1)
	b.produce(t, "orders", 0,
		order("o1", "c1", "10", "2024-01-01 10:00:00"),
		order("o2", "c2", "1.5", "2024-01-01 10:00:01"),
		order("o3", "c1", "5", "2024-01-01 10:00:02"))
	b.produce(t, "customers", 0, cust("c1", "Ann"), cust("c3", "Zed"), cust("c1", "Bea"))
	start(t, withBroker(joinDDL+`CREATE TABLE totals (customer_id STRING, name STRING, total DECIMAL(38, 2), PRIMARY KEY (customer_id) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = 'totals', 'properties.bootstrap.servers' = '…', 'key.format' = 'json', 'value.format' = 'json');
CREATE VIEW spent AS SELECT customer_id, SUM(amount) AS total FROM orders GROUP BY customer_id;
CREATE VIEW names AS SELECT id, MAX(name) AS name FROM customers GROUP BY id;
INSERT INTO totals SELECT s.customer_id, n.name, s.total FROM spent s LEFT JOIN names n ON s.customer_id = n.id;`, b.addr),
		map[string]string{"parallelism.default": "2"})
	b.materialized(t, "totals", map[string]string{
		`{"customer_id":"c1"}`: `{"customer_id":"c1","name":"Bea","total":15}`,
		`{"customer_id":"c2"}`: `{"customer_id":"c2","name":null,"total":1.5}`,
	})
}

// A join stopped with a savepoint and run again from it, at the same
// parallelism and rescaled to 2: the rows each side stored before the
// savepoint match the other side's rows after the restore, and nothing is
// joined twice.
func TestJoinSavepointAndRestore(t *testing.T) {
	for _, par := range []string{"1", "2"} {
		t.Run("restored at parallelism "+par, func(t *testing.T) {
			b := newBroker(t)
			b.topic(t, "orders", 1)
			b.topic(t, "customers", 1)
			b.topic(t, "enriched", 1)
			dir := t.TempDir()
			cfg := map[string]string{
				"execution.checkpointing.interval": "20 ms",
				"execution.checkpointing.dir":      "file://" + dir + "/cp",
			}
			script := withBroker(joinDDL+`CREATE TABLE enriched (order_id STRING, name STRING)
WITH ('connector' = 'kafka', 'topic' = 'enriched', 'properties.bootstrap.servers' = '…', 'format' = 'json');
INSERT INTO enriched SELECT o.order_id, c.name FROM orders o JOIN customers c ON o.customer_id = c.id;`, b.addr)
			b.produce(t, "orders", 0, order("o1", "c1", "1", "2024-01-01 10:00:00"), order("o0", "c0", "0", "2024-01-01 10:00:00"))
			b.produce(t, "customers", 0, cust("c2", "Bob"), cust("c0", "Zero"))
			jobs, err := sql.NewSession(sql.Options{Config: cfg}).ExecuteScript(ctxT(t), script)
			if err != nil {
				t.Fatal(err)
			}
			// o0 and c0 come after the rows that wait in state.
			if got := b.readUntil(t, "enriched", "o0"); len(got) != 1 {
				t.Fatalf("before the savepoint: %v", got)
			}
			path, err := jobs[0].StopWithSavepoint("file://" + dir + "/sp")
			if err != nil {
				t.Fatal(err)
			}
			if err := jobs[0].Wait(); err != nil {
				t.Fatal(err)
			}
			b.produce(t, "customers", 0, cust("c1", "Ann"))
			b.produce(t, "orders", 0, order("o2", "c2", "2", "2024-01-01 10:00:01"), order("o9", "c0", "9", "2024-01-01 10:00:02"))
			restored := maps.Clone(cfg)
			restored["parallelism.default"] = par
			start(t, "SET 'execution.state-recovery.path' = '"+path+"';\n"+script, restored)
			got := b.read(t, "enriched", 4)
			want := []string{
				` {"order_id":"o0","name":"Zero"}`,
				` {"order_id":"o1","name":"Ann"}`,
				` {"order_id":"o2","name":"Bob"}`,
				` {"order_id":"o9","name":"Zero"}`,
			}
			if !slices.Equal(got, want) {
				t.Errorf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// table.exec.state.ttl: rows not written for the TTL are dropped from the
// join's state without a retraction; rows written since still join.
func TestJoinStateTTL(t *testing.T) {
	b := newBroker(t)
	b.topic(t, "orders", 1)
	b.topic(t, "customers", 1)
	const ttl = 3 * time.Second
	out := startPrinting(t, withBroker(joinDDL+`SET 'table.exec.state.ttl' = '3 s';
CREATE TABLE out (order_id STRING, customer_id STRING, id STRING, name STRING) WITH ('connector' = 'print');
INSERT INTO out SELECT o.order_id, o.customer_id, c.id, c.name FROM orders o FULL JOIN customers c ON o.customer_id = c.id;`, b.addr), nil)
	runSteps(t, b, out, []joinStep{
		{"orders", order("o1", "c1", "1", "2024-01-01 10:00:00"), []string{"+I[o1, c1, NULL, NULL]"}},
		{"customers", cust("c1", "Ann"), []string{"-D[o1, c1, NULL, NULL]", "+I[o1, c1, c1, Ann]"}},
	})
	// o1 and Ann were last written before their join was printed.
	written := time.Now()
	testwait.Eventually(t, 2*ttl, "the TTL to pass", func() bool { return time.Since(written) > ttl+500*time.Millisecond })
	runSteps(t, b, out, []joinStep{
		// o1 is gone: Bob joins nothing, and nothing is retracted.
		{"customers", cust("c1", "Bob"), []string{"+I[NULL, NULL, c1, Bob]"}},
		// Ann is gone: o2 joins Bob only.
		{"orders", order("o2", "c1", "2", "2024-01-01 10:00:01"), []string{"-D[NULL, NULL, c1, Bob]", "+I[o2, c1, c1, Bob]"}},
	})
}

// lateStep is a shipment within o1's interval, after the outer join's
// padded o2 showed the watermark passed it (for INNER, whose output does
// not show when the watermark passed, a shipment of no order).
func lateStep(kind string) joinStep {
	switch kind {
	case "LEFT":
		return joinStep{"shipments", shipment("k1", "10:45:00"), nil}
	case "FULL":
		return joinStep{"shipments", shipment("k1", "10:45:00"), []string{"+I[NULL, NULL, 2024-01-01 10:45:00.000]"}}
	}
	return joinStep{"shipments", shipment("k0", "12:00:00"), nil}
}

func shipment(id, at string) string { return fmt.Sprintf(`{"id":%q,"sts":"2024-01-01 %s"}`, id, at) }
func placed(id, key, at string) string {
	return fmt.Sprintf(`{"order_id":%q,"id":%q,"ots":"2024-01-01 %s"}`, id, key, at)
}

// Interval joins (a shipment within an hour after the order): rows wait
// in state until the watermark (the minimum of both inputs') passes their
// interval; then they are evicted, a LEFT join's unmatched order printed
// padded. A shipment that arrives after its order was evicted matches
// nothing. The output is insert-only.
func TestIntervalJoin(t *testing.T) {
	for _, tc := range []struct {
		kind string
		cond string
	}{
		{"INNER", "FROM placed o, shipments s WHERE o.id = s.id AND o.ots BETWEEN s.sts - INTERVAL '1' HOUR AND s.sts"},
		{"LEFT", "FROM placed o LEFT JOIN shipments s ON o.id = s.id AND s.sts >= o.ots AND s.sts <= o.ots + INTERVAL '1' HOUR"},
		{"FULL", "FROM placed o FULL JOIN shipments s ON o.id = s.id AND s.sts - INTERVAL '1' HOUR <= o.ots AND o.ots <= s.sts"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			b := newBroker(t)
			b.topic(t, "placed", 1)
			b.topic(t, "shipments", 1)
			out := startPrinting(t, withBroker(`CREATE TABLE placed (order_id STRING, id STRING, ots TIMESTAMP(3), WATERMARK FOR ots AS ots)
WITH ('connector' = 'kafka', 'topic' = 'placed', 'properties.bootstrap.servers' = '…', 'format' = 'json', 'scan.startup.mode' = 'earliest-offset');
CREATE TABLE shipments (id STRING, sts TIMESTAMP(3), WATERMARK FOR sts AS sts)
WITH ('connector' = 'kafka', 'topic' = 'shipments', 'properties.bootstrap.servers' = '…', 'format' = 'json', 'scan.startup.mode' = 'earliest-offset');
CREATE TABLE out (order_id STRING, ots TIMESTAMP(3), sts TIMESTAMP(3)) WITH ('connector' = 'print');
INSERT INTO out SELECT o.order_id, o.ots, s.sts `+tc.cond+`;`, b.addr), nil)
			// padded are rows of an outer side.
			padded := func(side string, rows ...string) []string {
				if tc.kind == "FULL" || tc.kind == side {
					return rows
				}
				return nil
			}
			runSteps(t, b, out, []joinStep{
				{"placed", placed("o1", "k1", "10:00:00"), nil},
				{"placed", placed("o2", "k2", "10:10:00"), nil},
				{"shipments", shipment("k1", "10:30:00"), []string{"+I[o1, 2024-01-01 10:00:00.000, 2024-01-01 10:30:00.000]"}},
				{"shipments", shipment("k2", "12:00:00"), nil}, // 110 minutes after o2
				// The watermark reaches 11:30: o1 (matched) and o2 are
				// evicted, o2 printed padded by a LEFT join.
				{"placed", placed("o3", "k3", "11:30:00"), padded("LEFT", "+I[o2, 2024-01-01 10:10:00.000, NULL]")},
				// Late: within o1's interval, but o1 is gone (only an outer
				// join shows that the watermark passed it); a FULL join
				// writes it padded at once.
				lateStep(tc.kind),
				{"shipments", shipment("k3", "12:00:00"), []string{"+I[o3, 2024-01-01 11:30:00.000, 2024-01-01 12:00:00.000]"}},
				// The watermark reaches 12:00: the shipment of k2 (12:00)
				// can match nothing more.
				{"placed", placed("o4", "k4", "13:00:00"), padded("RIGHT", "+I[NULL, NULL, 2024-01-01 12:00:00.000]")},
			})
		})
	}
}

// Nexmark q8's shape: persons who opened an auction in the window they
// registered in, two window aggregations joined on key and window bounds
// (insert-only, run to the end of bounded scans).
func TestWindowAggregatesJoined(t *testing.T) {
	for _, par := range []string{"1", "2"} {
		t.Run("parallelism "+par, func(t *testing.T) {
			b := newBroker(t)
			b.topic(t, "person", 1)
			b.topic(t, "auction", 1)
			person := func(id, name, at string) string {
				return fmt.Sprintf(`{"id":%s,"name":%q,"dateTime":"2024-01-01 %s"}`, id, name, at)
			}
			auction := func(seller, at string) string {
				return fmt.Sprintf(`{"seller":%s,"dateTime":"2024-01-01 %s"}`, seller, at)
			}
			b.produce(t, "person", 0, person("1", "alice", "10:00:01"), person("2", "bob", "10:00:05"),
				person("1", "alice", "10:00:12"), person("3", "carol", "10:00:15"))
			b.produce(t, "auction", 0, auction("1", "10:00:03"), auction("1", "10:00:08"), auction("2", "10:00:11"),
				auction("3", "10:00:19"), auction("4", "10:00:02"))
			got := runPrinted(t, withBroker(`CREATE TABLE person (id BIGINT, name STRING, dateTime TIMESTAMP(3),
  WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND)
WITH ('connector' = 'kafka', 'topic' = 'person', 'properties.bootstrap.servers' = '…', 'format' = 'json',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset');
CREATE TABLE auction (seller BIGINT, dateTime TIMESTAMP(3), WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND)
WITH ('connector' = 'kafka', 'topic' = 'auction', 'properties.bootstrap.servers' = '…', 'format' = 'json',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset');
CREATE TABLE q8 (id BIGINT, name STRING, stime TIMESTAMP(3)) WITH ('connector' = 'print');
INSERT INTO q8 SELECT P.id, P.name, P.starttime
FROM (SELECT id, name, window_start AS starttime, window_end AS endtime
      FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
      GROUP BY id, name, window_start, window_end) P
JOIN (SELECT seller, window_start AS starttime, window_end AS endtime
      FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
      GROUP BY seller, window_start, window_end) A
ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime;`, b.addr), par)
			checkByKey(t, got, map[string][]string{
				"1": {"+I[1, alice, 2024-01-01 10:00:00.000]"},
				"3": {"+I[3, carol, 2024-01-01 10:00:10.000]"},
			})
		})
	}
}

// Join keys of different types are compared in their common type: a
// DECIMAL(12, 2) amount equals an INT (1.00 = 1), and hashes alike.
func TestJoinKeysOfDifferentTypes(t *testing.T) {
	b := newBroker(t)
	b.topic(t, "orders", 1)
	b.topic(t, "tiers", 1)
	b.produce(t, "orders", 0, order("o1", "c1", "1", "2024-01-01 10:00:00"), order("o2", "c1", "2.5", "2024-01-01 10:00:00"),
		order("o3", "c2", "7", "2024-01-01 10:00:00"))
	b.produce(t, "tiers", 0, `{"amount":1,"tier":"small"}`, `{"amount":7,"tier":"big"}`)
	got := runPrinted(t, withBroker(`CREATE TABLE orders (order_id STRING, customer_id STRING, amount DECIMAL(12, 2), occurred_at TIMESTAMP(3))
WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '…', 'format' = 'json',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset');
CREATE TABLE tiers (amount INT, tier STRING)
WITH ('connector' = 'kafka', 'topic' = 'tiers', 'properties.bootstrap.servers' = '…', 'format' = 'json',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset');
CREATE TABLE out (order_id STRING, tier STRING) WITH ('connector' = 'print');
INSERT INTO out SELECT order_id, tier FROM orders o JOIN tiers t ON o.amount = t.amount;`, b.addr), "2")
	checkByKey(t, got, map[string][]string{"o1": {"+I[o1, small]"}, "o3": {"+I[o3, big]"}})
}

// Three tables, left-deep: the second join's condition names columns of
// the first join's both sides and of the third table.
func TestThreeWayJoin(t *testing.T) {
	b := newBroker(t)
	b.topic(t, "orders", 1)
	b.topic(t, "customers", 1)
	b.topic(t, "tiers", 1)
	b.produce(t, "orders", 0, order("o1", "c1", "1", "2024-01-01 10:00:00"), order("o2", "c2", "7", "2024-01-01 10:00:00"),
		order("o3", "c1", "7", "2024-01-01 10:00:00"), order("o4", "c3", "1", "2024-01-01 10:00:00"))
	b.produce(t, "customers", 0, cust("c1", "Ann"), cust("c2", "Bob"))
	b.produce(t, "tiers", 0, `{"amount":1,"tier":"small"}`, `{"amount":7,"tier":"big"}`)
	got := runPrinted(t, withBroker(`CREATE TABLE orders (order_id STRING, customer_id STRING, amount DECIMAL(12, 2), occurred_at TIMESTAMP(3))
WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '…', 'format' = 'json',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset');
CREATE TABLE customers (id STRING, name STRING)
WITH ('connector' = 'kafka', 'topic' = 'customers', 'properties.bootstrap.servers' = '…', 'format' = 'json',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset');
CREATE TABLE tiers (amount INT, tier STRING)
WITH ('connector' = 'kafka', 'topic' = 'tiers', 'properties.bootstrap.servers' = '…', 'format' = 'json',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset');
CREATE TABLE out (order_id STRING, name STRING, tier STRING) WITH ('connector' = 'print');
INSERT INTO out SELECT o.order_id, c.name, t.tier
FROM orders o JOIN customers c ON o.customer_id = c.id JOIN tiers t ON t.amount = o.amount AND c.name <> 'Bob';`, b.addr), "2")
	checkByKey(t, got, map[string][]string{"o1": {"+I[o1, Ann, small]"}, "o3": {"+I[o3, Ann, big]"}})
}

// A join without an equality (an order's tier by amount range) runs on
// one subtask, with the LEFT join's changelog.
func TestNonEquiJoin(t *testing.T) {
	b := newBroker(t)
	b.topic(t, "orders", 1)
	b.topic(t, "tiers", 1)
	tier := func(lo, hi int, name string) string { return fmt.Sprintf(`{"lo":%d,"hi":%d,"tier":%q}`, lo, hi, name) }
	out := startPrinting(t, withBroker(joinDDL+`CREATE TABLE tiers (lo INT, hi INT, tier STRING)
WITH ('connector' = 'kafka', 'topic' = 'tiers', 'properties.bootstrap.servers' = '…', 'format' = 'json', 'scan.startup.mode' = 'earliest-offset');
CREATE TABLE out (order_id STRING, amount DECIMAL(12, 2), tier STRING) WITH ('connector' = 'print');
INSERT INTO out SELECT o.order_id, o.amount, t.tier FROM orders o LEFT JOIN tiers t ON o.amount >= t.lo AND o.amount < t.hi;`, b.addr),
		map[string]string{"parallelism.default": "2"})
	runSteps(t, b, out, []joinStep{
		{"orders", order("o1", "c1", "1", "2024-01-01 10:00:00"), []string{"+I[o1, 1.00, NULL]"}},
		{"tiers", tier(0, 5, "small"), []string{"-D[o1, 1.00, NULL]", "+I[o1, 1.00, small]"}},
		{"orders", order("o2", "c1", "7", "2024-01-01 10:00:00"), []string{"+I[o2, 7.00, NULL]"}},
		{"tiers", tier(5, 10, "big"), []string{"-D[o2, 7.00, NULL]", "+I[o2, 7.00, big]"}},
		{"orders", order("o3", "c1", "3", "2024-01-01 10:00:00"), []string{"+I[o3, 3.00, small]"}},
	})
}
