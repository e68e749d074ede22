package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sluice/sluice/cluster/hadoopenv"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/rest/restapi"
	"github.com/sluice/sluice/rest/restclient"
	"github.com/sluice/sluice/security/tlsconf"
	"github.com/sluice/sluice/sql"
)

// The SQL client, after Flink's sql-client.sh:
//
//	sluice sql -f script.sql
//	sluice sql -e "CREATE TABLE ...; INSERT INTO ... SELECT ..."
//
// The script's statements run in order; each INSERT (or statement set)
// starts a job and its job id is printed. Where the jobs run is
// execution.target (-t), as for sluice run: local (the default) runs them
// on the embedded engine in this process, and the client then runs until
// every job has ended or it is interrupted (Ctrl-C cancels the jobs);
// remote (-m or rest.address), yarn-session and yarn-application submit
// them to a cluster (detached, as Flink's SQL client does, unless
// table.dml-sync is true), with this binary as their job program: its
// hidden sql-job command (sqlJobCommand) plans the same script again on
// the cluster (see sql.Cluster).

func sqlCommand() *cli.Command {
	return &cli.Command{
		Name:      "sql",
		Usage:     "run a Flink SQL script (CREATE TABLE, SET, INSERT INTO ... SELECT) as jobs",
		UsageText: "sluice sql [OPTIONS] [-f SCRIPT.sql | -e 'STATEMENTS']   (neither: statements from standard input, a prompt on a terminal)",
		Description: "INSERT statements run as jobs where --target (execution.target) says: local (the default), on the\n" +
			"embedded engine in this process, the client running until the jobs end or it is interrupted; remote\n" +
			"(the standalone cluster at --jobmanager or rest.address), yarn-session or yarn-application, submitted\n" +
			"to the cluster, the client printing each job's id and returning (table.dml-sync=true: waiting for\n" +
			"the jobs). A SELECT's result is shown as its job runs (not in yarn-application mode). The whole\n" +
			"script is planned before anything runs or is submitted.",
		Flags: append(configFlags(),
			&cli.StringFlag{Name: "target", Aliases: []string{"t"}, Usage: "where the jobs run: " + strings.Join(targets, ", ") + " (default: execution.target, local)"},
			&cli.StringFlag{Name: "jobmanager", Aliases: []string{"m"}, Usage: "`host:port` of the JobManager's REST endpoint; implies --target remote"},
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
			target, err := jobTarget(c, cfg)
			if err != nil {
				return err
			}
			opts := sql.Options{Config: cfg.ToMap(), Stdout: c.App.Writer, Terminal: isTerminal(c.App.Writer)}
			if target != conf.TargetLocal && !interactive {
				// The whole script is checked as a cluster's session checks
				// it (a SELECT is refused) before the cluster is looked for,
				// so a mistake is reported, at its line and column, with
				// nothing submitted.
				check := opts
				check.Cluster = &sql.Cluster{}
				if target != conf.TargetYarnApplication {
					check.Cluster.ResultHost = "localhost" // a SELECT's result can come back here
				}
				if err := sql.ValidateWith(check, script); err != nil {
					if sql.IsScriptError(err) && file != "" {
						return fmt.Errorf("%s: %w", file, err)
					}
					return err
				}
			}
			switch target {
			case conf.TargetLocal:
				// hdfs:// paths (filesystem tables, checkpoints) resolve
				// here, with HADOOP_CONF_DIR and the Kerberos login the
				// configuration names, as a job program's would.
				hp, err := hadoopenv.Setup(cfg, hadoopenv.Options{Component: "sluice sql",
					Logger: slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelWarn}))})
				if err != nil {
					return err
				}
				defer hp.Start(c.Context, nil)()
				fss := fs.NewResolver()
				defer fss.Close()
				if err := hp.RegisterHDFS(fss); err != nil {
					return err
				}
				opts.FileSystems = fss
			case conf.TargetYarnApplication:
				if interactive {
					return usagef(c, "--target yarn-application runs a script in the application: give it with -f FILE or -e 'STATEMENTS'")
				}
				return sqlOnYarnApplication(c, cfg, script)
			default:
				if opts.Cluster, err = sqlCluster(c, cfg, target); err != nil {
					return err
				}
			}
			s := sql.NewSession(opts)
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
			if opts.Cluster != nil && !sqlSync(cfg) {
				// Submitted detached, the INSERTs' jobs run on; a SELECT's
				// result is shown until its job ends.
				jobs = slices.DeleteFunc(jobs, func(j *sql.Job) bool { return !j.Query() })
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

// jobTarget is where the command's jobs run: --target, else remote with
// --jobmanager, else execution.target; an unknown target or --jobmanager
// with another target is a usage error.
func jobTarget(c *cli.Context, cfg *conf.Configuration) (string, error) {
	target := c.String("target")
	switch {
	case target != "":
		target = strings.ToLower(target)
		if !slices.Contains(targets, target) {
			return "", usagef(c, "--target %q is not a target; use one of %s", c.String("target"), strings.Join(targets, ", "))
		}
	case c.String("jobmanager") != "":
		target = conf.TargetRemote
	default:
		target = conf.Get(cfg, conf.ExecutionTarget)
		if !slices.Contains(targets, target) {
			return "", usagef(c, "execution.target %q is not a target; use one of %s", target, strings.Join(targets, ", "))
		}
	}
	if c.String("jobmanager") != "" && target != conf.TargetRemote {
		return "", usagef(c, "--jobmanager names a standalone cluster, but --target is %s; drop one of them", target)
	}
	return target, nil
}

// sqlSync reports whether table.dml-sync asks the client to wait for the
// jobs it submits to a cluster.
func sqlSync(cfg *conf.Configuration) bool {
	v, ok := cfg.Raw(sql.DMLSyncKey)
	return ok && strings.EqualFold(strings.TrimSpace(v.Value), "true")
}

// sqlCluster is the cluster of a remote or yarn-session target, checked
// to answer before any job is submitted to it.
func sqlCluster(c *cli.Context, cfg *conf.Configuration, target string) (*sql.Cluster, error) {
	var addr string
	var token []byte
	var err error
	if target == conf.TargetRemote {
		if addr, err = restAddress(c, cfg); err != nil {
			return nil, err
		}
		if token, err = restapi.TokenFromConf(cfg); err != nil {
			return nil, err
		}
	} else {
		s, err := yarnSessionAddress(c, cfg)
		if err != nil {
			return nil, err
		}
		addr, token = s.Address, s.Token
	}
	tc, err := tlsconf.RESTClient(cfg)
	if err != nil {
		return nil, err
	}
	rc, err := restclient.New(addr, restclient.WithTLS(tc), restclient.WithToken(token))
	if err != nil {
		return nil, usagef(c, "the JobManager's REST address %q: %v", addr, err)
	}
	ctx, cancel := context.WithTimeout(c.Context, 10*time.Second)
	defer cancel()
	if _, err := rc.Overview(ctx); err != nil {
		hint := "start the cluster (sluice jobmanager, sluice taskmanager) or name its REST endpoint with --jobmanager host:port or rest.address and rest.port"
		if target == conf.TargetYarnSession {
			hint = "check that the session named by " + conf.YarnApplicationID.Key() + " runs"
		}
		return nil, fmt.Errorf("no JobManager answers at %s (%v): nothing was submitted; %s", addr, err, hint)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the sluice binary, the job program of SQL jobs: %w", err)
	}
	return &sql.Cluster{JobManager: addr, Token: string(token), Program: []string{self, sqlJobCommandName}, ResultHost: localHostFor(addr)}, nil
}

// localHostFor is this host's address on the route to addr, which the
// cluster's TaskManagers reach it at (a SELECT's result comes back there);
// "" if it cannot be found.
func localHostFor(addr string) string {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return ""
	}
	defer conn.Close()
	if a, ok := conn.LocalAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return ""
}

