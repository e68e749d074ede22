package yarndeploy

import (
	"bytes"
	"fmt"
	iofs "io/fs"

	"github.com/sluice/sluice/cluster/rpcauth"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/yarn"
)

// withInternalSecurity is the application's configuration as its
// containers read it: the internal RPCs authenticated with the secret the
// client ships (security.internal.secret-file naming the localized file,
// relative to the container's working directory).
func withInternalSecurity(c *conf.Configuration) *conf.Configuration {
	return c.Set(conf.InternalSecretFile.Key(), conf.InternalSecretFileName)
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
