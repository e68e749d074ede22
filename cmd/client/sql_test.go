package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestSQL(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders", "totals"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, v := range []string{
		`{"order_id":"o1","customer_id":"c1","amount":10.5,"occurred_at":"2024-01-01 10:00:05"}`,
		`{"order_id":"o2","customer_id":"c1","amount":2.25,"occurred_at":"2024-01-01 10:00:40"}`,
		`{"order_id":"o3","customer_id":"c2","amount":1,"occurred_at":"2024-01-01 10:01:00"}`,
	} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// A bounded scan: the job ends at the end of the topic, and the end of
	// input fires every window.
	script := `
CREATE TABLE orders (order_id STRING, customer_id STRING, amount DECIMAL(12, 2),
  occurred_at TIMESTAMP(3), WATERMARK FOR occurred_at AS occurred_at - INTERVAL '10' SECOND
) WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '` + addr + `',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json');
CREATE TABLE totals (customer_id STRING, window_start TIMESTAMP(3), n BIGINT, total DECIMAL(18, 2))
WITH ('connector' = 'kafka', 'topic' = 'totals', 'properties.bootstrap.servers' = '` + addr + `', 'format' = 'json');
INSERT INTO totals SELECT customer_id, window_start, COUNT(*), SUM(amount)
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(occurred_at), INTERVAL '1' MINUTE))
GROUP BY customer_id, window_start, window_end;
`
	path := filepath.Join(t.TempDir(), "script.sql")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	r := sluice(t, Cluster{}, "sql", "-f", path)
	if r.code != 0 {
		t.Fatalf("sluice sql -f:\n%s", r)
	}
	if !regexp.MustCompile(`Job ID: \S+\n`).MatchString(r.stdout) {
		t.Errorf("no job id printed:\n%s", r)
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("totals"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var got []string
	for len(got) < 2 && ctx.Err() == nil {
		rd.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	want := map[string]bool{
		`{"customer_id":"c1","window_start":"2024-01-01 10:00:00","n":2,"total":12.75}`: true,
		`{"customer_id":"c2","window_start":"2024-01-01 10:01:00","n":1,"total":1}`:     true,
	}
	if len(got) != 2 || !want[got[0]] || !want[got[1]] || got[0] == got[1] {
		t.Errorf("totals: %q, want the two of %v", got, want)
	}

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			code int
			want string
		}{
			{[]string{"sql", "-e", "SELEC 1"}, 1, "line 1, column 1: unexpected \"SELEC\""},
			{[]string{"sql", "-e", "CREATE TABLE t (a INT) WITH ('connector' = 'kafka', 'topic' = 't', 'format' = 'json')"}, 1,
				"missing required option(s) 'properties.bootstrap.servers'"},
			{[]string{"sql", "-f", "x.sql", "-e", "SET 'a' = 'b'"}, 2, "not both"},
		} {
			r := sluice(t, Cluster{}, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("%q: want exit %d and %q:\n%s", tc.args, tc.code, tc.want, r)
			}
		}
		r := sluice(t, Cluster{}, "sql", "-e", "SELECT a FROM t WHERE")
		if !strings.Contains(r.stderr, "\n  SELECT a FROM t WHERE\n                       ^") {
			t.Errorf("no caret:\n%s", r)
		}
	})
}

// A SELECT prints its result as a changelog (+I, -U, +U rows).
func TestSQLSelect(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, v := range []string{`{"customer_id":"c1","amount":1}`, `{"customer_id":"c1","amount":2.5}`} {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	r := sluice(t, Cluster{}, "sql", "-e", `CREATE TABLE orders (customer_id STRING, amount DECIMAL(12, 2))
WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '`+addr+`', 'format' = 'json',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset');
SELECT customer_id, SUM(amount) AS total FROM orders GROUP BY customer_id`)
	want := "+I[c1, 1.00]\n-U[c1, 1.00]\n+U[c1, 3.50]\n"
	if r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Errorf("want %q in the output:\n%s", want, r)
	}
}