// sqlOnYarnApplication deploys (the script checked) a YARN application
// whose JobManager runs the script (application mode) with this binary as
// the job program, submitting every job of the script.
func sqlOnYarnApplication(c *cli.Context, cfg *conf.Configuration, script string) error {
	cl := clusterOf(c)
	if cl.YarnCluster == nil {
		return errNoYarn(conf.TargetYarnApplication)
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the sluice binary, the job program of SQL jobs: %w", err)
	}
	return cl.YarnCluster.RunApplication(c.Context, cfg, c.App.Writer, YarnApplication{Binary: self,
		Args: append([]string{sqlJobCommandName}, sql.ProgramArgs(script)...), Dynamic: c.StringSlice("D"), Attached: sqlSync(cfg)})
}

// sqlJobCommandName is the hidden command that is the job program of SQL
// jobs on a cluster.
const sqlJobCommandName = "sql-job"

// sqlJobCommand is the job program of the SQL jobs sluice sql submits to
// a cluster (see sql.Cluster): run by a JobManager in application mode
// with "all" and the script, it submits each of the script's jobs; run by
// a TaskManager as a worker with a job's number, it builds that job and
// runs its share. Its arguments are never parsed as options.
func sqlJobCommand() *cli.Command {
	return &cli.Command{
		Name:            sqlJobCommandName,
		Hidden:          true,
		Usage:           "the job program of SQL jobs on a cluster (run by the cluster, not by hand)",
		UsageText:       "sluice sql-job JOB|all SCRIPT   (with the environment of a job binary: SLUICE_EXECUTION_TARGET, ...)",
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			log := slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelInfo}))
			jobs, err := sql.RunJobProgram(c.Context, sql.Options{Stdout: c.App.Writer, Log: log}, []string{sqlJobCommandName}, c.Args().Slice())
			if err != nil {
				return err
			}
			var errs []error
			for _, j := range jobs {
				if err := j.Wait(); err != nil { // at once when detached
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		},
	}
}
