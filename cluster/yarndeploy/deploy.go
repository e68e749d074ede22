// Package yarndeploy is the client side of running Sluice on YARN (the CLI's
// --target yarn-application and yarn-session): it checks the requested
// container sizes against the cluster's maximum, stages the binaries and the
// effective configuration in a private directory on HDFS, submits the
// ApplicationMaster with Flink's yarn.* settings, and follows the
// application until it runs, printing progress a person can follow. It also
// kills applications.
//
// What the ApplicationMaster finds in its container is defined by package
// cluster/yarnam.
package yarndeploy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/sluice/sluice/cluster/yarnam"
	"github.com/sluice/sluice/cluster/yarndriver"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/rest/restclient"
	"github.com/sluice/sluice/security/kerberos"
	"github.com/sluice/sluice/security/tlsconf"
	"github.com/sluice/sluice/yarn"
)

// Errors of this package.
var (
	// ErrInvalidOptions wraps every problem with Options.
	ErrInvalidOptions = errors.New("yarndeploy: invalid options")
	// ErrStaging wraps failures to prepare the staging directory.
	ErrStaging = errors.New("yarndeploy: staging the application failed")
)

// ResourceError reports container sizes larger than the largest container
// the YARN cluster grants. It matches yarn.ErrExceedsMaximum.
type ResourceError struct {
	// Maximum is the cluster's maximum container capability.
	Maximum yarn.Resource
	// Problems name each setting that is too large, with its value.
	Problems []string
}

func (e *ResourceError) Error() string {
	return fmt.Sprintf("yarndeploy: the application asks for more than the largest container this YARN cluster grants, %v "+
		"(yarn.scheduler.maximum-allocation-mb and -vcores): %s", e.Maximum, strings.Join(e.Problems, "; "))
}

func (e *ResourceError) Unwrap() error { return yarn.ErrExceedsMaximum }

// Options configures a Deployer. Every field documents its default.
type Options struct {
	// Conf is the effective Sluice configuration (config.yaml and -D).
	// Required.
	Conf *conf.Configuration
	// Hadoop is the client's Hadoop configuration (HADOOP_CONF_DIR).
	// flink.hadoop.* and flink.yarn.* keys of Conf override it. Required.
	Hadoop *hadoop.Configuration
	// Getenv reads the environment (HADOOP_USER_NAME,
	// HADOOP_TOKEN_FILE_LOCATION); nil means none.
	Getenv func(string) string
	// User submits the application and owns its files; default
	// hadoop.CurrentUser.
	User string
	// AppMaster and TaskManager are the local paths of the cmd/appmaster and
	// cmd/taskmanager binaries. A file of the same name (appmaster,
	// taskmanager) in a directory of yarn.provided.lib.dirs is used instead,
	// without uploading; a binary found in neither place is an error.
	AppMaster, TaskManager string
	// Job is the local path of the job binary (yarn-application); empty for
	// a session cluster (yarn-session).
	Job string
	// JobArgs are the job program's arguments and JobDynamic the dynamic
	// properties (key=value) it runs with (yarn-application); default none.
	JobArgs, JobDynamic []string
	// Credentials are tokens to hand to the application (e.g. HDFS
	// delegation tokens); default: the token file HADOOP_TOKEN_FILE_LOCATION
	// names, if any.
	Credentials *hadoop.Credentials
	// Progress receives lines a person can follow; default discards.
	Progress io.Writer
	// Logger; default discards.
	Logger *slog.Logger
	// PollInterval between application reports. Default 200 ms.
	PollInterval time.Duration
	// Kerberos is the login for a cluster with
	// hadoop.security.authentication=kerberos. Default: New logs in as
	// Conf says (security.kerberos.login.keytab and .principal, or the
	// ticket cache), keeps the login valid until Close, and, when a keytab
	// is configured, ships it to the containers
	// (yarn.security.kerberos.ship-local-keytab).
	Kerberos *kerberos.Login
}

