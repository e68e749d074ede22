package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/urfave/cli/v2"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/runtime/graph"
)

// A job binary is run as the job binary contract says (see package conf,
// EnvExecutionTarget): the CLI sets the mode, the JobManager address and
// the dynamic properties; the binary does the rest.

var targets = []string{conf.TargetLocal, conf.TargetRemote, conf.TargetYarnSession, conf.TargetYarnApplication}

func runCommand(cl Cluster) *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run a job binary: locally, on a standalone cluster or on YARN",
		UsageText: "sluice run [OPTIONS] BINARY [ARGUMENTS...]",
		Description: "Runs the job program BINARY; the ARGUMENTS after it are the program's.\n" +
			"With --target local (the default) the job runs inside the program on an embedded cluster;\n" +
			"with remote it is submitted to the JobManager at --jobmanager (or rest.address:rest.port).\n" +
			"The exit status is the program's.",
		Flags: append(configFlags(),
			&cli.StringFlag{Name: "target", Aliases: []string{"t"}, Usage: "where the job runs: " + strings.Join(targets, ", ") + " (default: execution.target, local)"},
			&cli.StringFlag{Name: "jobmanager", Aliases: []string{"m"}, Usage: "`host:port` of the JobManager's REST endpoint; implies --target remote"},
			&cli.BoolFlag{Name: "detached", Aliases: []string{"d"}, Usage: "return once the job is submitted instead of waiting for it to end"},
			&cli.IntFlag{Name: "parallelism", Aliases: []string{"p"}, Usage: "default parallelism of the job", DefaultText: "parallelism.default"},
			&cli.StringFlag{Name: "fromSavepoint", Aliases: []string{"s"}, Usage: "restore the job from this savepoint or retained checkpoint `PATH`"},
			&cli.BoolFlag{Name: "allowNonRestoredState", Aliases: []string{"n"}, Usage: "skip savepoint state of operators the job no longer has"},
		),
		Action: func(c *cli.Context) error { return runJob(c, cl) },
	}
}

// jobSettings are the settings run and info give a job binary.
type jobSettings struct {
	binary string
	args   []string
	env    map[string]string
	props  []string // the dynamic properties
	cfg    *conf.Configuration
}

// jobBinary checks the BINARY argument and the flags shared by run and
// info, and loads the configuration.
func jobBinary(c *cli.Context, extra ...string) (*jobSettings, error) {
	if !c.Args().Present() {
		return nil, usagef(c, "give the job binary: %s", c.Command.UsageText)
	}
	bin := c.Args().First()
	fi, err := os.Stat(bin)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, usagef(c, "job binary %q does not exist; give the path of a program built with the stream package (go build -o myjob ./myjob)", bin)
	case err != nil:
		return nil, fmt.Errorf("job binary %q: %w", bin, err)
	case fi.IsDir():
		return nil, usagef(c, "job binary %q is a directory; build the program first (go build -o myjob %s) and give the binary", bin, bin)
	case fi.Mode()&0o111 == 0:
		return nil, usagef(c, "job binary %q is not executable; chmod +x it", bin)
	}
	if !strings.Contains(bin, string(filepath.Separator)) {
		bin = "." + string(filepath.Separator) + bin // never looked up in $PATH
	}
	var props []string
	if c.IsSet("parallelism") {
		p := c.Int("parallelism")
		if p < 1 {
			return nil, usagef(c, "--parallelism %d: the parallelism must be at least 1", p)
		}
		props = append(props, conf.DynamicProperty(conf.ParallelismDefault.Key(), strconv.Itoa(p)))
	}
	props = append(props, extra...)
	cfg, err := loadConfig(c, props...)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	if dir := c.String("configDir"); dir != "" {
		env[conf.EnvConfDir] = absDir(dir)
	}
	return &jobSettings{binary: bin, args: c.Args().Tail(), env: env, props: append(c.StringSlice("D"), props...), cfg: cfg}, nil
}

func runJob(c *cli.Context, cl Cluster) error {
	var extra []string
	if sp := c.String("fromSavepoint"); sp != "" {
		extra = append(extra, conf.DynamicProperty(conf.StateRecoveryPath.Key(), sp))
	}
	if c.Bool("allowNonRestoredState") {
		extra = append(extra, conf.DynamicProperty(conf.StateRecoveryIgnoreUnclaimedState.Key(), "true"))
	}
	// Attached unless --detached, as Flink's run (execution.attached
	// defaults to false for programs that submit on their own).
	extra = append(extra, conf.DynamicProperty(conf.ExecutionAttached.Key(), strconv.FormatBool(!c.Bool("detached"))))
	js, err := jobBinary(c, extra...)
	if err != nil {
		return err
	}
	target := c.String("target")
	switch {
	case target != "":
		target = strings.ToLower(target)
		if !slices.Contains(targets, target) {
			return usagef(c, "--target %q is not a target; use one of %s", c.String("target"), strings.Join(targets, ", "))
		}
	case c.String("jobmanager") != "":
		target = conf.TargetRemote
	default:
		target = conf.Get(js.cfg, conf.ExecutionTarget)
	}
	if c.String("jobmanager") != "" && target != conf.TargetRemote {
		return usagef(c, "--jobmanager names a standalone cluster, but --target is %s; drop one of them", target)
	}
	if c.Bool("allowNonRestoredState") && conf.Get(js.cfg, conf.StateRecoveryPath) == "" {
		return usagef(c, "--allowNonRestoredState only applies when restoring: add --fromSavepoint PATH")
	}
	if c.Bool("detached") && target == conf.TargetLocal {
		return usagef(c, "--detached needs a cluster to leave the job on; a local job runs inside the program. Use --target remote")
	}
	js.props = append(js.props, conf.DynamicProperty(conf.ExecutionTarget.Key(), target))
	switch target {
	case conf.TargetLocal:
		js.env[conf.EnvExecutionTarget] = conf.TargetLocal
	case conf.TargetRemote:
		addr, err := restAddress(c, js.cfg)
		if err != nil {
			return err
		}
		token, err := restapi.TokenFromConf(js.cfg)
		if err != nil {
			return err
		}
		js.env[conf.EnvExecutionTarget] = conf.TargetRemote
		js.env[conf.EnvJobManager] = addr
		if token != nil {
			js.env[conf.EnvRESTToken] = string(token)
		}
	case conf.TargetYarnApplication:
		// The program runs in the ApplicationMaster (application mode).
		return runOnYarnApplication(c, cl, js)
	default: // yarn-session: the program runs here and submits to the session
		s, err := yarnSessionAddress(c, js.cfg)
		if err != nil {
			return err
		}
		js.env[conf.EnvExecutionTarget] = conf.TargetRemote
		js.env[conf.EnvJobManager] = s.Address
		if s.Token != nil {
			js.env[conf.EnvRESTToken] = string(s.Token)
		}
	}
	return execSubmitting(c, js)
}

