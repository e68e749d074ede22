package sql_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/sql"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// guideScript is the guide's script of issue 20, verbatim but for the
// elided broker addresses ('…', and the "…," of the second WITH).
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

type broker struct {
	addr string
	cl   *kgo.Client
	adm  *kadm.Client
}

func newBroker(t *testing.T) *broker {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &broker{addr: addr, cl: cl, adm: kadm.NewClient(cl)}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func (b *broker) topic(t *testing.T, name string, partitions int32) {
	t.Helper()
	resp, err := b.adm.CreateTopic(ctxT(t), partitions, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating topic %s: %v", name, err)
	}
}

// produce writes values to the partitions given by the map's keys.
func (b *broker) produce(t *testing.T, topic string, p int32, values ...string) {
	t.Helper()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)})
	}
	if err := b.cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// commit commits offset 0 of every partition for group, as a deployment
// that already ran would have.
func (b *broker) commit(t *testing.T, group, topic string, partitions int32) {
	t.Helper()
	offs := kadm.Offsets{}
	for p := int32(0); p < partitions; p++ {
		offs.Add(kadm.Offset{Topic: topic, Partition: p, At: 0, LeaderEpoch: -1})
	}
	resp, err := b.adm.CommitOffsets(ctxT(t), group, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// read returns "key value" of every record of topic, waiting until there
// are at least n.
func (b *broker) read(t *testing.T, topic string, n int) []string {
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
		fs.EachRecord(func(r *kgo.Record) {
			v := "null"
			if r.Value != nil {
				v = string(r.Value)
			}
			out = append(out, string(r.Key)+" "+v)
		})
	}
	slices.Sort(out)
	return out
}

func order(id, customer, amount, at string) string {
	return fmt.Sprintf(`{"order_id":%q,"customer_id":%q,"amount":%s,"occurred_at":%q}`, id, customer, amount, at)
}

// guideOrders are orders over two partitions; the last of each moves the
// watermark (min over partitions, 10 s behind) past 10:05:00, so the
// windows up to [10:04, 10:05) fire and [10:05, 10:06) does not.
func guideOrders(t *testing.T, b *broker) {
	b.topic(t, "orders", 2)
	b.topic(t, "customer-totals", 1)
	guideOrdersInto(t, b)
}

// guideOrdersInto writes the orders into partitions 0 and 1 of orders.
func guideOrdersInto(t *testing.T, b *broker) {
	b.produce(t, "orders", 0,
		order("o1", "c1", "10.50", "2024-01-01 10:00:05"),
		order("o2", "c1", "2.25", "2024-01-01 10:00:40"),
		order("o3", "c1", "7", "2024-01-01 10:01:10.5"),
		order("o7", "c1", "1.00", "2024-01-01 10:05:30"))
	b.produce(t, "orders", 1,
		order("o4", "c2", "100", "2024-01-01 10:00:59.999"),
		order("o5", "c2", "0.01", "2024-01-01 10:02:00"),
		order("o6", "c2", "5.5", "2024-01-01 10:01:30"),
		order("o8", "c2", "3", "2024-01-01 10:05:40"))
}

// guideOutput is what Flink writes for guideOrders: the key and value
// JSON of each window (DECIMAL as a number the way Jackson writes
// Flink's normalized BigDecimal: 7.00 as 7, 100.00 as 1E+2; TIMESTAMP(3)
// in the SQL standard format, json.timestamp-format.standard's default),
// as integration/flinksql checks against Flink itself.
var guideOutput = []string{
	`{"customer_id":"c1","window_start":"2024-01-01 10:00:00"} {"customer_id":"c1","window_start":"2024-01-01 10:00:00","window_end":"2024-01-01 10:01:00","total_amount":12.75}`,
	`{"customer_id":"c1","window_start":"2024-01-01 10:01:00"} {"customer_id":"c1","window_start":"2024-01-01 10:01:00","window_end":"2024-01-01 10:02:00","total_amount":7}`,
	`{"customer_id":"c2","window_start":"2024-01-01 10:00:00"} {"customer_id":"c2","window_start":"2024-01-01 10:00:00","window_end":"2024-01-01 10:01:00","total_amount":1E+2}`,
	`{"customer_id":"c2","window_start":"2024-01-01 10:01:00"} {"customer_id":"c2","window_start":"2024-01-01 10:01:00","window_end":"2024-01-01 10:02:00","total_amount":5.5}`,
	`{"customer_id":"c2","window_start":"2024-01-01 10:02:00"} {"customer_id":"c2","window_start":"2024-01-01 10:02:00","window_end":"2024-01-01 10:03:00","total_amount":0.01}`,
}

func withBroker(script, addr string) string { return strings.ReplaceAll(script, "'…'", "'"+addr+"'") }

func start(t *testing.T, script string, config map[string]string) (*sql.Job, *strings.Builder) {
	t.Helper()
	var out strings.Builder
	s := sql.NewSession(sql.Options{Config: config, Stdout: &out})
	jobs, err := s.ExecuteScript(ctxT(t), script)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 {
		t.Fatalf("%d jobs, want 1", len(jobs))
	}
	t.Cleanup(func() { jobs[0].Cancel(); _ = jobs[0].Wait() })
	return jobs[0], &out
}

func TestGuideScript(t *testing.T) {
	// At parallelism 3 each source subtask keeps the partitions its copy of
	// the enumerator assigns it (one is left without any).
	for _, par := range []string{"1", "2", "3"} {
		t.Run("parallelism "+par, func(t *testing.T) {
			b := newBroker(t)
			guideOrders(t, b)
			b.commit(t, "order-sql", "orders", 2)
			job, out := start(t, withBroker(guideScript, b.addr), map[string]string{"parallelism.default": par})
			if !strings.Contains(out.String(), "Job ID: "+job.ID()) {
				t.Errorf("the client printed %q, not the job id %s", out.String(), job.ID())
			}
			got := b.read(t, "customer-totals", len(guideOutput))
			if !slices.Equal(got, guideOutput) {
				t.Errorf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(guideOutput, "\n"))
			}
		})
	}
}

