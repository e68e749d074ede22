package archtest

import (
	"os"
	"testing"
)

// TestImportRules checks every direct import of every package of the module
// (non-test files, test files, every build configuration) against the
// table, the table against the module, and the promises against the
// transitive imports.
func TestImportRules(t *testing.T) {
	l := loadModule(t)
	if len(l.pkgs) < 10 {
		t.Fatalf("go list found only %d packages; the test is not looking at the module", len(l.pkgs))
	}
	for _, m := range check(&rules, l) {
		t.Error(m)
	}
}

// loadModule lists the module the test runs in.
func loadModule(t *testing.T) *listing {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	l, err := load(wd)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
