package kerberos

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sluice/sluice/conf"
)

// Config says how to log in. Every field documents its default.
type Config struct {
	// Principal to log in as: user@REALM or service/host@REALM. Required
	// with a keytab; with a ticket cache it defaults to the cache's
	// principal (and, when set, must match it).
	Principal string
	// Keytab is the keytab file to log in from. Default: none, which means
	// a ticket cache login.
	Keytab string
	// Krb5Conf is the krb5.conf path. Default: $KRB5_CONFIG, else
	// /etc/krb5.conf.
	Krb5Conf string
	// UseTicketCache allows a ticket cache login when no keytab is given.
	// Default (from configuration) true; the zero Config has it false.
	UseTicketCache bool
	// TicketCache is the ticket cache file. Default: $KRB5CCNAME (FILE:
	// caches only), else /tmp/krb5cc_<uid>.
	TicketCache string
	// DisableFAST turns off FAST pre-authentication, which Active Directory
	// does not support. Default false.
	DisableFAST bool
	// MinRefreshInterval is the shortest time between two re-logins
	// (security.kerberos.relogin.period). Default 1m.
	MinRefreshInterval time.Duration
}

// FromConfiguration reads the login of the job's configuration:
// security.kerberos.login.{keytab,principal,use-ticket-cache},
// security.kerberos.krb5-conf.path and security.kerberos.relogin.period.
func FromConfiguration(c *conf.Configuration) Config {
	return Config{
		Principal:          conf.Get(c, conf.KerberosPrincipal),
		Keytab:             conf.Get(c, conf.KerberosKeytab),
		Krb5Conf:           conf.Get(c, conf.KerberosKrb5ConfPath),
		UseTicketCache:     conf.Get(c, conf.KerberosUseTicketCache),
		MinRefreshInterval: conf.Get(c, conf.KerberosReloginPeriod),
	}
}

// Enabled reports whether the configuration asks for a Kerberos login at
// all: a keytab, or a principal.
func (c Config) Enabled() bool { return c.Keytab != "" || c.Principal != "" }

// Validate reports every problem of the configuration at once, without
// touching files or the network.
func (c Config) Validate() error {
	var errs []error
	if c.Principal != "" {
		if _, _, err := SplitPrincipal(c.Principal); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Keytab != "" && c.Principal == "" {
		errs = append(errs, newError(ErrConfig, "login from keytab", "", c.Keytab, nil,
			"security.kerberos.login.keytab is set but security.kerberos.login.principal is not"))
	}
	if c.Keytab == "" && !c.UseTicketCache {
		errs = append(errs, newError(ErrConfig, "login", c.Principal, "", nil,
			"no keytab (security.kerberos.login.keytab) and the ticket cache is disabled (security.kerberos.login.use-ticket-cache)"))
	}
	if c.MinRefreshInterval < 0 {
		errs = append(errs, newError(ErrConfig, "login", c.Principal, "", nil,
			fmt.Sprintf("security.kerberos.relogin.period is negative (%s)", c.MinRefreshInterval)))
	}
	return errors.Join(errs...)
}

// krb5ConfPath is the krb5.conf to read.
func (c Config) krb5ConfPath() string {
	if c.Krb5Conf != "" {
		return c.Krb5Conf
	}
	if p := os.Getenv("KRB5_CONFIG"); p != "" {
		// KRB5_CONFIG may list several files; the first is the one we read.
		return strings.Split(p, ":")[0]
	}
	return "/etc/krb5.conf"
}

// ticketCachePath resolves the ticket cache file.
func (c Config) ticketCachePath() (string, error) {
	name := c.TicketCache
	if name == "" {
		name = os.Getenv("KRB5CCNAME")
	}
	if name == "" {
		return fmt.Sprintf("/tmp/krb5cc_%d", os.Getuid()), nil
	}
	typ, rest, found := strings.Cut(name, ":")
	if !found || strings.HasPrefix(name, "/") {
		return name, nil
	}
	if typ != "FILE" {
		return "", newError(ErrTicketCache, "login from ticket cache", c.Principal, name, nil,
			fmt.Sprintf("ticket cache type %s is not supported: use a FILE: cache (e.g. KRB5CCNAME=FILE:/tmp/krb5cc_%d before kinit)", typ, os.Getuid()))
	}
	return rest, nil
}

// SplitPrincipal splits user@REALM (user may be service/host) into the
// name and realm, with a clear error for anything else. A principal
// without a realm (user, service/host) gives realm "": the login takes
// krb5.conf's default_realm for it, as MIT kinit and Hadoop do.
func SplitPrincipal(p string) (name, realm string, err error) {
	name = p
	bad := p == ""
	if i := strings.LastIndexByte(p, '@'); i >= 0 {
		name, realm = p[:i], p[i+1:]
		bad = i == 0 || realm == "" || strings.ContainsAny(realm, "@/ \t\n")
	}
	bad = bad || strings.ContainsAny(name, "@ \t\n") || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//")
	if bad {
		return "", "", newError(ErrConfig, "parse principal", "", "", nil,
			fmt.Sprintf("principal %q is not user[@REALM] or service/host[@REALM] (security.kerberos.login.principal)", p))
	}
	return name, realm, nil
}
