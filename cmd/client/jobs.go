package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/urfave/cli/v2"

	"github.com/sluice/sluice/cluster/hadoopenv"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
	"github.com/sluice/sluice/rest/restclient"
	"github.com/sluice/sluice/security/tlsconf"
)

// Commands that manage the jobs of a running cluster through its REST API.

// client connects to the cluster the command's flags and configuration name.
func client(c *cli.Context) (*restclient.Client, error) {
	cfg, err := loadConfig(c)
	if err != nil {
		return nil, err
	}
	var addr string
	var token []byte
	switch t := strings.ToLower(c.String("target")); t {
	case "", conf.TargetRemote:
		if addr, err = restAddress(c, cfg); err != nil {
			return nil, err
		}
		if token, err = restapi.TokenFromConf(cfg); err != nil {
			return nil, err
		}
	case conf.TargetYarnSession:
		if c.String("jobmanager") != "" {
			return nil, usagef(c, "--jobmanager names a standalone cluster, but --target is yarn-session; drop one of them")
		}
		s, err := yarnSessionAddress(c, cfg)
		if err != nil {
			return nil, err
		}
		addr, token = s.Address, s.Token
	default:
		return nil, usagef(c, "--target %q: a running cluster is remote or yarn-session", c.String("target"))
	}
	tc, err := tlsconf.RESTClient(cfg)
	if err != nil {
		return nil, err
	}
	return restclient.New(addr, restclient.WithTLS(tc), restclient.WithToken(token))
}

// jobArg reads the JOB_ID argument.
func jobArg(c *cli.Context, maxArgs int) (string, error) {
	if !c.Args().Present() {
		return "", usagef(c, "give the job's ID: %s (list the jobs with 'sluice list')", c.Command.UsageText)
	}
	if c.NArg() > maxArgs {
		return "", usagef(c, "too many arguments %q: %s", c.Args().Slice()[maxArgs:], c.Command.UsageText)
	}
	id, ok := restapi.ParseID(c.Args().First())
	if !ok {
		return "", usagef(c, "%q is not a job ID: a job ID is 32 hexadecimal characters, as 'sluice list' shows", c.Args().First())
	}
	return id, nil
}

func timeoutFlag(what string) cli.Flag {
	return &cli.DurationFlag{Name: "timeout", Value: 10 * time.Minute, Usage: "how long to wait for the " + what + " (0: no limit)"}
}

// explainWait makes a wait that ran out say what is still going on.
func explainWait(err error, what, jobID, trigger string) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s of job %s did not complete within --timeout; it may still complete (trigger ID %s): %w", what, jobID, trigger, err)
	}
	return err
}

func listCommand() *cli.Command {
	return &cli.Command{
		Name:      "list",
		Usage:     "list the jobs of a cluster",
		UsageText: "sluice list [OPTIONS]",
		Description: "Lists running and scheduled jobs by default; --running and --scheduled select one kind,\n" +
			"--all lists ended jobs as well.",
		Flags: append(clusterFlags(),
			&cli.BoolFlag{Name: "running", Aliases: []string{"r"}, Usage: "list only running jobs"},
			&cli.BoolFlag{Name: "scheduled", Aliases: []string{"s"}, Usage: "list only scheduled jobs"},
			&cli.BoolFlag{Name: "all", Aliases: []string{"a"}, Usage: "list all jobs, ended ones included"},
		),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef(c, "list takes no arguments, got %q", c.Args().Slice())
			}
			cl, err := client(c)
			if err != nil {
				return err
			}
			jobs, err := cl.JobsOverview(c.Context)
			if err != nil {
				return err
			}
			all := c.Bool("all")
			running := all || c.Bool("running") || !c.Bool("scheduled")
			scheduled := all || c.Bool("scheduled") || !c.Bool("running")
			printJobs(c.App.Writer, jobs, running, scheduled, all)
			return nil
		},
	}
}

// printJobs lists jobs in the form of Flink's list command.
func printJobs(w io.Writer, jobs []restapi.JobOverview, running, scheduled, ended bool) {
	slices.SortStableFunc(jobs, func(a, b restapi.JobOverview) int { return int(a.StartTime - b.StartTime) })
	var run, sched, done []restapi.JobOverview
	for _, j := range jobs {
		switch {
		case j.State.IsGloballyTerminal():
			done = append(done, j)
		case j.State == restapi.JobCreated || j.State == restapi.JobInitializing:
			sched = append(sched, j)
		default:
			run = append(run, j)
		}
	}
	section := func(title, none string, js []restapi.JobOverview) {
		if len(js) == 0 {
			fmt.Fprintln(w, none)
			return
		}
		fmt.Fprintf(w, "%s\n", title)
		for _, j := range js {
			fmt.Fprintf(w, "%s : %s : %s (%s)\n", time.UnixMilli(j.StartTime).Format("02.01.2006 15:04:05"), j.ID, j.Name, j.State)
		}
		fmt.Fprintln(w, strings.Repeat("-", 62))
	}
	if running {
		section("------------------ Running/Restarting Jobs -------------------", "No running jobs.", run)
	}
	if scheduled {
		section("----------------------- Scheduled Jobs -----------------------", "No scheduled jobs.", sched)
	}
	if ended {
		section("---------------------- Terminated Jobs -----------------------", "No terminated jobs.", done)
	}
}

