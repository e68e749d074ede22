package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/sluice/sluice/conf"
)

// YarnCluster deploys Sluice on YARN and finds its applications (package
// cluster/yarndeploy). Progress lines go to out.
type YarnCluster interface {
	// Session returns the REST address (host:port) and token of the
	// running session cluster named by yarn.application.id in c.
	Session(ctx context.Context, c *conf.Configuration, out io.Writer) (YarnSession, error)
	// RunApplication deploys an application whose ApplicationMaster runs the
	// job program (application mode), prints its id and REST address, and,
	// if app.Attached, waits for its end: an application that did not end
	// SUCCEEDED is an error.
	RunApplication(ctx context.Context, c *conf.Configuration, out io.Writer, app YarnApplication) error
	// StartSession deploys a session cluster and prints its id and REST
	// address.
	StartSession(ctx context.Context, c *conf.Configuration, out io.Writer) error
	// Stop shuts the application named by yarn.application.id in c down
	// through its JobManager (its jobs are cancelled; it ends SUCCEEDED),
	// killing it if that fails, and deletes its staging directory.
	Stop(ctx context.Context, c *conf.Configuration, out io.Writer) error
	// Kill kills the application named by yarn.application.id in c and
	// deletes its staging directory.
	Kill(ctx context.Context, c *conf.Configuration, out io.Writer) error
}

// YarnApplication is a job program to run on YARN in application mode.
type YarnApplication struct {
	Binary string
	Args   []string
	// Dynamic are the program's dynamic properties (key=value).
	Dynamic  []string
	Attached bool
}

// errNoYarn: this build of the CLI has no YARN deployment.
func errNoYarn(target string) error {
	return fmt.Errorf("--target %s is not supported yet: YARN deployment (issue #5) is not built into this sluice; "+
		"start a standalone cluster (sluice jobmanager, sluice taskmanager) and use --target remote", target)
}

// metaCluster is the key of the Cluster in the app's metadata, for the
// commands that talk to a running cluster.
const metaCluster = "cluster"

func clusterOf(c *cli.Context) Cluster {
	cl, _ := c.App.Metadata[metaCluster].(Cluster)
	return cl
}

// YarnSession is how the sluice commands reach a YARN application's REST
// endpoint.
type YarnSession struct {
	// Address is the REST endpoint's host:port.
	Address string
	// Token is the application's REST token (nil if it has none), which
	// requests that change state carry.
	Token []byte
}

// yarnSessionAddress finds the REST endpoint of the yarn-session named by
// yarn.application.id.
func yarnSessionAddress(c *cli.Context, cfg *conf.Configuration) (YarnSession, error) {
	cl := clusterOf(c)
	if cl.YarnCluster == nil {
		return YarnSession{}, errNoYarn(conf.TargetYarnSession)
	}
	if conf.Get(cfg, conf.YarnApplicationID) == "" {
		return YarnSession{}, usagef(c, "--target yarn-session needs the session's application id: -D%s=application_..., as 'sluice yarn-session' printed it",
			conf.YarnApplicationID.Key())
	}
	return cl.YarnCluster.Session(c.Context, cfg, c.App.ErrWriter)
}

func yarnSessionCommand(cl Cluster) *cli.Command {
	return &cli.Command{
		Name:      "yarn-session",
		Usage:     "start or stop a Sluice session cluster on YARN",
		UsageText: "sluice yarn-session [OPTIONS]\n   sluice yarn-session --stop|--kill -Dyarn.application.id=APPLICATION_ID",
		Description: "Deploys a session cluster on YARN: an ApplicationMaster hosting the JobManager, which starts\n" +
			"TaskManager containers for the jobs submitted to it, and prints its application id and REST address.\n" +
			"Submit jobs with 'sluice run --target yarn-session -Dyarn.application.id=APPLICATION_ID BINARY';\n" +
			"list, savepoint, stop and cancel them the same way. --stop shuts the session down through its\n" +
			"JobManager (its jobs are cancelled; the application ends SUCCEEDED), --kill kills it through YARN.",
		Flags: append(configFlags(),
			&cli.BoolFlag{Name: "stop", Usage: "shut down the session named by -Dyarn.application.id (killed if its JobManager does not answer)"},
			&cli.BoolFlag{Name: "kill", Usage: "kill the session named by -Dyarn.application.id through YARN"},
		),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef(c, "yarn-session takes no arguments, got %q", c.Args().Slice())
			}
			cfg, err := loadConfig(c)
			if err != nil {
				return err
			}
			if cl.YarnCluster == nil {
				return errNoYarn("yarn-session")
			}
			stop, kill := c.Bool("stop"), c.Bool("kill")
			if stop && kill {
				return usagef(c, "give --stop (shut the session down) or --kill (kill it through YARN), not both")
			}
			if stop || kill {
				if conf.Get(cfg, conf.YarnApplicationID) == "" {
					return usagef(c, "--%s needs the session's application id: -D%s=application_...", map[bool]string{true: "stop", false: "kill"}[stop], conf.YarnApplicationID.Key())
				}
				if kill {
					return cl.YarnCluster.Kill(c.Context, cfg, c.App.Writer)
				}
				return cl.YarnCluster.Stop(c.Context, cfg, c.App.Writer)
			}
			return cl.YarnCluster.StartSession(c.Context, cfg, c.App.Writer)
		},
	}
}

// runOnYarnApplication deploys the job program as a YARN application.
func runOnYarnApplication(c *cli.Context, cl Cluster, js *jobSettings) error {
	if cl.YarnCluster == nil {
		return errNoYarn(conf.TargetYarnApplication)
	}
	attached := conf.Get(js.cfg, conf.ExecutionAttached)
	props := make([]string, 0, len(js.props))
	for _, p := range js.props {
		// The program runs in the ApplicationMaster, against its JobManager.
		if !strings.HasPrefix(p, conf.ExecutionTarget.Key()+"=") {
			props = append(props, p)
		}
	}
	return cl.YarnCluster.RunApplication(c.Context, js.cfg, c.App.Writer,
		YarnApplication{Binary: js.binary, Args: js.args, Dynamic: props, Attached: attached})
}
