package archtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io"
	iofs "io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// This file is the checker. It knows no package of the module by name: the
// table (rules_test.go) holds every name, so that renaming a package touches
// the table only.

// A rule says what the package it covers may import directly. Every path is
// relative to the module; in the lists, "p/..." stands for p and every
// package below it.
type rule struct {
	// pkgs is the package the rule covers: one package, never a pattern,
	// so that a new package needs a rule of its own.
	pkgs string
	why  string // what the packages are, and so why the rule holds

	mod []string // packages of the module they may import
	ext []string // third-party modules whose packages they may import
	// std is what they may import of the standard library: "std" for all of
	// it, the name of a group of stdGroups, or a package ("p/..." allowed).
	// Empty: nothing.
	std []string
	// noClock: the non-test files use package time for values only
	// (durations, instants given to them), never the wall clock or timers.
	noClock bool

	// Test files (TestImports and XTestImports) may import what the rule
	// allows, the whole standard library, the package itself (from an
	// external test) and these.
	testMod []string
	testExt []string
}

// A promise is a transitive consequence of the rules that the architecture
// states and the test checks on its own: no package in from links (through
// the imports of non-test files) a package in never.
type promise struct {
	from  []string
	never []string
	why   string
}

// An importers entry says which packages alone may import the packages of
// pkgs (in non-test files): the architecture's statements of the form "only
// X links Y", which the promises then carry through ("stream links HDFS only
// through the worker" is cluster/worker alone of the packages stream links
// importing hdfs).
type importers struct {
	pkgs []string
	only []string
	why  string
}

// table is the whole of the import rules.
type table struct {
	rules     []rule
	promises  []promise
	importers []importers
	// stdGroups names sets of standard-library packages that rules share.
	stdGroups []stdGroup
	// everyTest lists module packages that the test files of every package
	// may import (the shared test helpers).
	everyTest []string
}

// A stdGroup is a named set of standard-library packages.
type stdGroup struct {
	name string
	why  string   // what the packages have in common
	pkgs []string // packages of the standard library, or names of other groups
}

// group finds a group of the standard library by name.
func (t *table) group(name string) *stdGroup {
	for i := range t.stdGroups {
		if t.stdGroups[i].name == name {
			return &t.stdGroups[i]
		}
	}
	return nil
}

// expand lists the packages of a group and of the groups it names.
func (t *table) expand(group string) []string {
	var pkgs []string
	seen := map[string]bool{}
	var walk func(string)
	walk = func(g string) {
		if seen[g] {
			return
		}
		seen[g] = true
		grp := t.group(g)
		if grp == nil {
			return
		}
		for _, p := range grp.pkgs {
			if t.group(p) != nil {
				walk(p)
			} else {
				pkgs = append(pkgs, p)
			}
		}
	}
	walk(group)
	return pkgs
}

// pkgImports is what one package of the module imports directly. Each map
// takes an import path to the build configuration in which go list first
// reported it ("" for the default one).
type pkgImports struct {
	imports map[string]string // non-test files
	tests   map[string]string // test files: internal and external
	clock   map[string]string // uses of the wall clock in non-test files ("file.go:12: time.Now")
}

// clockFuncs are the functions of package time that read the wall clock or
// wait on it.
var clockFuncs = []string{"After", "AfterFunc", "NewTicker", "NewTimer", "Now", "Since", "Sleep", "Tick", "Until"}

// clockUses lists the uses of clockFuncs in the files of dir.
func clockUses(dir string, files []string) ([]string, error) {
	var uses []string
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			return nil, err
		}
		local := map[string]bool{} // the names package time has in the file
		for _, imp := range f.Imports {
			if imp.Path.Value != `"time"` {
				continue
			}
			if imp.Name != nil {
				local[imp.Name.Name] = true
			} else {
				local["time"] = true
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && local[x.Name] && slices.Contains(clockFuncs, sel.Sel.Name) {
				uses = append(uses, fmt.Sprintf("%s:%d: time.%s", name, fset.Position(sel.Pos()).Line, sel.Sel.Name))
			}
			return true
		})
	}
	return uses, nil
}

// listing is the module's import graph, as go list reports it under every
// build configuration, the union of them all.
type listing struct {
	module   string
	dir      string                 // the module's root directory
	std      map[string]bool        // go list std
	moduleOf map[string]string      // a third-party package → its module
	pkgs     map[string]*pkgImports // a package of the module (relative path) → its imports
}

