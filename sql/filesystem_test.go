package sql_test

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/sql"
	"github.com/twmb/franz-go/pkg/kgo"
)

// allTypes is a table's columns of every type the csv format holds.
const allTypes = `id INT, s STRING, b BOOLEAN, ti TINYINT, si SMALLINT, bi BIGINT, f FLOAT, d DOUBLE,
  dec DECIMAL(10, 2), dt DATE, tm TIME(3), ts TIMESTAMP(3), ltz TIMESTAMP_LTZ(3), bin BYTES`

// readRecords returns the first n records of topic (partition order).
func (b *broker) readRecords(t *testing.T, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	ctx := ctxT(t)
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records of %s", len(out), n, topic)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// CSV values of every type go through Kafka as Flink writes them:
// Jackson's quoting (a value with a character below ',' is quoted: a space,
// so timestamps are), DECIMAL with its trailing zeros stripped (100.00 is
// 1E+2), FLOAT and DOUBLE as Java prints them, BYTES in base64, TIME and
// TIMESTAMP with the fraction's trailing zeros dropped, NULL as the null
// literal. Jackson quotes a value with any character below the highest of
// the delimiter, the quote and the line feed, so with '|' every text is
// quoted (Jackson's loose quoting check, which Flink keeps).
func TestCSVKafkaRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name, opts string
		in, want   []string
	}{
		{"defaults", "", []string{
			`1,"hello, world",true,-8,300,9000000000,1.5,2.25,12.50,2024-01-02,10:11:12.500,2024-01-02 03:04:05.678,2024-01-02 03:04:05Z,aGk=`,
			`2,plain,FALSE,0,0,-1,1.0E10,-0.001,100.00,1970-01-01,00:00:00,"1970-01-01 00:00:00",1970-01-01 00:00:00.1Z,`,
			`3,"say ""hi""",yes, 7 ,-32768,0,0.1,1e300,-0.05,1999-12-31,23:59:59.999,1999-12-31 23:59:59.9,2000-01-01 00:00:00Z,/+/+`,
			`4,100%,true,1,1,1,3.4028235E38,NaN,0,2024-02-29,12:00,2024-02-29 12:00,2024-02-29 12:00:00Z,AA==`,
		}, []string{
			`1,"hello, world",true,-8,300,9000000000,1.5,2.25,12.5,2024-01-02,10:11:12.5,"2024-01-02 03:04:05.678","2024-01-02 03:04:05Z",aGk=`,
			`2,plain,false,0,0,-1,1.0E10,-0.001,1E+2,1970-01-01,00:00:00,"1970-01-01 00:00:00","1970-01-01 00:00:00.1Z",`,
			`3,"say ""hi""",false,7,-32768,0,0.1,1.0E300,-0.05,1999-12-31,23:59:59.999,"1999-12-31 23:59:59.9","2000-01-01 00:00:00Z","/+/+"`,
			`4,"100%",true,1,1,1,3.4028235E38,NaN,0,2024-02-29,12:00:00,"2024-02-29 12:00:00","2024-02-29 12:00:00Z",AA==`,
		}},
		{"null literal, delimiter, plain decimals", `, 'csv.null-literal' = 'n/a', 'csv.field-delimiter' = '|', 'csv.write-bigdecimal-in-scientific-notation' = 'false'`, []string{
			`1|n/a|n/a|n/a|n/a|n/a|n/a|n/a|n/a|n/a|n/a|n/a|n/a|n/a`,
			`2|a,b|true|1|2|3|4.0|5.0|100.00|2024-01-02|01:02:03|2024-01-02 01:02:03|2024-01-02 01:02:03Z|`,
		}, []string{
			`1|n/a|n/a|n/a|n/a|n/a|n/a|n/a|n/a|n/a|n/a|n/a|n/a|n/a`,
			`2|"a,b"|true|1|2|3|4.0|5.0|100|"2024-01-02"|"01:02:03"|"2024-01-02 01:02:03"|"2024-01-02 01:02:03Z"|`,
		}},
		{"quoting disabled", `, 'csv.disable-quote-character' = 'true', 'csv.field-delimiter' = '\t'`, []string{
			"1\t\"a b\"\ttrue\t1\t1\t1\t1.0\t1.0\t1\t2024-01-02\t01:02:03\t2024-01-02 01:02:03\t2024-01-02 01:02:03Z\tAA==",
		}, []string{
			"1\t\"a b\"\ttrue\t1\t1\t1\t1.0\t1.0\t1\t2024-01-02\t01:02:03\t2024-01-02 01:02:03\t2024-01-02 01:02:03Z\tAA==",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBroker(t)
			b.topic(t, "in", 1)
			b.topic(t, "out", 1)
			b.produce(t, "in", 0, tc.in...)
			script := fmt.Sprintf(`CREATE TABLE src (%s) WITH ('connector' = 'kafka', 'topic' = 'in', 'properties.bootstrap.servers' = '%s',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'csv'%s);
CREATE TABLE dst (%s) WITH ('connector' = 'kafka', 'topic' = 'out', 'properties.bootstrap.servers' = '%s', 'format' = 'csv'%s);
INSERT INTO dst SELECT * FROM src;`, allTypes, b.addr, tc.opts, allTypes, b.addr, tc.opts)
			job, _ := start(t, script, nil)
			if err := job.Wait(); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range b.readRecords(t, "out", len(tc.want)) {
				got = append(got, string(r.Value))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// The raw format: a STRING value as its UTF-8 bytes, a tombstone as NULL
// (and back), numbers as fixed-width binary in raw.endianness.
func TestRawKafkaRoundTrip(t *testing.T) {
	b := newBroker(t)
	for _, n := range []string{"s-in", "s-out", "n-in", "n-out"} {
		b.topic(t, n, 1)
	}
	recs := []*kgo.Record{
		{Topic: "s-in", Value: []byte("héllo, wörld")},
		{Topic: "s-in", Value: nil},
		{Topic: "s-in", Value: []byte{}},
		{Topic: "n-in", Value: []byte{0x01, 0x02, 0x00, 0x00}},
		{Topic: "n-in", Value: []byte{0xff, 0xff, 0xff, 0xff}},
	}
	if err := b.cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`CREATE TABLE s_in (v STRING) WITH ('connector' = 'kafka', 'topic' = 's-in', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'raw');
CREATE TABLE s_out (v STRING) WITH ('connector' = 'kafka', 'topic' = 's-out', 'properties.bootstrap.servers' = '%[1]s', 'format' = 'raw');
CREATE TABLE n_in (v INT) WITH ('connector' = 'kafka', 'topic' = 'n-in', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'raw', 'raw.endianness' = 'little-endian');
CREATE TABLE n_out (v BIGINT) WITH ('connector' = 'kafka', 'topic' = 'n-out', 'properties.bootstrap.servers' = '%[1]s', 'format' = 'raw');
INSERT INTO s_out SELECT v FROM s_in;
INSERT INTO n_out SELECT CAST(v AS BIGINT) + 1 FROM n_in;`, b.addr)
	jobs, err := sql.NewSession(sql.Options{}).ExecuteScript(ctxT(t), script)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if err := j.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, r := range b.readRecords(t, "s-out", 3) {
		if r.Value == nil {
			got = append(got, "<tombstone>")
		} else {
			got = append(got, fmt.Sprintf("%q", r.Value))
		}
	}
	if want := []string{`"héllo, wörld"`, "<tombstone>", `""`}; !slices.Equal(got, want) {
		t.Errorf("strings: %v, want %v", got, want)
	}
	got = nil
	for _, r := range b.readRecords(t, "n-out", 2) {
		got = append(got, hex.EncodeToString(r.Value))
	}
	// 0x00000201 + 1 and -1 + 1, big-endian BIGINT.
	if want := []string{"0000000000000202", "0000000000000000"}; !slices.Equal(got, want) {
		t.Errorf("numbers: %v, want %v", got, want)
	}
}

// writeFile writes a file atomically (a hidden temporary file renamed),
// so a monitoring source never sees half of it.
func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(p), ".tmp-"+filepath.Base(p))
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}

// committedLines are the lines of the committed part files under dir
// (not the hidden in-progress and pending ones), sorted.
func committedLines(t *testing.T, dir string) []string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if os.IsNotExist(err) {
			return nil // nothing committed yet
		}
		if err != nil {
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if l != "" {
				lines = append(lines, l)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return lines
}

// A bounded filesystem source reads every visible file under its path
// (subdirectories too; names starting with '.' or '_' are hidden) and
// the job ends, at any parallelism; csv, json and raw.
func TestFilesystemSourceBounded(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "csv", "a.csv"), "1,alice,10.50\n2,\"bob, jr\",0.05\n\n")
	writeFile(t, filepath.Join(dir, "csv", "sub", "b.csv"), "3,carol,7\r\n")
	writeFile(t, filepath.Join(dir, "csv", "_SUCCESS"), "")
	writeFile(t, filepath.Join(dir, "csv", ".part-x.inprogress"), "9,hidden,1\n")
	writeFile(t, filepath.Join(dir, "json", "a.json"), `{"id":1,"name":"alice","amount":10.5}`+"\n"+`{"id":2,"name":"bob","amount":null}`+"\n")
	writeFile(t, filepath.Join(dir, "raw.txt"), "one\n\nthree\n")
	for _, tc := range []struct {
		format, table string
		want          []string
	}{
		{"csv", "id INT, name STRING, amount DECIMAL(10, 2)", []string{"+I[1, alice, 10.50]", "+I[2, bob, jr, 0.05]", "+I[3, carol, 7.00]"}},
		{"json", "id INT, name STRING, amount DECIMAL(10, 2)", []string{"+I[1, alice, 10.50]", "+I[2, bob, NULL]"}},
		{"raw", "line STRING", []string{"+I[]", "+I[one]", "+I[three]"}},
	} {
		for _, par := range []string{"1", "3"} {
			t.Run(tc.format+" parallelism "+par, func(t *testing.T) {
				p := filepath.Join(dir, tc.format)
				if tc.format == "raw" {
					p = "file://" + filepath.Join(dir, "raw.txt")
				}
				script := fmt.Sprintf(`CREATE TABLE src (%s) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = '%s');
CREATE TABLE out (%s) WITH ('connector' = 'print');
INSERT INTO out SELECT * FROM src;`, tc.table, p, tc.format, tc.table)
				got := runPrintedSorted(t, script, map[string]string{"parallelism.default": par})
				if !slices.Equal(got, tc.want) {
					t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
				}
			})
		}
	}
}