// resourceManager is what a Deployer asks of the ResourceManager: a
// *yarn.Client, or a fake in tests.
type resourceManager interface {
	GetNewApplication(ctx context.Context) (*yarn.NewApplication, error)
	CheckQueue(ctx context.Context, queue string) error
	SubmitApplication(ctx context.Context, s *yarn.SubmissionContext) error
	GetApplicationReport(ctx context.Context, id yarn.ApplicationID) (*yarn.ApplicationReport, error)
	ForceKillApplication(ctx context.Context, id yarn.ApplicationID, diagnostics string) (bool, error)
	WaitForState(ctx context.Context, id yarn.ApplicationID, poll time.Duration, states ...yarn.ApplicationState) (*yarn.ApplicationReport, error)
}

// Deployer deploys and kills Sluice applications on one YARN cluster.
type Deployer struct {
	opts   Options
	user   string
	hadoop *hadoop.Configuration
	yarn   *yarn.Client
	rm     resourceManager // yarn, unless a test substitutes it
	// dialFS connects to the HDFS cluster of an hdfs:// URI's authority:
	// dialHDFS, unless a test substitutes it.
	dialFS func(authority string) (stagingFS, error)
	log    *slog.Logger
	out    io.Writer

	// login is the Kerberos login (nil: SIMPLE); stopLogin ends its
	// re-login loop, and closes it if the Deployer made it.
	login     *kerberos.Login
	stopLogin func()
}

// New checks opts and connects (lazily) to the ResourceManager.
func New(opts Options) (*Deployer, error) {
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 200 * time.Millisecond
	}
	var errs []error
	if opts.Conf == nil {
		errs = append(errs, errors.New("Conf is nil"))
	} else if _, err := opts.Conf.Validate(); err != nil {
		errs = append(errs, err)
	}
	if opts.Hadoop == nil {
		errs = append(errs, errors.New("Hadoop is nil"))
	}
	for _, f := range []struct{ what, path string }{{"Job", opts.Job}, {"AppMaster", opts.AppMaster}, {"TaskManager", opts.TaskManager}} {
		if f.path == "" {
			continue
		}
		if fi, err := os.Stat(f.path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.what, err))
		} else if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o100 == 0 {
			errs = append(errs, fmt.Errorf("%s: %s is not an executable file", f.what, f.path))
		}
	}
	if opts.Conf != nil {
		if err := checkKeytab(opts.Conf); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	h := withOverrides(opts.Hadoop, opts.Conf, opts.Getenv)
	login, own, err := kerberosLogin(opts, h)
	if err != nil {
		return nil, err
	}
	stopLogin := func() {}
	if login != nil && own {
		// The re-login loop keeps an attached client's login valid for as
		// long as it follows the application.
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := login.Run(ctx); err != nil {
				opts.Logger.Warn("yarndeploy: the Kerberos re-login loop ended", "err", err)
			}
		}()
		stopLogin = func() {
			cancel()
			<-done
			login.Close()
		}
	}
	user := opts.User
	if user == "" && login != nil {
		// A secure cluster knows the user by the principal's short name.
		user = shortName(login.Principal())
	}
	if user == "" {
		u, err := hadoop.CurrentUser(opts.Getenv)
		if err != nil {
			stopLogin()
			return nil, err
		}
		user = u
	}
	yc, err := newYARNClient(opts, h, user, login)
	if err != nil {
		stopLogin()
		return nil, err
	}
	d := &Deployer{opts: opts, user: user, hadoop: h, yarn: yc, rm: yc, log: opts.Logger, out: opts.Progress, login: login, stopLogin: stopLogin}
	d.dialFS = d.dialHDFS
	return d, nil
}

// Close closes the connection to the ResourceManager and ends the Kerberos
// login the Deployer made.
func (d *Deployer) Close() error {
	err := d.yarn.Close()
	d.stopLogin()
	return err
}

// YARN returns the client of the ResourceManager.
func (d *Deployer) YARN() *yarn.Client { return d.yarn }

