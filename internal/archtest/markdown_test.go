package archtest

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

var rewrite = flag.Bool("rewrite", false, "rewrite ARCHITECTURE.md's import rules from the table")

// The generated section of ARCHITECTURE.md lies between these lines.
const (
	beginMarker = "<!-- import rules: generated from internal/archtest/rules_test.go by `go test ./internal/archtest -rewrite`; edit the table, not this -->"
	endMarker   = "<!-- end of the generated import rules -->"
)

// TestArchitectureDoc checks that ARCHITECTURE.md states exactly the table;
// with -rewrite it rewrites the section from the table.
func TestArchitectureDoc(t *testing.T) {
	path := filepath.Join(loadModule(t).dir, "ARCHITECTURE.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := rules.markdown()
	got, err := replaceSection(doc, want)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if bytes.Equal(got, doc) {
		return
	}
	if *rewrite {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s does not state the import rules of the table; run go test ./internal/archtest -rewrite and review the diff.\nfirst difference:\n%s",
		path, firstDifference(string(doc), string(got)))
}

// replaceSection puts section between the markers of doc.
func replaceSection(doc []byte, section string) ([]byte, error) {
	before, rest, ok := bytes.Cut(doc, []byte(beginMarker+"\n"))
	if !ok {
		return nil, fmt.Errorf("no line %q", beginMarker)
	}
	_, after, ok := bytes.Cut(rest, []byte(endMarker+"\n"))
	if !ok {
		return nil, fmt.Errorf("no line %q after %q", endMarker, beginMarker)
	}
	return slices.Concat(before, []byte(beginMarker+"\n"), []byte(section), []byte(endMarker+"\n"), after), nil
}

func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d is\n\t%s\nthe table says\n\t%s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("the file has %d lines, the table's version %d", len(al), len(bl))
}

// markdown states the table in prose, wrapped at 100 columns.
func (t *table) markdown() string {
	var b strings.Builder
	para := func(text string) { b.WriteString(wrap(text, "", "")); b.WriteString("\n") }
	item := func(text string) { b.WriteString(wrap(text, "- ", "  ")) }

	para("Every package of the module has one rule, and imports directly only what its rule allows: " +
		"the packages of the module it lists, packages of the third-party modules it lists, and of the " +
		"standard library (what `go list std` lists) all of it, the set it names, or nothing. Test files may also " +
		"import the whole standard library, their own package, the shared test helpers (" + codeList(t.everyTest) + ") and what the rule allows tests. Every file counts: " +
		"non-test and test files (internal and external), without build tags and with every tag the module's " +
		"`//go:build` lines name (`integration`, …) at once, and files for " +
		"other systems (`GOOS=darwin`). `internal/archtest` fails on an import its rule does not allow, on a package " +
		"no rule covers, on a rule naming a package, module or standard-library package that does not exist, " +
		"and on an allowance no import needs, so a new or renamed package needs its rule and the rules state " +
		"exactly the edges there are. A rule covers one package, never a pattern. Paths are relative to the " +
		"module; in the lists, `p/...` is `p` and every package below it.")
	para("Sets of the standard library:")
	for _, g := range t.stdGroups {
		item(fmt.Sprintf("*%s* (%s): %s.", g.name, g.why, t.stdList(g.pkgs)))
	}
	b.WriteString("\n")
	para("The rules:")
	for _, r := range t.rules {
		text := fmt.Sprintf("%s: %s. Module: %s. Third-party: %s. Standard library: %s.",
			code(r.pkgs), r.why, orNone(codes(r.mod)), orNone(codes(r.ext)), t.stdList(r.std))
		if r.noClock {
			text += " Package `time` only for values: no wall clock, timer or sleep."
		}
		if len(r.mod)+len(r.ext)+len(r.std) == 0 {
			text = fmt.Sprintf("%s: %s. Non-test files: nothing.", code(r.pkgs), r.why)
		}
		if tests := slices.Concat(codes(r.testMod), codes(r.testExt)); len(tests) > 0 {
			text += " Tests also: " + strings.Join(tests, ", ") + "."
		}
		item(text)
	}
	b.WriteString("\n")
	para("Promises that follow from the rules, checked on their own over the imports of non-test files, " +
		"directly or not:")
	for _, p := range t.promises {
		item(fmt.Sprintf("%s never %s %s: %s.", join(codes(p.from), "and"), cond(len(p.from) == 1, "links", "link"),
			join(codes(p.never), "or"), p.why))
	}
	b.WriteString("\n")
	para("Packages that only some may import (in non-test files); with the promises, they say how far " +
		"what reaches them goes:")
	for _, im := range t.importers {
		item(fmt.Sprintf("Only %s %s %s: %s.", join(codes(im.only), "and"), cond(len(im.only) == 1, "imports", "import"),
			join(codes(im.pkgs), "and"), im.why))
	}
	return b.String()
}

// stdList states a rule's standard library.
func (t *table) stdList(entries []string) string {
	if slices.Contains(entries, "std") {
		return "all"
	}
	var parts []string
	for _, s := range entries {
		if t.group(s) != nil {
			parts = append(parts, "*"+s+"*")
		} else {
			parts = append(parts, code(s))
		}
	}
	return orNone(parts)
}

func code(s string) string { return "`" + s + "`" }

func codes(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = code(s)
	}
	return out
}

func orNone(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, ", ")
}

// join lists ss with commas and conj before the last.
func join(ss []string, conj string) string {
	if len(ss) < 2 {
		return strings.Join(ss, "")
	}
	return strings.Join(ss[:len(ss)-1], ", ") + " " + conj + " " + ss[len(ss)-1]
}

func cond(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}

// wrap breaks text into lines of at most 100 columns (longer words stay
// whole), the first starting with first, the others with rest.
func wrap(text, first, rest string) string {
	var b strings.Builder
	line, empty := first, true
	for _, w := range strings.Fields(text) {
		switch {
		case empty:
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) > 100:
			b.WriteString(line + "\n")
			line = rest
		default:
			line += " "
		}
		line, empty = line+w, false
	}
	return b.String() + line + "\n"
}

// codeList is paths as code, joined with commas.
func codeList(paths []string) string {
	var parts []string
	for _, p := range paths {
		parts = append(parts, code(p))
	}
	return strings.Join(parts, ", ")
}