// A filesystem sink writes part files committed at checkpoints: the
// committed files of a bounded job hold every row once, in the format's
// exact text.
func TestFilesystemSinkWithCheckpoints(t *testing.T) {
	for _, format := range []string{"csv", "json"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			script := fmt.Sprintf(`
CREATE TABLE gen (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '5000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '500');
CREATE TABLE out (id BIGINT, label STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3)) WITH ('connector' = 'filesystem',
  'path' = 'file://%s/out', 'format' = '%s', 'sink.rolling-policy.file-size' = '1kb');
INSERT INTO out SELECT id, CONCAT('n ', CAST(id AS STRING)), CAST(id AS DECIMAL(10, 2)) / 4, TO_TIMESTAMP_LTZ(id * 250, 3) FROM gen;
`, dir, format)
			cfg := map[string]string{
				"parallelism.default":              "2",
				"execution.checkpointing.interval": "50 ms",
				"execution.checkpointing.dir":      "file://" + dir + "/cp",
			}
			runPrintedSorted(t, script, cfg)
			got := committedLines(t, dir+"/out")
			var want []string
			for id := 1; id <= 500; id++ {
				ts := time.UnixMilli(int64(id) * 250).UTC()
				tsText := ts.Format("2006-01-02 15:04:05.999")
				// Both formats write Jackson's normalized BigDecimal (2.50 as 2.5, 30.00 as 3E+1).
				amount := javaStripped(int64(id) * 25)
				if format == "csv" {
					want = append(want, fmt.Sprintf(`%d,"n %d",%s,"%s"`, id, id, amount, tsText))
				} else {
					want = append(want, fmt.Sprintf(`{"id":%d,"label":"n %d","amount":%s,"ts":"%s"}`, id, id, amount, tsText))
				}
			}
			slices.Sort(want)
			if len(got) != len(want) {
				t.Fatalf("%d committed lines, want %d", len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("line %s, want %s", got[i], want[i])
				}
			}
			// The parts are directly under the path (a table without
			// partitions has no buckets).
			parts, _ := filepath.Glob(dir + "/out/part-*")
			if len(parts) < 3 {
				t.Errorf("%d part files; 1 kb parts over 2 subtasks should make more", len(parts))
			}
		})
	}
}

