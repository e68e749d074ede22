package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/internal/testwait"
)

// sqlBroker is an in-process Kafka (kfake) the cluster's processes reach
// on loopback.
type sqlBroker struct {
	addr string
	cl   *kgo.Client
	adm  *kadm.Client
}

func newSQLBroker(t *testing.T) *sqlBroker {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"), kfake.SeedTopics(1, "totals"))
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
	return &sqlBroker{addr: addr, cl: cl, adm: kadm.NewClient(cl)}
}

// sqlOrdersStart is the event time of the first order.
var sqlOrdersStart = time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC)

// sqlOrder is order i of the test's input: every 100 ms of event time,
// on partition i%2, for one of 5 customers.
func sqlOrder(i int) (partition int32, customer string, cents int, at time.Time) {
	return int32(i % 2), fmt.Sprintf("c%d", i%5), (i * 37) % 10000, sqlOrdersStart.Add(time.Duration(i) * 100 * time.Millisecond)
}

// produceOrders writes orders [from, to) and, with flush, an order an hour
// later in each partition, whose watermark fires every window before it.
func (b *sqlBroker) produceOrders(t *testing.T, from, to int, flush bool) {
	t.Helper()
	var recs []*kgo.Record
	add := func(p int32, customer string, cents int, at time.Time) {
		v := fmt.Sprintf(`{"customer_id":%q,"amount":%d.%02d,"occurred_at":%q}`, customer, cents/100, cents%100, at.Format("2006-01-02 15:04:05.000"))
		recs = append(recs, &kgo.Record{Topic: "orders", Partition: p, Value: []byte(v)})
	}
	for i := from; i < to; i++ {
		add(sqlOrder(i))
	}
	if flush {
		for p := int32(0); p < 2; p++ {
			add(p, "flush", 0, sqlOrdersStart.Add(time.Hour))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing orders: %v", err)
	}
}

// sqlTotals is what the script writes for orders [0, n) once every
// window has fired: a row per customer and minute, in JSON.
func sqlTotals(n int) []string {
	type key struct {
		customer string
		minute   time.Time
	}
	type acc struct{ n, cents int }
	sums := map[key]*acc{}
	for i := 0; i < n; i++ {
		_, c, cents, at := sqlOrder(i)
		k := key{c, at.Truncate(time.Minute)}
		if sums[k] == nil {
			sums[k] = &acc{}
		}
		sums[k].n++
		sums[k].cents += cents
	}
	var out []string
	for k, a := range sums {
		out = append(out, fmt.Sprintf(`{"customer_id":%q,"window_start":%q,"window_end":%q,"n":%d,"total":%s}`,
			k.customer, k.minute.Format("2006-01-02 15:04:05"), k.minute.Add(time.Minute).Format("2006-01-02 15:04:05"), a.n, flinkDecimal(int64(a.cents))))
	}
	slices.Sort(out)
	return out
}

// readCommitted reads topic with read_committed until it holds want's
// number of records, then a while longer for any more, and returns them
// sorted.
func (b *sqlBroker) readCommitted(t *testing.T, topic string, want int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	poll := func(d time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	deadline := time.Now().Add(90 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		poll(time.Second)
	}
	// Anything beyond want (a duplicate) is written by now: the windows
	// fired together.
	poll(2 * time.Second)
	slices.Sort(got)
	return got
}

// committedCount is how many records of topic a read_committed reader
// sees now.
func (b *sqlBroker) committedCount(topic string) int {
	offs, err := b.adm.ListCommittedOffsets(context.Background(), topic)
	if err != nil {
		return 0
	}
	n := 0
	offs.Each(func(o kadm.ListedOffset) { n += int(o.Offset) })
	return n
}

// sqlScript reads orders and writes each customer's per-minute totals,
// exactly once, to totals; its settings are the session's SET statements.
func sqlScript(addr string, sets ...string) string {
	var b strings.Builder
	for _, s := range sets {
		b.WriteString(s + ";\n")
	}
	b.WriteString(`SET 'pipeline.name' = 'sql-totals';
SET 'parallelism.default' = '2';
SET 'execution.checkpointing.interval' = '300 ms';
SET 'restart-strategy.type' = 'fixed-delay';
SET 'restart-strategy.fixed-delay.attempts' = '10';
SET 'restart-strategy.fixed-delay.delay' = '100 ms';
CREATE TABLE orders (customer_id STRING, amount DECIMAL(12, 2), occurred_at TIMESTAMP(3),
  WATERMARK FOR occurred_at AS occurred_at - INTERVAL '5' SECOND
) WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '` + addr + `',
  'properties.group.id' = 'sql-totals', 'scan.startup.mode' = 'earliest-offset', 'format' = 'json');
CREATE TABLE totals (customer_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT, total DECIMAL(18, 2))
WITH ('connector' = 'kafka', 'topic' = 'totals', 'properties.bootstrap.servers' = '` + addr + `', 'format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'sql-totals');
INSERT INTO totals SELECT customer_id, window_start, window_end, COUNT(*), SUM(amount)
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(occurred_at), INTERVAL '1' MINUTE))
WHERE customer_id <> 'flush'
GROUP BY customer_id, window_start, window_end;
`)
	return b.String()
}

var sqlJobIDRE = regexp.MustCompile(`(?m)^Job ID: ([0-9a-f]{32})$`)

// submitSQL runs sluice sql -f on the script against the cluster and
// returns the job id it printed, checking that it printed what Flink's SQL
// client prints.
func (c *cluster) submitSQL(t *testing.T, script string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.sql")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	o := c.mustSluice("sql", "-m", c.rest(), "-D", "execution.checkpointing.dir=file://"+filepath.Join(c.dir, "ckpt"), "-f", path)
	m := sqlJobIDRE.FindStringSubmatch(o)
	if m == nil || !strings.Contains(o, "[INFO] Submitting SQL update statement to the cluster...\n"+
		"[INFO] SQL update statement has been successfully submitted to the cluster:\nJob ID: "+m[1]) {
		t.Fatalf("sluice sql did not print the job id as Flink's SQL client does:\n%s", o)
	}
	return m[1]
}

// TestSQLOnStandaloneCluster submits a SQL script's INSERT (Kafka in,
// window aggregation, Kafka out exactly once) to a standalone cluster with
// sluice sql -m: the job is listed under its pipeline.name and writes
// exactly the totals of its input, read with read_committed, whether it
// runs without failure, has a TaskManager running its workers killed
// (kill -9) after its first checkpoints, or is stopped with a savepoint
// and its script run again from it with SET 'execution.savepoint.path'.
func TestSQLOnStandaloneCluster(t *testing.T) {
	const half, n = 3000, 6000
	want := sqlTotals(n)
	for _, tc := range []string{"no failure", "TaskManager killed", "savepoint and restore"} {
		t.Run(tc, func(t *testing.T) {
			c := newCluster(t, 3)
			b := newSQLBroker(t)
			b.produceOrders(t, 0, half, false)
			job := c.submitSQL(t, sqlScript(b.addr))
			testwait.Eventually(t, 30*time.Second, "the SQL job listed as running under its pipeline.name", func() bool {
				o, _ := c.sluice("list", "-r", "-m", c.rest())
				return regexp.MustCompile(job + ` : sql-totals \(RUNNING\)`).MatchString(o)
			})
			var overview struct {
				Jobs []struct {
					ID   string `json:"jid"`
					Name string `json:"name"`
				} `json:"jobs"`
			}
			if body, err := c.get("/jobs/overview"); err != nil || json.Unmarshal(body, &overview) != nil ||
				len(overview.Jobs) != 1 || overview.Jobs[0].ID != job || overview.Jobs[0].Name != "sql-totals" {
				t.Errorf("GET /jobs/overview: want job %s named sql-totals: %s %v", job, body, err)
			}
			// Mid-way: windows of the first half committed, the rest to come.
			testwait.Eventually(t, 60*time.Second, "committed output of the first half", func() bool { return b.committedCount("totals") > 0 })
			switch tc {
			case "TaskManager killed":
				c.waitCheckpoint(t)
				victims := c.workerTaskManagers()
				if len(victims) == 0 {
					t.Fatal("no TaskManager runs a worker")
				}
				// Records in flight at the kill: windows fired and written in
				// a transaction no checkpoint completed yet.
				b.produceOrders(t, half, half+(n-half)/2, false)
				victims[0].kill()
				b.produceOrders(t, half+(n-half)/2, n, true)
				testwait.Eventually(t, 60*time.Second, "the job to restart", func() bool { return c.restarts() > 0 })
			case "savepoint and restore":
				stop := c.mustSluice("stop", "-m", c.rest(), "--savepointPath", filepath.Join(c.dir, "savepoints"), job)
				m := regexp.MustCompile(`(/\S*savepoint-[0-9a-f-]+)`).FindStringSubmatch(stop)
				if m == nil {
					t.Fatalf("sluice stop did not name its savepoint:\n%s", stop)
				}
				testwait.Eventually(t, 30*time.Second, "the stopped job to end", func() bool {
					o, _ := c.sluice("list", "-a", "-m", c.rest())
					return regexp.MustCompile(job + ` : sql-totals \(FINISHED\)`).MatchString(o)
				})
				b.produceOrders(t, half, n, true)
				// The group's committed offsets are moved back to the start:
				// only the savepoint's positions and window state give the
				// uninterrupted run's output.
				offs := kadm.Offsets{}
				offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 0, LeaderEpoch: -1})
				offs.Add(kadm.Offset{Topic: "orders", Partition: 1, At: 0, LeaderEpoch: -1})
				if resp, err := b.adm.CommitOffsets(context.Background(), "sql-totals", offs); err != nil || resp.Error() != nil {
					t.Fatal(err, resp.Error())
				}
				job2 := c.submitSQL(t, sqlScript(b.addr, "SET 'execution.savepoint.path' = '"+m[1]+"'"))
				if job2 == job {
					t.Fatalf("the restored job has the stopped job's id %s", job)
				}
			default:
				b.produceOrders(t, half, n, true)
			}
			got := b.readCommitted(t, "totals", len(want))
			if !slices.Equal(got, want) {
				t.Errorf("committed output: %d rows, want %d; first difference: %s", len(got), len(want), firstDifference(got, want))
			}
		})
	}
}

