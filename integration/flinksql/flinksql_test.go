//go:build integration

package flinksql_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/integration/flinksql"
	"github.com/sluice/sluice/integration/kafkabroker"
	"github.com/sluice/sluice/sql"
)

func TestMain(m *testing.M) { os.Exit(kafkabroker.RunMain(m)) }

// sqlCase is one query of the comparison: run on Sluice and on Flink over
// the same input topics, each into an output topic of its own.
type sqlCase struct {
	name string
	// sink is the output table's columns (and PRIMARY KEY for upsert).
	sink string
	// upsert writes through upsert-kafka (compared as the final table by
	// key), else through kafka (compared as a multiset of rows).
	upsert bool
	// changelog also compares the upsert changelog record by record:
	// where Flink's is deterministic at parallelism 1.
	changelog bool
	// changelogDiffers names a known difference of Sluice's changelog from
	// Flink's (the final tables agreeing): the case then checks that the
	// changelogs still differ, so that a fix is noticed.
	changelogDiffers string
	// sinkOpts are more options of the output table.
	sinkOpts string
	// query is the INSERT's SELECT over the tables of sourceDDL.
	query string
	// needs names what Sluice lacks for the query; the case is skipped (not
	// passed) until Sluice has it: then delete needs.
	needs string
}

// The input tables: bounded scans of topics written once before the runs.
const sourceDDL = `CREATE TABLE orders (order_id STRING, customer_id STRING, product STRING,
  amount DECIMAL(12, 2), qty INT, occurred_at TIMESTAMP(3),
  WATERMARK FOR occurred_at AS occurred_at - INTERVAL '10' SECOND
) WITH ('connector' = 'kafka', 'topic' = '{{orders}}', 'properties.bootstrap.servers' = '{{bootstrap}}',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json');
CREATE TABLE shipments (order_id STRING, carrier STRING, shipped_at TIMESTAMP(3),
  WATERMARK FOR shipped_at AS shipped_at - INTERVAL '10' SECOND
) WITH ('connector' = 'kafka', 'topic' = '{{shipments}}', 'properties.bootstrap.servers' = '{{bootstrap}}',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json');
CREATE TABLE customers (customer_id STRING, name STRING, region STRING
) WITH ('connector' = 'kafka', 'topic' = '{{customers}}', 'properties.bootstrap.servers' = '{{bootstrap}}',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json');
`

