package jobmaster_test

import (
	"bytes"
	"context"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
)

// The embedded executor's task goroutines carry the pprof labels of their
// subtask, as a worker's do: a goroutine profile shows the task's run loop
// under them.
func TestTaskGoroutinesCarryTheirLabels(t *testing.T) {
	src := newStepSource()
	j, err := jobmaster.Start(context.Background(), stepPlan(t, src), jobmaster.Options{JobID: "labelled"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { j.Cancel(); j.Wait() }()
	<-src.restored // the task runs
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	// debug=1 writes each stack with its labels, keys sorted.
	want := `# labels: {"job":"labelled", "subtask":"0", "vertex":"0", "vertex_name":"steps"}`
	found := false
	for _, block := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(block, want) && strings.Contains(block, "task.(*Task).Run") {
			found = true
		}
	}
	if !found {
		t.Errorf("no goroutine of the task's run loop labelled %s in:\n%s", want, b.String())
	}
	if got, want := jobmaster.TaskLabels("j", checkpoint.TaskID{Vertex: 2, Subtask: 5}, "Map"), []string{"job", "j", "vertex", "2", "vertex_name", "Map", "subtask", "5"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("TaskLabels = %q, want %q", got, want)
	}
}