// Application is a deployed application.
type Application struct {
	ID yarn.ApplicationID
	// StagingDir is where its files were uploaded.
	StagingDir *url.URL
	// TrackingURL is the application's web address through YARN's proxy;
	// RESTAddress is the REST endpoint the ApplicationMaster registered
	// (http://host:port).
	TrackingURL string
	RESTAddress string
	// Report is the first report in the RUNNING state.
	Report *yarn.ApplicationReport
	// Timings of the deployment.
	Timings Timings
}

// Timings measure a deployment.
type Timings struct {
	// Submitted is when the application was submitted.
	Submitted time.Time
	Staging   time.Duration // checking, creating the staging directory and uploading
	// From submission to the application's ACCEPTED and RUNNING (the
	// ApplicationMaster registered) states.
	ToAccepted, ToRunning time.Duration
}

func (d *Deployer) progress(format string, args ...any) {
	fmt.Fprintf(d.out, format+"\n", args...)
}

// Deploy submits the application and returns once its ApplicationMaster
// runs. If anything fails after the staging directory was created, the
// directory is deleted; if the application fails before running, or ctx
// ends while waiting for it, the application is killed.
func (d *Deployer) Deploy(ctx context.Context) (*Application, error) {
	began := time.Now()
	c := d.opts.Conf
	amRes, tmRes := yarnam.AppMasterResource(c), yarnam.TaskManagerResource(c)
	if err := checkContainerLogin(c, d.login != nil); err != nil {
		return nil, err
	}

	newApp, err := d.rm.GetNewApplication(ctx)
	if err != nil {
		return nil, fmt.Errorf("yarndeploy: asking YARN for an application id: %w", err)
	}
	if err := checkResources(newApp.MaxCapability, amRes, tmRes); err != nil {
		return nil, err
	}
	queue := conf.Get(c, conf.YarnApplicationQueue)
	if queue != "" {
		if err := d.rm.CheckQueue(ctx, queue); err != nil {
			return nil, err
		}
	}
	id := newApp.ID
	d.progress("Deploying Sluice application %s (ApplicationMaster %v, TaskManagers %v each)", id, amRes, tmRes)

	st, err := d.stage(ctx, id)
	if err != nil {
		return nil, err
	}
	cleanup := func(reason string) {
		if rmErr := st.remove(); rmErr != nil {
			d.log.Warn("yarndeploy: could not delete the staging directory", "dir", st.dir.String(), "err", rmErr)
			d.progress("Could not delete the staging directory %s: %v", st.dir, rmErr)
			return
		}
		d.progress("Deleted the staging directory %s (%s)", st.dir, reason)
	}
	defer st.close()
	staged := time.Since(began)

	sub, err := d.submission(ctx, id, st, amRes)
	if err != nil {
		cleanup("submission not built")
		return nil, err
	}
	d.progress("Submitting %s %q to YARN (queue %s, type %s)", id, sub.Name, orDefault(queue, "default"), sub.Type)
	submitted := time.Now()
	if err := d.rm.SubmitApplication(ctx, sub); err != nil {
		cleanup("submission failed")
		return nil, fmt.Errorf("yarndeploy: submitting %s: %w", id, err)
	}
	app := &Application{ID: id, StagingDir: st.dir, Timings: Timings{Submitted: submitted, Staging: staged}}
	report, err := d.follow(ctx, id, submitted, &app.Timings)
	if err != nil {
		if !isTerminal(report) {
			kctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if _, kerr := d.rm.ForceKillApplication(kctx, id, "Sluice client: deployment aborted: "+err.Error()); kerr != nil {
				d.log.Warn("yarndeploy: could not kill the application", "application", id.String(), "err", kerr)
			} else {
				d.progress("Killed %s", id)
			}
			cancel()
		}
		cleanup("deployment failed")
		return nil, err
	}
	app.Report = report
	app.TrackingURL = report.TrackingURL
	if report.Host != "" && report.RPCPort > 0 {
		scheme := "http"
		if tlsconf.RESTEnabled(d.opts.Conf) {
			scheme = "https"
		}
		app.RESTAddress = scheme + "://" + net.JoinHostPort(report.Host, strconv.Itoa(int(report.RPCPort)))
	}
	d.progress("Application %s is running.", id)
	d.progress("  Web interface (through YARN): %s", orDefault(app.TrackingURL, "(none)"))
	d.progress("  REST endpoint: %s", orDefault(app.RESTAddress, "(none)"))
	return app, nil
}

