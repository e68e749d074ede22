// Command appmaster is Sluice's YARN ApplicationMaster. The Sluice client
// (package cluster/yarndeploy) stages it and starts it in the application's
// first container; it reads its AMRMToken from $HADOOP_TOKEN_FILE_LOCATION,
// registers with the ResourceManager (host, REST port, tracking URL), hosts
// the JobManager components with a YARN resource driver that launches
// TaskManager containers, and on the application's end unregisters with
// the final status and deletes the staging directory (package
// cluster/yarnam).
//
// It logs to stderr, which YARN keeps as appmaster.err in the container's
// log directory.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluice/sluice/cluster/yarnam"
	"github.com/sluice/sluice/yarn"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
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

// hostJobManager is the seam for the JobManager components.
//
// LEAD: replace this function's body with the JobManager process of the
// distributed runtime: the Dispatcher (application mode: run s.Env.Job, the
// job binary, in plan mode and submit its graph), the ResourceManager with
// s.Driver as its Driver (it must call s.Driver.Run(ctx, rm): that is the
// heartbeat to YARN), the JobMasters and the gRPC services on s.RPC, the
// REST endpoint on s.REST; return when the application ends (application
// mode: the job finished, failed or was cancelled; session mode: the
// cluster was shut down through REST), with the final status YARN should
// record. The configuration is s.Env.Conf, the tokens s.Env.Credentials.
//
// Until then the ApplicationMaster ends the application at once, FAILED,
// saying why: it does not pretend to run anything.
func hostJobManager(ctx context.Context, s *yarnam.Session) yarnam.Final {
	s.Logger.Error("appmaster: the JobManager components are not part of this build yet")
	return yarnam.Final{
		Status:      yarn.FinalFailed,
		Diagnostics: "Sluice ApplicationMaster: the JobManager components (Dispatcher, ResourceManager, JobMasters, REST) are not part of this build yet",
	}
}