var cases = []sqlCase{
	{name: "tumble", sink: `customer_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT,
  total DECIMAL(38, 2), average DECIMAL(38, 6), smallest DECIMAL(12, 2), biggest DECIMAL(12, 2), products BIGINT`,
		query: `SELECT customer_id, window_start, window_end, COUNT(*), SUM(amount), AVG(amount), MIN(amount), MAX(amount),
  COUNT(DISTINCT product)
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(occurred_at), INTERVAL '1' MINUTE))
GROUP BY customer_id, window_start, window_end`},
	{name: "hop", sink: `product STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT,
  total DECIMAL(38, 2), biggest DECIMAL(12, 2), customers BIGINT, qty INT`,
		query: `SELECT product, window_start, window_end, COUNT(*), SUM(amount), MAX(amount), COUNT(DISTINCT customer_id), SUM(qty)
FROM TABLE(HOP(TABLE orders, DESCRIPTOR(occurred_at), INTERVAL '30' SECOND, INTERVAL '2' MINUTE))
GROUP BY product, window_start, window_end`},
	{name: "cumulate", sink: `customer_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT,
  total DECIMAL(38, 2), smallest DECIMAL(12, 2), average DECIMAL(38, 6)`,
		query: `SELECT customer_id, window_start, window_end, COUNT(*), SUM(amount), MIN(amount), AVG(amount)
FROM TABLE(CUMULATE(TABLE orders, DESCRIPTOR(occurred_at), INTERVAL '1' MINUTE, INTERVAL '5' MINUTE))
GROUP BY customer_id, window_start, window_end`},
	{name: "session", sink: `customer_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT,
  total DECIMAL(38, 2), biggest DECIMAL(12, 2), products BIGINT`,
		query: `SELECT customer_id, window_start, window_end, COUNT(*), SUM(amount), MAX(amount), COUNT(DISTINCT product)
FROM TABLE(SESSION(TABLE orders PARTITION BY customer_id, DESCRIPTOR(occurred_at), INTERVAL '20' SECOND))
GROUP BY customer_id, window_start, window_end`},
	{name: "global-avg", sink: `window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT, average DECIMAL(38, 6),
  qty_avg INT, customers BIGINT`,
		query: `SELECT window_start, window_end, COUNT(order_id), AVG(amount), AVG(qty), COUNT(DISTINCT customer_id)
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(occurred_at), INTERVAL '3' MINUTE))
GROUP BY window_start, window_end`},
	{name: "topn", upsert: true, changelog: true,
		sink: `customer_id STRING, rn BIGINT, order_id STRING, amount DECIMAL(12, 2), PRIMARY KEY (customer_id, rn) NOT ENFORCED`,
		query: `SELECT customer_id, rn, order_id, amount FROM (
  SELECT customer_id, order_id, amount,
    ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY amount DESC) AS rn
  FROM orders) WHERE rn <= 3`},
	{name: "window-topn", sink: `window_start TIMESTAMP(3), window_end TIMESTAMP(3), rn BIGINT, order_id STRING,
  customer_id STRING, amount DECIMAL(12, 2)`,
		query: `SELECT window_start, window_end, rn, order_id, customer_id, amount FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY amount DESC) AS rn
  FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(occurred_at), INTERVAL '1' MINUTE))) WHERE rn <= 3`},
	{name: "window-agg-topn", sink: `window_start TIMESTAMP(3), window_end TIMESTAMP(3), rn BIGINT, customer_id STRING,
  total DECIMAL(38, 2), n BIGINT`,
		query: `SELECT window_start, window_end, rn, customer_id, total, n FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY total DESC) AS rn FROM (
    SELECT window_start, window_end, customer_id, SUM(amount) AS total, COUNT(*) AS n
    FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(occurred_at), INTERVAL '2' MINUTE))
    GROUP BY window_start, window_end, customer_id)) WHERE rn <= 2`},
	{name: "window-dedup", sink: `window_start TIMESTAMP(3), window_end TIMESTAMP(3), customer_id STRING, order_id STRING,
  occurred_at TIMESTAMP(3)`,
		query: `SELECT window_start, window_end, customer_id, order_id, occurred_at FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, customer_id ORDER BY occurred_at) AS rn
  FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(occurred_at), INTERVAL '1' MINUTE))) WHERE rn = 1`},
	{name: "dedup-first", upsert: true, changelog: true,
		sink: `customer_id STRING, order_id STRING, amount DECIMAL(12, 2), occurred_at TIMESTAMP(3),
  PRIMARY KEY (customer_id) NOT ENFORCED`,
		query: `SELECT customer_id, order_id, amount, occurred_at FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY occurred_at ASC) AS rn FROM orders)
WHERE rn = 1`},
	{name: "dedup-last", upsert: true, changelog: true,
		sink: `customer_id STRING, order_id STRING, amount DECIMAL(12, 2), occurred_at TIMESTAMP(3),
  PRIMARY KEY (customer_id) NOT ENFORCED`,
		query: `SELECT customer_id, order_id, amount, occurred_at FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY occurred_at DESC) AS rn FROM orders)
WHERE rn = 1`},
	{name: "group-agg", upsert: true, changelog: true,
		sink: `customer_id STRING, n BIGINT, total DECIMAL(38, 2), biggest DECIMAL(12, 2), products BIGINT,
  last_at TIMESTAMP(3), PRIMARY KEY (customer_id) NOT ENFORCED`,
		query: `SELECT customer_id, COUNT(*), SUM(amount), MAX(amount), COUNT(DISTINCT product), MAX(occurred_at)
FROM orders GROUP BY customer_id`},
	{name: "group-agg-having", upsert: true, changelog: true,
		changelogDiffers: "Flink's HAVING filter over an updating input asks its input for UPDATE_BEFORE, which " +
			"upsert-kafka writes as a tombstone before each new value; Sluice writes the new values only",
		sink:  `product STRING, n BIGINT, qty INT, PRIMARY KEY (product) NOT ENFORCED`,
		query: `SELECT product, COUNT(*), SUM(qty) FROM orders WHERE amount > 100 GROUP BY product HAVING COUNT(*) > 20`},
	{name: "decimal-plain", sinkOpts: `'json.encode.decimal-as-plain-number' = 'true'`,
		sink: `customer_id STRING, window_start TIMESTAMP(3), total DECIMAL(38, 2), average DECIMAL(38, 6), big DECIMAL(20, 4)`,
		query: `SELECT customer_id, window_start, SUM(amount), AVG(amount), CAST(SUM(amount) * 1000 AS DECIMAL(20, 4))
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(occurred_at), INTERVAL '5' MINUTE))
GROUP BY customer_id, window_start, window_end`},
	// Joins (merged from wip/sqljoin).
	{name: "interval-join",
		sink: `order_id STRING, customer_id STRING, carrier STRING, occurred_at TIMESTAMP(3), shipped_at TIMESTAMP(3)`,
		// Flink writes one rowtime attribute into a sink: shipped_at is cast to a plain TIMESTAMP.
		query: `SELECT o.order_id, o.customer_id, s.carrier, o.occurred_at, CAST(s.shipped_at AS TIMESTAMP(3))
FROM orders o JOIN shipments s ON o.order_id = s.order_id
  AND s.shipped_at BETWEEN o.occurred_at AND o.occurred_at + INTERVAL '1' MINUTE`},
	{name: "regular-join",
		sink:  `order_id STRING, name STRING, region STRING, amount DECIMAL(12, 2)`,
		query: `SELECT o.order_id, c.name, c.region, o.amount FROM orders o JOIN customers c ON o.customer_id = c.customer_id`},
	{name: "left-join-agg", upsert: true, needs: "a GROUP BY over an updating input (a LEFT join's), which Sluice refuses so far",
		sink:  `region STRING, n BIGINT, total DECIMAL(38, 2), PRIMARY KEY (region) NOT ENFORCED`,
		query: `SELECT COALESCE(c.region, 'none'), COUNT(*), SUM(o.amount) FROM orders o LEFT JOIN customers c ON o.customer_id = c.customer_id GROUP BY COALESCE(c.region, 'none')`},
}

