package jobmanager

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice/sluice/internal/runtime/graph"
)

// A submission that restores from a savepoint that is not there is
// refused before the job is accepted (a detached `sluice run -s` would
// otherwise report a job that can only fail), naming the path and the
// key; nothing of it is left behind.
func TestSubmissionFromAMissingSavepointIsRefused(t *testing.T) {
	fc := newFakeCluster(t, 0)
	notSavepoint := t.TempDir() // a directory without _metadata
	for _, tc := range []struct {
		name, from string
		want       []string
	}{
		{"no such path", "/nonexistent/savepoint-1", []string{`"/nonexistent/savepoint-1"`, "execution.state-recovery.path", "no such file"}},
		{"not a savepoint", notSavepoint, []string{notSavepoint, "has no _metadata file"}},
		{"relative", "savepoint-1", []string{`"savepoint-1"`, "is a relative path"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &graph.JobGraph{Name: "numbers", Nodes: []*graph.Node{
				{ID: 0, Kind: "source", Name: "numbers", Parallelism: 1, Chaining: graph.ChainAlways, OutType: "int"}}}
			b, err := g.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			bin := filepath.Join(t.TempDir(), "job")
			if err := os.WriteFile(bin, []byte("a job binary"), 0o755); err != nil {
				t.Fatal(err)
			}
			_, err = fc.d.Submit(Submission{GraphJSON: b, BinaryPath: bin,
				Dynamic: map[string]string{"execution.state-recovery.path": tc.from}})
			if !errors.Is(err, ErrBadSubmission) {
				t.Fatalf("Submit: %v, want ErrBadSubmission", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Submit: %q does not say %q", err, w)
				}
			}
			if jobs := fc.d.Jobs(); len(jobs) != 0 {
				t.Errorf("jobs after a refused submission: %v", jobs)
			}
		})
	}
}