// javaStripped is a DECIMAL(_, 2) of unscaled cents as Flink's csv
// format writes it: BigDecimal.stripTrailingZeros().toString() (3000 is
// 3E+1, 2550 is 25.5).
func javaStripped(cents int64) string {
	scale := 2
	for cents != 0 && cents%10 == 0 {
		cents /= 10
		scale--
	}
	d := fmt.Sprint(cents)
	switch {
	case cents == 0:
		return "0"
	case scale > 0:
		d = strings.Repeat("0", max(0, scale-len(d)+1)) + d
		return d[:len(d)-scale] + "." + d[len(d)-scale:]
	case scale == 0:
		return d
	}
	m := d[:1]
	if len(d) > 1 {
		m += "." + d[1:]
	}
	return fmt.Sprintf("%sE+%d", m, len(d)-1-scale)
}

// A job into a filesystem sink stopped with a savepoint and restored at
// another parallelism commits every row exactly once.
func TestFilesystemSinkSavepointAndRestore(t *testing.T) {
	dir := t.TempDir()
	script := fmt.Sprintf(`
CREATE TABLE gen (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '2000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '3000');
CREATE TABLE out (id BIGINT) WITH ('connector' = 'filesystem', 'path' = '%s/out', 'format' = 'csv');
INSERT INTO out SELECT id FROM gen;
`, dir)
	cfg := map[string]string{
		"parallelism.default":              "2",
		"execution.checkpointing.interval": "50 ms",
		"execution.checkpointing.dir":      "file://" + dir + "/cp",
	}
	jobs, err := sql.NewSession(sql.Options{Config: cfg}).ExecuteScript(ctxT(t), script)
	if err != nil {
		t.Fatal(err)
	}
	job := jobs[0]
	t.Cleanup(func() { job.Cancel(); _ = job.Wait() })
	testwait.Eventually(t, 20*time.Second, "some rows committed", func() bool { return len(committedLines(t, dir+"/out")) > 100 })
	path, err := job.StopWithSavepoint("file://" + dir + "/sp")
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	cfg["parallelism.default"] = "3"
	runPrintedSorted(t, "SET 'execution.state-recovery.path' = '"+path+"';\n"+script, cfg)
	seen := map[string]int{}
	for _, l := range committedLines(t, dir+"/out") {
		seen[l]++
	}
	for id := 1; id <= 3000; id++ {
		if n := seen[fmt.Sprint(id)]; n != 1 {
			t.Errorf("id %d committed %d times, want once", id, n)
		}
	}
	if len(seen) != 3000 {
		t.Errorf("%d distinct lines committed, want 3000", len(seen))
	}
}

