package worker

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/hdfs"
	"github.com/sluice/sluice/security/kerberos"
)

// registerHDFS makes hdfs:// URIs (checkpoint and savepoint directories)
// resolve in a worker without the program registering HDFS itself, as
// Flink's TaskManagers read hdfs:// through the Hadoop filesystem they
// bundle. The Hadoop configuration is the one the environment names
// (HADOOP_CONF_DIR, YARN_CONF_DIR or HADOOP_HOME: a YARN container's
// working directory, where the client staged core-site.xml); without one,
// every hdfs:// URI must name its NameNode. A program that registered hdfs
// on its resolver (stream.WithFileSystems) keeps its own. Nothing is
// dialled until a URI is resolved.
func registerHDFS(r *fs.Resolver, getenv func(string) string) error {
	_, _, err := setUpHDFS(context.Background(), r, getenv, nil, nil)
	return err
}

// setUpHDFS is registerHDFS with the worker's Kerberos login: when the
// Hadoop configuration requires Kerberos and the deployment's
// configuration names a keytab and principal (on YARN the TaskManager's
// shipped keytab, security.kerberos.login.*), the worker logs in and keeps
// the login valid (re-login loop) until stop, which closes it. login is
// that login (nil without one), whose state the worker reports to its
// JobMaster.
func setUpHDFS(ctx context.Context, r *fs.Resolver, getenv func(string) string, configuration map[string]string, log *slog.Logger) (login *kerberos.Login, stop func(), err error) {
	stop = func() {}
	if slices.Contains(r.Schemes(), "hdfs") {
		return nil, stop, nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h, err := hadoop.LoadFromEnvironment(getenv)
	if err != nil {
		return nil, stop, fmt.Errorf("worker: the Hadoop configuration for hdfs:// URIs: %w", err)
	}
	if auth, err := h.SecurityAuthentication(); err != nil {
		return nil, stop, err
	} else if auth == hadoop.AuthKerberos && len(configuration) > 0 {
		kc := kerberos.FromConfiguration(conf.FromMap(configuration, conf.Source{Name: "worker deployment"}))
		if kc.Keytab != "" {
			if login, err = kerberos.New(kc, kerberos.WithLogger(log)); err != nil {
				return nil, stop, fmt.Errorf("worker: Kerberos login for hdfs:// URIs: %w", err)
			}
			ctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() {
				defer close(done)
				if err := login.Run(ctx); err != nil {
					log.Error("worker: the Kerberos re-login loop ended", "err", err)
				}
			}()
			stop = func() {
				cancel()
				<-done
				login.Close()
			}
		}
	}
	if err := hdfs.Register(r, hdfs.Config{Hadoop: h, Getenv: getenv, Kerberos: login}); err != nil {
		stop()
		return nil, func() {}, err
	}
	return login, stop, nil
}
