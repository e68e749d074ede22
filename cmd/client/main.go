// Command sluice is Sluice's command-line client, after Flink's:
//
//	sluice run [OPTIONS] BINARY [ARGUMENTS...]   run a job binary (local, on a cluster, on YARN)
//	sluice info [OPTIONS] BINARY [ARGUMENTS...]  print a job's plan as JSON
//	sluice list [--running|--scheduled|--all]    list a cluster's jobs
//	sluice savepoint JOB_ID [DIRECTORY]          take a savepoint (--dispose PATH deletes one)
//	sluice checkpoint [--full] JOB_ID            take a checkpoint
//	sluice stop [--savepointPath DIR] JOB_ID     stop a job with a savepoint
//	sluice cancel JOB_ID                         cancel a job
//	sluice jobmanager / sluice taskmanager       start the processes of a standalone cluster
//	sluice kafka transactions list|abort         a job's lingering Kafka transactions
//
// Every command takes --help, --configDir (or $SLUICE_CONF_DIR: the
// directory of config.yaml) and -D key=value settings, and as in Flink
// single-dash long options (-detached) and -Dkey=value work too.
//
// Exit status: 0 on success, 2 for a wrong command line (the message says
// what is wrong and how to fix it), 1 for any other failure; run passes on
// the job binary's own status.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"
)

func main() {
	os.Exit(runMain(os.Args, os.Stdin, os.Stdout, os.Stderr, clusterProcesses()))
}

// runMain runs the CLI with args and returns the exit status.
func runMain(args []string, stdin io.Reader, stdout, stderr io.Writer, cl Cluster) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app := newApp(stdin, stdout, stderr, cl)
	return exitStatus(stderr, app.RunContext(ctx, normalizeArgs(app, args)))
}

// exitStatus reports err on stderr and returns the exit status for it.
func exitStatus(stderr io.Writer, err error) int {
	var code *exitCode
	var usage *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		if code.msg != "" {
			fmt.Fprintf(stderr, "sluice: %s\n", code.msg)
		}
		return code.code
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "sluice: %s\n", usage.Error())
		return 2
	default:
		fmt.Fprintf(stderr, "sluice: %v\n", err)
		return 1
	}
}

// usageError is a wrong command line: what is wrong and how to fix it.
type usageError struct {
	msg     string
	command string // the full command name, for the help hint
}

func (e *usageError) Error() string {
	return fmt.Sprintf("%s\nRun '%s --help' for usage.", e.msg, e.command)
}

// usagef returns a usageError of the command running in c.
func usagef(c *cli.Context, format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...), command: commandPath(c)}
}

// commandPath is the full command line name of the command running in c,
// e.g. "sluice kafka transactions list".
func commandPath(c *cli.Context) string {
	var names []string
	if c != nil {
		for _, x := range c.Lineage() {
			if x.Command != nil && x.Command.Name != "" && x.Command.Name != x.App.Name {
				names = append([]string{x.Command.Name}, names...)
			}
		}
	}
	return strings.Join(append([]string{"sluice"}, names...), " ")
}

// exitCode passes on a job binary's exit status.
type exitCode struct {
	code int
	msg  string
}

func (e *exitCode) Error() string { return e.msg }

// onUsageError turns urfave/cli's flag errors into a usageError, suggesting
// the nearest flag for an unknown one.
func onUsageError(c *cli.Context, err error, _ bool) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		if s := nearestFlag(c, name); s != "" {
			msg += fmt.Sprintf("; did you mean --%s?", s)
		}
	}
	return usagef(c, "%s", msg)
}

// nearestFlag returns the command's flag name closest to name.
func nearestFlag(c *cli.Context, name string) string {
	var flags []cli.Flag
	if c.Command != nil && c.Command.Name != "" {
		flags = c.Command.Flags
	} else {
		flags = c.App.Flags
	}
	var names []string
	for _, f := range flags {
		names = append(names, f.Names()...)
	}
	return nearest(name, names)
}

// nearest returns the candidate closest to s by edit distance, if close.
func nearest(s string, candidates []string) string {
	best, bestD := "", max(2, len(s)/3)+1
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(s), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// newApp builds the CLI. cl provides the cluster processes and
// deployments the commands start.
func newApp(stdin io.Reader, stdout, stderr io.Writer, cl Cluster) *cli.App {
	app := &cli.App{
		Name:      "sluice",
		Usage:     "run and manage Sluice stream processing jobs",
		UsageText: "sluice COMMAND [OPTIONS] [ARGUMENTS...]",
		Description: "Commands and options follow Apache Flink's command-line client. Settings come from\n" +
			"config.yaml in --configDir (or $SLUICE_CONF_DIR), overridden by -D key=value.",
		Reader:    stdin,
		Writer:    stdout,
		ErrWriter: stderr,
		// Flags like -D take values with commas ("-D yarn.tags=a,b").
		DisableSliceFlagSeparator: true,
		// Errors are reported by exitStatus, never by os.Exit in the library.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   onUsageError,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return unknownCommand(c, c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
		Commands: []*cli.Command{
			runCommand(cl), infoCommand(), listCommand(), savepointCommand(), checkpointCommand(),
			stopCommand(), cancelCommand(), jobManagerCommand(cl), taskManagerCommand(cl), yarnSessionCommand(cl), kafkaCommand(), sqlCommand(), sqlJobCommand(), beamCommand(),
		},
		Metadata: map[string]any{metaCluster: cl},
	}
	setUsageErrors(app.Commands)
	return app
}

func unknownCommand(c *cli.Context, name string) error {
	var names []string
	for _, cmd := range c.App.Commands {
		names = append(names, cmd.Names()...)
	}
	hint := ""
	if s := nearest(name, names); s != "" {
		hint = fmt.Sprintf("; did you mean %q?", s)
	}
	return usagef(c, "%q is not a sluice command%s\nThe commands are: %s", name, hint, strings.Join(commandNames(c.App.Commands), ", "))
}

func commandNames(cmds []*cli.Command) []string {
	var out []string
	for _, c := range cmds {
		if !c.Hidden && c.Name != "help" {
			out = append(out, c.Name)
		}
	}
	return out
}

// setUsageErrors routes the flag errors of every command to onUsageError,
// and makes a command with subcommands reject an unknown one.
func setUsageErrors(cmds []*cli.Command) {
	for _, cmd := range cmds {
		cmd.OnUsageError = onUsageError
		if len(cmd.Subcommands) > 0 {
			subs := cmd.Subcommands
			cmd.Action = func(c *cli.Context) error {
				if c.Args().Present() {
					return usagef(c, "%q is not a subcommand of %q; the subcommands are: %s", c.Args().First(), strings.TrimPrefix(commandPath(c), "sluice "), strings.Join(commandNames(subs), ", "))
				}
				return usagef(c, "%q needs a subcommand: %s", strings.TrimPrefix(commandPath(c), "sluice "), strings.Join(commandNames(subs), ", "))
			}
			setUsageErrors(cmd.Subcommands)
		}
	}
}