// A partition without a committed offset and no auto.offset.reset fails
// the job once (no restart loop), naming the partition and the option.
func TestGroupOffsetsWithoutCommittedOffsets(t *testing.T) {
	b := newBroker(t)
	guideOrders(t, b)
	b.commit(t, "order-sql", "orders", 1) // partition 1 has none
	script := "SET 'restart-strategy.type' = 'fixed-delay';\nSET 'restart-strategy.fixed-delay.attempts' = '100';\nSET 'restart-strategy.fixed-delay.delay' = '10 ms';\n" +
		withBroker(guideScript, b.addr)
	job, _ := start(t, script, nil)
	err := job.Wait()
	if err == nil {
		t.Fatal("the job succeeded")
	}
	if job.Restarts() != 0 {
		t.Errorf("the job restarted %d times; a missing offset is no failure a restart fixes", job.Restarts())
	}
	for _, want := range []string{"orders-1", "properties.auto.offset.reset", "order-sql"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	// With the option set, the same script runs.
	b2 := newBroker(t)
	guideOrders(t, b2)
	fixed := strings.Replace(withBroker(guideScript, b2.addr), "'scan.startup.mode' = 'group-offsets',",
		"'scan.startup.mode' = 'group-offsets', 'properties.auto.offset.reset' = 'earliest',", 1)
	start(t, fixed, nil)
	if got := b2.read(t, "customer-totals", len(guideOutput)); !slices.Equal(got, guideOutput) {
		t.Errorf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(guideOutput, "\n"))
	}
}