// firstDifference describes where two sorted lists first differ.
func firstDifference(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("row %d is %s, want %s", i, got[i], want[i])
		}
	}
	if len(got) > len(want) {
		return "extra row " + got[len(want)]
	}
	if len(want) > len(got) {
		return "missing row " + want[len(got)]
	}
	return "none"
}

// TestSQLApplicationModeOnStandaloneJobManager runs the SQL job program in
// application mode, as a YARN application's JobManager does: sluice
// jobmanager runs "sluice sql-job all SCRIPT", which submits the script's
// INSERT (a bounded scan) to it with the job's own number; the JobManager
// ends with the job, and the output is the totals of the input.
func TestSQLApplicationModeOnStandaloneJobManager(t *testing.T) {
	const n = 1200
	b := newSQLBroker(t)
	b.produceOrders(t, 0, n, true)
	script := strings.Replace(sqlScript(b.addr), "'scan.startup.mode' = 'earliest-offset',",
		"'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',", 1)
	c := &cluster{t: t, dir: t.TempDir(), rpcPort: freePort(t), restPort: freePort(t)}
	c.jm = c.start("jobmanager", "jobmanager", "-D", "jobmanager.rpc.address=127.0.0.1", "-D", "jobmanager.rpc.port="+strconv.Itoa(c.rpcPort),
		"-D", "rest.address=127.0.0.1", "-D", "rest.bind-address=127.0.0.1", "-D", "rest.port="+strconv.Itoa(c.restPort),
		"-D", "security.internal.secret-file="+c.secretFile(), "-D", "execution.checkpointing.dir=file://"+filepath.Join(c.dir, "ckpt"),
		sluiceBin, "sql-job", "all", script)
	c.startTaskManager()
	c.startTaskManager()
	t.Cleanup(func() {
		for _, tm := range c.tms {
			tm.stop()
		}
		c.jm.stop()
		if t.Failed() {
			for _, p := range append([]*proc{c.jm}, c.tms...) {
				b, _ := os.ReadFile(p.log)
				t.Logf("---- %s:\n%s", p.name, tail(string(b), 40))
			}
		}
	})
	if code := c.jm.exitCode(t, 2*time.Minute, "the application-mode JobManager did not end with its SQL job"); code != 0 {
		t.Fatalf("the JobManager exited with status %d", code)
	}
	log, _ := os.ReadFile(c.jm.log)
	if !regexp.MustCompile(`Job ID: [0-9a-f]{32}`).Match(log) {
		t.Errorf("the SQL job program's output (the job id) is not in the JobManager's log")
	}
	want := sqlTotals(n)
	if got := b.readCommitted(t, "totals", len(want)); !slices.Equal(got, want) {
		t.Errorf("committed output: %d rows, want %d; first difference: %s", len(got), len(want), firstDifference(got, want))
	}
}

