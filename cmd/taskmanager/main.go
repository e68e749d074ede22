// Command taskmanager runs a Sluice TaskManager: it registers its task
// slots (taskmanager.numberOfTaskSlots) with the ResourceManager at
// jobmanager.rpc.address:jobmanager.rpc.port and runs the tasks the
// JobMasters deploy to it, each job's in a worker process executing the job
// binary.
//
//	taskmanager [--configDir DIR] [-D key=value]... [--log-level LEVEL]
//
// The configuration is config.yaml in --configDir (default
// $SLUICE_CONF_DIR), overridden by -D settings, which may also be written
// attached as in Flink: -Dtaskmanager.numberOfTaskSlots=4. It stops on
// SIGINT or SIGTERM, stopping its workers first.
//
// In a YARN container (SLUICE_LOG_DIR set to the container's log directory
// by the ApplicationMaster) it logs to taskmanager.log there and, unless
// env.log.dir says otherwise, its workers' stdout and stderr go there too, so
// that YARN keeps them and its log tools (yarn logs, the web UI) show them.
package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/sluice/sluice/cluster/hadoopenv"
	"github.com/sluice/sluice/cluster/rpcauth"
	"github.com/sluice/sluice/cluster/taskmanager"
	"github.com/sluice/sluice/conf"
)

// envLogDir names the container's log directory; the YARN driver sets it
// (yarndriver.EnvLogDir).
const envLogDir = "SLUICE_LOG_DIR"

// logFileName is the TaskManager's log file in SLUICE_LOG_DIR (Flink's name).
const logFileName = "taskmanager.log"

func main() {
	if err := newApp(os.Stderr, os.Getenv).Run(expandDynamic(os.Args)); err != nil {
		fmt.Fprintln(os.Stderr, "taskmanager:", err)
		os.Exit(1)
	}
}

// expandDynamic splits Flink's attached form -Dkey=value into -D key=value.
func expandDynamic(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if i > 0 && len(a) > 2 && strings.HasPrefix(a, "-D") && a[2] != '=' {
			out = append(out, "-D", a[2:])
			continue
		}
		out = append(out, a)
	}
	return out
}

// newApp builds the command, logging to logOut, or to taskmanager.log in
// the directory getenv(SLUICE_LOG_DIR) names if it is set.
func newApp(logOut io.Writer, getenv func(string) string) *cli.App {
	return &cli.App{
		Name:                      "taskmanager",
		Usage:                     "run a Sluice TaskManager",
		Writer:                    logOut,
		ErrWriter:                 logOut,
		DisableSliceFlagSeparator: true, // values may hold commas (port lists)
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "configDir", Aliases: []string{"c"}, EnvVars: []string{conf.EnvConfDir},
				Usage: "directory of config.yaml"},
			&cli.StringSliceFlag{Name: "D", Usage: "set a configuration option, key=value (repeatable)"},
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("unexpected arguments %q", c.Args().Slice())
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			containerLogDir := getenv(envLogDir)
			if containerLogDir != "" {
				f, err := os.OpenFile(filepath.Join(containerLogDir, logFileName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
				if err != nil {
					return fmt.Errorf("%s: %w", envLogDir, err)
				}
				defer f.Close()
				logOut = f
			}
			log := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level}))
			cfg, warnings, err := conf.Load(conf.Sources{ConfDir: c.String("configDir"), Dynamic: c.StringSlice("D")})
			for _, w := range warnings {
				log.Warn(w.String())
			}
			if err != nil {
				return err
			}
			logContainerCredentials(getenv, log)
			sec, err := hadoopenv.Setup(cfg, hadoopenv.Options{Getenv: getenv, Component: "taskmanager", Logger: log})
			if err != nil {
				return err
			}
			// A standalone TaskManager creates the secret file if it is
			// missing (as its JobManager does); in a YARN container it is
			// the application's, shipped by the client.
			inContainer := getenv(hadoopenv.EnvContainerID) != ""
			auth, err := rpcauth.FromConf(cfg, rpcauth.Options{CreateSecret: !inContainer})
			if err != nil {
				sec.Close()
				return err
			}
			tmCfg := taskmanager.ConfigFrom(cfg)
			tmCfg.Security = auth
			tmCfg.Logger = log
			tmCfg.WorkerConfiguration = sec.WorkerConfiguration
			// Reported with every heartbeat, exported by the JobManager.
			tmCfg.KerberosStatus = sec.KerberosStatus()
			if containerLogDir != "" && !conf.IsSet(cfg, conf.LogDir) {
				tmCfg.LogDir = containerLogDir
			}
			// In a YARN container the working directory is the container's
			// own, which the NodeManager removes with the application
			// (not one under /tmp that nothing would clean).
			if getenv(hadoopenv.EnvContainerID) != "" && tmCfg.WorkDir == "" {
				if cwd, err := os.Getwd(); err == nil {
					tmCfg.WorkDir = filepath.Join(cwd, "taskmanager-work") // "taskmanager" is the binary itself
				}
			}
			// In a YARN container the JobManager and the other
			// TaskManagers are on other hosts: bind every interface and
			// advertise the host's name, unless the configuration says.
			if getenv(hadoopenv.EnvContainerID) != "" && tmCfg.BindHost == "" {
				tmCfg.BindHost = "0.0.0.0"
			}
			tm, err := taskmanager.New(tmCfg)
			if err != nil {
				sec.Close()
				return err
			}
			ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			defer sec.Start(ctx, log)()
			return tm.Run(ctx)
		},
	}
}
