package sql_test

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/sql"
)

// runPrinted runs a script whose one INSERT writes to a 'print' table and
// ends (a bounded scan), and returns the printed rows, sorted.
func runPrintedSorted(t *testing.T, script string, config map[string]string) []string {
	t.Helper()
	var out strings.Builder
	jobs, err := sql.NewSession(sql.Options{Config: config, Stdout: &out}).ExecuteScript(ctxT(t), script)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 {
		t.Fatalf("%d jobs, want 1", len(jobs))
	}
	if err := jobs[0].Wait(); err != nil {
		t.Fatal(err)
	}
	return sortedRows(out.String())
}

// sortedRows are the rows a print table printed (not the client's own
// lines), without their subtask prefix ("2> "), sorted.
func sortedRows(printed string) []string {
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(printed), "\n") {
		if j := strings.Index(l, "> "); j >= 0 {
			l = l[j+2:]
		}
		if len(l) >= 3 && strings.Contains("+I[-U[+U[-D[", l[:3]) {
			rows = append(rows, l)
		}
	}
	slices.Sort(rows)
	return rows
}

// A sequence column bounds a datagen table: its rows, windowed in event
// time on a computed column, give the same totals at any parallelism.
func TestDatagenSequenceWindows(t *testing.T) {
	script := `
CREATE TABLE gen (
  id BIGINT,
  ts AS TO_TIMESTAMP_LTZ(id * 1000, 3),
  WATERMARK FOR ts AS ts
) WITH ('connector' = 'datagen', 'rows-per-second' = '100000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '149');
CREATE TABLE out (n BIGINT, lo BIGINT, hi BIGINT, total BIGINT) WITH ('connector' = 'print');
INSERT INTO out SELECT COUNT(*), MIN(id), MAX(id), SUM(id)
FROM TABLE(TUMBLE(TABLE gen, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end;
`
	want := []string{"+I[30, 120, 149, 4035]", "+I[60, 0, 59, 1770]", "+I[60, 60, 119, 5370]"}
	for _, p := range []string{"1", "2", "3"} {
		t.Run("parallelism "+p, func(t *testing.T) {
			got := runPrintedSorted(t, script, map[string]string{"parallelism.default": p})
			if !slices.Equal(got, want) {
				t.Errorf("printed %q, want %q", got, want)
			}
		})
	}
}

// Random columns stay in their ranges and lengths, NULLs come at their
// rate, and a row is a function of its index: the same rows at any
// parallelism.
func TestDatagenRandomColumns(t *testing.T) {
	script := `
CREATE TABLE gen (
  user_id INT, amount DECIMAL(6, 2), score DOUBLE, name STRING, tag VARCHAR(8), flag BOOLEAN, gone STRING
) WITH ('connector' = 'datagen', 'number-of-rows' = '300', 'rows-per-second' = '100000',
  'fields.user_id.min' = '1', 'fields.user_id.max' = '3',
  'fields.amount.min' = '1.5', 'fields.amount.max' = '2',
  'fields.score.min' = '-1', 'fields.score.max' = '1',
  'fields.name.length' = '5',
  'fields.tag.var-len' = 'true',
  'fields.gone.null-rate' = '1');
CREATE TABLE out (user_id INT, amount DECIMAL(6, 2), score DOUBLE, name STRING, tag VARCHAR(8), flag BOOLEAN, gone STRING)
WITH ('connector' = 'print');
INSERT INTO out SELECT * FROM gen;
`
	row := regexp.MustCompile(`^\+I\[(\d+), (\d+\.\d\d), (-?[0-9.E-]+), ([0-9a-f]{5}), ([0-9a-f]{1,8}), (TRUE|FALSE), NULL\]$`)
	one := runPrintedSorted(t, script, map[string]string{"parallelism.default": "1"})
	if len(one) != 300 {
		t.Fatalf("%d rows, want 300", len(one))
	}
	users, flags := map[string]int{}, map[string]int{}
	for _, l := range one {
		m := row.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("row %q is not in its columns' ranges", l)
		}
		users[m[1]]++
		flags[m[6]]++
		if a, _ := strconv.ParseFloat(m[2], 64); a < 1.5 || a > 2 {
			t.Errorf("amount %s outside [1.5, 2]", m[2])
		}
		if s, err := strconv.ParseFloat(m[3], 64); err != nil || s < -1 || s > 1 {
			t.Errorf("score %s outside [-1, 1]", m[3])
		}
	}
	if len(users) != 3 || users["1"] == 0 || users["2"] == 0 || users["3"] == 0 {
		t.Errorf("user ids %v, want 1, 2 and 3", users)
	}
	if flags["TRUE"] == 0 || flags["FALSE"] == 0 {
		t.Errorf("flags %v, want both", flags)
	}
	three := runPrintedSorted(t, script, map[string]string{"parallelism.default": "3"})
	if !slices.Equal(one, three) {
		t.Errorf("the rows at parallelism 3 differ from those at 1")
	}
}