func isTerminal(r *yarn.ApplicationReport) bool { return r != nil && r.State.Terminal() }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// checkResources compares the container sizes with the cluster maximum.
func checkResources(maxCap, am, tm yarn.Resource) error {
	var problems []string
	if am.MemoryMB > maxCap.MemoryMB {
		problems = append(problems, fmt.Sprintf("jobmanager.memory.process.size is %d MB, the maximum %d MB", am.MemoryMB, maxCap.MemoryMB))
	}
	if am.VCores > maxCap.VCores {
		problems = append(problems, fmt.Sprintf("yarn.appmaster.vcores is %d, the maximum %d", am.VCores, maxCap.VCores))
	}
	if tm.MemoryMB > maxCap.MemoryMB {
		problems = append(problems, fmt.Sprintf("taskmanager.memory.process.size is %d MB, the maximum %d MB", tm.MemoryMB, maxCap.MemoryMB))
	}
	if tm.VCores > maxCap.VCores {
		problems = append(problems, fmt.Sprintf("TaskManager vcores (yarn.containers.vcores, or taskmanager.numberOfTaskSlots when it is -1) are %d, the maximum %d", tm.VCores, maxCap.VCores))
	}
	if len(problems) > 0 {
		return &ResourceError{Maximum: maxCap, Problems: problems}
	}
	return nil
}

// submission builds the submission context of the staged application.
func (d *Deployer) submission(ctx context.Context, id yarn.ApplicationID, st *staging, amRes yarn.Resource) (*yarn.SubmissionContext, error) {
	c := d.opts.Conf
	tmFiles, err := yarnam.EncodeTaskManagerFiles(st.taskManagerFiles())
	if err != nil {
		return nil, err
	}
	env := yarnam.ContainerEnvironment(c, d.user, yarnam.PrefixMasterEnv)
	env[yarnam.EnvStagingDir] = st.dir.String()
	env[yarnam.EnvTaskManagerFiles] = tmFiles
	if _, ok := st.files[yarnam.FileJob]; ok {
		env[yarnam.EnvJob] = yarnam.FileJob
		prog, err := yarnam.JobProgram{Args: d.opts.JobArgs, Dynamic: d.opts.JobDynamic}.Encode()
		if err != nil {
			return nil, err
		}
		env[yarnam.EnvJobProgram] = prog
	}
	tokens, err := d.tokens(ctx, st.dir)
	if err != nil {
		return nil, err
	}
	name := conf.Get(c, conf.YarnApplicationName)
	if name == "" {
		name = conf.Get(c, conf.PipelineName)
	}
	if name == "" {
		name = "Sluice session cluster"
		if d.opts.Job != "" {
			name = "Sluice application " + path.Base(d.opts.Job)
		}
	}
	attempts := conf.Get(c, conf.YarnApplicationAttempts)
	if attempts == 0 {
		// On YARN high availability is on unless turned off (see
		// yarnam.JobManagerConf): a second attempt recovers the jobs.
		attempts = 2
		if ha, set, _ := conf.Lookup(c, conf.HighAvailabilityType); set && ha == conf.HighAvailabilityNone {
			attempts = 1
		}
	}
	sub := &yarn.SubmissionContext{
		ID:    id,
		Name:  name,
		Queue: conf.Get(c, conf.YarnApplicationQueue),
		AMContainer: yarn.ContainerLaunchContext{
			LocalResources: st.appMasterFiles(),
			Environment:    env,
			Commands: []string{yarndriver.ShellCommand([]string{"./" + yarnam.FileAppMaster},
				yarndriver.LogDirExpansion+"/"+yarnam.FileJobManagerOut, yarndriver.LogDirExpansion+"/"+yarnam.FileJobManagerErr)},
			Tokens: tokens,
		},
		AMResource:     amRes,
		MaxAppAttempts: int32(attempts),
		Type:           conf.Get(c, conf.YarnApplicationType),
		Tags:           conf.Get(c, conf.YarnTags),
	}
	if v := conf.Get(c, conf.YarnApplicationAttemptFailuresValidityInterval); v > 0 {
		sub.AttemptFailuresValidityInterval = time.Duration(v) * time.Millisecond
	}
	sub.NodeLabelExpression = conf.Get(c, conf.YarnApplicationNodeLabel)
	// As Flink: a negative yarn.application.priority (the default, -1)
	// sends none, so that the queue's default application priority applies.
	if p := conf.Get(c, conf.YarnApplicationPriority); p >= 0 {
		pr := yarn.Priority(p)
		sub.Priority = &pr
	}
	return sub, nil
}

