// Package tracetest replays data-driven traces of a state machine: files
// in testdata/ that list events and, indented under each, the output the
// machine gave for it. Run the tests with -rewrite to regenerate the files
// from the actual output and review the change as a diff.
//
// A trace is lines of text. Empty lines and lines starting with "#" are
// kept as they are. Any other line that does not start with a space is an
// event; the lines under it that start with two spaces are its expected
// output, one line each (none when the event has no output).
package tracetest

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the trace files in testdata with the actual output")

// Replay runs the trace in path. For each event it calls do with the
// event's fields (split at white space) and compares the output do returns
// (lines separated by "\n"; "" for none) with the lines under the event.
// An error from do means the event is malformed and fails the test at once.
func Replay(t testing.TB, path string, do func(fields []string) (string, error)) {
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
		if strings.HasPrefix(line, " ") {
			t.Fatalf("%s:%d: output %q without an event", path, i+1, line)
		}
		at := i + 1
		var want []string
		for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "  ") {
			i++
			want = append(want, strings.TrimPrefix(lines[i], "  "))
		}
		got, err := do(strings.Fields(line))
		if err != nil {
			t.Fatalf("%s:%d: %q: %v", path, at, line, err)
		}
		var gotLines []string
		if got != "" {
			gotLines = strings.Split(got, "\n")
		}
		if strings.Join(gotLines, "\n") != strings.Join(want, "\n") && !*rewrite {
			t.Errorf("%s:%d: %s\n  got:\n    %s\n  want:\n    %s", path, at, line,
				strings.Join(gotLines, "\n    "), strings.Join(want, "\n    "))
		}
		out.WriteString(line + "\n")
		for _, l := range gotLines {
			out.WriteString("  " + l + "\n")
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