// execSubmitting runs the job binary of `sluice run` and fails when it
// exited without starting or submitting a job (a program that never calls
// Execute, or not a Sluice program at all), which would otherwise end
// silently with status 0.
func execSubmitting(c *cli.Context, js *jobSettings) error {
	dir, err := os.MkdirTemp("", "sluice-run-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "submitted")
	js.env[conf.EnvSubmittedOut] = out
	if err := execJob(c, js, nil); err != nil {
		return err
	}
	if ids, err := os.ReadFile(out); err != nil || len(bytes.TrimSpace(ids)) == 0 {
		return &exitCode{code: 1, msg: fmt.Sprintf("job binary %s exited without submitting a job: a Sluice job program builds its dataflow and calls Execute on its environment (stream.Execute)", js.binary)}
	}
	return nil
}

// execJob runs the job binary with the settings, its output to ours (its
// stdout to stdout unless it is given), and passes on its exit status.
func execJob(c *cli.Context, js *jobSettings, stdout *bytes.Buffer) error {
	props, err := conf.JoinDynamicProperties(js.props)
	if err != nil {
		return usagef(c, "%v", err)
	}
	js.env[conf.EnvDynamicProperties] = props
	cmd := exec.CommandContext(c.Context, js.binary, js.args...)
	cmd.Env = childEnv(js.env)
	cmd.Stdin = c.App.Reader
	cmd.Stdout = c.App.Writer
	if stdout != nil {
		cmd.Stdout = stdout
	}
	cmd.Stderr = c.App.ErrWriter
	// On Ctrl-C or SIGTERM the job gets SIGTERM, to stop cleanly (a local
	// job cancels itself; a remote one stays on the cluster unless it
	// cancels it), and SIGKILL if it has not exited after a grace period.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return &exitCode{code: 128 + int(ws.Signal()), msg: fmt.Sprintf("job binary %s was killed by %v", js.binary, ws.Signal())}
		}
		return &exitCode{code: exit.ExitCode(), msg: fmt.Sprintf("job binary %s exited with status %d", js.binary, exit.ExitCode())}
	default:
		return fmt.Errorf("running job binary %s: %w", js.binary, err)
	}
}

func infoCommand() *cli.Command {
	return &cli.Command{
		Name:      "info",
		Usage:     "print a job's plan (its job graph) as JSON without running it",
		UsageText: "sluice info [OPTIONS] BINARY [ARGUMENTS...]",
		Description: "Runs the job program BINARY in plan mode: it builds its dataflow and writes the job graph\n" +
			"instead of running it. The ARGUMENTS after BINARY are the program's.",
		Flags: append(configFlags(),
			&cli.IntFlag{Name: "parallelism", Aliases: []string{"p"}, Usage: "default parallelism of the job", DefaultText: "parallelism.default"},
		),
		Action: func(c *cli.Context) error {
			js, err := jobBinary(c)
			if err != nil {
				return err
			}
			dir, err := os.MkdirTemp("", "sluice-plan-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			out := filepath.Join(dir, "plan.json")
			js.env[conf.EnvExecutionTarget] = conf.BinaryModePlan
			js.env[conf.EnvPlanOut] = out
			// The program's own output goes to stderr: stdout is the plan.
			var progOut bytes.Buffer
			runErr := execJob(c, js, &progOut)
			if progOut.Len() > 0 {
				c.App.ErrWriter.Write(progOut.Bytes())
			}
			if runErr != nil {
				return runErr
			}
			data, err := os.ReadFile(out)
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("job binary %s exited without writing its plan: it must be a Sluice job program (calling stream's Execute) "+
					"built with a version of Sluice that supports %s=%s", js.binary, conf.EnvExecutionTarget, conf.BinaryModePlan)
			}
			if err != nil {
				return fmt.Errorf("reading the plan: %w", err)
			}
			g, err := graph.Unmarshal(data)
			if err != nil {
				return fmt.Errorf("job binary %s wrote a plan that is not a job graph: %w", js.binary, err)
			}
			b, err := json.MarshalIndent(g, "", "  ")
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "%s\n", b)
			return nil
		},
	}
}

// withTimeout bounds a command's wait by its --timeout flag (0: none).
func withTimeout(c *cli.Context) (context.Context, context.CancelFunc) {
	if d := c.Duration("timeout"); d > 0 {
		return context.WithTimeout(c.Context, d)
	}
	return context.WithCancel(c.Context)
}