func formatType(c *cli.Context) (string, error) {
	switch t := strings.ToUpper(c.String("type")); t {
	case "", restapi.FormatCanonical:
		return t, nil
	case restapi.FormatNative:
		return "", usagef(c, "--type native is not supported: Sluice writes savepoints in the canonical format only "+
			"(the same from either state backend, so they restore into both); use --type canonical or leave --type out")
	default:
		return "", usagef(c, "--type %q is not a savepoint format; use canonical", c.String("type"))
	}
}

func savepointCommand() *cli.Command {
	return &cli.Command{
		Name:      "savepoint",
		Usage:     "take a savepoint of a running job, or dispose of one",
		UsageText: "sluice savepoint [OPTIONS] JOB_ID [TARGET_DIRECTORY]\n   sluice savepoint --dispose SAVEPOINT_PATH",
		Description: "Takes a savepoint of job JOB_ID into TARGET_DIRECTORY (default: execution.checkpointing.savepoint-dir)\n" +
			"and prints its path; resume from it with 'sluice run --fromSavepoint PATH'.",
		Flags: append(clusterFlags(),
			&cli.StringFlag{Name: "dispose", Aliases: []string{"d"}, Usage: "delete the savepoint at `PATH` (a directory or its _metadata file)"},
			&cli.BoolFlag{Name: "detached", Usage: "print the trigger ID and return without waiting"},
			&cli.StringFlag{Name: "type", Usage: "savepoint format: canonical, the only one (portable between state backends; native is not supported)"},
			timeoutFlag("savepoint"),
		),
		Action: func(c *cli.Context) error {
			if p := c.String("dispose"); p != "" {
				if c.Args().Present() {
					return usagef(c, "--dispose takes the savepoint path alone; drop %q", c.Args().Slice())
				}
				return dispose(c, p)
			}
			id, err := jobArg(c, 2)
			if err != nil {
				return err
			}
			format, err := formatType(c)
			if err != nil {
				return err
			}
			cl, err := client(c)
			if err != nil {
				return err
			}
			req := restapi.SavepointTriggerRequest{TargetDirectory: c.Args().Get(1), FormatType: format, TriggerID: restapi.NewID()}
			fmt.Fprintf(c.App.Writer, "Triggering savepoint for job %s.\n", id)
			if c.Bool("detached") {
				trigger, err := cl.TriggerSavepoint(c.Context, id, req)
				if err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "Savepoint triggered; trigger ID %s.\nPoll it with GET %s/jobs/%s/savepoints/%s\n", trigger, cl.URL(), id, trigger)
				return nil
			}
			fmt.Fprintln(c.App.Writer, "Waiting for response...")
			ctx, cancel := withTimeout(c)
			defer cancel()
			loc, err := cl.Savepoint(ctx, id, req)
			if err != nil {
				return explainWait(err, "the savepoint", id, req.TriggerID)
			}
			fmt.Fprintf(c.App.Writer, "Savepoint completed. Path: %s\nYou can resume your program from this savepoint with the run command.\n", loc)
			return nil
		},
	}
}

