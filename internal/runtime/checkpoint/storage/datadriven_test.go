package storage_test

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

// Data-driven tests: a file in testdata/ holds cases
//
//	# comment
//	command arg key=value
//	----
//	expected output (no blank lines)
//	<blank line>
//
// run in order against one state. go test -run TestDataDriven -rewrite
// rewrites the expected outputs; review the diff.
var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of data-driven tests in testdata/")

type ddCase struct {
	line int
	cmd  string
	args []string
	want string
}

func parseDataDriven(t *testing.T, file string) (cases []ddCase, comments map[int][]string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	comments = make(map[int][]string) // lines before case i
	sc := bufio.NewScanner(f)
	n := 0
	var pending []string
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			pending = append(pending, line)
			continue
		}
		c := ddCase{line: n}
		before := pending
		pending = nil
		fields := strings.Fields(line)
		c.cmd, c.args = fields[0], fields[1:]
		if !sc.Scan() || sc.Text() != "----" {
			t.Fatalf("%s:%d: want ---- after the command", file, n)
		}
		n++
		var out []string
		for sc.Scan() {
			n++
			if sc.Text() == "" {
				pending = append(pending, "") // the separator, kept on rewrite
				break
			}
			out = append(out, sc.Text())
		}
		c.want = strings.Join(out, "\n")
		comments[len(cases)] = before
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	comments[len(cases)] = pending
	return cases, comments
}

// runDataDriven runs the cases of file through do. With -rewrite and
// mayRewrite, it writes the outputs back instead of comparing.
func runDataDriven(t *testing.T, file string, mayRewrite bool, do func(t *testing.T, cmd string, args []string) string) {
	t.Helper()
	cases, comments := parseDataDriven(t, file)
	var b strings.Builder
	for i, c := range cases {
		for _, l := range comments[i] {
			b.WriteString(l + "\n")
		}
		got := strings.TrimRight(do(t, c.cmd, c.args), "\n")
		if strings.Contains(got, "\n\n") {
			t.Fatalf("%s:%d: output holds a blank line: %q", file, c.line, got)
		}
		fmt.Fprintf(&b, "%s\n----\n%s\n", strings.Join(append([]string{c.cmd}, c.args...), " "), got)
		if got != c.want && !(*rewrite && mayRewrite) {
			t.Errorf("%s:%d: %s %s\ngot:\n%s\nwant:\n%s", file, c.line, c.cmd, strings.Join(c.args, " "), got, c.want)
		}
	}
	for _, l := range comments[len(cases)] {
		b.WriteString(l + "\n")
	}
	if *rewrite && mayRewrite {
		if err := os.WriteFile(file, []byte(strings.TrimRight(b.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// kv splits key=value arguments; a bare word maps to "".
func kv(args []string) map[string]string {
	m := make(map[string]string)
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		m[k] = v
	}
	return m
}

func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