// tokens is the credentials document handed to the ApplicationMaster: the
// given credentials (or the token file's), and on a secure cluster the HDFS
// delegation tokens obtained for the application
// (security.delegation.tokens.enabled).
func (d *Deployer) tokens(ctx context.Context, staging *url.URL) ([]byte, error) {
	creds := d.opts.Credentials
	if creds == nil {
		if tf := d.opts.Getenv(hadoop.EnvTokenFile); tf != "" {
			c, err := hadoop.ReadTokenFile(tf)
			if err != nil {
				return nil, err
			}
			creds = c
		}
	}
	if d.login != nil && conf.Get(d.opts.Conf, conf.DelegationTokensEnabled) {
		dt, err := d.delegationTokens(ctx, staging)
		if err != nil {
			return nil, err
		}
		merged := &hadoop.Credentials{}
		if creds != nil {
			merged.Merge(creds)
		}
		merged.Merge(dt)
		creds = merged
	}
	if creds == nil || (creds.NumTokens() == 0 && len(creds.SecretAliases()) == 0) {
		return nil, nil
	}
	return creds.Marshal(hadoop.FormatWritable)
}

// follow polls the application report, printing state changes and YARN's
// diagnostics, until the application runs (its ApplicationMaster
// registered) or ends.
func (d *Deployer) follow(ctx context.Context, id yarn.ApplicationID, submitted time.Time, tm *Timings) (*yarn.ApplicationReport, error) {
	t := time.NewTicker(d.opts.PollInterval)
	defer t.Stop()
	var lastState yarn.ApplicationState
	var lastDiag string
	var last *yarn.ApplicationReport
	for {
		r, err := d.rm.GetApplicationReport(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return last, fmt.Errorf("yarndeploy: waiting for %s to run: %w", id, ctx.Err())
			}
			return last, fmt.Errorf("yarndeploy: following %s: %w", id, err)
		}
		last = r
		elapsed := time.Since(submitted)
		if r.State != lastState {
			switch r.State {
			case yarn.StateAccepted:
				tm.ToAccepted = elapsed
				d.progress("%s ACCEPTED after %v: waiting for the ApplicationMaster container", id, elapsed.Round(time.Millisecond))
			case yarn.StateRunning:
				tm.ToRunning = elapsed
				if tm.ToAccepted == 0 {
					tm.ToAccepted = elapsed
				}
				d.progress("%s RUNNING after %v: ApplicationMaster on %s", id, elapsed.Round(time.Millisecond), r.Host)
			default:
				d.progress("%s %s after %v", id, r.State, elapsed.Round(time.Millisecond))
			}
			lastState = r.State
		}
		if diag := briefDiagnostics(r.Diagnostics); diag != "" && diag != lastDiag && !r.State.Terminal() {
			d.progress("  YARN: %s", diag)
			lastDiag = diag
		}
		if r.State == yarn.StateRunning {
			return r, nil
		}
		if r.State.Terminal() {
			d.progress("%s ended %s (final status %s): %s", id, r.State, r.FinalStatus, r.Diagnostics)
			return r, &yarn.ApplicationError{ID: id, State: r.State, FinalStatus: r.FinalStatus, Diagnostics: r.Diagnostics}
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return r, fmt.Errorf("yarndeploy: waiting for %s to run (it is %s): %w", id, r.State, ctx.Err())
		}
	}
}

