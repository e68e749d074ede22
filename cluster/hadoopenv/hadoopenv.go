// Package hadoopenv sets a cluster process (a JobManager or a TaskManager,
// standalone or in a YARN container) up for the Hadoop cluster its
// environment names: the Hadoop configuration (HADOOP_CONF_DIR,
// YARN_CONF_DIR, HADOOP_HOME), the process's Kerberos login when that
// configuration requires Kerberos, kept valid by the re-login loop while
// the process runs, and hdfs:// on the process's file-system resolver with
// that login. Flink's processes get the same from the Hadoop file system
// and the security modules they load at start-up.
package hadoopenv

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/hdfs"
	"github.com/sluice/sluice/security/kerberos"
)

// EnvContainerID is set by YARN in every container.
const EnvContainerID = "CONTAINER_ID"

// Process is a process's Hadoop set-up. The zero value is valid: Hadoop's
// defaults and no login.
type Process struct {
	hadoop *hadoop.Configuration
	getenv func(string) string // the environment Setup read
	login  *kerberos.Login
	// WorkerConfiguration carries the login on to the processes a
	// TaskManager starts (its workers, which log in themselves for
	// hdfs://): the absolute keytab and krb5.conf paths. Nil without a
	// keytab login.
	WorkerConfiguration map[string]string
}

// Options of Setup.
type Options struct {
	// Getenv reads the environment. Default: os.Getenv.
	Getenv func(string) string
	// Component names the process in messages ("jobmanager",
	// "taskmanager").
	Component string
	// Logger receives the set-up's and the login's logs. Default:
	// discarded.
	Logger *slog.Logger
}

// Setup reads the Hadoop configuration of the environment and, when it
// requires Kerberos, logs the process in: in a YARN container from the
// keytab the client shipped (ContainerKerberos), elsewhere as c says
// (security.kerberos.login.keytab and .principal, or the ticket cache).
// Run keeps the login valid; without Run, Close releases it.
func Setup(c *conf.Configuration, o Options) (*Process, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Component == "" {
		o.Component = "process"
	}
	log := o.Logger
	// Without HADOOP_CONF_DIR and the like, Hadoop's defaults (and
	// hdfs:// URIs must name their NameNode); a directory named but
	// unreadable, or a malformed site file, is an error.
	h, err := hadoop.LoadFromEnvironment(o.Getenv)
	if err != nil {
		return nil, fmt.Errorf("%s: the Hadoop configuration: %w", o.Component, err)
	}
	p := &Process{hadoop: h, getenv: o.Getenv}
	auth, err := h.SecurityAuthentication()
	if err != nil {
		return nil, err
	}
	if auth != hadoop.AuthKerberos {
		return p, nil
	}
	kc := kerberos.FromConfiguration(c)
	if o.Getenv(EnvContainerID) != "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		var ok bool
		if kc, ok = ContainerKerberos(c, wd); !ok {
			return p, noLogin(o, fmt.Sprintf("the application has no keytab (%s)", conf.KerberosKeytab.Key()))
		}
	} else if !kc.Enabled() {
		return p, noLogin(o, fmt.Sprintf("set %s and %s, or %s with a ticket cache (KRB5CCNAME)",
			conf.KerberosKeytab.Key(), conf.KerberosPrincipal.Key(), conf.KerberosUseTicketCache.Key()))
	}
	login, err := kerberos.New(kc, kerberos.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("%s: Kerberos login: %w", o.Component, err)
	}
	p.login = login
	if kc.Keytab != "" {
		p.WorkerConfiguration = KerberosProperties(kc)
	}
	return p, nil
}

// noLogin warns of a process without a login on a Kerberized cluster: it
// may not need HDFS at all, but hdfs:// will not work.
func noLogin(o Options, what string) error {
	o.Logger.Warn(o.Component+": the Hadoop cluster requires Kerberos but there is no login: hdfs:// will not work", "fix", what)
	return nil
}

// Hadoop is the environment's Hadoop configuration (Hadoop's defaults
// when the environment names none); nil for the zero Process.
func (p *Process) Hadoop() *hadoop.Configuration { return p.hadoop }

// Login is the process's Kerberos login; nil without one.
func (p *Process) Login() *kerberos.Login { return p.login }

// KerberosStatus returns the login's status function (for heartbeats and
// /metrics); nil without a login.
func (p *Process) KerberosStatus() func() kerberos.Status {
	if p.login == nil {
		return nil
	}
	return p.login.Status
}

// RegisterHDFS makes hdfs:// URIs resolve on r with the process's login
// (without fs.defaultFS in the Hadoop configuration every hdfs:// URI must
// name its NameNode). A resolver that already has hdfs keeps it. Nothing is
// dialled until a URI is resolved.
func (p *Process) RegisterHDFS(r *fs.Resolver) error {
	for _, s := range r.Schemes() {
		if s == "hdfs" {
			return nil
		}
	}
	h := p.hadoop
	if h == nil {
		h = hadoop.NewConfiguration(p.getenv)
	}
	return hdfs.Register(r, hdfs.Config{Hadoop: h, Getenv: p.getenv, Kerberos: p.login})
}

// Run keeps the login valid (the re-login loop) until ctx ends, then
// closes it. Without a login it returns at once.
func (p *Process) Run(ctx context.Context, log *slog.Logger) {
	if p.login == nil {
		return
	}
	defer p.login.Close()
	if err := p.login.Run(ctx); err != nil && log != nil {
		log.Error("the Kerberos re-login loop ended", "principal", p.login.Principal(), "err", err)
	}
}

// Start runs Run on a goroutine of its own until stop, which waits for it
// to end (and the login to close).
func (p *Process) Start(ctx context.Context, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx, log)
	}()
	return func() {
		cancel()
		<-done
	}
}

// Close releases a login that Run never ran.
func (p *Process) Close() {
	if p.login != nil {
		p.login.Close()
	}
}