// TestSQLStatementsFromStandardInputOnCluster: an interactive session
// (statements on standard input) submits its INSERT to the cluster after
// its CREATE TABLEs and SETs ran as statements of their own, and after a
// statement that failed: the job program replays what the session ran
// (not the failed statement), so the cluster builds the client's job; the
// bounded scan's output is exact and the job finishes.
func TestSQLStatementsFromStandardInputOnCluster(t *testing.T) {
	const n = 600
	c := newCluster(t, 2)
	b := newSQLBroker(t)
	b.produceOrders(t, 0, n, true)
	script := strings.Replace(sqlScript(b.addr), "'scan.startup.mode' = 'earliest-offset',",
		"'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',", 1)
	// One statement a line group, as typed; a mistake among them.
	in := strings.Replace(script, "INSERT INTO totals", "SELECT nosuchcolumn FROM orders;\nINSERT INTO totals", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, sluiceBin, "sql", "-m", c.rest(), "-D", "execution.checkpointing.dir=file://"+filepath.Join(c.dir, "ckpt"))
	cmd.Stdin = strings.NewReader(in)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sluice sql: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "[ERROR] line 1, column 8: column 'nosuchcolumn' not found") {
		t.Errorf("the failed statement's error is not in the output:\n%s", out)
	}
	m := sqlJobIDRE.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no job id in the output:\n%s", out)
	}
	job := string(m[1])
	testwait.Eventually(t, 60*time.Second, "the job to finish", func() bool {
		o, _ := c.sluice("list", "-a", "-m", c.rest())
		return regexp.MustCompile(job + ` : sql-totals \(FINISHED\)`).MatchString(o)
	})
	want := sqlTotals(n)
	if got := b.readCommitted(t, "totals", len(want)); !slices.Equal(got, want) {
		t.Errorf("committed output: %d rows, want %d; first difference: %s", len(got), len(want), firstDifference(got, want))
	}
}