// With 'source.monitor-interval' the source keeps watching its path and
// reads files added later, each once.
func TestFilesystemMonitoredSource(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "in", "1.csv"), "1,a\n2,b\n")
	script := fmt.Sprintf(`CREATE TABLE src (id INT, name STRING) WITH ('connector' = 'filesystem', 'path' = '%s/in', 'format' = 'csv',
  'source.monitor-interval' = '20 ms');
CREATE TABLE out (id INT, name STRING) WITH ('connector' = 'print');
INSERT INTO out SELECT * FROM src;`, dir)
	out := &syncBuilder{}
	jobs, err := sql.NewSession(sql.Options{Config: map[string]string{"parallelism.default": "2"}, Stdout: out}).ExecuteScript(ctxT(t), script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jobs[0].Cancel(); _ = jobs[0].Wait() })
	testwait.Eventually(t, 20*time.Second, "the first file's rows", func() bool { return len(sortedRows(out.String())) == 2 })
	writeFile(t, filepath.Join(dir, "in", "later", "2.csv"), "3,c\n")
	testwait.Eventually(t, 20*time.Second, "the later file's row", func() bool { return len(sortedRows(out.String())) >= 3 })
	// Discoveries between the two files read nothing twice.
	writeFile(t, filepath.Join(dir, "in", "3.csv"), "4,d\n")
	testwait.Eventually(t, 20*time.Second, "the last file's row", func() bool { return strings.Contains(out.String(), "+I[4, d]") })
	if got, want := sortedRows(out.String()), []string{"+I[1, a]", "+I[2, b]", "+I[3, c]", "+I[4, d]"}; !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
}

