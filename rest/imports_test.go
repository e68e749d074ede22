package rest_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportRules keeps rest/ on its side of the line: the JobManager
// (cluster/...) implements rest.Backend and imports rest, never the other
// way round, and job binaries (stream, via rest/restclient) must not pull
// in the cluster, YARN or the CLI. Its Sluice imports are conf, the job
// graph, the clock and its own packages.
func TestImportRules(t *testing.T) {
	allowed := []string{
		"github.com/sluice/sluice/rest",
		"github.com/sluice/sluice/conf",
		"github.com/sluice/sluice/internal/runtime/graph",
		"github.com/sluice/sluice/internal/clock",
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
			if !strings.HasPrefix(path, "github.com/sluice/sluice") {
				continue
			}
			ok := false
			for _, a := range allowed {
				if path == a || strings.HasPrefix(path, a+"/") {
					ok = true
				}
			}
			if !ok {
				t.Errorf("%s imports %s; rest/ may import only %v", p, path, allowed)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