// config is a build configuration the listing covers: the environment and
// the flags of go list.
type config struct {
	env  []string
	tags string
}

func (c config) String() string {
	s := strings.Join(c.env, " ")
	if c.tags != "" {
		s = strings.TrimSpace(s + " -tags " + c.tags)
	}
	return s
}

// configs are the build configurations whose files are checked: the default
// one, the one with every build tag the module's files name (the
// integration tests and any other tag, all at once), and the same for
// another system (…_other.go files).
func configs(tags []string) []config {
	t := strings.Join(tags, ",")
	return []config{
		{},
		{tags: t},
		{env: []string{"GOOS=darwin"}, tags: t},
	}
}

// notTags are the names of build constraints that are no tags one sets:
// the toolchain's, and ignore (a file never built).
var notTags = []string{"cgo", "gc", "gccgo", "ignore", "unix"}

// buildTags lists, sorted, the tags that the //go:build lines of the
// module's Go files (below dir, outside testdata and nested modules) name,
// other than systems, architectures, Go versions and notTags.
func buildTags(dir string) ([]string, error) {
	out, err := exec.Command("go", "tool", "dist", "list").Output()
	if err != nil {
		return nil, fmt.Errorf("go tool dist list: %w", err)
	}
	known := map[string]bool{}
	for _, pair := range strings.Fields(string(out)) {
		goos, goarch, _ := strings.Cut(pair, "/")
		known[goos], known[goarch] = true, true
	}
	for _, n := range notTags {
		known[n] = true
	}
	tags := map[string]bool{}
	err = filepath.WalkDir(dir, func(path string, d iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path == dir {
				return nil
			}
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(text), "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "package ") {
				break
			}
			if !constraint.IsGoBuild(line) {
				continue
			}
			x, err := constraint.Parse(line)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			for _, tag := range tagsOf(x) {
				if !known[tag] && !strings.HasPrefix(tag, "go1.") {
					tags[tag] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(tags)), nil
}

// tagsOf lists every tag a build constraint names.
func tagsOf(x constraint.Expr) []string {
	switch x := x.(type) {
	case *constraint.TagExpr:
		return []string{x.Tag}
	case *constraint.NotExpr:
		return tagsOf(x.X)
	case *constraint.AndExpr:
		return append(tagsOf(x.X), tagsOf(x.Y)...)
	case *constraint.OrExpr:
		return append(tagsOf(x.X), tagsOf(x.Y)...)
	}
	return nil
}

func goList(dir string, c config, args ...string) ([]byte, error) {
	all := []string{"list"}
	if c.tags != "" {
		all = append(all, "-tags", c.tags)
	}
	cmd := exec.Command("go", append(all, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), c.env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s (%s): %w\n%s", strings.Join(cmd.Args[1:], " "), c, err, stderr.Bytes())
	}
	return out, nil
}

// load lists the module that holds dir under every configuration.
func load(dir string) (*listing, error) {
	out, err := goList(dir, config{}, "-m", "-f", "{{.Path}}\t{{.Dir}}")
	if err != nil {
		return nil, err
	}
	module, dir, _ := strings.Cut(strings.TrimSpace(string(out)), "\t")
	l := &listing{
		module:   module,
		dir:      dir,
		std:      map[string]bool{},
		moduleOf: map[string]string{},
		pkgs:     map[string]*pkgImports{},
	}
	out, err = goList(dir, config{}, "std")
	if err != nil {
		return nil, err
	}
	for _, p := range strings.Fields(string(out)) {
		l.std[p] = true
	}
	tags, err := buildTags(dir)
	if err != nil {
		return nil, err
	}
	for _, c := range configs(tags) {
		out, err := goList(dir, c, "-json=ImportPath,Dir,GoFiles,Imports,TestImports,XTestImports", "./...")
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var p struct {
				ImportPath, Dir                             string
				GoFiles, Imports, TestImports, XTestImports []string
			}
			if err := dec.Decode(&p); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, err
			}
			rel, ok := l.rel(p.ImportPath)
			if !ok {
				return nil, fmt.Errorf("go list ./... reported %s, outside module %s", p.ImportPath, l.module)
			}
			pi := l.pkgs[rel]
			if pi == nil {
				pi = &pkgImports{imports: map[string]string{}, tests: map[string]string{}, clock: map[string]string{}}
				l.pkgs[rel] = pi
			}
			add(pi.imports, p.Imports, c.String())
			add(pi.tests, p.TestImports, c.String())
			add(pi.tests, p.XTestImports, c.String())
			if slices.Contains(p.Imports, "time") {
				uses, err := clockUses(p.Dir, p.GoFiles)
				if err != nil {
					return nil, err
				}
				add(pi.clock, uses, c.String())
			}
		}
		// The module of every third-party package any file imports.
		out, err = goList(dir, c, "-deps", "-test", "-f", "{{.ImportPath}}\t{{with .Module}}{{.Path}}{{end}}", "./...")
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			path, mod, _ := strings.Cut(sc.Text(), "\t")
			path, _, _ = strings.Cut(path, " ") // "p [q.test]" is p compiled for q's tests
			if mod != "" && mod != l.module {
				l.moduleOf[path] = mod
			}
		}
	}
	return l, nil
}

