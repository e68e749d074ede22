package archtest

import (
	"os"
	"sync"
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

// loadModule lists the module the test runs in (once for all tests; they
// must not change the listing).
func loadModule(t *testing.T) *listing {
	t.Helper()
	l, err := moduleListing()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

var moduleListing = sync.OnceValues(func() (*listing, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	return load(wd)
})