// An unbounded, rate-limited datagen job stopped with a savepoint and
// restored at another parallelism goes on where it stopped: every id once.
func TestDatagenSavepointAndRestore(t *testing.T) {
	dir := t.TempDir()
	script := `
CREATE TABLE gen (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '2000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '3000');
CREATE TABLE out (id BIGINT) WITH ('connector' = 'print');
INSERT INTO out SELECT id FROM gen;
`
	cfg := map[string]string{
		"parallelism.default":              "2",
		"execution.checkpointing.interval": "50 ms",
		"execution.checkpointing.dir":      "file://" + dir + "/cp",
	}
	out := &syncBuilder{}
	jobs, err := sql.NewSession(sql.Options{Config: cfg, Stdout: out}).ExecuteScript(ctxT(t), script)
	if err != nil {
		t.Fatal(err)
	}
	job := jobs[0]
	t.Cleanup(func() { job.Cancel(); _ = job.Wait() })
	testwait.Eventually(t, 20*time.Second, "some rows printed", func() bool { return strings.Count(out.String(), "\n") > 100 })
	path, err := job.StopWithSavepoint("file://" + dir + "/sp")
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	first := out.String()
	cfg["parallelism.default"] = "3"
	rest := runPrintedSorted(t, "SET 'execution.state-recovery.path' = '"+path+"';\n"+script, cfg)
	seen := map[string]int{}
	for _, l := range append(sortedRows(first), rest...) {
		seen[l]++
	}
	for id := 1; id <= 3000; id++ {
		if n := seen[fmt.Sprintf("+I[%d]", id)]; n != 1 {
			t.Errorf("id %d printed %d times, want once", id, n)
		}
	}
	if len(seen) != 3000 {
		t.Errorf("%d distinct rows printed, want 3000", len(seen))
	}
}

// Bad datagen options are refused at planning or at start, naming the
// option.
func TestDatagenErrors(t *testing.T) {
	for _, tc := range []struct{ with, want string }{
		{`'fields.idd.kind' = 'sequence'`, "unsupported option 'fields.idd.kind' for connector 'datagen'; did you mean 'fields.id.kind'?"},
		{`'fields.id.kind' = 'sequence', 'fields.id.start' = '1'`, "sequence column id needs 'fields.id.start' and 'fields.id.end'"},
		{`'fields.id.kind' = 'seq'`, "'fields.id.kind' = 'seq': want random or sequence"},
		{`'fields.id.min' = 'low'`, "'fields.id.min' = 'low' is not an integer"},
		{`'fields.id.min' = '5', 'fields.id.max' = '1'`, "'max' 1 is below 'min' 5"},
		{`'number-of-rows' = '-3'`, "'number-of-rows' = '-3' is not a number of rows"},
		{`'fields.id.null-rate' = '2'`, "'fields.id.null-rate' = '2': want a fraction between 0 and 1"},
	} {
		t.Run(tc.with, func(t *testing.T) {
			script := "CREATE TABLE gen (id INT) WITH ('connector' = 'datagen', " + tc.with + ");\n" +
				"CREATE TABLE out (id INT) WITH ('connector' = 'blackhole');\nINSERT INTO out SELECT id FROM gen;\n"
			_, err := sql.NewSession(sql.Options{}).ExecuteScript(ctxT(t), script)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// syncBuilder is a strings.Builder the test reads while a job writes it.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncBuilder) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuilder) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// A SELECT's result as Flink's client shows it, by
// sql-client.execution.result-mode: tableau prints each change in a table
// with its op, table prints the rows the changes leave.
func TestSelectResultModes(t *testing.T) {
	query := `
CREATE TABLE gen (id BIGINT, k AS id % 2) WITH ('connector' = 'datagen', 'rows-per-second' = '100000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '4');
SELECT k, COUNT(*) AS n FROM gen GROUP BY k;
`
	run := func(t *testing.T, mode, par string) string {
		t.Helper()
		var out strings.Builder
		jobs, err := sql.NewSession(sql.Options{Stdout: &out, Config: map[string]string{"parallelism.default": par}}).
			ExecuteScript(ctxT(t), "SET 'sql-client.execution.result-mode' = '"+mode+"';\n"+query)
		if err != nil {
			t.Fatal(err)
		}
		if err := jobs[0].Wait(); err != nil {
			t.Fatal(err)
		}
		return strings.TrimPrefix(out.String(), "[INFO] Execute statement succeeded.\n") // the SET's
	}
	tableau := `+----+----------------------+----------------------+
| op |                    k |                    n |
+----+----------------------+----------------------+
| +I |                    1 |                    1 |
| +I |                    0 |                    1 |
| -U |                    1 |                    1 |
| +U |                    1 |                    2 |
| -U |                    0 |                    1 |
| +U |                    0 |                    2 |
+----+----------------------+----------------------+
Received a total of 6 rows
`
	if got := run(t, "tableau", "1"); got != tableau {
		t.Errorf("tableau:\n%s\nwant:\n%s", got, tableau)
	}
	table := `+----------------------+----------------------+
|                    k |                    n |
+----------------------+----------------------+
|                    1 |                    2 |
|                    0 |                    2 |
+----------------------+----------------------+
2 rows in set (6 changes)
`
	if got := run(t, "table", "1"); got != table {
		t.Errorf("table:\n%s\nwant:\n%s", got, table)
	}
	// At parallelism 2 the keys' changes interleave in another order, but
	// each key's keep theirs: the same rows are left.
	got := run(t, "table", "2")
	rows := strings.Split(got, "\n")
	if len(rows) != 8 || !slices.Equal(sortedLines(rows[3:5]), sortedLines(strings.Split(table, "\n")[3:5])) || rows[6] != "2 rows in set (6 changes)" {
		t.Errorf("table at parallelism 2:\n%s", got)
	}
	_, err := sql.NewSession(sql.Options{}).ExecuteScript(ctxT(t), "SET 'sql-client.execution.result-mode' = 'grid';\n"+query)
	if err == nil || !strings.Contains(err.Error(), "'sql-client.execution.result-mode' = 'grid': want table, tableau or changelog") {
		t.Errorf("an unknown result mode: %v", err)
	}
}

func sortedLines(ls []string) []string {
	ls = slices.Clone(ls)
	slices.Sort(ls)
	return ls
}
