package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/sluice/sluice/cluster/hadoopenv"
	"github.com/sluice/sluice/cluster/jobmanager"
	"github.com/sluice/sluice/cluster/rpcauth"
	"github.com/sluice/sluice/cluster/taskmanager"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/fs"
)

// Cluster holds what the cluster packages provide to the CLI: the
// processes of a standalone cluster and the YARN deployment. A nil field
// makes its command fail with a message saying it is not available.
type Cluster struct {
	// JobManager runs a JobManager (Dispatcher, ResourceManager,
	// JobMasters, REST endpoint) with configuration c until ctx ends
	// (SIGINT, SIGTERM): cluster/jobmanager.Run.
	JobManager func(ctx context.Context, c *conf.Configuration, log *slog.Logger) error
	// Application runs a JobManager in application mode: it runs the job
	// program binary (with args) itself and ends with it.
	Application func(ctx context.Context, c *conf.Configuration, log *slog.Logger, binary string, args []string) error
	// TaskManager runs a TaskManager with configuration c until ctx ends:
	// cluster/taskmanager.Run.
	TaskManager func(ctx context.Context, c *conf.Configuration, log *slog.Logger) error
	// YarnCluster deploys on YARN (targets yarn-session and
	// yarn-application, the yarn-session command).
	YarnCluster YarnCluster
}

