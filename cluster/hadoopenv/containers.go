package hadoopenv

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/security/kerberos"
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