// A malformed CSV record fails the job once naming where it is (the
// topic, partition and offset; the file and line) and the option that
// skips it; with csv.ignore-parse-errors it is skipped and counted, and a
// field that cannot be read is NULL and counted.
func TestMalformedCSV(t *testing.T) {
	restarts := "SET 'restart-strategy.type' = 'fixed-delay';\nSET 'restart-strategy.fixed-delay.attempts' = '100';\nSET 'restart-strategy.fixed-delay.delay' = '10 ms';\n"
	for _, ignore := range []bool{false, true} {
		t.Run(fmt.Sprintf("kafka ignore-parse-errors %v", ignore), func(t *testing.T) {
			b := newBroker(t)
			b.topic(t, "in", 2)
			b.produce(t, "in", 1, "1,a", `2,"unterminated`, "x,b", "3,c,extra", "4,d")
			script := restarts + fmt.Sprintf(`CREATE TABLE src (id INT, name STRING) WITH ('connector' = 'kafka', 'topic' = 'in',
  'properties.bootstrap.servers' = '%s', 'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'csv', 'csv.ignore-parse-errors' = '%v');
CREATE TABLE out (id INT, name STRING) WITH ('connector' = 'print');
INSERT INTO out SELECT * FROM src;`, b.addr, ignore)
			job, out := start(t, script, nil)
			err := job.Wait()
			if !ignore {
				if err == nil {
					t.Fatal("the job succeeded")
				}
				if job.Restarts() != 0 {
					t.Errorf("the job restarted %d times on a malformed record", job.Restarts())
				}
				for _, want := range []string{`topic "in" partition 1 at offset 1`, "missing closing quote", "'csv.ignore-parse-errors' = 'true'"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := sortedRows(out.String()), []string{"+I[1, a]", "+I[4, d]", "+I[NULL, b]"}; !slices.Equal(got, want) {
				t.Errorf("rows %v, want %v", got, want)
			}
			if m := job.Metrics(); m.SkippedRecords != 2 || m.NulledFields != 1 {
				t.Errorf("metrics %+v: want 2 skipped records and 1 nulled field", m)
			}
		})
		t.Run(fmt.Sprintf("filesystem ignore-parse-errors %v", ignore), func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "a.csv"), "1,a\n\n2,b\nx,c\n")
			script := restarts + fmt.Sprintf(`CREATE TABLE src (id INT, name STRING) WITH ('connector' = 'filesystem', 'path' = '%s',
  'format' = 'csv', 'csv.ignore-parse-errors' = '%v');
CREATE TABLE out (id INT, name STRING) WITH ('connector' = 'print');
INSERT INTO out SELECT * FROM src;`, dir, ignore)
			job, out := start(t, script, nil)
			err := job.Wait()
			if !ignore {
				if err == nil {
					t.Fatal("the job succeeded")
				}
				if job.Restarts() != 0 {
					t.Errorf("the job restarted %d times on a malformed record", job.Restarts())
				}
				for _, want := range []string{filepath.Join(dir, "a.csv") + " at byte 9: line 4:", "field 'id' (INT)", "'csv.ignore-parse-errors' = 'true'"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := sortedRows(out.String()), []string{"+I[1, a]", "+I[2, b]", "+I[NULL, c]"}; !slices.Equal(got, want) {
				t.Errorf("rows %v, want %v", got, want)
			}
			if m := job.Metrics(); m.NulledFields != 1 {
				t.Errorf("metrics %+v: want 1 nulled field", m)
			}
		})
	}
}

// Mistakes in filesystem, csv and raw tables are refused before anything
// runs, with Flink's option names.
func TestFilesystemOptionErrors(t *testing.T) {
	table := func(with string) string {
		return "CREATE TABLE fs (id INT, name STRING) WITH ('connector' = 'filesystem'" + with + ");\n" +
			"CREATE TABLE gen (id INT, name STRING) WITH ('connector' = 'datagen', 'number-of-rows' = '1');\n"
	}
	into := "INSERT INTO fs SELECT * FROM gen;"
	for _, tc := range []struct{ name, script, want string }{
		{"unknown option", table(", 'path' = '/tmp/x', 'format' = 'csv', 'sink.rolling-policy.file-sze' = '1mb'") + into,
			"unsupported option 'sink.rolling-policy.file-sze' for connector 'filesystem'; did you mean 'sink.rolling-policy.file-size'?"},
		{"unknown csv option", table(", 'path' = '/tmp/x', 'format' = 'csv', 'csv.field-delimeter' = ';'") + into,
			"unsupported option 'csv.field-delimeter' for connector 'filesystem'; did you mean 'csv.field-delimiter'?"},
		{"missing path", table(", 'format' = 'csv'") + into,
			"table fs: connector 'filesystem' is missing required option(s) 'path'"},
		{"missing format", table(", 'path' = '/tmp/x'") + into,
			"table fs: connector 'filesystem' is missing required option(s) 'format'"},
		{"unknown format", table(", 'path' = '/tmp/x', 'format' = 'parquet'") + into,
			"format 'parquet' is not supported by connector 'filesystem' (supported: csv, json, raw)"},
		{"raw with two columns", table(", 'path' = '/tmp/x', 'format' = 'raw'") + into,
			"the 'raw' format only supports a single physical column, but the schema has 2: id, name"},
		{"csv delimiter of two characters", table(", 'path' = '/tmp/x', 'format' = 'csv', 'csv.field-delimiter' = ';;'") + into,
			"option 'csv.field-delimiter' = ';;': must be a single character"},
		{"quote character with quoting disabled", table(", 'path' = '/tmp/x', 'format' = 'csv', 'csv.disable-quote-character' = 'true', 'csv.quote-character' = '\"'") + into,
			"format 'csv': option 'csv.quote-character' cannot be set when 'csv.disable-quote-character' is true"},
		{"bad rolling size", table(", 'path' = '/tmp/x', 'format' = 'csv', 'sink.rolling-policy.file-size' = 'big'") + into,
			"'sink.rolling-policy.file-size' = 'big' is not a positive memory size"},
		{"bad monitor interval", table(", 'path' = '/tmp/x', 'format' = 'csv', 'source.monitor-interval' = 'often'") +
			"CREATE TABLE p (id INT, name STRING) WITH ('connector' = 'blackhole');\nINSERT INTO p SELECT * FROM fs;",
			"'source.monitor-interval' = 'often' is not a positive duration"},
		{"partitions of a kafka table", "CREATE TABLE k (id INT, d STRING) PARTITIONED BY (d) WITH ('connector' = 'kafka', 'topic' = 't', " +
			"'properties.bootstrap.servers' = 'b:9092', 'format' = 'csv');",
			"table k: connector 'kafka' has no partitions (PARTITIONED BY is for 'filesystem' tables)"},
		{"unknown partition column", "CREATE TABLE p (id INT, name STRING) PARTITIONED BY (nme) WITH ('connector' = 'filesystem', " +
			"'path' = '/tmp/x', 'format' = 'csv');", "column 'nme' not found; did you mean 'name'?"},
		{"updating query", table(", 'path' = '/tmp/x', 'format' = 'csv'") + "INSERT INTO fs SELECT COUNT(*), name FROM gen GROUP BY name;",
			"Table sink 'default_catalog.default_database.fs' doesn't support consuming update changes which is produced by node GroupAggregate(groupBy=[name], select=[name, COUNT(*) AS EXPR$0]): connector 'filesystem' is append-only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sql.NewSession(sql.Options{}).ExecuteScript(ctxT(t), tc.script)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// A PARTITIONED BY table writes each row under Hive's col=value/
// directories (escaped; NULL or empty in partition.default-name) without
// its partition columns, and reads them back from the directories.
func TestFilesystemPartitions(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "in", "a.csv"), "1,2024-01-01,a\n2,2024-01-01,b/c\n3,2024-01-02,a\n4,2024-01-02,\n5,n/a,a\n")
	script := fmt.Sprintf(`
CREATE TABLE src (id INT, dt DATE, kind STRING) WITH ('connector' = 'filesystem', 'path' = '%[1]s/in', 'format' = 'csv',
  'csv.null-literal' = 'n/a');
CREATE TABLE parted (id INT, dt DATE, kind STRING) PARTITIONED BY (dt, kind) WITH ('connector' = 'filesystem',
  'path' = '%[1]s/out', 'format' = 'csv');
INSERT INTO parted SELECT * FROM src;`, dir)
	runPrintedSorted(t, script, nil)
	got := map[string]string{}
	err := filepath.WalkDir(dir+"/out", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir+"/out", filepath.Dir(p))
		got[rel] += string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"dt=2024-01-01/kind=a":                     "1\n",
		"dt=2024-01-01/kind=b%2Fc":                 "2\n",
		"dt=2024-01-02/kind=a":                     "3\n",
		"dt=2024-01-02/kind=__DEFAULT_PARTITION__": "4\n",
		"dt=__DEFAULT_PARTITION__/kind=a":          "5\n",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("partitions:\n%v\nwant:\n%v", got, want)
	}
	read := fmt.Sprintf(`
CREATE TABLE parted (id INT, dt DATE, kind STRING) PARTITIONED BY (dt, kind) WITH ('connector' = 'filesystem',
  'path' = '%s/out', 'format' = 'csv');
CREATE TABLE out (id INT, dt DATE, kind STRING) WITH ('connector' = 'print');
INSERT INTO out SELECT * FROM parted;`, dir)
	rows := runPrintedSorted(t, read, map[string]string{"parallelism.default": "2"})
	wantRows := []string{"+I[1, 2024-01-01, a]", "+I[2, 2024-01-01, b/c]", "+I[3, 2024-01-02, a]", "+I[4, 2024-01-02, NULL]", "+I[5, NULL, a]"}
	if !slices.Equal(rows, wantRows) {
		t.Errorf("rows read back:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(wantRows, "\n"))
	}
}

// A monitored filesystem source stopped with a savepoint and restored at
// another parallelism reads each file once: the files it finished are
// not read again, one it was in resumes at its offset, and a file added
// while it was stopped is read by the restored job.
func TestFilesystemSourceSavepointAndRestore(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for id := 1; id <= 20000; id++ {
		fmt.Fprintf(&b, "%d\n", id)
	}
	writeFile(t, filepath.Join(dir, "in", "big.csv"), b.String())
	writeFile(t, filepath.Join(dir, "in", "small.csv"), "20001\n20002\n")
	script := fmt.Sprintf(`
CREATE TABLE src (id BIGINT) WITH ('connector' = 'filesystem', 'path' = '%[1]s/in', 'format' = 'csv',
  'source.monitor-interval' = '20 ms');
CREATE TABLE out (id BIGINT) WITH ('connector' = 'filesystem', 'path' = '%[1]s/out', 'format' = 'csv');
INSERT INTO out SELECT id FROM src;
`, dir)
	cfg := map[string]string{
		"parallelism.default":              "2",
		"execution.checkpointing.interval": "20 ms",
		"execution.checkpointing.dir":      "file://" + dir + "/cp",
	}
	jobs, err := sql.NewSession(sql.Options{Config: cfg}).ExecuteScript(ctxT(t), script)
	if err != nil {
		t.Fatal(err)
	}
	job := jobs[0]
	t.Cleanup(func() { job.Cancel(); _ = job.Wait() })
	testwait.Eventually(t, 20*time.Second, "some rows committed", func() bool { return len(committedLines(t, dir+"/out")) > 0 })
	path, err := job.StopWithSavepoint("file://" + dir + "/sp")
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "in", "later.csv"), "20003\n")
	cfg["parallelism.default"] = "3"
	jobs, err = sql.NewSession(sql.Options{Config: cfg}).ExecuteScript(ctxT(t), "SET 'execution.state-recovery.path' = '"+path+"';\n"+script)
	if err != nil {
		t.Fatal(err)
	}
	restored := jobs[0]
	t.Cleanup(func() { restored.Cancel(); _ = restored.Wait() })
	testwait.Eventually(t, 30*time.Second, "every row committed", func() bool { return len(committedLines(t, dir+"/out")) >= 20003 })
	restored.Cancel()
	_ = restored.Wait()
	seen := map[string]int{}
	for _, l := range committedLines(t, dir+"/out") {
		seen[l]++
	}
	for id := 1; id <= 20003; id++ {
		if n := seen[fmt.Sprint(id)]; n != 1 {
			t.Errorf("id %d committed %d times, want once", id, n)
		}
	}
	if len(seen) != 20003 {
		t.Errorf("%d distinct lines committed, want 20003", len(seen))
	}
}