// clusterProcesses is the wiring of the cluster packages into the CLI.
// The standalone processes are set up for the Hadoop cluster of their
// environment (cluster/hadoopenv): hdfs:// for checkpoints, savepoints and
// HA, with their own Kerberos login where that cluster requires one.
func clusterProcesses() Cluster {
	jobManager := func(ctx context.Context, c *conf.Configuration, log *slog.Logger, app *jobmanager.Application) error {
		// With env.log.dir set the JobManager logs to jobmanager.log
		// there too (Flink's name), which GET /jobmanager/log serves, as
		// a TaskManager logs to its taskmanager.log.
		if dir := conf.Get(c, conf.LogDir); dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("the JobManager's log directory (%s): %w", conf.LogDir.Key(), err)
			}
			f, err := os.OpenFile(filepath.Join(dir, "jobmanager.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return fmt.Errorf("the JobManager's log file (%s): %w", conf.LogDir.Key(), err)
			}
			defer f.Close()
			fileLog := slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo}).WithAttrs([]slog.Attr{slog.String("process", "jobmanager")})
			log = slog.New(slog.NewMultiHandler(log.Handler(), fileLog))
		}
		return withHadoop(ctx, c, "jobmanager", log, func(p *hadoopenv.Process) error {
			fss := fs.NewResolver()
			defer fss.Close()
			if err := p.RegisterHDFS(fss); err != nil {
				return err
			}
			return jobmanager.RunWith(ctx, jobmanager.Options{Conf: c, Log: log, FileSystems: fss,
				Kerberos: p.KerberosStatus(), Application: app})
		})
	}
	return Cluster{
		YarnCluster: yarnDeployment{getenv: os.Getenv},
		JobManager: func(ctx context.Context, c *conf.Configuration, log *slog.Logger) error {
			return jobManager(ctx, c, log, nil)
		},
		Application: func(ctx context.Context, c *conf.Configuration, log *slog.Logger, binary string, args []string) error {
			return jobManager(ctx, c, log, &jobmanager.Application{Binary: binary, Args: args})
		},
		TaskManager: func(ctx context.Context, c *conf.Configuration, log *slog.Logger) error {
			return withHadoop(ctx, c, "taskmanager", log, func(p *hadoopenv.Process) error {
				sec, err := rpcauth.FromConf(c, rpcauth.Options{CreateSecret: true})
				if err != nil {
					return err
				}
				cfg := taskmanager.ConfigFrom(c)
				cfg.Security = sec
				// The TaskManager logs to stderr and, once its log
				// directory is made, to taskmanager.log there too, which
				// the JobManager serves (GET /taskmanagers/:id/log).
				file := &lateFile{}
				// Its lines are stderr's (processLogger's).
				fileLog := slog.NewTextHandler(file, &slog.HandlerOptions{Level: slog.LevelInfo}).WithAttrs([]slog.Attr{slog.String("process", "taskmanager")})
				cfg.Logger = slog.New(slog.NewMultiHandler(log.Handler(), fileLog))
				cfg.WorkerConfiguration = p.WorkerConfiguration
				cfg.KerberosStatus = p.KerberosStatus()
				tm, err := taskmanager.New(cfg)
				if err != nil {
					return err
				}
				f, err := os.OpenFile(filepath.Join(tm.LogDir(), taskmanager.DefaultLogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
				if err != nil {
					tm.Close()
					return fmt.Errorf("the TaskManager's log file: %w", err)
				}
				file.set(f)
				defer f.Close()
				defer file.set(nil)
				return tm.Run(ctx)
			})
		},
	}
}

// withHadoop sets a process up for the Hadoop cluster of its environment
// and runs it, keeping its Kerberos login (if any) valid until run
// returns.
func withHadoop(ctx context.Context, c *conf.Configuration, component string, log *slog.Logger, run func(*hadoopenv.Process) error) error {
	p, err := hadoopenv.Setup(c, hadoopenv.Options{Component: component, Logger: log})
	if err != nil {
		return err
	}
	defer p.Start(ctx, log)()
	return run(p)
}

// errNotBuiltIn reports a cluster process missing from this build.
var errNotBuiltIn = errors.New("not built into this sluice yet")

func jobManagerCommand(cl Cluster) *cli.Command {
	return &cli.Command{
		Name:      "jobmanager",
		Usage:     "run the JobManager of a standalone cluster",
		UsageText: "sluice jobmanager [OPTIONS] [BINARY [ARGUMENTS...]]",
		Description: "Runs a JobManager in the foreground until interrupted: it accepts jobs on its REST endpoint\n" +
			"(rest.port, default 8081) and TaskManagers on its RPC port (jobmanager.rpc.port, default 6123).\n" +
			"Given a job BINARY, it runs in application mode: it runs the program's main itself, which submits\n" +
			"its jobs to this JobManager, and exits when the program and its jobs have ended (status 0 on success).",
		Flags: append(configFlags(),
			&cli.StringFlag{Name: "host", Usage: "`HOST` (address) to run on: jobmanager.rpc.address"},
			&cli.IntFlag{Name: "webui-port", Usage: "`PORT` of the REST endpoint", DefaultText: "rest.port"},
		),
		Action: func(c *cli.Context) error {
			var extra []string
			if h := c.String("host"); h != "" {
				extra = append(extra, conf.DynamicProperty(conf.JobManagerRPCAddress.Key(), h))
			}
			if c.Args().Present() {
				bin, err := exec.LookPath(c.Args().First())
				if err != nil {
					return usagef(c, "the job binary %q: %v; give the path of a job program built with the stream package", c.Args().First(), err)
				}
				if abs, err := filepath.Abs(bin); err == nil {
					bin = abs
				}
				cfg, err := loadConfig(c, extra...)
				if err != nil {
					return err
				}
				if cl.Application == nil {
					return fmt.Errorf("sluice jobmanager: application mode is %w", errNotBuiltIn)
				}
				return cl.Application(c.Context, cfg, processLogger(c, "jobmanager"), bin, c.Args().Tail())
			}
			if c.IsSet("webui-port") {
				extra = append(extra, conf.DynamicProperty(conf.RESTPort.Key(), strconv.Itoa(c.Int("webui-port"))))
			}
			cfg, err := loadConfig(c, extra...)
			if err != nil {
				return err
			}
			if cl.JobManager == nil {
				return fmt.Errorf("sluice jobmanager: the JobManager (cluster/jobmanager, issue #5) is %w", errNotBuiltIn)
			}
			return cl.JobManager(c.Context, cfg, processLogger(c, "jobmanager"))
		},
	}
}

func taskManagerCommand(cl Cluster) *cli.Command {
	return &cli.Command{
		Name:      "taskmanager",
		Usage:     "run a TaskManager of a standalone cluster",
		UsageText: "sluice taskmanager [OPTIONS]",
		Description: "Runs a TaskManager in the foreground until interrupted: it registers with the JobManager\n" +
			"(jobmanager.rpc.address:jobmanager.rpc.port) and offers taskmanager.numberOfTaskSlots slots.",
		Flags: append(configFlags(),
			&cli.StringFlag{Name: "jobmanager", Aliases: []string{"m"}, Usage: "`host:port` of the JobManager's RPC endpoint: jobmanager.rpc.address and jobmanager.rpc.port"},
			&cli.StringFlag{Name: "host", Usage: "`HOST` (address) other processes reach this TaskManager at: taskmanager.host"},
			&cli.IntFlag{Name: "slots", Usage: "number of task slots", DefaultText: "taskmanager.numberOfTaskSlots"},
		),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef(c, "taskmanager takes no arguments, got %q; use --jobmanager, --host and --slots", c.Args().Slice())
			}
			var extra []string
			if jm := c.String("jobmanager"); jm != "" {
				host, port, err := net.SplitHostPort(jm)
				if _, perr := strconv.Atoi(port); err != nil || perr != nil || host == "" {
					return usagef(c, "--jobmanager %q is not host:port; give the JobManager's RPC address, e.g. --jobmanager localhost:6123", jm)
				}
				extra = append(extra, conf.DynamicProperty(conf.JobManagerRPCAddress.Key(), host),
					conf.DynamicProperty(conf.JobManagerRPCPort.Key(), port))
			}
			if h := c.String("host"); h != "" {
				extra = append(extra, conf.DynamicProperty("taskmanager.host", h))
			}
			if c.IsSet("slots") {
				extra = append(extra, conf.DynamicProperty(conf.TaskManagerNumberOfTaskSlots.Key(), strconv.Itoa(c.Int("slots"))))
			}
			cfg, err := loadConfig(c, extra...)
			if err != nil {
				return err
			}
			if cl.TaskManager == nil {
				return fmt.Errorf("sluice taskmanager: the TaskManager (cluster/taskmanager, issue #5) is %w", errNotBuiltIn)
			}
			return cl.TaskManager(c.Context, cfg, processLogger(c, "taskmanager"))
		},
	}
}

// processLogger logs a cluster process to stderr.
func processLogger(c *cli.Context, process string) *slog.Logger {
	return slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelInfo})).With("process", process)
}

// lateFile is a log file opened after its logger was made: what is
// written before it is set, or after it is unset, is dropped.
type lateFile struct {
	mu sync.Mutex
	f  *os.File
}

func (l *lateFile) set(f *os.File) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.f = f
}

func (l *lateFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return len(p), nil
	}
	return l.f.Write(p)
}
