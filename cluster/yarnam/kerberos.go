package yarnam

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/sluice/sluice/cluster/hadoopenv"
	"github.com/sluice/sluice/cluster/yarndriver"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/security/kerberos"
	"github.com/sluice/sluice/yarn/delegation"
)

// startSecurity sets the ApplicationMaster up for a secure cluster
// (hadoop.security.authentication=kerberos): the qualities of protection
// of its token connections (hadoop.rpc.protection), and its Kerberos login
// from the shipped keytab, kept valid by the re-login loop until stop. On
// other clusters it does nothing.
func startSecurity(ctx context.Context, env *Environment, log *slog.Logger) (stop func(), err error) {
	auth, err := env.Hadoop.SecurityAuthentication()
	if err != nil || auth != hadoop.AuthKerberos {
		return func() {}, err
	}
	if env.QOP, err = env.Hadoop.RPCProtection(); err != nil {
		return nil, err
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	kc, ok := hadoopenv.ContainerKerberos(env.Conf, wd)
	if !ok {
		return nil, fmt.Errorf("%w: the cluster requires Kerberos (%s=kerberos) but the application has no keytab: "+
			"set %s and %s (and leave %s true) so that its processes can log in",
			ErrEnvironment, hadoop.KeySecurityAuthentication, conf.KerberosKeytab.Key(), conf.KerberosPrincipal.Key(), conf.YarnShipLocalKeytab.Key())
	}
	login, err := kerberos.New(kc, kerberos.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("yarnam: logging in from the shipped keytab %s: %w", kc.Keytab, err)
	}
	env.Kerberos = login
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := login.Run(ctx); err != nil {
			log.Error("yarnam: the Kerberos re-login loop ended", "err", err)
		}
	}()
	return func() {
		cancel()
		<-done
		login.Close()
	}, nil
}

// startDelegationTokens keeps HDFS delegation tokens fresh on a secure
// cluster (security.delegation.tokens.enabled), as Flink's
// DelegationTokenManager in the JobManager: with its login the
// ApplicationMaster obtains tokens for fs.defaultFS and
// security.kerberos.access.hadoopFileSystems, logs their expiry, obtains
// new ones before they expire, and gives them to the TaskManagers launched
// from then on. m is the running Manager, nil when there is none.
func startDelegationTokens(ctx context.Context, env *Environment, drv *yarndriver.Driver, log *slog.Logger) (m *delegation.Manager, stop func(), err error) {
	if env.Kerberos == nil || !conf.Get(env.Conf, conf.DelegationTokensEnabled) {
		return nil, func() {}, nil
	}
	var nns []delegation.NameNode
	seen := map[string]bool{}
	for _, u := range append([]string{env.Hadoop.DefaultFS()}, conf.Get(env.Conf, conf.KerberosAccessHadoopFileSystems)...) {
		if !strings.HasPrefix(u, "hdfs://") {
			continue
		}
		nn, err := delegation.NameNodeOf(env.Hadoop, u)
		if err != nil {
			return nil, nil, err
		}
		if !seen[nn.Addr] {
			seen[nn.Addr] = true
			nns = append(nns, nn)
		}
	}
	if len(nns) == 0 {
		return nil, func() {}, nil
	}
	fallback, err := env.Hadoop.FallbackToSimpleAuthAllowed()
	if err != nil {
		return nil, nil, err
	}
	dc, err := delegation.New(delegation.Config{Login: env.Kerberos, QOP: env.QOP, Logger: log, FallbackToSimpleAllowed: fallback})
	if err != nil {
		return nil, nil, err
	}
	m, err = delegation.NewManager(delegation.ManagerConfig{
		Client:       dc,
		NameNodes:    nns,
		TimeRatio:    conf.Get(env.Conf, conf.DelegationTokensRenewalTimeRatio),
		RetryBackoff: conf.Get(env.Conf, conf.DelegationTokensRenewalRetryBackoff),
		OnTokens: func(c *hadoop.Credentials, expiry time.Time) {
			if err := drv.UpdateCredentials(c, expiry); err != nil {
				log.Error("yarnam: the new delegation tokens cannot be given to TaskManagers", "err", err)
			}
		},
		Logger: log,
	})
	if err != nil {
		dc.Close()
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = m.Run(ctx) // returns nil when ctx ends
	}()
	return m, func() {
		cancel()
		<-done
		dc.Close()
	}, nil
}