func TestMalformedJSON(t *testing.T) {
	t.Run("ignore-parse-errors false fails once naming the record", func(t *testing.T) {
		b := newBroker(t)
		guideOrders(t, b)
		b.produce(t, "orders", 1, `{"order_id": "o9", "amount": 1.0, oops`)
		b.commit(t, "order-sql", "orders", 2)
		script := "SET 'restart-strategy.type' = 'fixed-delay';\nSET 'restart-strategy.fixed-delay.attempts' = '100';\nSET 'restart-strategy.fixed-delay.delay' = '10 ms';\n" +
			withBroker(guideScript, b.addr)
		job, _ := start(t, script, nil)
		err := job.Wait()
		if err == nil {
			t.Fatal("the job succeeded")
		}
		if job.Restarts() != 0 {
			t.Errorf("the job restarted %d times on a malformed record", job.Restarts())
		}
		for _, want := range []string{`topic "orders" partition 1 at offset 4`, "json.ignore-parse-errors"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	})
	t.Run("ignore-parse-errors true skips and counts", func(t *testing.T) {
		b := newBroker(t)
		b.topic(t, "orders", 2)
		b.topic(t, "customer-totals", 1)
		b.produce(t, "orders", 0,
			order("o1", "c1", "10.50", "2024-01-01 10:00:05"),
			`not json at all`,
			order("o2", "c1", "2.25", "2024-01-01 10:00:40"),
			order("o3", "c1", "7", "2024-01-01 10:01:10.5"),
			order("o7", "c1", "1.00", "2024-01-01 10:05:30"))
		b.produce(t, "orders", 1,
			order("o4", "c2", "100", "2024-01-01 10:00:59.999"),
			`{"order_id":"o10","customer_id":"c2","amount":"x","occurred_at":"2024-01-01 10:03:00"}`,
			order("o5", "c2", "0.01", "2024-01-01 10:02:00"),
			order("o6", "c2", "5.5", "2024-01-01 10:01:30"),
			order("o8", "c2", "3", "2024-01-01 10:05:40"))
		b.commit(t, "order-sql", "orders", 2)
		script := strings.Replace(withBroker(guideScript, b.addr), "'json.ignore-parse-errors' = 'false'", "'json.ignore-parse-errors' = 'true'", 1)
		job, _ := start(t, script, nil)
		// o10's bad amount is NULL: its window [10:03, 10:04) has a NULL sum.
		want := append(slices.Clone(guideOutput),
			`{"customer_id":"c2","window_start":"2024-01-01 10:03:00"} {"customer_id":"c2","window_start":"2024-01-01 10:03:00","window_end":"2024-01-01 10:04:00","total_amount":null}`)
		slices.Sort(want)
		if got := b.read(t, "customer-totals", len(want)); !slices.Equal(got, want) {
			t.Errorf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		testwait.Eventually(t, 10*time.Second, "the skipped record to be counted", func() bool { return job.Metrics().SkippedRecords == 1 })
		if m := job.Metrics(); m.SkippedRecords != 1 || m.NulledFields != 1 {
			t.Errorf("metrics %+v: want 1 skipped record and 1 nulled field", m)
		}
	})
}

func TestScriptErrors(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		kind         error
		want         string
	}{
		{"syntax error with a caret", "CREATE TABLE t (a INT) WITH ('connector' = 'blackhole');\nSELECT a FROM t WHERE a >",
			sql.ErrSyntax, "line 2, column 26: unexpected end of input, expected an expression\n  SELECT a FROM t WHERE a >\n                           ^"},
		{"unknown column with a suggestion",
			strings.Replace(guideScript, "SELECT customer_id,", "SELECT custmer_id,", 1),
			sql.ErrUnknown, "line 11, column 36: column 'custmer_id' not found; did you mean 'customer_id'?"},
		{"missing required connector option",
			strings.Replace(guideScript, "'topic' = 'customer-totals', ", "", 1),
			sql.ErrInvalid, "line 6, column 14: table customer_totals: connector 'upsert-kafka' is missing required option(s) 'topic'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := sql.Validate(tc.script)
			if !errors.Is(err, tc.kind) {
				t.Fatalf("error %v is not %v", err, tc.kind)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error:\n%v\nwant it to contain:\n%s", err, tc.want)
			}
			var se *sql.Error
			if !errors.As(err, &se) || se.Pos.Line == 0 {
				t.Errorf("%T carries no position", err)
			}
		})
	}
}

// With checkpoints and 'sink.delivery-guarantee' = 'exactly-once' the
// upsert-kafka output is written in transactions committed at completed
// checkpoints: a read_committed reader sees exactly the windows, and the
// source's offsets are committed to the group.
func TestExactlyOnceWithCheckpoints(t *testing.T) {
	b := newBroker(t)
	guideOrders(t, b)
	b.commit(t, "order-sql", "orders", 2)
	script := strings.Replace(withBroker(guideScript, b.addr), "'key.format' = 'json',",
		"'key.format' = 'json', 'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'totals',", 1)
	start(t, script, map[string]string{
		"execution.checkpointing.interval": "50 ms",
		"execution.checkpointing.dir":      "file://" + t.TempDir(),
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumeTopics("customer-totals"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	ctx := ctxT(t)
	for len(got) < len(guideOutput) && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Key)+" "+string(r.Value)) })
	}
	slices.Sort(got)
	if !slices.Equal(got, guideOutput) {
		t.Errorf("committed output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(guideOutput, "\n"))
	}
	testwait.Eventually(t, 20*time.Second, "the source's offsets committed to group order-sql", func() bool {
		offs, err := b.adm.FetchOffsets(ctxT(t), "order-sql")
		if err != nil {
			return false
		}
		o0, _ := offs.Lookup("orders", 0)
		o1, _ := offs.Lookup("orders", 1)
		return o0.At == 4 && o1.At == 4
	})
}

