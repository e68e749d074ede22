package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/sql"
)

// The SQL client, after Flink's sql-client.sh:
//
//	sluice sql -f script.sql
//	sluice sql -e "CREATE TABLE ...; INSERT INTO ... SELECT ..."
//
// The script's statements run in order; each INSERT (or statement set)
// starts a job on the embedded engine, in this process, and its job id is
// printed. The client then runs until every job has ended or it is
// interrupted (Ctrl-C cancels the jobs).

func sqlCommand() *cli.Command {
	return &cli.Command{
		Name:      "sql",
		Usage:     "run a Flink SQL script (CREATE TABLE, SET, INSERT INTO ... SELECT) as jobs",
		UsageText: "sluice sql [OPTIONS] [-f SCRIPT.sql | -e 'STATEMENTS']   (neither: statements from standard input, a prompt on a terminal)",
		Description: "INSERT statements run as jobs on the embedded engine in this process (execution.target local);\n" +
			"the client prints each job's id and runs until the jobs end or it is interrupted.",
		Flags: append(configFlags(),
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "the SQL script to run", TakesFile: true},
			&cli.StringFlag{Name: "execute", Aliases: []string{"e"}, Usage: "SQL statements to run (separated by ';')"},
		),
		Action: func(c *cli.Context) error {
			file, stmts := c.String("file"), c.String("execute")
			if file != "" && stmts != "" {
				return usagef(c, "give the script with -f FILE or the statements with -e 'STATEMENTS', not both")
			}
			if c.Args().Present() {
				return usagef(c, "unexpected argument %q", c.Args().First())
			}
			script := stmts
			interactive := file == "" && stmts == ""
			if file != "" {
				b, err := os.ReadFile(file)
				if err != nil {
					return fmt.Errorf("reading the SQL script: %w", err)
				}
				script = string(b)
			}
			cfg, err := loadConfig(c)
			if err != nil {
				return err
			}
			if t, ok := cfg.Raw("execution.target"); ok && t.Value != conf.TargetLocal {
				return usagef(c, "execution.target %q: sluice sql runs its jobs on the embedded engine only (local) so far", t.Value)
			}
			s := sql.NewSession(sql.Options{Config: cfg.ToMap(), Stdout: c.App.Writer, Terminal: isTerminal(c.App.Writer)})
			var jobs []*sql.Job
			if interactive {
				jobs, err = repl(c, s, c.App.Reader, isTerminal(c.App.Reader))
			} else {
				jobs, err = s.ExecuteScript(c.Context, script)
			}
			if err != nil {
				if sql.IsScriptError(err) && file != "" {
					return fmt.Errorf("%s: %w", file, err)
				}
				return err
			}
			if len(jobs) == 0 {
				return nil
			}
			done := make(chan error, len(jobs))
			for _, j := range jobs {
				go func() { done <- j.Wait() }()
			}
			var errs []error
			for n := range jobs {
				select {
				case err := <-done:
					if err != nil {
						errs = append(errs, err)
					}
					continue
				case <-c.Context.Done():
				}
				for _, j := range jobs {
					j.Cancel()
				}
				for range len(jobs) - n {
					<-done // a SELECT's result is closed as its job ends
				}
				fmt.Fprintf(c.App.ErrWriter, "sluice: interrupted: cancelled %d job(s)\n", len(jobs))
				return nil
			}
			if len(errs) > 0 {
				return errors.Join(errs...)
			}
			fmt.Fprintf(c.App.Writer, "[INFO] %s finished.\n", plural(len(jobs), "job", "jobs"))
			return nil
		},
	}
}

// isTerminal reports whether f is a terminal (a character device).
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	st, err := file.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// repl reads statements from in, each ended by a ';' at the end of a
// line, and runs them in one session; QUIT; or EXIT; ends it and cancels
// the jobs, the end of the input waits for them.
func repl(c *cli.Context, s *sql.Session, in io.Reader, interactive bool) ([]*sql.Job, error) {
	out := c.App.Writer
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var jobs []*sql.Job
	var stmt strings.Builder
	prompt := func() {
		if interactive {
			if stmt.Len() == 0 {
				fmt.Fprint(out, "Flink SQL> ")
			} else {
				fmt.Fprint(out, "> ")
			}
		}
	}
	prompt()
	for sc.Scan() {
		line := sc.Text()
		stmt.WriteString(line)
		stmt.WriteString("\n")
		if !strings.HasSuffix(strings.TrimSpace(line), ";") {
			prompt()
			continue
		}
		text := strings.TrimSpace(stmt.String())
		stmt.Reset()
		switch strings.ToUpper(strings.TrimSuffix(text, ";")) {
		case "QUIT", "EXIT":
			for _, j := range jobs {
				j.Cancel()
			}
			return nil, nil
		}
		started, err := s.ExecuteScript(c.Context, text)
		if err != nil {
			fmt.Fprintf(out, "[ERROR] %v\n", err)
		}
		for _, j := range started {
			if !j.Query() {
				jobs = append(jobs, j)
				continue
			}
			// A SELECT holds the prompt until its result ends, as in
			// Flink's client (Ctrl-C ends it, and the client).
			if err := j.Wait(); err != nil && c.Context.Err() == nil {
				fmt.Fprintf(out, "[ERROR] %v\n", err)
			}
		}
		prompt()
	}
	return jobs, sc.Err()
}
