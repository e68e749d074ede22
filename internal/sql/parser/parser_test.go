package parser_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluice/sluice/internal/sql/parser"
	"github.com/sluice/sluice/internal/tracetest"
)

// TestParse replays testdata/parse.txt: each block is a script and its
// statements as S-expressions, or the error (line, column, caret).
func TestParse(t *testing.T) {
	tracetest.ReplayBlocks(t, "testdata/parse.txt", func(b tracetest.Block) string {
		stmts, err := parser.Parse(b.Input)
		if err != nil {
			if !errors.Is(err, parser.ErrSyntax) {
				t.Errorf("line %d: error %v does not wrap ErrSyntax", b.Line, err)
			}
			return "error: " + err.Error()
		}
		var out []string
		for _, s := range stmts {
			out = append(out, parser.Dump(s))
		}
		return strings.Join(out, "\n")
	})
}

func TestErrorCaret(t *testing.T) {
	for _, tc := range []struct {
		src, want string
	}{
		{"SELECT a FROM t WHERE", "line 1, column 22: unexpected end of input, expected an expression\n  SELECT a FROM t WHERE\n                       ^"},
		// FRM is b's alias; the tab prints as a space, so the caret stays under t.
		{"SELECT a,\n\tb FRM t", "line 2, column 8: unexpected \"t\", expected ',' or FROM\n   b FRM t\n         ^"},
		{"SELECT 'abc", "line 1, column 8: unterminated string literal\n  SELECT 'abc\n         ^"},
	} {
		_, err := parser.Parse(tc.src)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: got\n%v\nwant\n%s", tc.src, err, tc.want)
		}
		var pe *parser.Error
		if !errors.As(err, &pe) {
			t.Errorf("%q: %T is not a *parser.Error", tc.src, err)
		}
	}
}

func TestNearest(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cands []string
		want  string
	}{
		{"custmer_id", []string{"order_id", "customer_id", "amount"}, "customer_id"},
		{"AMOUNT", []string{"order_id", "amount"}, "amount"},
		{"zzz", []string{"order_id", "amount"}, ""},
	} {
		if got := parser.Nearest(tc.name, tc.cands); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("SELECT a, SUM(b) FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY a, window_start")
	f.Add("CREATE TABLE t (a INT, WATERMARK FOR a AS a - INTERVAL '1' SECOND) WITH ('k'='v');")
	f.Add("SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY a, b ORDER BY ts DESC, c) AS rn FROM t) WHERE rn <= 3")
	f.Add("SELECT k, COUNT(*) FROM TABLE(SESSION(TABLE t PARTITION BY (k, j), DESCRIPTOR(ts), INTERVAL '5' MINUTE)) GROUP BY k, j, window_start, window_end")
	f.Add("SELECT o.a, c.* FROM t AS o LEFT OUTER JOIN (SELECT * FROM u) c ON o.a = c.a, v WHERE v.b = o.b")
	f.Fuzz(func(t *testing.T, src string) {
		stmts, err := parser.Parse(src)
		if err != nil {
			var pe *parser.Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *parser.Error", err)
			}
			return
		}
		for _, s := range stmts {
			_ = parser.Dump(s)
		}
	})
}
