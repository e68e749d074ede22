package yarndeploy

import (
	"bytes"
	"fmt"
	iofs "io/fs"
	"time"

	"github.com/sluice/sluice/cluster/rpcauth"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/security/tlsconf"
	"github.com/sluice/sluice/yarn"
)

// Link names of the internal TLS files in a container's working
// directory: each kind of container (the ApplicationMaster, the
// TaskManagers) localizes its own keystore under the one name.
const (
	FileInternalKeystore   = "internal-keystore.pem"
	FileInternalTruststore = "internal-truststore.pem"
)

// internalCertValidity is how long an application's generated
// certificates are valid: its CA's key is discarded once they are
// issued, so none can be renewed, and a YARN application may run for
// years.
const internalCertValidity = 10 * 365 * 24 * time.Hour

// tlsMode is how an application's internal RPCs are authenticated.
type tlsMode int

const (
	// tlsGenerated (the default): mutual TLS with a CA and certificates
	// the client generates for this application alone.
	tlsGenerated tlsMode = iota
	// tlsUser: mutual TLS with the keystore and truststore the user
	// configured, paths on every node (as Flink takes them).
	tlsUser
	// tlsOff: security.ssl.internal.enabled is false; the per-application
	// secret.
	tlsOff
)

// internalTLSMode decides from the user's configuration: on by default
// on YARN (unlike standalone), generated unless the user names a
// keystore.
func internalTLSMode(c *conf.Configuration) tlsMode {
	switch {
	case conf.IsSet(c, conf.SSLInternalEnabled) && !conf.Get(c, conf.SSLInternalEnabled):
		return tlsOff
	case conf.IsSet(c, conf.SSLInternalKeystore):
		return tlsUser
	}
	return tlsGenerated
}

// withInternalSecurity is the application's configuration as its
// containers read it: with generated certificates, mutual TLS with the
// localized files (paths relative to the container's working directory);
// with TLS off, the secret the client ships (security.internal.secret-file
// naming the localized file).
func withInternalSecurity(c *conf.Configuration, mode tlsMode) *conf.Configuration {
	switch mode {
	case tlsGenerated:
		return c.Set(conf.SSLInternalEnabled.Key(), "true").
			Set(conf.SSLInternalKeystore.Key(), FileInternalKeystore).
			Set(conf.SSLInternalTruststore.Key(), FileInternalTruststore)
	case tlsUser:
		return c.Set(conf.SSLInternalEnabled.Key(), "true")
	}
	return c.Set(conf.InternalSecretFile.Key(), conf.InternalSecretFileName)
}

// stageInternalSecurity ships what the application's internal RPCs are
// authenticated with, for this application only, mode 0600 and PRIVATE
// resources: by default a new CA's certificate (the truststore) and two
// keystores it signed, one for the ApplicationMaster and one for the
// TaskManagers (and their workers); the CA's private key is never written,
// so nothing else can be signed by it. With security.ssl.internal.enabled
// false, a new secret.
func (d *Deployer) stageInternalSecurity(st *staging, id yarn.ApplicationID) error {
	switch internalTLSMode(d.opts.Conf) {
	case tlsUser:
		d.progress("Internal RPCs: mutual TLS with %s (%s) on every node", conf.Get(d.opts.Conf, conf.SSLInternalKeystore),
			conf.KeyOf(d.opts.Conf, conf.SSLInternalKeystore))
		return nil
	case tlsOff:
		return d.stageInternalSecret(st)
	}
	now := time.Now()
	ca, err := tlsconf.NewCA("sluice "+id.String(), now, internalCertValidity)
	if err != nil {
		return err
	}
	perm := iofs.FileMode(0o600)
	upload := func(name string, b []byte) error {
		if err := st.uploadWith(d, name, bytes.NewReader(b), int64(len(b)), &perm, yarn.VisibilityPrivate); err != nil {
			return fmt.Errorf("shipping the application's internal TLS files: %w", err)
		}
		return nil
	}
	if err := upload(FileInternalTruststore, ca.CertPEM); err != nil {
		return err
	}
	st.security = append(st.security, FileInternalTruststore)
	st.amLinks, st.tmLinks = map[string]string{}, map[string]string{}
	for _, k := range []struct {
		role  string
		links map[string]string
	}{{"jobmanager", st.amLinks}, {"taskmanager", st.tmLinks}} {
		// Peers dial one another by the addresses they advertise, which
		// are not known yet: host names are not checked (as in Flink's
		// internal SSL), the CA is.
		ks, err := ca.Issue("sluice "+id.String()+" "+k.role, nil, now, internalCertValidity)
		if err != nil {
			return err
		}
		name := "internal-keystore-" + k.role + ".pem"
		if err := upload(name, ks); err != nil {
			return err
		}
		k.links[FileInternalKeystore] = name
	}
	d.progress("Internal RPCs: mutual TLS with a CA and certificates generated for %s only (mode 600; %s=false turns it off)",
		id, conf.SSLInternalEnabled.Key())
	return nil
}

// stageInternalSecret ships a new secret for this application only, mode
// 0600 and a PRIVATE resource: its ApplicationMaster, TaskManagers and
// workers authenticate each other with it, and no other application's
// processes have it.
func (d *Deployer) stageInternalSecret(st *staging) error {
	secret := append(rpcauth.NewSecret(), '\n')
	perm := iofs.FileMode(0o600)
	if err := st.uploadWith(d, conf.InternalSecretFileName, bytes.NewReader(secret), int64(len(secret)), &perm, yarn.VisibilityPrivate); err != nil {
		return fmt.Errorf("shipping the cluster's secret: %w", err)
	}
	st.security = append(st.security, conf.InternalSecretFileName)
	d.progress("Shipping a secret for this application's internal RPCs as %s (mode 600)", conf.InternalSecretFileName)
	return nil
}
