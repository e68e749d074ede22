package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/sluice/sluice/cluster/yarnam"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/security/kerberos"
)

// envContainerID is set by YARN in every container.
const envContainerID = "CONTAINER_ID"

// security is the TaskManager's Kerberos setup on a secure Hadoop cluster.
type security struct {
	// login is the TaskManager's login; nil on other clusters.
	login *kerberos.Login
	// workerConf carries the login on to the workers (absolute keytab and
	// krb5.conf paths), which log in themselves for hdfs://.
	workerConf map[string]string
}

// setUpSecurity logs the TaskManager in when the Hadoop configuration of
// its environment (HADOOP_CONF_DIR) requires Kerberos: in a YARN container
// from the keytab the client shipped (yarnam.ContainerKerberos), elsewhere
// as the configuration says. It also logs the kinds of the tokens the
// container's credentials hold ($HADOOP_TOKEN_FILE_LOCATION).
func setUpSecurity(c *conf.Configuration, getenv func(string) string, log *slog.Logger) (*security, error) {
	if tf := getenv(hadoop.EnvTokenFile); tf != "" {
		creds, err := hadoop.ReadTokenFile(tf)
		if err != nil {
			log.Warn("taskmanager: cannot read the container's credentials", "err", err)
		} else {
			var kinds []string
			for _, a := range creds.TokenAliases() {
				t, _ := creds.Token(a)
				kinds = append(kinds, t.Kind)
			}
			log.Info("taskmanager: container credentials", "token_kinds", kinds)
		}
	}
	h, err := hadoop.LoadFromEnvironment(getenv)
	if err != nil {
		return &security{}, nil // no Hadoop here: nothing to secure
	}
	auth, err := h.SecurityAuthentication()
	if err != nil {
		return nil, err
	}
	if auth != hadoop.AuthKerberos {
		return &security{}, nil
	}
	kc := kerberos.FromConfiguration(c)
	if getenv(envContainerID) != "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		var ok bool
		if kc, ok = yarnam.ContainerKerberos(c, wd); !ok {
			log.Warn("taskmanager: the Hadoop cluster requires Kerberos but the application has no keytab: hdfs:// will not work",
				"keytab_key", conf.KerberosKeytab.Key())
			return &security{}, nil
		}
	} else if !kc.Enabled() {
		log.Warn("taskmanager: the Hadoop cluster requires Kerberos but no login is configured: hdfs:// will not work")
		return &security{}, nil
	}
	login, err := kerberos.New(kc, kerberos.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("taskmanager: Kerberos login: %w", err)
	}
	s := &security{login: login}
	if kc.Keytab != "" {
		s.workerConf = yarnam.KerberosProperties(kc)
	}
	return s, nil
}

// run keeps the login valid until ctx ends (re-login loop), then closes it.
func (s *security) run(ctx context.Context, log *slog.Logger) {
	if s.login == nil {
		return
	}
	defer s.login.Close()
	if err := s.login.Run(ctx); err != nil {
		log.Error("taskmanager: the Kerberos re-login loop ended", "err", err)
	}
}
