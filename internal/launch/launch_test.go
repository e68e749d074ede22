package launch_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/launch"
	"github.com/sluice/sluice/internal/runtime/graph"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func noExecutable() (string, error) { return "", errors.New("no executable in this test") }

func TestFromGetenv(t *testing.T) {
	for _, tc := range []struct {
		name       string
		vars       map[string]string
		wantTarget string
		wantProps  []string
		wantErr    string
	}{
		{name: "unset is local", vars: nil, wantTarget: launch.TargetLocal},
		{name: "local", vars: map[string]string{conf.EnvExecutionTarget: "local"}, wantTarget: launch.TargetLocal},
		{name: "plan", vars: map[string]string{conf.EnvExecutionTarget: "plan", conf.EnvPlanOut: "/tmp/x"}, wantTarget: launch.TargetPlan},
		{name: "dynamic properties", vars: map[string]string{conf.EnvDynamicProperties: "parallelism.default=3"},
			wantTarget: launch.TargetLocal, wantProps: []string{"parallelism.default=3"}},
		{name: "unknown target", vars: map[string]string{conf.EnvExecutionTarget: "yarn"},
			wantErr: `launch: SLUICE_EXECUTION_TARGET="yarn": want local, plan, remote or worker`},
		{name: "remote needs this binary", vars: map[string]string{conf.EnvExecutionTarget: "remote"},
			wantErr: "launch: finding this job binary to submit: no executable in this test"},
		{name: "worker without a deployment", vars: map[string]string{conf.EnvExecutionTarget: "worker"},
			wantErr: "deployment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := launch.FromGetenv(env(tc.vars), nil, &bytes.Buffer{}, func(int) {}, noExecutable)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Target != tc.wantTarget {
				t.Errorf("target %q, want %q", p.Target, tc.wantTarget)
			}
			if strings.Join(p.DynamicProperties, ",") != strings.Join(tc.wantProps, ",") {
				t.Errorf("dynamic properties %q, want %q", p.DynamicProperties, tc.wantProps)
			}
			if (p.Overrides() == nil) != (len(tc.wantProps) == 0) {
				t.Errorf("overrides %v with properties %q", p.Overrides(), tc.wantProps)
			}
		})
	}
}

// emptyGraph is a valid graph of plain data (a source and a sink, no
// implementations): enough for the targets that never run it.
func emptyGraph() *graph.JobGraph {
	return &graph.JobGraph{Name: "empty",
		Nodes: []*graph.Node{
			{ID: 0, Kind: "source", Name: "src", Parallelism: 1, Chaining: graph.ChainAlways},
			{ID: 1, Kind: "sink", Name: "sink", Parallelism: 1, Inputs: 1, Chaining: graph.ChainAlways}},
		Edges: []*graph.Edge{{From: 0, To: 1, Partitioning: graph.Forward}}}
}

// TestPlanTargetWritesThePlanAndEnds: a binary run for its plan writes the
// graph where SLUICE_PLAN_OUT says and ends through Exit(0); Launch itself
// never ends the process.
func TestPlanTargetWritesThePlanAndEnds(t *testing.T) {
	out := filepath.Join(t.TempDir(), "plan.json")
	var exits []int
	p, err := launch.FromGetenv(env(map[string]string{conf.EnvExecutionTarget: "plan", conf.EnvPlanOut: out}),
		nil, &bytes.Buffer{}, func(c int) { exits = append(exits, c) }, noExecutable)
	if err != nil {
		t.Fatal(err)
	}
	h, err := p.Launch(context.Background(), launch.Job{Graph: emptyGraph(), Config: conf.New()})
	if !errors.Is(err, launch.ErrEnded) || h != nil {
		t.Fatalf("Launch = %v, %v; want no handle and ErrEnded", h, err)
	}
	if len(exits) != 1 || exits[0] != 0 {
		t.Fatalf("exits %v, want [0]", exits)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Unmarshal(b)
	if err != nil || g.Name != "empty" {
		t.Fatalf("plan %q: %v, %v", b, g, err)
	}
}

func TestPlanTargetWithoutAFileIsAnError(t *testing.T) {
	p, err := launch.FromGetenv(env(map[string]string{conf.EnvExecutionTarget: "plan"}), nil, &bytes.Buffer{},
		func(c int) { t.Fatalf("exit %d: a plan that was not written must not end the process", c) }, noExecutable)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Launch(context.Background(), launch.Job{Graph: emptyGraph(), Config: conf.New()})
	if err == nil || !strings.Contains(err.Error(), "SLUICE_EXECUTION_TARGET=plan needs SLUICE_PLAN_OUT") {
		t.Fatalf("err = %v", err)
	}
}

func TestRemoteTargetNeedsAJobManager(t *testing.T) {
	var stdout bytes.Buffer
	p, err := launch.FromGetenv(env(map[string]string{conf.EnvExecutionTarget: "remote"}), nil, &stdout,
		func(c int) { t.Fatalf("exit %d", c) }, func() (string, error) { return "/bin/job", nil })
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Launch(context.Background(), launch.Job{Graph: emptyGraph(), Config: conf.New()})
	if err == nil || !strings.Contains(err.Error(), "SLUICE_EXECUTION_TARGET=remote needs SLUICE_JOBMANAGER") {
		t.Fatalf("err = %v", err)
	}
	if stdout.Len() != 0 {
		t.Fatalf("stdout %q: nothing was submitted", stdout.String())
	}
}