// sinkTable is the name of a case's output table.
func sinkTable(c sqlCase) string { return "out_" + strings.ReplaceAll(c.name, "-", "_") }

// sinkDDL is the output table of a case, writing into topic.
func sinkDDL(c sqlCase, topic string) string {
	with := `'connector' = 'kafka', 'format' = 'json'`
	if c.upsert {
		with = `'connector' = 'upsert-kafka', 'key.format' = 'json', 'value.format' = 'json'`
	}
	if c.sinkOpts != "" {
		with += ", " + c.sinkOpts
	}
	return fmt.Sprintf("CREATE TABLE %s (%s\n) WITH (%s, 'topic' = '%s', 'properties.bootstrap.servers' = '{{bootstrap}}');\n",
		sinkTable(c), c.sink, with, topic)
}

// env is the comparison's broker, topics and scripts.
type env struct {
	b      *broker
	prefix string // of this run's topics
	dir    string // the scripts
}

func (e *env) topic(name string) string { return e.prefix + name }

func (e *env) expand(s string) string {
	return strings.NewReplacer("{{bootstrap}}", e.b.addr, "{{orders}}", e.topic("orders"),
		"{{shipments}}", e.topic("shipments"), "{{customers}}", e.topic("customers")).Replace(s)
}

func (e *env) writeScript(t *testing.T, name, script string) string {
	t.Helper()
	p := filepath.Join(e.dir, name+".sql")
	if err := os.WriteFile(p, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The output topics of a case.
func sluiceOut(c string) string { return c + "-sluice" }
func flinkOut(c string) string  { return c + "-flink" }

// TestFlinkSQL runs every case on Sluice SQL (in process) and on Flink SQL
// (the runner: one JVM for all of Flink's scripts, started first and run
// alongside Sluice's jobs) and compares their outputs exactly.
func TestFlinkSQL(t *testing.T) {
	start := time.Now()
	ctx := timeout(t, 12*time.Minute)
	cp, err := flinksql.Classpath(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{b: newBroker(t, kafkabroker.Shared(t).Addr), prefix: fmt.Sprintf("flinksql-%d-", time.Now().UnixNano()), dir: t.TempDir()}

	// The inputs, written once.
	for _, name := range []string{"orders", "shipments", "customers"} {
		e.b.createTopic(t, e.topic(name), 1, false)
	}
	e.b.produce(t, e.topic("orders"), 0, corpusOrders()...)
	e.b.produce(t, e.topic("shipments"), 0, corpusShipments()...)
	e.b.produce(t, e.topic("customers"), 0, corpusCustomers()...)
	guide := setupGuide(t, e)
	late := setupLate(t, e)

	// Flink runs the cases as one statement set: one job over the inputs,
	// planned once (each script costs Flink seconds of planning and a
	// MiniCluster); Sluice runs them one by one, so that each has its error.
	corpus := sourceDDL
	var inserts string
	for _, c := range cases {
		for _, engine := range []string{"sluice", "flink"} {
			e.b.createTopic(t, e.topic(c.name+"-"+engine), 1, false)
		}
		if c.needs != "" {
			continue
		}
		corpus += sinkDDL(c, e.topic(flinkOut(c.name)))
		inserts += "INSERT INTO " + sinkTable(c) + " " + c.query + ";\n"
	}
	corpus += "EXECUTE STATEMENT SET BEGIN\n" + inserts + "END;\n"
	flinkScripts := []string{e.writeScript(t, "corpus", e.expand(corpus)), guide.flinkScript, late.flinkScript}

	// Flink, in the background.
	type flinkRun struct {
		res []flinksql.Result
		err error
	}
	var stderr lockedBuffer
	flinkDone := make(chan flinkRun, 1)
	lateDone := make(chan error, 1)
	flinkCtx, cancelFlink := context.WithCancel(ctx)
	defer cancelFlink()
	go func() {
		res, err := flinksql.Run(flinkCtx, flinksql.Options{Classpath: cp, Stderr: &stderr}, flinkScripts...)
		flinkDone <- flinkRun{res, err}
	}()
	// Flink's late-data job gets its second batch of input once its first
	// windows are out, as Sluice's does.
	go func() { lateDone <- late.feedPhase2(flinkCtx, e, e.topic(late.flinkIn), e.topic(late.flinkOutTopic)) }()

	// Sluice, meanwhile, one case after the other.
	logger := slog.New(slog.NewTextHandler(&testWriter{t: t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sluiceErr := map[string]error{}
	for _, c := range cases {
		if c.needs != "" {
			continue
		}
		script := e.expand(sourceDDL + sinkDDL(c, e.topic(sluiceOut(c.name))) + "INSERT INTO " + sinkTable(c) + " " + c.query + ";\n")
		sluiceErr[c.name] = runSluiceBounded(ctx, script, logger)
	}
	guide.runSluice(t, e, logger)
	late.runSluice(t, e, logger)
	t.Logf("Sluice's runs took %v", time.Since(start).Round(time.Millisecond))

	fr := <-flinkDone
	lateErr := <-lateDone
	t.Logf("Flink's runs took %v (one JVM)", time.Since(start).Round(time.Millisecond))
	if fr.err != nil {
		t.Fatalf("%v\nFlink's standard error ends:\n%s", fr.err, stderr.tail(60))
	}
	flinkErr := map[string]error{}
	for _, r := range fr.res {
		flinkErr[strings.TrimSuffix(filepath.Base(r.Script), ".sql")] = r.Err
		t.Logf("Flink ran %s in %v", filepath.Base(r.Script), r.Elapsed)
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.needs != "" {
				t.Skipf("needs %s: enable by deleting the case's needs once Sluice has it", c.needs)
			}
			if err := flinkErr["corpus"]; err != nil {
				t.Fatalf("Flink (the statement set of every case): %v", err)
			}
			if err := sluiceErr[c.name]; err != nil {
				t.Fatalf("Sluice: %v", err)
			}
			compare(t, e, e.topic(sluiceOut(c.name)), e.topic(flinkOut(c.name)), c.upsert, c.changelog && c.changelogDiffers == "")
			if c.changelogDiffers != "" {
				checkKnownChangelogDifference(t, e, c)
			}
		})
	}
	t.Run("guide", func(t *testing.T) {
		if err := flinkErr["guide-flink"]; err != nil {
			t.Fatalf("Flink: %v", err)
		}
		guide.compare(t, e)
	})
	t.Run("late", func(t *testing.T) {
		if err := flinkErr["late-flink"]; err != nil {
			t.Fatalf("Flink: %v", err)
		}
		if lateErr != nil {
			t.Fatalf("feeding Flink's late-data job: %v", lateErr)
		}
		late.compare(t, e)
	})
	if t.Failed() {
		t.Logf("Flink's standard error ends:\n%s", stderr.tail(40))
	}
	t.Logf("the comparison took %v", time.Since(start).Round(time.Millisecond))
}

// runSluiceBounded runs a script of bounded scans to its end.
func runSluiceBounded(ctx context.Context, script string, log *slog.Logger) error {
	jobs, err := sql.NewSession(sql.Options{Config: map[string]string{"parallelism.default": "1"}, Log: log}).ExecuteScript(ctx, script)
	if err != nil {
		return err
	}
	var first error
	for _, j := range jobs {
		if err := j.Wait(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// startSluice starts an unbounded script; the test cancels its jobs.
func startSluice(t *testing.T, script string, log *slog.Logger) (failed func() error, stop func()) {
	t.Helper()
	jobs, err := sql.NewSession(sql.Options{Config: map[string]string{"parallelism.default": "1"}, Log: log}).ExecuteScript(timeout(t, 5*time.Minute), script)
	if err != nil {
		t.Fatalf("Sluice: %v", err)
	}
	ended := make(chan error, len(jobs))
	for _, j := range jobs {
		go func() { ended <- j.Wait() }()
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			for _, j := range jobs {
				j.Cancel()
			}
			for range jobs {
				<-ended
			}
		})
	}
	t.Cleanup(stop)
	failed = func() error {
		select {
		case err := <-ended:
			ended <- err
			return fmt.Errorf("a Sluice job ended before its output settled: %v", err)
		default:
			return nil
		}
	}
	return failed, stop
}

// compare checks Sluice's output topic against Flink's: upsert outputs as
// their final tables by key (and record by record with changelog), append
// outputs as multisets; first by value, then by encoding.
func compare(t *testing.T, e *env, sluiceTopic, flinkTopic string, upsert, changelog bool) {
	t.Helper()
	got, want := e.b.readAll(t, sluiceTopic), e.b.readAll(t, flinkTopic)
	if len(want) == 0 {
		t.Fatalf("Flink wrote nothing into %s: the case compares nothing", flinkTopic)
	}
	for _, semantic := range []bool{true, false} {
		what := "values"
		if !semantic {
			what = "JSON encodings (the values are equal)"
		}
		g, err := canonRecords(got, semantic)
		if err != nil {
			t.Fatalf("Sluice's output %s: %v", sluiceTopic, err)
		}
		w, err := canonRecords(want, semantic)
		if err != nil {
			t.Fatalf("Flink's output %s: %v", flinkTopic, err)
		}
		var d string
		if upsert {
			d = diffLines(tableLines(materialize(g)), tableLines(materialize(w)))
			if d == "" && changelog {
				d = diffSequence(g, w)
			}
		} else {
			d = diffLines(multiset(g), multiset(w))
		}
		if d != "" {
			t.Errorf("Sluice's output differs from Flink's in its %s:\n%s", what, d)
			return
		}
	}
	t.Logf("%d records of Sluice and Flink agree", len(got))
}

// checkKnownChangelogDifference checks that a case's changelogs still
// differ as its changelogDiffers says (their final tables were compared).
func checkKnownChangelogDifference(t *testing.T, e *env, c sqlCase) {
	g, err := canonRecords(e.b.readAll(t, e.topic(sluiceOut(c.name))), true)
	if err != nil {
		t.Fatal(err)
	}
	w, err := canonRecords(e.b.readAll(t, e.topic(flinkOut(c.name))), true)
	if err != nil {
		t.Fatal(err)
	}
	d := diffSequence(g, w)
	if d == "" {
		t.Errorf("the changelogs now agree: the known difference (%s) is gone, make the case compare them", c.changelogDiffers)
		return
	}
	t.Logf("known difference of the changelogs: %s\n%s", c.changelogDiffers, d)
}

type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := strings.Split(strings.TrimRight(l.b.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
