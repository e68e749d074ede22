package yarndeploy

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"path"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/yarn"
)

// FileRESTToken is the link name of the application's REST token in the
// ApplicationMaster's working directory, and its name in the staging
// directory.
const FileRESTToken = "rest-token"

// restTokenGenerated reports whether the client generates the
// application's REST token: unless yarn.security.rest-token.enabled is
// false or the user names a token file of their own.
func restTokenGenerated(c *conf.Configuration) bool {
	return conf.Get(c, conf.YarnRESTToken) && !conf.IsSet(c, conf.RESTTokenFile)
}

// withRESTToken is the application's configuration with the generated
// token's file (relative to the container's working directory).
func withRESTToken(c *conf.Configuration) *conf.Configuration {
	if !restTokenGenerated(c) {
		return c
	}
	return c.Set(conf.RESTTokenFile.Key(), FileRESTToken)
}

// stageRESTToken writes a new token into the staging directory, mode 0600,
// and ships it to the ApplicationMaster alone as a PRIVATE resource: its
// JobManager then refuses REST requests that change state without it, and
// the owner's later commands read it from the staging directory
// (RESTToken), which nobody else can read.
func (d *Deployer) stageRESTToken(st *staging) error {
	if !restTokenGenerated(d.opts.Conf) {
		if !conf.Get(d.opts.Conf, conf.YarnRESTToken) {
			d.progress("REST: open to whoever reaches it (%s=false)", conf.YarnRESTToken.Key())
		}
		return nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return fmt.Errorf("generating the REST token: %w", err)
	}
	tok := []byte(hex.EncodeToString(b) + "\n")
	perm := iofs.FileMode(0o600)
	if err := st.uploadWith(d, FileRESTToken, bytes.NewReader(tok), int64(len(tok)), &perm, yarn.VisibilityPrivate); err != nil {
		return fmt.Errorf("shipping the application's REST token: %w", err)
	}
	if st.amLinks == nil {
		st.amLinks = map[string]string{}
	}
	st.amLinks[FileRESTToken] = FileRESTToken
	d.progress("REST: requests that change state need the token generated for this application (mode 600 in its staging directory; %s=false turns it off)",
		conf.YarnRESTToken.Key())
	return nil
}

// RESTToken reads application id's REST token from its staging directory:
// nil if it has none (generated tokens turned off, or an application that
// predates them).
func (d *Deployer) RESTToken(id yarn.ApplicationID) ([]byte, error) {
	if !restTokenGenerated(d.opts.Conf) {
		return restapi.TokenFromConf(d.opts.Conf)
	}
	dir, err := d.StagingDir(id)
	if err != nil {
		return nil, err
	}
	fsys, err := d.dialFS(dir.Host)
	if err != nil {
		return nil, fmt.Errorf("yarndeploy: reading the REST token of %s: %w", id, err)
	}
	defer fsys.Close()
	p := path.Join(dir.Path, FileRESTToken)
	f, err := fsys.Open(p)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("yarndeploy: reading the REST token of %s (%s%s): %w", id, dir.Host, p, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, fmt.Errorf("yarndeploy: reading the REST token of %s (%s%s): %w", id, dir.Host, p, err)
	}
	if b = bytes.TrimSpace(b); len(b) == 0 {
		return nil, fmt.Errorf("yarndeploy: the REST token of %s (%s%s) is empty", id, dir.Host, p)
	}
	return b, nil
}
