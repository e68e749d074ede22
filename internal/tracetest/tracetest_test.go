package tracetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// echo answers "say A B" with the lines A and B, "quiet" with nothing.
func echo(f []string) (string, error) {
	switch f[0] {
	case "say":
		return strings.Join(f[1:], "\n"), nil
	case "quiet":
		return "", nil
	}
	return "", fmt.Errorf("unknown event %q", f[0])
}

func write(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "trace.txt")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const good = `# a comment
say a b
  a
  b

quiet
say c
  c
`

func TestReplayMatches(t *testing.T) {
	r := &recorder{TB: t}
	Replay(r, write(t, good), echo)
	if len(r.errors) != 0 {
		t.Fatalf("errors: %q", r.errors)
	}
}

func TestReplayReportsDifferences(t *testing.T) {
	r := &recorder{TB: t}
	Replay(r, write(t, "say a\n  b\nquiet\n  x\n"), echo)
	if len(r.errors) != 2 || !strings.Contains(r.errors[0], ":1: say a") || !strings.Contains(r.errors[1], ":3: quiet") {
		t.Fatalf("errors: %q", r.errors)
	}
}

func TestRewrite(t *testing.T) {
	*rewrite = true
	defer func() { *rewrite = false }()
	p := write(t, "# kept\nsay a b\n  stale\nquiet\n  stale\n\nsay c\n")
	r := &recorder{TB: t}
	Replay(r, p, echo)
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := "# kept\nsay a b\n  a\n  b\nquiet\n\nsay c\n  c\n"; string(got) != want || len(r.errors) != 0 {
		t.Fatalf("rewritten to %q (errors %q), want %q", got, r.errors, want)
	}
}
