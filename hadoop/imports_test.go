package hadoop

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportRules keeps hadoop/ a leaf: it depends on the standard library,
// protobuf and its own internal packages only.
func TestImportRules(t *testing.T) {
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
			switch {
			case !strings.Contains(strings.Split(path, "/")[0], "."):
			case strings.HasPrefix(path, "google.golang.org/protobuf/"):
			case strings.HasPrefix(path, "github.com/sluice/sluice/hadoop/"):
			default:
				t.Errorf("%s imports %s; hadoop/ must stay a leaf", p, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
