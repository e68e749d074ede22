// Command appmaster is Sluice's YARN ApplicationMaster. The Sluice client
// (package cluster/yarndeploy) stages it and starts it in the application's
// first container; it reads its AMRMToken from $HADOOP_TOKEN_FILE_LOCATION,
// registers with the ResourceManager (host, REST port, tracking URL), hosts
// the JobManager components with a YARN resource driver that launches
// TaskManager containers, and on the application's end unregisters with
// the final status and deletes the staging directory (package
// cluster/yarnam).
//
// It logs to jobmanager.log in the container's log directory (the first
// of $LOG_DIRS; stderr when that is unset), where YARN also keeps its
// standard output and error as jobmanager.out and jobmanager.err, Flink's
// names: GET /jobmanager/logs lists them.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sluice/sluice/cluster/jobmanager"
	"github.com/sluice/sluice/cluster/yarnam"
	"github.com/sluice/sluice/cluster/yarndriver"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/hdfs"
	"github.com/sluice/sluice/rest/restapi"
	"github.com/sluice/sluice/yarn"
)

func main() {
	log := slog.New(slog.NewTextHandler(logOutput(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	// YARN stops a container with SIGTERM (then SIGKILL): the
	// ApplicationMaster then exits without unregistering, so that YARN may
	// start another attempt.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := yarnam.Run(ctx, yarnam.Config{Getenv: os.Getenv, Logger: log}, hostJobManager); err != nil {
		log.Error("appmaster: exiting", "err", err)
		stop()
		os.Exit(1)
	}
}

// hostJobManager runs the JobManager (Dispatcher, ResourceManager with the
// YARN driver, JobMasters, REST) on the session's listeners until the
// application ends: in application mode (a staged job binary) when the
// program and its jobs have ended; a session cluster runs until it is killed
// (then ctx ends and the final status is not reported).
func hostJobManager(ctx context.Context, s *yarnam.Session) yarnam.Final {
	env := s.Env
	fss := fs.NewResolver()
	defer fss.Close()
	// On a secure cluster the login from the shipped keytab (env.Kerberos)
	// reaches HDFS for high availability, checkpoints and savepoints.
	if err := hdfs.Register(fss, hdfs.Config{Hadoop: env.Hadoop, User: env.User, Kerberos: env.Kerberos}); err != nil {
		return yarnam.Final{Status: yarn.FinalFailed, Diagnostics: "Sluice ApplicationMaster: " + err.Error()}
	}
	workDir, err := os.MkdirTemp(".", "jobmanager-")
	if err != nil {
		return yarnam.Final{Status: yarn.FinalFailed, Diagnostics: "Sluice ApplicationMaster: " + err.Error()}
	}
	defer os.RemoveAll(workDir)
	_, rpcPort, _ := net.SplitHostPort(s.RPC.Addr().String())
	opts := jobmanager.Options{
		Conf:        yarnam.JobManagerConf(env),
		Log:         s.Logger,
		Driver:      s.Driver,
		RPC:         s.RPC,
		REST:        s.REST,
		RPCAddress:  net.JoinHostPort(env.Host, rpcPort),
		FileSystems: fss,
		WorkDir:     workDir,
	}
	// YARN's web proxy forwards the tracking URL's GET requests, the
	// dashboard's cancel (yarn-cancel) among them, having authenticated
	// the user: those need no REST token.
	if hosts, err := yarnam.WebProxyHosts(env.Hadoop); err != nil {
		s.Logger.Warn("no web proxy is trusted with cancel and stop", "err", err)
	} else {
		opts.RESTTrustedProxy = yarnam.NewProxyMatcher(hosts, nil).Trusted
	}
	// The ApplicationMaster's login and delegation tokens are exported at
	// GET /metrics with the TaskManagers' and workers' logins.
	if env.Kerberos != nil {
		opts.Kerberos = env.Kerberos.Status
	}
	if m := s.DelegationTokens; m != nil {
		opts.DelegationTokens = func() jobmanager.DelegationTokenStatus {
			mm := m.Metrics()
			return jobmanager.DelegationTokenStatus{Expiry: mm.Expiry.Load(), Obtained: mm.Obtained.Load(), Failures: mm.Failures.Load(),
				TaskManagers: s.Driver.TaskManagerTokenExpiries()}
		}
	}
	opts.YARN = yarnApplication(env, s.Driver, time.Now())
	if env.Job != "" {
		bin, err := filepath.Abs(env.Job)
		if err != nil {
			return yarnam.Final{Status: yarn.FinalFailed, Diagnostics: "Sluice ApplicationMaster: " + err.Error()}
		}
		opts.Application = &jobmanager.Application{Binary: bin, Args: env.Program.Args, Dynamic: env.Program.Dynamic}
	}
	return finalStatus(jobmanager.RunWith(ctx, opts), opts.Application != nil)
}

// yarnApplication reports the application's containers for GET
// /jobmanager/yarn: the ApplicationMaster's own (its node from the
// NodeManager's NM_HOST, NM_PORT and NM_HTTP_PORT) and the TaskManagers'
// as the resource driver holds them.
func yarnApplication(env *yarnam.Environment, driver *yarnam.Driver, started time.Time) func() restapi.YARNApplication {
	node, web := env.Host, ""
	if h, p := os.Getenv("NM_HOST"), os.Getenv("NM_PORT"); h != "" && p != "" {
		node = net.JoinHostPort(h, p)
		if hp := os.Getenv("NM_HTTP_PORT"); hp != "" {
			web = net.JoinHostPort(h, hp)
		}
	}
	am := restapi.YARNContainer{ID: env.Container.String(), Role: "jobmanager", Node: node, NodeHTTPAddress: web,
		State: yarndriver.ContainerRunning, Since: started.UnixMilli()}
	return func() restapi.YARNApplication {
		app := restapi.YARNApplication{ApplicationID: env.Container.Attempt.Application.String(), AttemptID: env.Container.Attempt.String(),
			Containers: []restapi.YARNContainer{am}}
		for _, c := range driver.Containers() {
			yc := restapi.YARNContainer{ID: c.ID, Role: "taskmanager", Node: c.Node, NodeHTTPAddress: c.NodeHTTPAddress, State: c.State,
				Diagnostics: c.Diagnostics, MemoryMB: c.Resource.MemoryMB, VCores: c.Resource.VCores, Since: c.Since.UnixMilli()}
			if c.State == yarndriver.ContainerComplete {
				yc.ExitStatus = &c.ExitStatus
			}
			app.Containers = append(app.Containers, yc)
		}
		return app
	}
}

// finalStatus maps the JobManager's end to the application's final status.
func finalStatus(err error, application bool) yarnam.Final {
	var appErr *jobmanager.ApplicationError
	switch {
	case err == nil && application:
		return yarnam.Final{Status: yarn.FinalSucceeded, Diagnostics: "the application's jobs finished"}
	case err == nil:
		return yarnam.Final{Status: yarn.FinalSucceeded, Diagnostics: "the session cluster was shut down"}
	case errors.As(err, &appErr) && appErr.Canceled:
		return yarnam.Final{Status: yarn.FinalKilled, Diagnostics: "a job of the application was cancelled: " + err.Error()}
	default:
		return yarnam.Final{Status: yarn.FinalFailed, Diagnostics: err.Error()}
	}
}

// logOutput is jobmanager.log in the container's log directory, or stderr
// outside a container or when the file cannot be opened (said on stderr,
// which YARN keeps as jobmanager.err).
func logOutput() io.Writer {
	dir, _, _ := strings.Cut(os.Getenv("LOG_DIRS"), ",")
	if dir == "" {
		return os.Stderr
	}
	p := filepath.Join(dir, yarnam.FileJobManagerLog)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "appmaster: logging to stderr: opening %s: %v\n", p, err)
		return os.Stderr
	}
	return f
}