// A regular GROUP BY is a changelog: upsert-kafka writes each key's
// latest result as an upsert (the -U of an update is not written), in
// the order of the key's changes.
func TestRegularGroupByIntoUpsertKafka(t *testing.T) {
	b := newBroker(t)
	b.topic(t, "orders", 1)
	b.topic(t, "totals", 1)
	b.produce(t, "orders", 0,
		order("o1", "c1", "10", "2024-01-01 10:00:00"),
		order("o2", "c2", "1.5", "2024-01-01 10:00:01"),
		order("o3", "c1", "5.25", "2024-01-01 10:00:02"),
		order("o4", "c1", "0", "2024-01-01 10:00:03"))
	script := withBroker(`
CREATE TABLE orders (order_id STRING, customer_id STRING, amount DECIMAL(12, 2), occurred_at TIMESTAMP(3))
WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '…', 'format' = 'json',
  'scan.startup.mode' = 'earliest-offset');
CREATE TABLE totals (customer_id STRING, n BIGINT, total DECIMAL(18, 2), biggest DECIMAL(12, 2), PRIMARY KEY (customer_id) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = 'totals', 'properties.bootstrap.servers' = '…', 'key.format' = 'json', 'value.format' = 'json');
INSERT INTO totals SELECT customer_id, COUNT(*), SUM(amount), MAX(amount) FROM orders GROUP BY customer_id;`, b.addr)
	start(t, script, nil)
	got := b.read(t, "totals", 4)
	want := []string{
		`{"customer_id":"c1"} {"customer_id":"c1","n":1,"total":1E+1,"biggest":1E+1}`,
		`{"customer_id":"c1"} {"customer_id":"c1","n":2,"total":15.25,"biggest":1E+1}`,
		`{"customer_id":"c1"} {"customer_id":"c1","n":3,"total":15.25,"biggest":1E+1}`,
		`{"customer_id":"c2"} {"customer_id":"c2","n":1,"total":1.5,"biggest":1.5}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Stop with a savepoint half-way and run the script again from it: the
// source continues at the savepoint's offsets and the windows' restored
// state completes them, so the output is the uninterrupted run's.
func TestSavepointAndRestore(t *testing.T) {
	b := newBroker(t)
	b.topic(t, "orders", 2)
	b.topic(t, "customer-totals", 1)
	b.produce(t, "orders", 0,
		order("o1", "c1", "10.50", "2024-01-01 10:00:05"),
		order("o2", "c1", "2.25", "2024-01-01 10:00:40"))
	b.produce(t, "orders", 1, order("o4", "c2", "100", "2024-01-01 10:00:59.999"))
	b.commit(t, "order-sql", "orders", 2)
	dir := t.TempDir()
	cfg := map[string]string{
		"execution.checkpointing.interval": "20 ms",
		"execution.checkpointing.dir":      "file://" + dir + "/cp",
	}
	script := withBroker(guideScript, b.addr)
	s := sql.NewSession(sql.Options{Config: cfg})
	jobs, err := s.ExecuteScript(ctxT(t), script)
	if err != nil {
		t.Fatal(err)
	}
	// The group's offsets are committed once a checkpoint covers them.
	testwait.Eventually(t, 20*time.Second, "the first records read and checkpointed", func() bool {
		offs, err := b.adm.FetchOffsets(ctxT(t), "order-sql")
		if err != nil {
			return false
		}
		o0, _ := offs.Lookup("orders", 0)
		o1, _ := offs.Lookup("orders", 1)
		return o0.At == 2 && o1.At == 1
	})
	path, err := jobs[0].StopWithSavepoint("file://" + dir + "/sp")
	if err != nil {
		t.Fatal(err)
	}
	if err := jobs[0].Wait(); err != nil {
		t.Fatal(err)
	}
	b.produce(t, "orders", 0,
		order("o3", "c1", "7", "2024-01-01 10:01:10.5"),
		order("o7", "c1", "1.00", "2024-01-01 10:05:30"))
	b.produce(t, "orders", 1,
		order("o5", "c2", "0.01", "2024-01-01 10:02:00"),
		order("o6", "c2", "5.5", "2024-01-01 10:01:30"),
		order("o8", "c2", "3", "2024-01-01 10:05:40"))
	// The group's offsets are moved back behind the savepoint's (o2 and o4
	// would be read again): only the restored positions and window state
	// give the uninterrupted run's output.
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 1, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: "orders", Partition: 1, At: 0, LeaderEpoch: -1})
	if resp, err := b.adm.CommitOffsets(ctxT(t), "order-sql", offs); err != nil || resp.Error() != nil {
		t.Fatal(err, resp.Error())
	}
	start(t, "SET 'execution.state-recovery.path' = '"+path+"';\n"+script, cfg)
	if got := b.read(t, "customer-totals", len(guideOutput)); !slices.Equal(got, guideOutput) {
		t.Errorf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(guideOutput, "\n"))
	}
}

// A partition without records holds the watermark back, as in Flink,
// unless 'table.exec.source.idle-timeout' lets it go idle while the other
// partitions keep receiving records.
func TestIdleTimeout(t *testing.T) {
	b := newBroker(t)
	b.topic(t, "orders", 3) // partition 2 stays empty
	b.topic(t, "customer-totals", 1)
	guideOrdersInto(t, b)
	b.commit(t, "order-sql", "orders", 3)
	start(t, "SET 'table.exec.source.idle-timeout' = '100 ms';\n"+withBroker(guideScript, b.addr), nil)
	// Partitions 0 and 1 stay active: records of a window that never fires.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			for p := int32(0); p < 2; p++ {
				rec := &kgo.Record{Topic: "orders", Partition: p, Value: []byte(order("hb", "c9", "0", "2024-01-01 10:05:30"))}
				if err := b.cl.ProduceSync(context.Background(), rec).FirstErr(); err != nil {
					return
				}
			}
		}
	}()
	got := b.read(t, "customer-totals", len(guideOutput))
	close(stop)
	<-done
	if !slices.Equal(got, guideOutput) {
		t.Errorf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(guideOutput, "\n"))
	}
}

// COUNT(DISTINCT) in a window aggregation and a regular GROUP BY, with
// the results printed by a 'print' table (a bounded scan ends the job).
func TestCountDistinct(t *testing.T) {
	b := newBroker(t)
	b.topic(t, "orders", 1)
	b.produce(t, "orders", 0,
		order("o1", "c1", "1", "2024-01-01 10:00:00"),
		order("o1", "c1", "1", "2024-01-01 10:00:10"), // a duplicate delivery
		order("o2", "c1", "2", "2024-01-01 10:00:20"),
		order("o1", "c1", "1", "2024-01-01 10:01:00")) // the next window
	ddl := withBroker(`CREATE TABLE orders (order_id STRING, customer_id STRING, amount DECIMAL(12, 2),
  occurred_at TIMESTAMP(3), WATERMARK FOR occurred_at AS occurred_at)
WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '…', 'format' = 'json',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset');
CREATE TABLE out (customer_id STRING, ws TIMESTAMP(3), orders BIGINT, events BIGINT) WITH ('connector' = 'print');
CREATE TABLE totals (customer_id STRING, orders BIGINT) WITH ('connector' = 'print', 'print-identifier' = 'g');
`, b.addr)
	for _, tc := range []struct{ query, want string }{
		{`INSERT INTO out SELECT customer_id, window_start, COUNT(DISTINCT order_id), COUNT(*)
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(occurred_at), INTERVAL '1' MINUTE)) GROUP BY customer_id, window_start, window_end`,
			"+I[c1, 2024-01-01 10:00:00.000, 2, 3]\n+I[c1, 2024-01-01 10:01:00.000, 1, 1]\n"},
		{`INSERT INTO totals SELECT customer_id, COUNT(DISTINCT order_id) FROM orders GROUP BY customer_id`,
			"g> +I[c1, 1]\ng> -U[c1, 1]\ng> +U[c1, 2]\n"},
	} {
		var out strings.Builder
		jobs, err := sql.NewSession(sql.Options{Stdout: &out}).ExecuteScript(ctxT(t), ddl+tc.query)
		if err != nil {
			t.Fatal(err)
		}
		if err := jobs[0].Wait(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("printed:\n%s\nwant:\n%s", out.String(), tc.want)
		}
	}
}

// Metadata and computed columns are read with each record; a kafka sink
// with key.fields writes them as the record key.
func TestMetadataComputedAndKeyFields(t *testing.T) {
	b := newBroker(t)
	b.topic(t, "orders", 2)
	b.topic(t, "out", 1)
	b.produce(t, "orders", 1, order("o1", "c1", "1.25", "2024-01-01 10:00:00"), order("o2", "c2", "2", "2024-01-01 10:00:01"))
	script := withBroker(`CREATE TABLE orders (order_id STRING, customer_id STRING, amount DECIMAL(12, 2),
  part INT METADATA FROM 'partition' VIRTUAL, off BIGINT METADATA FROM 'offset' VIRTUAL, doubled AS amount * 2)
WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '…', 'format' = 'json',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset');
CREATE TABLE out (id STRING, p INT, o BIGINT, d DECIMAL(14, 2))
WITH ('connector' = 'kafka', 'topic' = 'out', 'properties.bootstrap.servers' = '…', 'key.format' = 'json', 'key.fields' = 'id',
  'value.format' = 'json', 'value.fields-include' = 'EXCEPT_KEY');
INSERT INTO out SELECT order_id, part, off, doubled FROM orders WHERE customer_id <> 'nobody';`, b.addr)
	jobs, err := sql.NewSession(sql.Options{}).ExecuteScript(ctxT(t), script)
	if err != nil {
		t.Fatal(err)
	}
	if err := jobs[0].Wait(); err != nil {
		t.Fatal(err)
	}
	want := []string{`{"id":"o1"} {"p":1,"o":0,"d":2.5}`, `{"id":"o2"} {"p":1,"o":1,"d":4}`}
	if got := b.read(t, "out", 2); !slices.Equal(got, want) {
		t.Errorf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestKafkaSinkRecordTimestamps: the records of the kafka and upsert-kafka
// sinks carry the time they were produced, not the rows' event time, as
// Flink SQL's Kafka sinks write them (no 'timestamp' metadata column):
// stamped with the event time, the output of old events (here of 2024)
// would be deleted by a broker's retention (7 days by default) as soon as
// it is written.
func TestKafkaSinkRecordTimestamps(t *testing.T) {
	b := newBroker(t)
	for _, tp := range []string{"orders", "appended", "totals"} {
		b.topic(t, tp, 1)
	}
	b.produce(t, "orders", 0, orderAt("o1", "c1", "1.50", "10:00:00"), orderAt("o2", "c2", "2", "10:00:30"),
		orderAt("o3", "c1", "3", "10:02:00"))
	before := time.Now().Add(-time.Second)
	script := withBroker(ordersDDL+`CREATE TABLE appended (order_id STRING, occurred_at TIMESTAMP(3))
