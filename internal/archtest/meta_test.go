package archtest

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// clone copies a listing deeply enough for a test to change its imports.
func (l *listing) clone() *listing {
	c := *l
	c.pkgs = make(map[string]*pkgImports, len(l.pkgs))
	for p, pi := range l.pkgs {
		c.pkgs[p] = &pkgImports{imports: maps.Clone(pi.imports), tests: maps.Clone(pi.tests), clock: maps.Clone(pi.clock)}
	}
	return &c
}

// abs is the import path of a package given relative to the module, and any
// other path unchanged.
func (l *listing) abs(p string) string {
	if _, ok := l.pkgs[p]; ok || p == "nosuch" {
		return l.module + "/" + p
	}
	return p
}

// TestCheckerCatches changes the module's real listing (or the table) in one
// way each and checks that the checker reports exactly that, with the real
// table: the edges a denylist let through, a new package, a renamed one.
func TestCheckerCatches(t *testing.T) {
	real := loadModule(t)
	if msgs := check(&rules, real); len(msgs) > 0 {
		t.Fatalf("the module breaks the rules; TestImportRules says how")
	}
	importIn := func(from, to, where string) func(*listing, *table) {
		return func(l *listing, _ *table) { l.pkgs[from].imports[l.abs(to)] = where }
	}
	testImportIn := func(from, to, where string) func(*listing, *table) {
		return func(l *listing, _ *table) { l.pkgs[from].tests[l.abs(to)] = where }
	}
	rename := func(from, to string) func(*listing, *table) {
		return func(l *listing, _ *table) { l.pkgs[to] = l.pkgs[from]; delete(l.pkgs, from) }
	}
	allow := func(pkgs, to string) func(*listing, *table) {
		return func(l *listing, tb *table) {
			for i, r := range tb.rules {
				if r.pkgs == pkgs {
					tb.rules[i].mod = append(slices.Clone(r.mod), to)
				}
			}
			l.pkgs[pkgs].imports[l.abs(to)] = ""
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*listing, *table)
		want   []string // each message contains one of these, and each of these is in a message
	}{
		{"a forbidden direct edge", importIn("stream", "cluster/jobmanager", ""),
			[]string{
				`stream imports cluster/jobmanager (non-test files): not in rule "stream"`,
				`stream links cluster/jobmanager: the user API links no connector and no deployment (through stream → cluster/jobmanager)`,
				`kafka links cluster/jobmanager: a connector links no deployment (through kafka → stream → cluster/jobmanager)`,
			}},
		{"a third-party module outside the rule", importIn("conf", "google.golang.org/grpc/codes", ""),
			[]string{`conf imports module google.golang.org/grpc: not in rule "conf": google.golang.org/grpc/codes (non-test files)`}},
		{"a leaf importing a module package", importIn("security/kerberos", "fs", ""),
			[]string{`security/kerberos imports fs (non-test files): not in rule "security/kerberos"`}},
		{"the shared messages importing the login they carry", importIn("cluster/clusterpb", "security/kerberos", ""),
			[]string{`cluster/clusterpb imports security/kerberos (non-test files): not in rule "cluster/clusterpb"`}},
		{"time in the watermark valve", importIn("internal/runtime/watermark", "time", ""),
			[]string{`internal/runtime/watermark imports time (non-test files): outside the standard library that rule "internal/runtime/watermark" allows`}},
		{"os in the watermark valve", importIn("internal/runtime/watermark", "os", ""),
			[]string{`internal/runtime/watermark imports os (non-test files)`}},
		{"os/exec in the scheduler", importIn("scheduler", "os/exec", ""),
			[]string{`scheduler imports os/exec (non-test files)`}},
		{"net in the checkpoint coordinator", importIn("internal/runtime/checkpoint", "net", ""),
			[]string{`internal/runtime/checkpoint imports net (non-test files)`}},
		{"os in checkpoint storage, which goes through fs", importIn("internal/runtime/checkpoint/storage", "os", ""),
			[]string{`internal/runtime/checkpoint/storage imports os (non-test files)`}},
		{"the wall clock in the checkpoint coordinator", func(l *listing, _ *table) {
			l.pkgs["internal/runtime/checkpoint"].clock["coordinator.go:7: time.Now"] = ""
		}, []string{`internal/runtime/checkpoint uses the wall clock, coordinator.go:7: time.Now: rule "internal/runtime/checkpoint" takes time only as values`}},
		{"a test-file import", testImportIn("internal/runtime/watermark", "internal/runtime/task", ""),
			[]string{`internal/runtime/watermark imports internal/runtime/task (test files): not in rule "internal/runtime/watermark"`}},
		{"an integration-tagged import", testImportIn("conf", "integration/minicluster", "-tags integration"),
			[]string{`conf imports integration/minicluster (test files, -tags integration)`}},
		{"a file of another system", importIn("cluster/taskmanager", "kafka", "GOOS=darwin -tags integration"),
			[]string{
				`cluster/taskmanager imports kafka (non-test files, GOOS=darwin -tags integration)`,
				`cluster/taskmanager links kafka`,
			}},
		{"an uncovered package", func(l *listing, _ *table) {
			l.pkgs["runtime/newthing"] = &pkgImports{imports: map[string]string{}, tests: map[string]string{}, clock: map[string]string{}}
		}, []string{`runtime/newthing: no rule covers this package`}},
		{"overlapping rules", func(_ *listing, tb *table) {
			tb.rules = append(tb.rules, rule{pkgs: "internal/runtime/task", std: []string{"std"}})
		}, []string{`covered by more than one rule ("internal/runtime`}},
		{"a rule by pattern, which a new package would fall under", func(_ *listing, tb *table) {
			for i, r := range tb.rules {
				if r.pkgs == "security/kerberos" {
					tb.rules[i].pkgs = "security/..."
				}
			}
		}, []string{`rule "security/..." covers packages by a pattern: name one package`,
			// security/tlsconf and its keytooltest, which have rules of
			// their own, fall under it too.
			`security/tlsconf: covered by more than one rule`, `security/tlsconf/keytooltest: covered by more than one rule`}},
		{"an allowance no import needs", func(_ *listing, tb *table) {
			tb.rules[0].mod = append(slices.Clone(tb.rules[0].mod), "fs")
		}, []string{`rule "conf" allows package fs to non-test files, but none imports it`}},
		{"an allowance whose last import goes", func(l *listing, _ *table) {
			delete(l.pkgs["internal/runtime/graph"].imports, l.abs("internal/runtime/keygroup"))
		}, []string{`rule "internal/runtime/graph" allows package internal/runtime/keygroup to non-test files, but none imports it`}},
		{"an allowance of non-test files that only tests need", func(l *listing, _ *table) {
			delete(l.pkgs["conf"].imports, "go.yaml.in/yaml/v3")
			l.pkgs["conf"].tests["go.yaml.in/yaml/v3"] = ""
		}, []string{`rule "conf" allows module go.yaml.in/yaml/v3 to non-test files, but none imports it`}},
		{"a standard-library allowance no import needs", func(l *listing, _ *table) {
			delete(l.pkgs["internal/runtime/checkpoint/storage"].imports, "crypto/rand")
		}, []string{`rule "internal/runtime/checkpoint/storage" allows standard-library package crypto/rand to non-test files, but none imports it`}},
		{"a renamed package", rename("internal/runtime/watermark", "runtime/valve"), []string{
			`rule "internal/runtime/watermark" names package "internal/runtime/watermark", which does not exist`,
			`rule "internal/runtime/task" names package "internal/runtime/watermark", which does not exist`,
			`runtime/valve: no rule covers this package`,
		}},
		{"a renamed package that only a rule's tests name", rename("rest/resttest", "rest/fakerest"), []string{
			`names package "rest/resttest", which does not exist`,
			`rest/fakerest: no rule covers this package`,
		}},
		{"a rule naming a missing module", func(_ *listing, tb *table) {
			tb.rules[0].ext = append(slices.Clone(tb.rules[0].ext), "example.com/nosuch")
		}, []string{`names module "example.com/nosuch", which does not exist`}},
		{"a rule naming a missing standard-library package", func(_ *listing, tb *table) {
			tb.rules[0].std = append(slices.Clone(tb.rules[0].std), "sting")
		}, []string{`names standard-library package "sting", which does not exist`}},
		{"a broken promise", allow("internal/runtime/checkpoint", "kafka"), []string{
			"internal/runtime/checkpoint links kafka: the engine knows no front end, connector, deployment or harness (through internal/runtime/checkpoint → kafka)",
			"stream links kafka: the user API links no connector and no deployment (through stream → internal/runtime/task → internal/runtime/checkpoint → kafka)",
			"cluster/jobmanager links kafka: the JobManager links no user code",
		}},
		{"the user API linking HDFS other than through the worker", allow("stream", "hdfs"), []string{
			"stream imports hdfs, which only cluster/worker, cluster/hadoopenv, cluster/yarnam, cluster/yarndeploy, cmd/appmaster may import: " +
				"HDFS is a filesystem of the workers (checkpoints on hdfs://) and of YARN deployment",
		}},
		{"a connector linking HDFS other than through the worker", allow("kafka", "hdfs"), []string{
			"kafka imports hdfs, which only cluster/worker, cluster/hadoopenv, cluster/yarnam, cluster/yarndeploy, cmd/appmaster may import",
		}},
		{"a connector linking Hadoop's credentials", allow("kafka", "hadoop"), []string{
			"kafka imports hadoop, which only hdfs, yarn/..., cluster/worker",
		}},
		{"a second importer of the worker", allow("stream", "cluster/worker"), []string{
			"stream imports cluster/worker, which only internal/launch may import: a job binary's start-up alone links the worker",
		}},
		{"an importers entry naming a missing package", func(_ *listing, tb *table) {
			tb.importers = slices.Clone(tb.importers)
			tb.importers[0].only = []string{"internal/start"}
		}, []string{
			`importers of ["cluster/worker"] names package "internal/start", which does not exist`,
			"internal/launch imports cluster/worker, which only internal/start may import",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := real.clone()
			tb := rules
			tb.rules = slices.Clone(rules.rules)
			tc.change(l, &tb)
			msgs := check(&tb, l)
			if len(msgs) == 0 {
				t.Fatalf("no violation reported; want %q", tc.want)
			}
			for _, m := range msgs {
				if !slices.ContainsFunc(tc.want, func(w string) bool { return strings.Contains(m, w) }) {
					t.Errorf("unexpected violation %q", m)
				}
			}
			for _, w := range tc.want {
				if !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, w) }) {
					t.Errorf("no violation says %q; got %q", w, msgs)
				}
			}
		})
	}
}

