package yarn

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportRules enforces the layering of the YARN client: yarn/ and its
// internal packages depend only on the standard library, protobuf, the
// hadoop/ leaf package, the Kerberos login (security/..., and gokrb5 for
// SASL GSSAPI), the clock (internal/clock) and each other - never on the
// engine, the CLI or the AM (those depend on yarn/, not the other way
// round).
func TestImportRules(t *testing.T) {
	allowed := func(path string) bool {
		switch {
		case !strings.Contains(strings.Split(path, "/")[0], "."):
			return true // standard library
		case strings.HasPrefix(path, "google.golang.org/protobuf/"):
			return true
		case path == "github.com/sluice/sluice/hadoop" || strings.HasPrefix(path, "github.com/sluice/sluice/hadoop/"):
			return true
		case strings.HasPrefix(path, "github.com/sluice/sluice/yarn/"):
			return true
		case strings.HasPrefix(path, "github.com/sluice/sluice/security/"), strings.HasPrefix(path, "github.com/jcmturner/gokrb5/v8/"):
			return true
		case path == "github.com/sluice/sluice/internal/clock":
			return true // the tree's one clock, itself a leaf
		}
		return false
	}
	testOnly := map[string]bool{
		"github.com/colinmarc/hdfs/v2":                     true, // proto registry clash test
		"github.com/sluice/sluice/integration/minicluster": true, // integration tests
		"github.com/sluice/sluice/yarn":                    true, // external tests
		"github.com/sluice/sluice/internal/testwait":       true, // waiting with a deadline
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if allowed(path) || (strings.HasSuffix(p, "_test.go") && testOnly[path]) {
				continue
			}
			t.Errorf("%s imports %s, which yarn/ must not depend on", p, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