func add(m map[string]string, imports []string, where string) {
	for _, imp := range imports {
		if _, ok := m[imp]; !ok {
			m[imp] = where
		}
	}
}

// rel gives the path of a package of the module relative to it.
func (l *listing) rel(path string) (string, bool) {
	if path == l.module {
		return ".", true
	}
	return strings.CutPrefix(path, l.module+"/")
}

// matches reports whether a path matches a pattern: the path itself, or with
// "p/..." p and every path below it.
func matches(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return pattern == path
}

func matchesAny(patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(p, path) })
}

// packages lists the packages of the module in sorted order.
func (l *listing) packages() []string {
	ps := make([]string, 0, len(l.pkgs))
	for p := range l.pkgs {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

// check lists every way in which the listing breaks the table, or the table
// fails to describe the listing. Each message names the packages involved.
func check(t *table, l *listing) []string {
	var msgs []string
	msgs = append(msgs, t.validate(l)...)
	for _, p := range l.packages() {
		var covering []int
		for i, r := range t.rules {
			if matches(r.pkgs, p) {
				covering = append(covering, i)
			}
		}
		switch len(covering) {
		case 0:
			msgs = append(msgs, fmt.Sprintf("%s: no rule covers this package; give it one in the table", p))
			continue
		case 1:
		default:
			var names []string
			for _, i := range covering {
				names = append(names, fmt.Sprintf("%q", t.rules[i].pkgs))
			}
			msgs = append(msgs, fmt.Sprintf("%s: covered by more than one rule (%s); the rules must not overlap", p, strings.Join(names, ", ")))
			continue
		}
		r := t.rules[covering[0]]
		pi := l.pkgs[p]
		msgs = append(msgs, t.checkEdges(l, p, r, pi.imports, false)...)
		msgs = append(msgs, t.checkEdges(l, p, r, pi.tests, true)...)
		if r.noClock {
			for _, use := range slices.Sorted(maps.Keys(pi.clock)) {
				where := ""
				if c := pi.clock[use]; c != "" {
					where = " (" + c + ")"
				}
				msgs = append(msgs, fmt.Sprintf("%s uses the wall clock, %s%s: rule %q takes time only as values", p, use, where, r.pkgs))
			}
		}
	}
	msgs = append(msgs, t.checkUnused(l)...)
	msgs = append(msgs, t.checkPromises(l)...)
	msgs = append(msgs, t.checkImporters(l)...)
	return msgs
}

// checkImporters reports every non-test import of a package that an
// importers entry keeps to others.
func (t *table) checkImporters(l *listing) []string {
	var msgs []string
	for _, im := range t.importers {
		for _, p := range l.packages() {
			if matchesAny(im.only, p) || matchesAny(im.pkgs, p) {
				continue
			}
			for _, imp := range slices.Sorted(maps.Keys(l.pkgs[p].imports)) {
				if rel, ok := l.rel(imp); ok && matchesAny(im.pkgs, rel) {
					msgs = append(msgs, fmt.Sprintf("%s imports %s, which only %s may import: %s", p, rel, strings.Join(im.only, ", "), im.why))
				}
			}
		}
	}
	return msgs
}

// checkUnused reports what a rule allows that no package it covers
// imports: the table states exactly the edges there are, so a rule's
// allowance lapses with the last import that needed it. A package of the
// module or third-party module allowed to non-test files must be imported
// by a non-test file (one only tests import belongs in testMod or
// testExt); one allowed to tests only, by a test file. A package of the
// standard library a rule names (not a set of them, nor "std") must be
// imported by a non-test file.
func (t *table) checkUnused(l *listing) []string {
	var msgs []string
	exists, modules := l.existence()
	for _, r := range t.rules {
		var covered []*pkgImports
		for _, p := range l.packages() {
			if matches(r.pkgs, p) {
				covered = append(covered, l.pkgs[p])
			}
		}
		if len(covered) == 0 {
			continue // validate reports the rule
		}
		imported := func(test bool, used func(imp string) bool) bool {
			for _, pi := range covered {
				m := pi.imports
				if test {
					m = pi.tests
				}
				for imp := range m {
					if used(imp) {
						return true
					}
				}
			}
			return false
		}
		// Names that do not exist are validate's to report.
		mine := func(pattern string) func(string) bool {
			return func(imp string) bool { rel, ok := l.rel(imp); return ok && matches(pattern, rel) }
		}
		module := func(mod string) func(string) bool {
			return func(imp string) bool { return l.moduleOf[imp] == mod }
		}
		unused := func(kind, name, files string) {
			msgs = append(msgs, fmt.Sprintf("rule %q allows %s %s to %s, but none imports it; drop it from the rule", r.pkgs, kind, name, files))
		}
		for _, m := range r.mod {
			if exists(m) && !imported(false, mine(m)) {
				unused("package", m, "non-test files")
			}
		}
		for _, e := range r.ext {
			if modules[e] && !imported(false, module(e)) {
				unused("module", e, "non-test files")
			}
		}
		for _, m := range r.testMod {
			if exists(m) && !imported(true, mine(m)) {
				unused("package", m, "test files")
			}
		}
		for _, e := range r.testExt {
			if modules[e] && !imported(true, module(e)) {
				unused("module", e, "test files")
			}
		}
		for _, s := range r.std {
			base, _ := strings.CutSuffix(s, "/...")
			if s == "std" || t.group(s) != nil || !l.std[base] {
				continue
			}
			if !imported(false, func(imp string) bool { return l.std[imp] && matches(s, imp) }) {
				unused("standard-library package", s, "non-test files")
			}
		}
	}
	return msgs
}

// validate reports names in the table that the listing lacks.
func (t *table) validate(l *listing) []string {
	var msgs []string
	exists, modules := l.existence()
	missing := func(where, kind, name string) {
		msgs = append(msgs, fmt.Sprintf("%s names %s %q, which does not exist", where, kind, name))
	}
	for _, g := range t.stdGroups {
		if g.name == "std" || l.std[g.name] {
			msgs = append(msgs, fmt.Sprintf("standard-library group %q has the name of a package or of the whole library", g.name))
		}
		for _, s := range g.pkgs {
			if t.group(s) == nil && !l.std[s] {
				missing(fmt.Sprintf("standard-library group %q", g.name), "standard-library package", s)
			}
		}
	}
	for _, m := range t.everyTest {
		if !exists(m) {
			missing("the helpers of every test", "package", m)
		}
	}
	for _, r := range t.rules {
		where := fmt.Sprintf("rule %q", r.pkgs)
		if strings.HasSuffix(r.pkgs, "/...") {
			msgs = append(msgs, fmt.Sprintf("%s covers packages by a pattern: name one package, so that a new package needs a rule of its own", where))
		} else if !exists(r.pkgs) {
			missing(where, "package", r.pkgs)
		}
		for _, m := range slices.Concat(r.mod, r.testMod) {
			if !exists(m) {
				missing(where, "package", m)
			}
		}
		for _, e := range slices.Concat(r.ext, r.testExt) {
			if !modules[e] {
				missing(where, "module", e)
			}
		}
		for _, s := range r.std {
			base, _ := strings.CutSuffix(s, "/...")
			if s != "std" && t.group(s) == nil && !l.std[base] {
				missing(where, "standard-library package", s)
			}
		}
	}
	for _, p := range t.promises {
		where := fmt.Sprintf("promise %q", p.from)
		for _, n := range slices.Concat(p.from, p.never) {
			if !exists(n) {
				missing(where, "package", n)
			}
		}
	}
	for _, im := range t.importers {
		where := fmt.Sprintf("importers of %q", im.pkgs)
		for _, n := range slices.Concat(im.pkgs, im.only) {
			if !exists(n) {
				missing(where, "package", n)
			}
		}
	}
	return msgs
}

// existence tells whether a pattern matches a package of the listing, and
// which third-party modules the listing holds.
func (l *listing) existence() (exists func(pattern string) bool, modules map[string]bool) {
	pkgs := l.packages()
	exists = func(pattern string) bool {
		return slices.ContainsFunc(pkgs, func(p string) bool { return matches(pattern, p) })
	}
	modules = map[string]bool{}
	for _, m := range l.moduleOf {
		modules[m] = true
	}
	return exists, modules
}

// allowsStd reports whether the rule's std entries admit a standard-library
// package.
func (t *table) allowsStd(entries []string, path string) bool {
	for _, s := range entries {
		if s == "std" || matches(s, path) || slices.Contains(t.expand(s), path) {
			return true
		}
	}
	return false
}

// checkEdges reports the imports of p (of its test files if test) that its
// rule r does not allow.
func (t *table) checkEdges(l *listing, p string, r rule, imports map[string]string, test bool) []string {
	files := "non-test files"
	if test {
		files = "test files"
	}
	paths := make([]string, 0, len(imports))
	for imp := range imports {
		paths = append(paths, imp)
	}
	sort.Strings(paths)
	// One message per package of the module or of the standard library, one
	// per third-party module (naming its packages).
	var msgs []string
	byModule := map[string][]string{}
	var modules []string
	for _, imp := range paths {
		where := files
		if c := imports[imp]; c != "" {
			where += ", " + c
		}
		switch rel, mine := l.rel(imp); {
		case mine:
			if !matchesAny(r.mod, rel) && !(test && (rel == p || matchesAny(r.testMod, rel) || matchesAny(t.everyTest, rel))) {
				msgs = append(msgs, fmt.Sprintf("%s imports %s (%s): not in rule %q", p, rel, where, r.pkgs))
			}
		case l.std[imp]:
			if !test && !t.allowsStd(r.std, imp) {
				msgs = append(msgs, fmt.Sprintf("%s imports %s (%s): outside the standard library that rule %q allows", p, imp, where, r.pkgs))
			}
		default:
			mod := l.moduleOf[imp]
			if mod == "" || !slices.Contains(r.ext, mod) && !(test && slices.Contains(r.testExt, mod)) {
				key := "module " + mod
				if mod == "" {
					key = "a package of no known module"
				}
				if byModule[key] == nil {
					modules = append(modules, key)
				}
				byModule[key] = append(byModule[key], imp+" ("+where+")")
			}
		}
	}
	for _, m := range modules {
		msgs = append(msgs, fmt.Sprintf("%s imports %s: not in rule %q: %s", p, m, r.pkgs, strings.Join(byModule[m], ", ")))
	}
	return msgs
}

// checkPromises reports every promise the non-test imports break, with a
// chain of imports that breaks it: once, at the last package of the chain
// that the promise covers, and for the first package of the chain it forbids.
func (t *table) checkPromises(l *listing) []string {
	var msgs []string
	for _, pr := range t.promises {
		forbidden := func(p string) bool { return matchesAny(pr.never, p) }
		for _, p := range l.packages() {
			if !matchesAny(pr.from, p) {
				continue
			}
			for _, chain := range l.reach(p, forbidden) {
				to := chain[len(chain)-1]
				if !forbidden(to) || slices.ContainsFunc(chain[1:len(chain)-1], func(q string) bool { return matchesAny(pr.from, q) }) {
					continue
				}
				msgs = append(msgs, fmt.Sprintf("%s links %s: %s (through %s)", p, to, pr.why, strings.Join(chain, " → ")))
			}
		}
	}
	return msgs
}

// reach gives, for every package of the module that p's non-test imports
// lead to, one shortest chain of imports from p to it. It follows no import
// of a package for which stop is true.
func (l *listing) reach(p string, stop func(string) bool) [][]string {
	parent := map[string]string{p: ""}
	queue := []string{p}
	var chains [][]string
	for len(queue) > 0 {
		q := queue[0]
		queue = queue[1:]
		if q != p {
			var chain []string
			for c := q; c != ""; c = parent[c] {
				chain = append(chain, c)
			}
			slices.Reverse(chain)
			chains = append(chains, chain)
			if stop(q) {
				continue
			}
		}
		imps := make([]string, 0, len(l.pkgs[q].imports))
		for imp := range l.pkgs[q].imports {
			if rel, ok := l.rel(imp); ok && l.pkgs[rel] != nil {
				imps = append(imps, rel)
			}
		}
		sort.Strings(imps)
		for _, d := range imps {
			if _, seen := parent[d]; seen {
				continue
			}
			parent[d] = q
			queue = append(queue, d)
		}
	}
	return chains
}