// dispose deletes a savepoint from its file system.
func dispose(c *cli.Context, p string) error {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	if !strings.Contains(p, ":") && !filepath.IsAbs(p) {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
	}
	r := fs.NewResolver()
	defer r.Close()
	if u, err := url.Parse(p); err == nil && u.Scheme == "hdfs" {
		// With the Kerberos login the configuration names, on a secure
		// cluster.
		h, err := hadoopenv.Setup(cfg, hadoopenv.Options{Component: "sluice savepoint --dispose", Logger: slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		defer h.Close()
		if err := h.RegisterHDFS(r); err != nil {
			return err
		}
	}
	fsys, path, err := r.For(p)
	if err != nil {
		return usagef(c, "--dispose %q: %v", p, err)
	}
	if err := storage.DisposeSavepoint(fsys, path); err != nil {
		if errors.Is(err, storage.ErrNotSavepoint) {
			return fmt.Errorf("%w\nNothing was deleted: --dispose only deletes savepoints", err)
		}
		return err
	}
	fmt.Fprintf(c.App.Writer, "Savepoint '%s' disposed.\n", p)
	return nil
}

func checkpointCommand() *cli.Command {
	return &cli.Command{
		Name:      "checkpoint",
		Usage:     "take a checkpoint of a running job",
		UsageText: "sluice checkpoint [OPTIONS] JOB_ID",
		Description: "Takes a checkpoint of job JOB_ID as it checkpoints periodically (incremental if so configured),\n" +
			"or a full one with --full, and prints its ID.",
		Flags: append(clusterFlags(),
			&cli.BoolFlag{Name: "full", Usage: "take a full checkpoint even if the job checkpoints incrementally"},
			timeoutFlag("checkpoint"),
		),
		Action: func(c *cli.Context) error {
			id, err := jobArg(c, 1)
			if err != nil {
				return err
			}
			cl, err := client(c)
			if err != nil {
				return err
			}
			req := restapi.CheckpointTriggerRequest{CheckpointType: restapi.CheckpointConfigured, TriggerID: restapi.NewID()}
			if c.Bool("full") {
				req.CheckpointType = restapi.CheckpointFull
			}
			fmt.Fprintf(c.App.Writer, "Triggering checkpoint for job %s.\nWaiting for response...\n", id)
			ctx, cancel := withTimeout(c)
			defer cancel()
			cp, err := cl.Checkpoint(ctx, id, req)
			if err != nil {
				return explainWait(err, "the checkpoint", id, req.TriggerID)
			}
			fmt.Fprintf(c.App.Writer, "Checkpoint %d for job %s completed.\n", cp, id)
			return nil
		},
	}
}

func stopCommand() *cli.Command {
	return &cli.Command{
		Name:      "stop",
		Usage:     "stop a running job with a savepoint",
		UsageText: "sluice stop [OPTIONS] JOB_ID",
		Description: "Takes a savepoint of job JOB_ID and stops it (FINISHED). With --drain, event time is ended first,\n" +
			"so every window and timer fires; use it when the job will not be resumed.",
		Flags: append(clusterFlags(),
			&cli.StringFlag{Name: "savepointPath", Aliases: []string{"p"}, Usage: "`DIRECTORY` for the savepoint (default: execution.checkpointing.savepoint-dir)"},
			&cli.BoolFlag{Name: "drain", Aliases: []string{"d"}, Usage: "end event time before the savepoint (MAX_WATERMARK)"},
			&cli.BoolFlag{Name: "detached", Usage: "print the trigger ID and return without waiting"},
			&cli.StringFlag{Name: "type", Usage: "savepoint format: canonical, the only one (native is not supported)"},
			timeoutFlag("savepoint and the stop"),
		),
		Action: func(c *cli.Context) error {
			id, err := jobArg(c, 1)
			if err != nil {
				return err
			}
			format, err := formatType(c)
			if err != nil {
				return err
			}
			cl, err := client(c)
			if err != nil {
				return err
			}
			req := restapi.StopRequest{TargetDirectory: c.String("savepointPath"), Drain: c.Bool("drain"), FormatType: format, TriggerID: restapi.NewID()}
			// Flink's words: a drained job ends (its windows fire); otherwise
			// it is suspended at the savepoint.
			verb := "Suspending"
			if req.Drain {
				verb = "Draining"
			}
			fmt.Fprintf(c.App.Writer, "%s job %s.\n", verb, id)
			if c.Bool("detached") {
				trigger, err := cl.TriggerStop(c.Context, id, req)
				if err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "Stop triggered; trigger ID %s.\nPoll it with GET %s/jobs/%s/savepoints/%s\n", trigger, cl.URL(), id, trigger)
				return nil
			}
			ctx, cancel := withTimeout(c)
			defer cancel()
			loc, err := cl.StopWithSavepoint(ctx, id, req)
			if err != nil {
				return explainWait(err, "stop-with-savepoint", id, req.TriggerID)
			}
			fmt.Fprintf(c.App.Writer, "Savepoint completed. Path: %s\n", loc)
			return nil
		},
	}
}

func cancelCommand() *cli.Command {
	return &cli.Command{
		Name:        "cancel",
		Usage:       "cancel a running job",
		UsageText:   "sluice cancel [OPTIONS] JOB_ID",
		Description: "Cancels job JOB_ID without a savepoint. To keep its state, stop it with 'sluice stop' instead.",
		Flags:       clusterFlags(),
		Action: func(c *cli.Context) error {
			id, err := jobArg(c, 1)
			if err != nil {
				return err
			}
			cl, err := client(c)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "Cancelling job %s.\n", id)
			if err := cl.Cancel(c.Context, id); err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "Cancelled job %s.\n", id)
			return nil
		},
	}
}