// TestLoadSeesEveryFile lists a module made for the test: the listing holds
// the imports of test files, external test files, integration-tagged files
// and files of another system, and knows the standard library from go list
// std even where a package of the module looks like it (no dot in the
// module's path, a package named time).
func TestLoadSeesEveryFile(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":             "module fake\n\ngo 1.22\n",
		"a/a.go":             "package a\n\nimport t \"time\"\n\nvar _ = t.Duration(1)\n\nfunc f() { _ = t.Now() }\n",
		"a/a_other.go":       "//go:build !linux\n\npackage a\n\nimport _ \"os/exec\"\n",
		"a/a_test.go":        "package a\n\nimport _ \"fake/time\"\n",
		"a/x_test.go":        "package a_test\n\nimport _ \"fake/c\"\n",
		"a/i_test.go":        "//go:build integration\n\npackage a_test\n\nimport _ \"fake/d\"\n",
		"time/time.go":       "package time\n",
		"c/c.go":             "package c\n",
		"d/d.go":             "package d\n",
		"d/d_integration.go": "//go:build integration\n\npackage d\n\nimport _ \"fake/c\"\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := load(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	if l.module != "fake" || !l.std["time"] || l.std["fake/time"] {
		t.Fatalf("module %q, std[time] %v, std[fake/time] %v", l.module, l.std["time"], l.std["fake/time"])
	}
	if got := slices.Sorted(maps.Keys(l.pkgs)); !slices.Equal(got, []string{"a", "c", "d", "time"}) {
		t.Fatalf("packages %q", got)
	}
	want := map[string]*pkgImports{
		"a": {
			imports: map[string]string{"time": "", "os/exec": "GOOS=darwin -tags integration"},
			tests:   map[string]string{"fake/time": "", "fake/c": "", "fake/d": "-tags integration"},
			clock:   map[string]string{"a.go:7: time.Now": ""},
		},
		"d": {imports: map[string]string{"fake/c": "-tags integration"}, tests: map[string]string{}, clock: map[string]string{}},
	}
	for p, w := range want {
		if got := l.pkgs[p]; !maps.Equal(got.imports, w.imports) || !maps.Equal(got.tests, w.tests) || !maps.Equal(got.clock, w.clock) {
			t.Errorf("%s: imports %v, tests %v; want %v, %v", p, got.imports, got.tests, w.imports, w.tests)
		}
	}

	tb := &table{
		stdGroups: []stdGroup{{name: "pure", pkgs: []string{"errors"}}},
		rules: []rule{
			{pkgs: "a", std: []string{"pure"}, noClock: true, testMod: []string{"c", "d"}},
			{pkgs: "c"}, {pkgs: "time"},
			{pkgs: "d"},
		},
	}
	wantMsgs := []string{
		`a imports os/exec (non-test files, GOOS=darwin -tags integration): outside the standard library that rule "a" allows`,
		`a imports time (non-test files): outside the standard library that rule "a" allows`,
		`a imports time (test files): not in rule "a"`,
		`a uses the wall clock, a.go:7: time.Now: rule "a" takes time only as values`,
		`d imports c (non-test files, -tags integration): not in rule "d"`,
	}
	if got := check(tb, l); !slices.Equal(got, wantMsgs) {
		t.Errorf("violations\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantMsgs, "\n"))
	}
}