// Without -f or -e the statements come from standard input, one session
// for all: a mistake is reported and the next statement runs.
func TestSQLFromStandardInput(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte(`{"customer_id":"c1","amount":1}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	in := `CREATE TABLE orders (customer_id STRING, amount DECIMAL(12, 2))
WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '` + addr + `', 'format' = 'json',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset');
SELECT custmer_id FROM orders;
SELECT customer_id, amount * 2 FROM orders;
`
	var out, errb bytes.Buffer
	code := runMain([]string{"sluice", "sql"}, strings.NewReader(in), &out, &errb, Cluster{})
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"[ERROR] line 1, column 8: column 'custmer_id' not found; did you mean 'customer_id'?", "+I[c1, 2.00]"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in the output:\n%s", want, out.String())
		}
	}
}

// sluice sql -f runs a script from a directory of CSV files into a
// filesystem sink: the job ends with the input, and its part files hold
// the query's rows in the sink's format.
func TestSQLFilesystem(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	if err := os.MkdirAll(filepath.Join(in, "2024"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"a.csv":      "o1,c1,10.50\no2,c2,2.25\n",
		"2024/b.csv": "o3,c1,7\n",
	} {
		if err := os.WriteFile(filepath.Join(in, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := `
CREATE TABLE orders (order_id STRING, customer_id STRING, amount DECIMAL(12, 2))
WITH ('connector' = 'filesystem', 'path' = '` + in + `', 'format' = 'csv');
CREATE TABLE big (order_id STRING, amount DECIMAL(12, 2), note STRING)
WITH ('connector' = 'filesystem', 'path' = 'file://` + dir + `/out', 'format' = 'json');
INSERT INTO big SELECT order_id, amount * 2, CONCAT(customer_id, ' x') FROM orders WHERE amount > 5;
`
	path := filepath.Join(dir, "script.sql")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	r := sluice(t, Cluster{}, "sql", "-f", path)
	if r.code != 0 {
		t.Fatalf("sluice sql -f:\n%s", r)
	}
	parts, err := filepath.Glob(filepath.Join(dir, "out", "part-*"))
	if err != nil || len(parts) == 0 {
		t.Fatalf("no part files in %s (%v):\n%s", filepath.Join(dir, "out"), err, r)
	}
	var lines []string
	for _, p := range parts {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")...)
	}
	slices.Sort(lines)
	want := []string{`{"order_id":"o1","amount":21,"note":"c1 x"}`, `{"order_id":"o3","amount":14,"note":"c1 x"}`}
	if !slices.Equal(lines, want) {
		t.Errorf("part files hold:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// sluice sql registers hdfs:// for the embedded engine: a filesystem
// table on a NameNode that is not there fails naming it, not the scheme.
func TestSQLHDFSPath(t *testing.T) {
	r := sluice(t, Cluster{}, "sql", "-e", `CREATE TABLE t (a STRING) WITH ('connector' = 'filesystem', 'path' = 'hdfs://127.0.0.1:1/in', 'format' = 'raw');
CREATE TABLE p (a STRING) WITH ('connector' = 'print');
INSERT INTO p SELECT a FROM t;`)
	if r.code != 1 || !strings.Contains(r.stderr, `'path' = 'hdfs://127.0.0.1:1/in'`) || !strings.Contains(r.stderr, "hdfs: connecting to [127.0.0.1:1]") {
		t.Errorf("want exit 1 and the NameNode named in the error:\n%s", r)
	}
}

// A script for a cluster target is checked in the client, and nothing is
// submitted, when the target is unknown, no JobManager answers at the
// address (rest.address unset: localhost), the script does not plan (at
// its line and column) or holds a SELECT in yarn-application mode, which
// has no client to show its result to.
func TestSQLClusterTargetErrors(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "bad.sql")
	if err := os.WriteFile(script, []byte("CREATE TABLE t (a INT) WITH ('connector' = 'datagen');\nINSERT INTO t SELECT b FROM t;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const table = "CREATE TABLE t (a INT) WITH ('connector' = 'datagen', 'number-of-rows' = '1');\n"
	free := "127.0.0.1:" + strconv.Itoa(freePort(t))
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string // in stderr
	}{
		{"unknown target", []string{"sql", "-t", "kubernetes-session", "-e", table}, 2,
			[]string{`--target "kubernetes-session" is not a target; use one of local, remote, yarn-session, yarn-application`}},
		{"unknown execution.target", []string{"sql", "-D", "execution.target=cluster", "-e", table}, 2,
			[]string{`execution.target: invalid value "cluster": must be one of local, remote, yarn-session, yarn-application`}},
		{"jobmanager with yarn-session", []string{"sql", "-t", "yarn-session", "-m", free, "-e", table}, 2,
			[]string{"--jobmanager names a standalone cluster, but --target is yarn-session"}},
		{"nothing at rest.address", []string{"sql", "-t", "remote", "-D", "rest.port=" + strings.TrimPrefix(free, "127.0.0.1:"), "-e", table + "INSERT INTO t SELECT a FROM t;"}, 1,
			[]string{"no JobManager answers at localhost:" + strings.TrimPrefix(free, "127.0.0.1:"), "nothing was submitted", "rest.address"}},
		{"script that does not plan", []string{"sql", "-m", free, "-f", script}, 1,
			[]string{script + ": line 2, column 22: column 'b' not found", "\n  INSERT INTO t SELECT b FROM t;\n                       ^"}},
		{"SELECT in yarn-application mode", []string{"sql", "-t", "yarn-application", "-e", table + "SELECT a FROM t;"}, 1,
			[]string{"line 2, column 1: a SELECT's result is shown by the targets local, remote and yarn-session"}},
		{"SELECT with nothing at the address", []string{"sql", "-m", free, "-e", table + "SELECT a FROM t;"}, 1,
			[]string{"no JobManager answers at " + free, "nothing was submitted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sluice(t, Cluster{}, tc.args...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d:\n%s", r.code, tc.code, r)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("no %q in stderr:\n%s", w, r)
				}
			}
			if strings.Contains(r.stdout, "Job ID") {
				t.Errorf("a job was submitted:\n%s", r)
			}
		})
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
