//go:build integration

package flinksql_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// corpusRecords is the size of the orders input.
const corpusRecords = 600

var corpusBase = time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)

// sqlTime is Flink's SQL timestamp text, without trailing fraction zeros.
func sqlTime(ts time.Time) string { return ts.Format("2006-01-02 15:04:05.999") }

// amountText writes cents as a JSON number, some with trailing zeros and
// some without a fraction, as producers do.
func amountText(cents, i int) string {
	s := fmt.Sprintf("%d.%02d", cents/100, cents%100)
	if i%3 == 0 {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// corpusOrder is order i of the corpus: ten customers and seven products in
// an irregular pattern, amounts all different (so that a Top-N has no
// ties), event times 1.5 s apart on average and up to 3 s out of order
// (inside the 10 s watermark delay: nothing is late), all different.
func corpusOrder(i int, seen map[int64]bool) string {
	ms := int64(i)*1500 + int64((i*7)%13-6)*487
	for seen[ms] {
		ms++
	}
	seen[ms] = true
	ts := corpusBase.Add(time.Duration(ms) * time.Millisecond)
	return fmt.Sprintf(`{"order_id":"o%04d","customer_id":"c%d","product":"p%d","amount":%s,"qty":%d,"occurred_at":%q}`,
		i, (i*i+i/7)%10, (i*3)%7, amountText((i*7919)%100000, i), i%5+1, sqlTime(ts))
}

func corpusOrders() []string {
	seen := map[int64]bool{}
	out := make([]string, corpusRecords)
	for i := range out {
		out[i] = corpusOrder(i, seen)
	}
	return out
}

// corpusShipments ship two of every three orders, some after the interval
// join's minute.
func corpusShipments() []string {
	var out []string
	for i := 0; i < corpusRecords; i++ {
		if i%3 == 2 {
			continue
		}
		ts := corpusBase.Add(time.Duration(i)*1500*time.Millisecond + time.Duration((i*11)%90)*time.Second)
		out = append(out, fmt.Sprintf(`{"order_id":"o%04d","carrier":"k%d","shipped_at":%q}`, i, i%3, sqlTime(ts)))
	}
	return out
}

// corpusCustomers names eight of the ten customers (c8 and c9 have none).
func corpusCustomers() []string {
	var out []string
	for c := 0; c < 8; c++ {
		out = append(out, fmt.Sprintf(`{"customer_id":"c%d","name":"customer %d","region":"r%d"}`, c, c, c%3))
	}
	return out
}

// guideScript is the guide's script of issue 20, verbatim but for the
// elided broker addresses ('…', and the "…," of the second WITH), as in
// sql/sql_test.go's TestGuideScript (which runs it on kfake).
const guideScript = `CREATE TABLE orders (order_id STRING, customer_id STRING, amount DECIMAL(12, 2),
  occurred_at TIMESTAMP(3), WATERMARK FOR occurred_at AS occurred_at - INTERVAL '10' SECOND
) WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '…',
  'properties.group.id' = 'order-sql', 'scan.startup.mode' = 'group-offsets', 'format' = 'json',
  'json.fail-on-missing-field' = 'false', 'json.ignore-parse-errors' = 'false');
CREATE TABLE customer_totals (customer_id STRING, window_start TIMESTAMP(3),
  window_end TIMESTAMP(3), total_amount DECIMAL(18, 2),
  PRIMARY KEY (customer_id, window_start) NOT ENFORCED
) WITH ('connector' = 'upsert-kafka', 'topic' = 'customer-totals', 'properties.bootstrap.servers' = '…',
  'key.format' = 'json', 'value.format' = 'json');
INSERT INTO customer_totals SELECT customer_id, window_start, window_end, SUM(amount)
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(occurred_at), INTERVAL '1' MINUTE))
GROUP BY customer_id, window_start, window_end;`

// guideFixed is the guide's script with the one fix that Flink 2.3
// needs to plan it: ON CONFLICT DO DEDUPLICATE, the query's upsert key
// (customer_id, window_start, window_end) not being the sink's primary key.
// The other, offsets for group order-sql, the test commits.
func guideFixed(outTopic string) string {
	s := strings.Replace(guideScript, "GROUP BY customer_id, window_start, window_end;",
		"GROUP BY customer_id, window_start, window_end ON CONFLICT DO DEDUPLICATE;", 1)
	return strings.Replace(s, "'topic' = 'customer-totals'", "'topic' = '"+outTopic+"'", 1)
}

// The guide's topics are its own names, so that its script runs verbatim.
const (
	guideGroup      = "order-sql"
	guideIn         = "orders"
	guideOut        = "customer-totals"
	guideFixedOut   = "customer-totals-sluice-fixed"
	guideFlinkOut   = "customer-totals-flink"
	guidePartitions = 2
	guideRecords    = 400
	// settleIdle is how long an unbounded run's output must stay the same
	// to count as settled, on both engines.
	settleIdle = 5 * time.Second
)

type guideRun struct{ flinkScript string }

// setupGuide writes the guide's orders over two partitions (ordered by
// time within each, up to 3 s out of order), commits offset 0 for its
// group (what a deployment that already ran would have; neither engine
// commits without checkpoints), and writes Flink's script, which runs
// unbounded too and is stopped once its output settled.
func setupGuide(t *testing.T, e *env) *guideRun {
	for _, tp := range []string{guideIn, guideOut, guideFixedOut, guideFlinkOut} {
		n := int32(1)
		if tp == guideIn {
			n = guidePartitions
		}
		e.b.createTopic(t, tp, n, true)
	}
	base := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	parts := make([][]string, guidePartitions)
	for i := 0; i < guideRecords; i++ {
		ms := int64(i)*1200 + int64((i*5)%11-5)*300
		ts := base.Add(time.Duration(ms) * time.Millisecond)
		v := fmt.Sprintf(`{"order_id":"g%d","customer_id":"c%d","amount":%s,"occurred_at":%q}`,
			i, (i*5)%8+1, amountText((i*6007)%50000, i), sqlTime(ts))
		parts[i%guidePartitions] = append(parts[i%guidePartitions], v)
	}
	for p, vs := range parts {
		e.b.produce(t, guideIn, int32(p), vs...)
	}
	e.b.commitZero(t, guideGroup, guideIn, guidePartitions)
	script := fmt.Sprintf("-- flinksql: stop-when-idle %s %s %d\n", e.b.addr, guideFlinkOut, int(settleIdle/time.Second)) +
		withBroker(guideFixed(guideFlinkOut), e.b.addr)
	return &guideRun{flinkScript: e.writeScript(t, "guide-flink", script)}
}

func withBroker(script, addr string) string { return strings.ReplaceAll(script, "'…'", "'"+addr+"'") }

// runSluice runs the guide's script verbatim, then with Flink's fix, each
// until its output settled.
func (g *guideRun) runSluice(t *testing.T, e *env, log *slog.Logger) {
	for _, r := range []struct{ script, out string }{
		{withBroker(guideScript, e.b.addr), guideOut},
		{withBroker(guideFixed(guideFixedOut), e.b.addr), guideFixedOut},
	} {
		failed, stop := startSluice(t, r.script, log)
		e.b.waitSettled(t, r.out, settleIdle, 3*time.Minute, failed)
		stop()
	}
}

// compare: each of the guide's windows is written once, so the changelogs
// compare as multisets, and the final tables by key.
func (g *guideRun) compare(t *testing.T, e *env) {
	t.Run("verbatim", func(t *testing.T) { compareGuide(t, e, guideOut) })
	t.Run("on-conflict", func(t *testing.T) { compareGuide(t, e, guideFixedOut) })
}

func compareGuide(t *testing.T, e *env, sluiceTopic string) {
	compare(t, e, sluiceTopic, guideFlinkOut, true, false)
	got, err := canonRecords(e.b.readAll(t, sluiceTopic), true)
	if err != nil {
		t.Fatal(err)
	}
	want, err := canonRecords(e.b.readAll(t, guideFlinkOut), true)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffLines(multiset(got), multiset(want)); d != "" {
		t.Errorf("the changelogs differ:\n%s", d)
	}
}

// lateRun is the late-data case: a window aggregation over an unbounded
// scan whose input comes in two batches, the second only once the first's
// windows are out (so the watermark has passed them on either engine,
// whatever the timing of periodic watermarks): records of those windows
// in the second batch are late and dropped, and a record behind the
// watermark whose window is still open counts.
type lateRun struct {
	flinkScript   string
	flinkIn       string
	flinkOutTopic string
}

const lateBase = "2026-01-01 12:0"

// lateOrder is an order at minute:second after 12:00.
func lateOrder(id, customer, amount, at string) string {
	return fmt.Sprintf(`{"order_id":%q,"customer_id":%q,"amount":%s,"occurred_at":"%s%s"}`, id, customer, amount, lateBase, at)
}

var (
	latePhase1 = []string{
		lateOrder("l1", "c1", "1.10", "0:10"), lateOrder("l2", "c2", "2.20", "0:20"),
		lateOrder("l3", "c1", "3.30", "0:50"), lateOrder("l4", "c2", "4.40", "1:10"),
		lateOrder("l5", "c1", "5.50", "1:30"), lateOrder("l6", "c2", "6.60", "1:50"),
		lateOrder("l7", "c1", "7.70", "2:30"), // watermark 12:02:20: [12:00, 12:01) and [12:01, 12:02) fire
	}
	// latePhase1Windows is how many rows the first batch's windows make.
	latePhase1Windows = int64(4)
	latePhase2        = []string{
		lateOrder("l8", "c1", "8.80", "0:30"),      // late: [12:00, 12:01) fired
		lateOrder("l9", "c2", "9.90", "1:59.999"),  // late: [12:01, 12:02) fired
		lateOrder("l10", "c2", "10.00", "2:05"),    // on time: [12:02, 12:03) is open
		lateOrder("l11", "c1", "11.11", "2:15"),    // behind the watermark, but its window is open: counts
		lateOrder("l12", "c2", "12.12", "3:40"),    // watermark 12:03:30: [12:02, 12:03) fires
		lateOrder("l13", "c1", "13.13", "3:00.05"), // [12:03, 12:04) never fires (unbounded)
	}
)

func lateScript(e *env, in, out, directive string) string {
	return directive + fmt.Sprintf(`CREATE TABLE orders (order_id STRING, customer_id STRING, amount DECIMAL(12, 2),
  occurred_at TIMESTAMP(3), WATERMARK FOR occurred_at AS occurred_at - INTERVAL '10' SECOND
) WITH ('connector' = 'kafka', 'topic' = '%s', 'properties.bootstrap.servers' = '%s',
  'scan.startup.mode' = 'earliest-offset', 'format' = 'json');
CREATE TABLE totals (customer_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT,
  total DECIMAL(38, 2)) WITH ('connector' = 'kafka', 'topic' = '%s', 'properties.bootstrap.servers' = '%s',
  'format' = 'json');
INSERT INTO totals SELECT customer_id, window_start, window_end, COUNT(*), SUM(amount)
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(occurred_at), INTERVAL '1' MINUTE))
GROUP BY customer_id, window_start, window_end;
`, in, e.b.addr, out, e.b.addr)
}

// setupLate writes the first batch into each engine's input topic and
// Flink's script.
func setupLate(t *testing.T, e *env) *lateRun {
	l := &lateRun{flinkIn: "late-in-flink", flinkOutTopic: "late-out-flink"}
	for _, tp := range []string{"late-in-sluice", "late-out-sluice", l.flinkIn, l.flinkOutTopic} {
		e.b.createTopic(t, e.topic(tp), 1, false)
	}
	e.b.produce(t, e.topic("late-in-sluice"), 0, latePhase1...)
	e.b.produce(t, e.topic(l.flinkIn), 0, latePhase1...)
	directive := fmt.Sprintf("-- flinksql: stop-when-idle %s %s %d\n", e.b.addr, e.topic(l.flinkOutTopic), int(settleIdle/time.Second))
	l.flinkScript = e.writeScript(t, "late-flink", lateScript(e, e.topic(l.flinkIn), e.topic(l.flinkOutTopic), directive))
	return l
}

// feedPhase2 writes the second batch into in once out has the first
// batch's windows.
func (l *lateRun) feedPhase2(ctx context.Context, e *env, in, out string) error {
	if err := e.b.waitRecords(ctx, out, latePhase1Windows); err != nil {
		return err
	}
	recs := make([]string, len(latePhase2))
	copy(recs, latePhase2)
	return produceCtx(ctx, e.b, in, recs)
}

func produceCtx(ctx context.Context, b *broker, topic string, values []string) error {
	for _, v := range values {
		if err := b.cl.ProduceSync(ctx, recordTo(topic, v)).FirstErr(); err != nil {
			return fmt.Errorf("producing to %s: %w", topic, err)
		}
	}
	return nil
}

func (l *lateRun) runSluice(t *testing.T, e *env, log *slog.Logger) {
	in, out := e.topic("late-in-sluice"), e.topic("late-out-sluice")
	failed, stop := startSluice(t, lateScript(e, in, out, ""), log)
	if err := l.feedPhase2(timeout(t, 2*time.Minute), e, in, out); err != nil {
		t.Fatalf("Sluice's late-data job: %v", err)
	}
	e.b.waitSettled(t, out, settleIdle, 2*time.Minute, failed)
	stop()
}

func (l *lateRun) compare(t *testing.T, e *env) {
	compare(t, e, e.topic("late-out-sluice"), e.topic(l.flinkOutTopic), false, false)
	// And what both should have done: 4 + 2 windows, l8 and l9 dropped.
	if got := len(e.b.readAll(t, e.topic(l.flinkOutTopic))); got != 6 {
		t.Errorf("Flink wrote %d windows, want 6", got)
	}
}