// TestLoadSeesEveryTag: files behind any build tag of the module are
// listed (all tags at once, beside the default configuration), files of
// Go versions, systems and architectures are not taken for tags, and a
// file marked ignore is never listed.
func TestLoadSeesEveryTag(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":           "module fake\n\ngo 1.22\n",
		"a/a.go":           "package a\n",
		"a/docker.go":      "//go:build docker\n\npackage a\n\nimport _ \"fake/b\"\n",
		"a/kafka_test.go":  "//go:build integration && (kafka || linux)\n\npackage a\n\nimport _ \"fake/c\"\n",
		"a/new.go":         "//go:build go1.30 && amd64\n\npackage a\n",
		"a/gen.go":         "//go:build ignore\n\npackage main\n\nimport _ \"fake/d\"\n",
		"b/b.go":           "package b\n",
		"c/c.go":           "package c\n",
		"d/d.go":           "package d\n",
		"testdata/x/x.go":  "//go:build fixture\n\npackage x\n",
		"nested/go.mod":    "module nested\n",
		"nested/nested.go": "//go:build other\n\npackage nested\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tags, err := buildTags(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"docker", "integration", "kafka"}; !slices.Equal(tags, want) {
		t.Fatalf("tags %q, want %q", tags, want)
	}
	l, err := load(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := l.pkgs["a"]
	want := &pkgImports{
		imports: map[string]string{"fake/b": "-tags docker,integration,kafka"},
		tests:   map[string]string{"fake/c": "-tags docker,integration,kafka"},
	}
	if !maps.Equal(a.imports, want.imports) || !maps.Equal(a.tests, want.tests) {
		t.Errorf("a: imports %v, tests %v; want %v, %v", a.imports, a.tests, want.imports, want.tests)
	}
}