// csv and raw serve as key formats too: key.fields in the key's format,
// the rest in the value's.
func TestCSVAndRawKeyFormats(t *testing.T) {
	b := newBroker(t)
	b.topic(t, "in", 1)
	b.topic(t, "out", 1)
	recs := []*kgo.Record{
		{Topic: "in", Key: []byte("k1"), Value: []byte(`1,"a b"`)},
		{Topic: "in", Key: []byte("k2"), Value: []byte(`2,c`)},
	}
	if err := b.cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`CREATE TABLE src (k STRING, id INT, name STRING) WITH ('connector' = 'kafka', 'topic' = 'in',
  'properties.bootstrap.servers' = '%[1]s', 'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
  'key.format' = 'raw', 'key.fields' = 'k', 'value.format' = 'csv', 'value.fields-include' = 'EXCEPT_KEY');
CREATE TABLE dst (id INT, k STRING, name STRING) WITH ('connector' = 'kafka', 'topic' = 'out', 'properties.bootstrap.servers' = '%[1]s',
  'key.format' = 'csv', 'key.fields' = 'id;k', 'key.csv.field-delimiter' = ';', 'value.format' = 'csv');
INSERT INTO dst SELECT id, k, UPPER(name) FROM src;`, b.addr)
	job, _ := start(t, script, nil)
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range b.readRecords(t, "out", 2) {
		got = append(got, string(r.Key)+" | "+string(r.Value))
	}
	// With ';' (above the digits) Jackson quotes any text holding a digit.
	if want := []string{`1;"k1" | 1,k1,"A B"`, `2;"k2" | 2,k2,C`}; !slices.Equal(got, want) {
		t.Errorf("records %q, want %q", got, want)
	}
}