// TestSQLSelectOnCluster: a SELECT submitted to the cluster sends its
// result back to the client, which prints its changes as the local
// client does ('changelog' mode, standard output not a terminal) and
// returns when the query (a bounded scan) ends.
func TestSQLSelectOnCluster(t *testing.T) {
	const n = 600
	c := newCluster(t, 2)
	b := newSQLBroker(t)
	b.produceOrders(t, 0, n, true)
	script := `SET 'parallelism.default' = '2';
CREATE TABLE orders (customer_id STRING, amount DECIMAL(12, 2), occurred_at TIMESTAMP(3),
  WATERMARK FOR occurred_at AS occurred_at - INTERVAL '5' SECOND
) WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '` + b.addr + `',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json');
SELECT customer_id, window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(occurred_at), INTERVAL '1' MINUTE))
WHERE customer_id <> 'flush' GROUP BY customer_id, window_start, window_end;
`
	o := c.mustSluice("sql", "-m", c.rest(), "-e", script)
	var got []string
	for _, l := range strings.Split(o, "\n") {
		if strings.HasPrefix(l, "+I[") {
			got = append(got, l)
		}
	}
	slices.Sort(got)
	counts := map[string]int{}
	for i := range n {
		_, cust, _, at := sqlOrder(i)
		counts[fmt.Sprintf("+I[%s, %s, ", cust, at.Truncate(time.Minute).Format("2006-01-02 15:04:05.000"))]++
	}
	var want []string
	for k, v := range counts {
		want = append(want, fmt.Sprintf("%s%d]", k, v))
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("sluice sql printed:\n%s\nwant the rows:\n%s", o, strings.Join(want, "\n"))
	}
}

