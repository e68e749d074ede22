package checkpoint

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata with the actual output")

// replay runs the trace in path: each line that is neither empty nor a
// comment is "event -> output", or just "event" for a line expected to
// have no output. do carries out the event and returns the
// output; an error means the line is malformed. With -rewrite the file is
// regenerated from the actual outputs, to be reviewed as a diff.
func replay(t *testing.T, path string, do func(fields []string) (string, error)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			out.WriteString(line + "\n")
			continue
		}
		event, want, arrow := strings.Cut(line, " ->")
		want = strings.TrimPrefix(want, " ")
		got, err := do(strings.Fields(event))
		if err != nil {
			t.Fatalf("%s:%d: %q: %v", path, i+1, line, err)
		}
		if got != want && !*rewrite {
			t.Errorf("%s:%d: %s\n  got:  %s\n  want: %s", path, i+1, event, got, want)
		}
		switch {
		case got != "":
			out.WriteString(event + " -> " + got + "\n")
		case arrow:
			out.WriteString(event + " ->\n")
		default: // a setup line without output, e.g. "new ..."
			out.WriteString(event + "\n")
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func parseTask(s string) (TaskID, error) {
	v, st, ok := strings.Cut(s, ".")
	if !ok {
		return TaskID{}, fmt.Errorf("task %q: want vertex.subtask", s)
	}
	vi, err1 := strconv.Atoi(v)
	si, err2 := strconv.Atoi(st)
	if err := errors.Join(err1, err2); err != nil {
		return TaskID{}, fmt.Errorf("task %q: %w", s, err)
	}
	return TaskID{vi, si}, nil
}

func parseTasks(s string) ([]TaskID, error) {
	var ts []TaskID
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		t, err := parseTask(f)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	return ts, nil
}

func parseKind(s string) (Kind, error) {
	for k := Checkpoint; k <= FullCheckpoint; k++ {
		if k.String() == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown kind %q", s)
}

func joinTasks(ts []TaskID) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.String()
	}
	return strings.Join(s, ",")
}

func joinInts[T ~int | ~int64](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatInt(int64(x), 10)
	}
	return strings.Join(s, ",")
}

func sortedKeys[K comparable, V any](m map[K]V, cmp func(a, b K) int) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, cmp)
	return ks
}
