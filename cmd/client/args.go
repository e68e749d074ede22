package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// passThrough names the commands whose first argument is a job binary:
// everything after it belongs to the job and is passed on untouched.
var passThrough = map[string]bool{"run": true, "info": true, "jobmanager": true, sqlJobCommandName: true}

// normalizeArgs rewrites a command line into the form urfave/cli parses,
// accepting what Flink's CLI accepts:
//
//   - "-Dkey=value" becomes "-D" "key=value" (Go's flag package would read
//     a flag named "Dkey");
//   - options may follow the arguments ("sluice savepoint JOB DIR
//     --detached"): they are moved before them, except after the job binary
//     of run and info, and after "--".
func normalizeArgs(app *cli.App, args []string) []string {
	if len(args) == 0 {
		return args
	}
	out := []string{args[0]}
	flags := app.Flags
	cmds := app.Commands
	var leaf *cli.Command
	var positional []string
	i := 1
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			if strings.HasPrefix(a, "-D") && len(a) > 2 && a[2] != '=' {
				out = append(out, "-D", a[2:])
				continue
			}
			out = append(out, a)
			if takesValue(flags, a) && i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
			continue
		}
		if leaf == nil {
			if sub := findCommand(cmds, a); sub != nil {
				out = append(out, a)
				flags, cmds = sub.Flags, sub.Subcommands
				if len(sub.Subcommands) == 0 {
					leaf = sub
				}
				continue
			}
		}
		if leaf != nil && passThrough[leaf.Name] {
			break // the job binary: it and what follows go to the job
		}
		positional = append(positional, a)
	}
	out = append(out, positional...)
	return append(out, args[i:]...)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// takesValue reports whether the option a ("-x", "--name", "--name=v") is
// one of flags that takes a value in the next argument.
func takesValue(flags []cli.Flag, a string) bool {
	name := strings.TrimLeft(a, "-")
	if strings.Contains(name, "=") {
		return false
	}
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				_, isBool := f.(*cli.BoolFlag)
				return !isBool
			}
		}
	}
	return false
}
