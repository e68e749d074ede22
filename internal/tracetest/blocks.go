package tracetest

import (
	"os"
	"strings"
	"testing"
)

// Block is one case of a block file: a directive line (its fields), the
// input lines under it up to "----", and the expected output after it up
// to an empty line.
type Block struct {
	// Line is the directive's line number in the file.
	Line   int
	Fields []string
	Input  string
}

// ReplayBlocks runs the block file path, a data-driven corpus whose cases
// span several lines (SQL statements and their plans):
//
//	# comments and empty lines between blocks are kept
//	parse
//	SELECT a FROM t
//	----
//	(select ...)
//
// For each block it calls do and compares what it returns with the
// expected output; -rewrite writes the actual output back.
func ReplayBlocks(t testing.TB, path string, do func(b Block) string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var out strings.Builder
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			out.WriteString(line + "\n")
			continue
		}
		b := Block{Line: i + 1, Fields: strings.Fields(line)}
		var in []string
		for i++; i < len(lines) && lines[i] != "----"; i++ {
			in = append(in, lines[i])
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: block %q has no ---- line", path, b.Line, line)
		}
		var want []string
		for i+1 < len(lines) && lines[i+1] != "" {
			i++
			want = append(want, lines[i])
		}
		b.Input = strings.Join(in, "\n")
		got := strings.TrimRight(do(b), "\n")
		if got != strings.Join(want, "\n") && !*rewrite {
			t.Errorf("%s:%d: %s\n%s\n  got:\n%s\n  want:\n%s", path, b.Line, line, b.Input, got, strings.Join(want, "\n"))
		}
		out.WriteString(line + "\n" + b.Input + "\n----\n")
		if got != "" {
			out.WriteString(got + "\n")
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
