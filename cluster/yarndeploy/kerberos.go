package yarndeploy

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/sluice/sluice/cluster/hadoopenv"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/security/kerberos"
	"github.com/sluice/sluice/yarn"
	"github.com/sluice/sluice/yarn/delegation"
)

// ErrKerberos wraps failures of the client's Kerberos setup (login,
// delegation tokens, the keytab to ship).
var ErrKerberos = errors.New("yarndeploy: Kerberos")

// kerberosError is an ErrKerberos whose message is its cause's (which
// already says "kerberos: …"), not the sentinel's text again.
type kerberosError struct {
	context string
	err     error
}

func (e *kerberosError) Error() string {
	if e.context == "" {
		return "yarndeploy: " + e.err.Error()
	}
	return "yarndeploy: " + e.context + ": " + e.err.Error()
}

func (e *kerberosError) Unwrap() []error { return []error{ErrKerberos, e.err} }

// kerberosErr wraps err as an ErrKerberos, after context if it is given.
func kerberosErr(context string, err error) error { return &kerberosError{context: context, err: err} }

// kerberosLogin is the client's login for a cluster with
// hadoop.security.authentication=kerberos: Options.Kerberos, else one made
// from the configuration (keytab, or ticket cache). For other clusters it
// is nil. own reports whether the Deployer made it (and must close it).
func kerberosLogin(opts Options, h *hadoop.Configuration) (login *kerberos.Login, own bool, err error) {
	auth, err := h.SecurityAuthentication()
	if err != nil || auth != hadoop.AuthKerberos {
		return nil, false, err
	}
	if opts.Kerberos != nil {
		return opts.Kerberos, false, nil
	}
	kc := kerberos.FromConfiguration(opts.Conf)
	if err := kc.Validate(); err != nil {
		return nil, false, kerberosErr("", err)
	}
	l, err := kerberos.New(kc, kerberos.WithLogger(opts.Logger))
	if err != nil {
		return nil, false, kerberosErr(fmt.Sprintf("logging in (the cluster requires Kerberos, %s=kerberos)", hadoop.KeySecurityAuthentication), err)
	}
	return l, true, nil
}

// shortName is the user part of a principal: alice of alice@REALM, yarn of
// yarn/host@REALM.
func shortName(principal string) string {
	name, _, _ := strings.Cut(principal, "@")
	name, _, _ = strings.Cut(name, "/")
	return name
}

// newYARNClient connects (lazily) to the ResourceManagers of h, over
// Kerberos when login is set.
func newYARNClient(opts Options, h *hadoop.Configuration, user string, login *kerberos.Login) (*yarn.Client, error) {
	rms, err := h.ResourceManagerAddresses()
	if err != nil {
		return nil, err
	}
	cfg := yarn.ClientConfig{User: user, Logger: opts.Logger}
	for _, r := range rms {
		cfg.ResourceManagers = append(cfg.ResourceManagers, r.Address)
	}
	if login != nil {
		if err := yarn.ConfigureKerberos(&cfg, h, login); err != nil {
			return nil, err
		}
	}
	return yarn.NewClient(cfg)
}

// delegationTokens obtains HDFS delegation tokens for the application's
// containers, as Flink's client does: one per file system the application
// uses (fs.defaultFS, the staging directory's, and
// security.kerberos.access.hadoopFileSystems), renewable by the
// ResourceManager (its principal's short name), which renews them while
// the application runs and cancels them when it ends.
func (d *Deployer) delegationTokens(ctx context.Context, staging *url.URL) (*hadoop.Credentials, error) {
	rmPrincipal := d.hadoop.Get(yarn.KeyRMPrincipal, "")
	if rmPrincipal == "" {
		return nil, fmt.Errorf("%w: %s is not set: the ResourceManager renews the application's delegation tokens and must be named as their renewer",
			ErrKerberos, yarn.KeyRMPrincipal)
	}
	qop, err := d.hadoop.RPCProtection()
	if err != nil {
		return nil, err
	}
	fallback, err := d.hadoop.FallbackToSimpleAuthAllowed()
	if err != nil {
		return nil, err
	}
	dc, err := delegation.New(delegation.Config{Login: d.login, QOP: qop, Logger: d.log, FallbackToSimpleAllowed: fallback})
	if err != nil {
		return nil, err
	}
	defer dc.Close()
	uris := []string{d.hadoop.DefaultFS()}
	if staging != nil {
		uris = append(uris, (&url.URL{Scheme: staging.Scheme, Host: staging.Host}).String())
	}
	uris = append(uris, conf.Get(d.opts.Conf, conf.KerberosAccessHadoopFileSystems)...)
	creds := &hadoop.Credentials{}
	seen := map[string]bool{}
	for _, u := range uris {
		if !strings.HasPrefix(u, "hdfs://") {
			continue
		}
		nn, err := delegation.NameNodeOf(d.hadoop, u)
		if err != nil {
			return nil, kerberosErr("", err)
		}
		if seen[nn.Addr] {
			continue
		}
		seen[nn.Addr] = true
		tok, err := dc.ObtainHDFS(ctx, nn, shortName(rmPrincipal))
		if err != nil {
			return nil, kerberosErr("", err)
		}
		creds.AddToken(tok.Service, tok)
		d.progress("Obtained an HDFS delegation token from %s (renewer %s)", nn.Addr, shortName(rmPrincipal))
	}
	return creds, nil
}

// checkKeytab checks the keytab to ship before anything is staged: it must
// be a readable regular file.
func checkKeytab(c *conf.Configuration) error {
	if !hadoopenv.ShipsKeytab(c) {
		return nil
	}
	if _, err := hadoopenv.KeytabLinkName(c); err != nil {
		return err
	}
	kt := conf.Get(c, conf.KerberosKeytab)
	fi, err := os.Stat(kt)
	if err != nil {
		return fmt.Errorf("%s (the keytab to ship): %w", conf.KerberosKeytab.Key(), err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: %s is not a regular file", conf.KerberosKeytab.Key(), kt)
	}
	return nil
}

// ErrNoContainerKeytab: the cluster requires Kerberos and the deployment
// names no keytab for its containers (the client logged in from a ticket
// cache). The ApplicationMaster and the TaskManagers log in from a keytab
// (shipped, or at yarn.security.kerberos.localized-keytab-path on every
// node) and re-log in with it; a client's ticket cannot be handed to them,
// and the delegation tokens alone would let HDFS work only until their
// maximum lifetime. Deploy refuses before it uploads anything.
var ErrNoContainerKeytab = errors.New("yarndeploy: the cluster requires Kerberos and the application has no keytab")

// checkContainerLogin refuses a deployment to a Kerberized cluster
// (secure) whose containers would have no login of their own.
func checkContainerLogin(c *conf.Configuration, secure bool) error {
	if !secure {
		return nil
	}
	if _, ok := hadoopenv.ContainerKerberos(c, "/"); ok {
		return nil
	}
	return fmt.Errorf("%w: set %s and %s (a ticket cache from kinit serves the client's own commands, such as list, cancel or yarn-session --kill, "+
		"but the ApplicationMaster and TaskManagers log in from a keytab); nothing was uploaded",
		ErrNoContainerKeytab, conf.KerberosKeytab.Key(), conf.KerberosPrincipal.Key())
}
