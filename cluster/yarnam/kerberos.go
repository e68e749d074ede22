package yarnam

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluice/sluice/cluster/yarndriver"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/security/kerberos"
	"github.com/sluice/sluice/yarn/delegation"
)

// FileKrb5Conf is the link name of the krb5.conf the client ships when
// security.kerberos.krb5-conf.path is set (as Flink mounts it into its
// containers).
const FileKrb5Conf = "krb5.conf"

// KeytabLinkName is the link name under which the client ships the keytab
// (yarn.security.kerberos.ship-local-keytab): the
// yarn.security.kerberos.localized-keytab-path, which must then be a plain
// file name.
func KeytabLinkName(c *conf.Configuration) (string, error) {
	name := conf.Get(c, conf.YarnLocalizedKeytabPath)
	if name == "" || strings.Contains(name, "/") || name == "." || name == ".." {
		return "", fmt.Errorf("%s=%q must be a plain file name when the keytab is shipped (%s=true)",
			conf.YarnLocalizedKeytabPath.Key(), name, conf.YarnShipLocalKeytab.Key())
	}
	return name, nil
}

// ShipsKeytab reports whether the client ships a keytab with the
// application: one is configured (security.kerberos.login.keytab) and
// yarn.security.kerberos.ship-local-keytab is true.
func ShipsKeytab(c *conf.Configuration) bool {
	return conf.Get(c, conf.KerberosKeytab) != "" && conf.Get(c, conf.YarnShipLocalKeytab)
}

// ContainerKerberos is the Kerberos login of a process in one of the
// application's containers whose working directory is workDir (absolute),
// from the configuration the client staged, which holds the client's own
// paths:
//
//   - a shipped keytab is workDir/<localized-keytab-path>; a keytab not
//     shipped is yarn.security.kerberos.localized-keytab-path as it is, a
//     path present on every node (relative paths are taken from workDir);
//   - a shipped krb5.conf (security.kerberos.krb5-conf.path was set) is
//     workDir/krb5.conf;
//   - the ticket cache is not used: a container has none.
//
// ok is false when the configuration names no keytab: the containers then
// have no login of their own.
func ContainerKerberos(c *conf.Configuration, workDir string) (cfg kerberos.Config, ok bool) {
	cfg = kerberos.FromConfiguration(c)
	if cfg.Keytab == "" || cfg.Principal == "" {
		return kerberos.Config{}, false
	}
	cfg.UseTicketCache = false
	cfg.TicketCache = ""
	if ShipsKeytab(c) {
		name, err := KeytabLinkName(c)
		if err != nil {
			name = conf.YarnLocalizedKeytabPath.Default()
		}
		cfg.Keytab = filepath.Join(workDir, name)
	} else if p := conf.Get(c, conf.YarnLocalizedKeytabPath); filepath.IsAbs(p) {
		cfg.Keytab = p
	} else {
		cfg.Keytab = filepath.Join(workDir, p)
	}
	if cfg.Krb5Conf != "" {
		cfg.Krb5Conf = filepath.Join(workDir, FileKrb5Conf)
	}
	return cfg, true
}

// KerberosProperties are the configuration settings that carry a
// container's resolved login (ContainerKerberos) on to the processes it
// starts (a TaskManager's workers), which run in other directories.
func KerberosProperties(cfg kerberos.Config) map[string]string {
	m := map[string]string{
		conf.KerberosPrincipal.Key():      cfg.Principal,
		conf.KerberosKeytab.Key():         cfg.Keytab,
		conf.KerberosUseTicketCache.Key(): "false",
	}
	if cfg.Krb5Conf != "" {
		m[conf.KerberosKrb5ConfPath.Key()] = cfg.Krb5Conf
	}
	return m
}

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
	kc, ok := ContainerKerberos(env.Conf, wd)
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
	dc, err := delegation.New(delegation.Config{Login: env.Kerberos, QOP: env.QOP, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	m, err = delegation.NewManager(delegation.ManagerConfig{
		Client:       dc,
		NameNodes:    nns,
		TimeRatio:    conf.Get(env.Conf, conf.DelegationTokensRenewalTimeRatio),
		RetryBackoff: conf.Get(env.Conf, conf.DelegationTokensRenewalRetryBackoff),
		OnTokens: func(c *hadoop.Credentials) {
			if err := drv.UpdateCredentials(c); err != nil {
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