// Kill kills the application, waits until YARN reports it ended, and
// deletes its staging directory.
func (d *Deployer) Kill(ctx context.Context, id yarn.ApplicationID) error {
	r, err := d.rm.GetApplicationReport(ctx, id)
	if err != nil {
		return err
	}
	if !r.State.Terminal() {
		if _, err := d.rm.ForceKillApplication(ctx, id, "killed by the Sluice client"); err != nil {
			return fmt.Errorf("yarndeploy: killing %s: %w", id, err)
		}
		d.progress("Killing %s", id)
		r, err = d.rm.WaitForState(ctx, id, d.opts.PollInterval, yarn.StateKilled, yarn.StateFinished, yarn.StateFailed)
		if err != nil {
			return err
		}
	}
	d.progress("%s is %s", id, r.State)
	return d.removeStaging(id)
}

// removeStaging deletes the application's staging directory (already gone
// when its ApplicationMaster unregistered).
func (d *Deployer) removeStaging(id yarn.ApplicationID) error {
	dir, err := d.StagingDir(id)
	if err != nil {
		return err
	}
	st, err := d.openStaging(dir)
	if err != nil {
		return err
	}
	defer st.close()
	if err := st.remove(); err != nil {
		return err
	}
	d.progress("Deleted the staging directory %s", dir)
	return nil
}

// Stop shuts the application down as Flink's yarn-session stop does: it
// asks the JobManager at the application's REST endpoint to shut the
// cluster down (DELETE /cluster); the jobs are cancelled and the
// ApplicationMaster unregisters SUCCEEDED and deletes the staging
// directory. An application whose JobManager cannot be reached or refuses,
// or that has not ended within timeout, is killed instead (Kill). An
// application that ended other than SUCCEEDED is an error, a
// *yarn.ApplicationError.
func (d *Deployer) Stop(ctx context.Context, id yarn.ApplicationID, timeout time.Duration) error {
	addr, err := d.SessionAddress(ctx, id)
	if errors.Is(err, ErrNotRunning) {
		d.progress("%v; killing it", err)
		return d.Kill(ctx, id)
	}
	if err != nil {
		return err
	}
	tc, err := tlsconf.RESTClient(d.opts.Conf)
	var token []byte
	if err == nil {
		token, err = d.RESTToken(id)
	}
	var rc *restclient.Client
	if err == nil {
		rc, err = restclient.New(addr, restclient.WithTLS(tc), restclient.WithToken(token))
	}
	if err == nil {
		err = rc.ShutDownCluster(ctx)
	}
	if err != nil {
		d.progress("The JobManager at %s did not take the shutdown request (%v); killing %s", addr, err, id)
		return d.Kill(ctx, id)
	}
	d.progress("Asked the JobManager at %s to shut %s down", addr, id)
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, err := d.rm.WaitForState(wctx, id, d.opts.PollInterval, yarn.StateKilled, yarn.StateFinished, yarn.StateFailed)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		d.progress("%s did not end within %v of the shutdown request; killing it", id, timeout)
		return d.Kill(ctx, id)
	}
	d.progress("%s ended %s, final status %s: %s", id, r.State, r.FinalStatus, r.Diagnostics)
	if err := d.removeStaging(id); err != nil {
		return err
	}
	if r.FinalStatus != yarn.FinalSucceeded {
		return &yarn.ApplicationError{ID: id, State: r.State, FinalStatus: r.FinalStatus, Diagnostics: r.Diagnostics}
	}
	return nil
}

// briefDiagnostics shortens YARN's diagnostics of an application that is
// waiting, for progress lines: the first line, without its timestamp and
// the scheduler's capacity details.
func briefDiagnostics(d string) string {
	d, _, _ = strings.Cut(strings.TrimSpace(d), "\n")
	if strings.HasPrefix(d, "[") {
		if i := strings.Index(d, "] "); i > 0 {
			d = d[i+2:]
		}
	}
	d, _, _ = strings.Cut(d, " Details :")
	return strings.TrimSpace(d)
}
