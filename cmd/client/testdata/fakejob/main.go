// Command fakejob is a test double of a job binary for the sluice CLI's
// tests: it honours the job binary contract (package conf's Env*) the way
// stream.Execute does, without running a dataflow, and reports what it was
// given.
//
//	local:  prints a JSON report of its environment and arguments; exits
//	        with the status given by an argument --exit=N
//	plan:   writes a two-operator job graph named by its first argument to
//	        $SLUICE_PLAN_OUT (not with --no-plan)
//	remote: submits that graph and itself to $SLUICE_JOBMANAGER and, unless
//	        execution.attached=false, waits for the job's result
//
// In local and remote mode it records a job as submitted in
// $SLUICE_SUBMITTED_OUT, as stream.Execute does, unless --no-submit.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/rest/restclient"
)

// Report is what fakejob prints in local mode.
type Report struct {
	Target     string   `json:"target"`
	JobManager string   `json:"jobmanager"`
	Props      []string `json:"props"`
	Args       []string `json:"args"`
	ConfDir    string   `json:"confDir"`
}

func main() {
	args := os.Args[1:]
	props := conf.SplitDynamicProperties(os.Getenv(conf.EnvDynamicProperties))
	name := "fake job"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name = args[0]
	}
	switch target := os.Getenv(conf.EnvExecutionTarget); target {
	case conf.BinaryModePlan:
		fmt.Println("building the plan") // program output: must not reach sluice info's stdout
		if slices.Contains(args, "--no-plan") {
			return
		}
		if err := os.WriteFile(os.Getenv(conf.EnvPlanOut), plan(name, props), 0o644); err != nil {
			fail(err)
		}
	case conf.TargetRemote:
		remote(name, args, props)
	default:
		b, _ := json.Marshal(Report{Target: target, JobManager: os.Getenv(conf.EnvJobManager), Props: props, Args: args, ConfDir: os.Getenv(conf.EnvConfDir)})
		fmt.Println(string(b))
		submitted(args, "local-fake-job")
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "--exit="); ok {
				n, _ := strconv.Atoi(v)
				os.Exit(n)
			}
		}
	}
}

func plan(name string, props []string) []byte {
	par := 1
	for _, p := range props {
		if v, ok := strings.CutPrefix(p, "parallelism.default="); ok {
			par, _ = strconv.Atoi(v)
		}
	}
	g := &graph.JobGraph{Name: name, Nodes: []*graph.Node{
		{ID: 0, Kind: "source", Name: "numbers", Parallelism: 1, Chaining: graph.ChainAlways, Bounded: true},
		{ID: 1, Kind: "sink", Name: "print", Parallelism: par, Chaining: graph.ChainAlways, Inputs: 1},
	}, Edges: []*graph.Edge{{From: 0, To: 1, Partitioning: graph.Rebalance}}, Config: map[string]string{"parallelism.default": strconv.Itoa(par)}}
	b, err := g.Marshal()
	if err != nil {
		fail(err)
	}
	return b
}

func remote(name string, args, props []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := restclient.New(os.Getenv(conf.EnvJobManager), restclient.WithPollInterval(5*time.Millisecond),
		restclient.WithToken([]byte(os.Getenv(conf.EnvRESTToken))))
	if err != nil {
		fail(err)
	}
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	id, err := c.Submit(ctx, restclient.Submission{Graph: plan(name, props), BinaryPath: self, Args: args})
	if err != nil {
		fail(err)
	}
	fmt.Printf("Job has been submitted with JobID %s\n", id)
	submitted(args, id)
	if slices.Contains(props, "execution.attached=false") {
		return
	}
	res, err := c.WaitForResult(ctx, id)
	if err != nil {
		fail(err)
	}
	fmt.Printf("Job %s ended: %s\n", id, res.ApplicationStatus)
	if err := res.Err(); err != nil {
		fail(err)
	}
}

// submitted records the job for the CLI (conf.EnvSubmittedOut).
func submitted(args []string, id string) {
	if out := os.Getenv(conf.EnvSubmittedOut); out != "" && !slices.Contains(args, "--no-submit") {
		if err := os.WriteFile(out, []byte(id+"\n"), 0o600); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "fakejob:", err)
	os.Exit(1)
}