// TestSQLTableJobOnCluster runs a job program mixing the typed API and
// SQL (cluster/testdata/sqltablejob: typed source, SQL TUMBLE aggregation,
// typed file sink) on two TaskManagers with sluice run: its workers
// rebuild the one graph of typed and SQL operators, the orders and totals
// cross the workers' exchanges, and the output is exact.
func TestSQLTableJobOnCluster(t *testing.T) {
	const n = 400
	c := newCluster(t, 2)
	out := filepath.Join(c.dir, "out")
	args := append([]string{"run", "-m", c.rest(), "-p", "2", "-D", "execution.checkpointing.dir=file://" + filepath.Join(c.dir, "ckpt")}, checkpointed...)
	o := c.mustSluice(append(args, sqlTableJobBin, "-out", out, "-n", strconv.Itoa(n))...)
	if !strings.Contains(o, "done: 0 restarts") {
		t.Errorf("sluice run:\n%s", o)
	}
	start := time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC)
	cents, counts := map[string]int{}, map[string]int{}
	for i := range n {
		at := start.Add(time.Duration(i) * 7 * time.Second).Truncate(time.Minute)
		k := fmt.Sprintf("c%d %s-%s", i%4, at.Format("15:04"), at.Add(time.Minute).Format("15:04"))
		cents[k] += i * 50
		counts[k]++
	}
	var want []string
	for k := range cents {
		want = append(want, fmt.Sprintf("%s n=%d cents=%d", k, counts[k], cents[k]))
	}
	slices.Sort(want)
	if got := readSorted(t, out, func(string) bool { return false }); !slices.Equal(got, want) {
		t.Errorf("output: %d lines, want %d; first difference: %s", len(got), len(want), firstDifference(got, want))
	}
}

// TestSQLSelectInterruptedCancelsItsJob: a client showing a SELECT's
// result from the cluster, interrupted (Ctrl-C), cancels the query's job.
func TestSQLSelectInterruptedCancelsItsJob(t *testing.T) {
	c := newCluster(t, 1)
	b := newSQLBroker(t)
	b.produceOrders(t, 0, 100, false)
	script := `CREATE TABLE orders (customer_id STRING, amount DECIMAL(12, 2), occurred_at TIMESTAMP(3))
WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '` + b.addr + `',
  'scan.startup.mode' = 'earliest-offset', 'format' = 'json');
SELECT customer_id, amount FROM orders;
`
	var out lockedBuffer
	cmd := exec.Command(sluiceBin, "sql", "-m", c.rest(), "-e", script)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	testwait.Eventually(t, 60*time.Second, "the result's first rows", func() bool { return strings.Count(out.String(), "+I[") >= 100 })
	cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("sluice sql did not end after Ctrl-C:\n%s", out.String())
	}
	testwait.Eventually(t, 30*time.Second, "the query's job cancelled", func() bool {
		o, _ := c.sluice("list", "-a", "-m", c.rest())
		return strings.Contains(o, "(CANCELED)")
	})
}

// lockedBuffer is an output buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// flinkDecimal is a DECIMAL of cents as Flink's json format writes it:
// Jackson's normalized BigDecimal (7.00 as 7, 5.50 as 5.5, 10.00 as 1E+1).
func flinkDecimal(cents int64) string {
	if cents == 0 {
		return "0"
	}
	v, scale := cents, 2
	for v%10 == 0 {
		v /= 10
		scale--
	}
	d := fmt.Sprint(v)
	if scale < 0 {
		m := d[:1]
		if len(d) > 1 {
			m += "." + d[1:]
		}
		return fmt.Sprintf("%sE+%d", m, len(d)-1-scale)
	}
	for len(d) <= scale {
		d = "0" + d
	}
	if scale == 0 {
		return d
	}
	return d[:len(d)-scale] + "." + d[len(d)-scale:]
}