WITH ('connector' = 'kafka', 'topic' = 'appended', 'properties.bootstrap.servers' = '…', 'format' = 'json');
CREATE TABLE totals (customer_id STRING, window_start TIMESTAMP(3), n BIGINT, PRIMARY KEY (customer_id, window_start) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = 'totals', 'properties.bootstrap.servers' = '…', 'key.format' = 'json', 'value.format' = 'json');
EXECUTE STATEMENT SET BEGIN
INSERT INTO appended SELECT order_id, occurred_at FROM orders;
INSERT INTO totals SELECT customer_id, window_start, COUNT(*)
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(occurred_at), INTERVAL '1' MINUTE)) GROUP BY customer_id, window_start, window_end;
END;`, b.addr)
	jobs, err := sql.NewSession(sql.Options{}).ExecuteScript(ctxT(t), script)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if err := j.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		topic string
		n     int
	}{{"appended", 3}, {"totals", 3}} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumeTopics(tc.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t)
		var got int
		for got < tc.n {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("%s: read %d of %d records", tc.topic, got, tc.n)
			}
			fs.EachRecord(func(r *kgo.Record) {
				got++
				if r.Timestamp.Before(before) {
					t.Errorf("%s: record %s at offset %d is stamped %v, before the job ran (%v)", tc.topic, r.Value, r.Offset, r.Timestamp, before)
				}
			})
		}
		cl.Close()
	}
}
