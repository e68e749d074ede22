package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/sluice/sluice/cluster/yarndeploy"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/yarn"
)

// Names of the ApplicationMaster and TaskManager binaries (cmd/appmaster,
// cmd/taskmanager) the CLI uploads, looked for next to the sluice binary;
// yarn.provided.lib.dirs may provide them instead.
const (
	appMasterBinary   = "appmaster"
	taskManagerBinary = "taskmanager"
)

// yarnDeployment is the YARN deployment through cluster/yarndeploy, with
// the Hadoop configuration of the environment (HADOOP_CONF_DIR).
type yarnDeployment struct {
	getenv func(string) string
}

// besideExecutable returns the path of name in the sluice binary's
// directory, or "" if there is no such file.
func besideExecutable(name string) string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	p := filepath.Join(filepath.Dir(exe), name)
	if fi, err := os.Stat(p); err != nil || fi.IsDir() {
		return ""
	}
	return p
}

func (y yarnDeployment) deployer(c *conf.Configuration, out io.Writer, opts yarndeploy.Options) (*yarndeploy.Deployer, error) {
	h, err := hadoop.LoadFromEnvironment(y.getenv)
	if err != nil {
		return nil, fmt.Errorf("the Hadoop configuration (HADOOP_CONF_DIR names the directory of core-site.xml and yarn-site.xml): %w", err)
	}
	if err := yarndeploy.CheckResourceManager(h, c); err != nil {
		return nil, err
	}
	opts.Conf, opts.Hadoop, opts.Getenv, opts.Progress = c, h, y.getenv, out
	opts.AppMaster, opts.TaskManager = besideExecutable(appMasterBinary), besideExecutable(taskManagerBinary)
	return yarndeploy.New(opts)
}

func applicationID(c *conf.Configuration) (yarn.ApplicationID, error) {
	id, err := yarn.ParseApplicationID(conf.Get(c, conf.YarnApplicationID))
	if err != nil {
		return yarn.ApplicationID{}, fmt.Errorf("%s: %w", conf.YarnApplicationID.Key(), err)
	}
	return id, nil
}

func (y yarnDeployment) Session(ctx context.Context, c *conf.Configuration, out io.Writer) (YarnSession, error) {
	var s YarnSession
	err := y.onApplication(c, out, func(d *yarndeploy.Deployer, id yarn.ApplicationID) (err error) {
		if s.Address, err = d.SessionAddress(ctx, id); err != nil {
			return err
		}
		s.Token, err = d.RESTToken(id)
		return err
	})
	return s, err
}

func (y yarnDeployment) RunApplication(ctx context.Context, c *conf.Configuration, out io.Writer, app YarnApplication) error {
	d, err := y.deployer(c, out, yarndeploy.Options{Job: app.Binary, JobArgs: app.Args, JobDynamic: app.Dynamic})
	if err != nil {
		return err
	}
	defer d.Close()
	a, err := d.Deploy(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Application id: %s\n", a.ID)
	if !app.Attached {
		fmt.Fprintf(out, "Detached: the application runs on; stop it with 'sluice yarn-session --stop -D%s=%s' (or yarn application -kill %s)\n",
			conf.YarnApplicationID.Key(), a.ID, a.ID)
		return nil
	}
	_, err = d.WaitEnd(ctx, a.ID)
	return err
}

func (y yarnDeployment) StartSession(ctx context.Context, c *conf.Configuration, out io.Writer) error {
	d, err := y.deployer(c, out, yarndeploy.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	a, err := d.Deploy(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Application id: %s\n", a.ID)
	fmt.Fprintf(out, "Submit jobs with: sluice run --target yarn-session -D%s=%s BINARY\n", conf.YarnApplicationID.Key(), a.ID)
	fmt.Fprintf(out, "Stop the session with: sluice yarn-session --stop -D%s=%s\n", conf.YarnApplicationID.Key(), a.ID)
	return nil
}

// stopTimeout bounds the wait for a session to end after the shutdown
// request before it is killed.
const stopTimeout = time.Minute

func (y yarnDeployment) Stop(ctx context.Context, c *conf.Configuration, out io.Writer) error {
	return y.onApplication(c, out, func(d *yarndeploy.Deployer, id yarn.ApplicationID) error { return d.Stop(ctx, id, stopTimeout) })
}

func (y yarnDeployment) Kill(ctx context.Context, c *conf.Configuration, out io.Writer) error {
	return y.onApplication(c, out, func(d *yarndeploy.Deployer, id yarn.ApplicationID) error { return d.Kill(ctx, id) })
}

// onApplication runs f with a deployer for the application named by
// yarn.application.id.
func (y yarnDeployment) onApplication(c *conf.Configuration, out io.Writer, f func(*yarndeploy.Deployer, yarn.ApplicationID) error) error {
	id, err := applicationID(c)
	if err != nil {
		return err
	}
	d, err := y.deployer(c, out, yarndeploy.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	return f(d, id)
}
