package yarndeploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"net"
	"net/url"
	"os"
	"path"
	"strconv"
	"time"

	"github.com/sluice/sluice/cluster/hadoopenv"
	"github.com/sluice/sluice/cluster/yarnam"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/hdfs"
	"github.com/sluice/sluice/yarn"
)

// stagingDirName is the directory under the staging base (the user's home
// by default) holding one directory per application.
const stagingDirName = ".sluice"

// stagingFS is the filesystem of a staging directory: an
// *hdfs.FileSystem, or a local one in tests.
type stagingFS interface {
	fs.FileSystem
	// Mkdir creates one directory with the permission perm.
	Mkdir(path string, perm iofs.FileMode) error
	// Chmod sets the permission of path.
	Chmod(path string, perm iofs.FileMode) error
	Close() error
}

// staging is an application's staging directory and the files in it (or
// taken from yarn.provided.lib.dirs).
type staging struct {
	fs    stagingFS
	dir   *url.URL
	files map[string]yarn.LocalResource // link name → resource
	// security are the link names of the Kerberos files (keytab,
	// krb5.conf) and the internal secret or truststore every container
	// gets.
	security []string
	// amLinks and tmLinks map link names to staged files that the
	// ApplicationMaster and the TaskManagers get differently (each kind
	// its own internal keystore under one link name).
	amLinks, tmLinks map[string]string
}

func (s *staging) close() { s.fs.Close() }

// remove deletes the staging directory; a missing one is no error.
func (s *staging) remove() error { return s.fs.RemoveAll(s.dir.Path) }

func (s *staging) pick(names ...string) map[string]yarn.LocalResource {
	out := make(map[string]yarn.LocalResource)
	for _, n := range names {
		if r, ok := s.files[n]; ok {
			out[n] = r
		}
	}
	return out
}

func (s *staging) appMasterFiles() map[string]yarn.LocalResource {
	return s.linked(s.pick(append([]string{yarnam.FileAppMaster, yarnam.FileConfig, yarnam.FileHadoopConf, yarnam.FileJob}, s.security...)...), s.amLinks)
}

func (s *staging) taskManagerFiles() map[string]yarn.LocalResource {
	return s.linked(s.pick(append([]string{yarnam.FileTaskManager, yarnam.FileConfig, yarnam.FileHadoopConf}, s.security...)...), s.tmLinks)
}

// linked adds the staged files of links to out under their link names.
func (s *staging) linked(out map[string]yarn.LocalResource, links map[string]string) map[string]yarn.LocalResource {
	for link, name := range links {
		if r, ok := s.files[name]; ok {
			out[link] = r
		}
	}
	return out
}

// StagingDir is the application's staging directory:
// <yarn.staging-directory, or the user's HDFS home>/.sluice/<application id>.
func (d *Deployer) StagingDir(id yarn.ApplicationID) (*url.URL, error) {
	def, err := url.Parse(d.hadoop.DefaultFS())
	if err != nil {
		return nil, fmt.Errorf("%w: fs.defaultFS %q: %v", ErrStaging, d.hadoop.DefaultFS(), err)
	}
	var u *url.URL
	base := conf.Get(d.opts.Conf, conf.YarnStagingDirectory)
	if base == "" {
		u = &url.URL{Scheme: def.Scheme, Host: def.Host, Path: "/user/" + d.user}
	} else {
		if u, err = url.Parse(base); err != nil || !path.IsAbs(u.Path) {
			return nil, fmt.Errorf("%w: %s %q is not an absolute path or URI", ErrStaging, conf.YarnStagingDirectory.Key(), base)
		}
		if u.Scheme == "" {
			u.Scheme, u.Host = def.Scheme, def.Host
		}
	}
	if u.Scheme != "hdfs" {
		return nil, fmt.Errorf("%w: the staging directory %s must be on HDFS (set %s or fs.defaultFS to an hdfs:// URI)",
			ErrStaging, u, conf.YarnStagingDirectory.Key())
	}
	u.Path = path.Join(u.Path, stagingDirName, id.String())
	return u, nil
}

// dialHDFS connects to the HDFS cluster of an hdfs:// URI's authority.
func (d *Deployer) dialHDFS(authority string) (stagingFS, error) {
	o, err := hdfs.OptionsFor(hdfs.Config{Hadoop: d.hadoop, Getenv: d.opts.Getenv, User: d.user, Kerberos: d.login}, authority)
	if err != nil {
		return nil, err
	}
	fsys, err := hdfs.Dial(o)
	if err != nil {
		return nil, err
	}
	return fsys, nil
}

func (d *Deployer) openStaging(dir *url.URL) (*staging, error) {
	fsys, err := d.dialFS(dir.Host)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStaging, err)
	}
	return &staging{fs: fsys, dir: dir, files: make(map[string]yarn.LocalResource)}, nil
}

// localResource describes an HDFS file for YARN: its URL, exact size and
// modification time, which the NodeManager checks before localizing it.
func localResource(u *url.URL, p string, fi iofs.FileInfo, vis yarn.LocalResourceVisibility) yarn.LocalResource {
	ru := yarn.URL{Scheme: u.Scheme, Host: u.Host, Port: -1, File: p}
	if h, port, err := net.SplitHostPort(u.Host); err == nil {
		if n, err := strconv.Atoi(port); err == nil {
			ru.Host, ru.Port = h, int32(n)
		}
	}
	return yarn.LocalResource{URL: ru, Size: fi.Size(), Timestamp: fi.ModTime().UnixMilli(), Type: yarn.ResourceFile, Visibility: vis}
}

// stage creates the staging directory (mode 700) and fills it: the
// binaries not found in yarn.provided.lib.dirs (a binary found there is
// used rather than the local one), config.yaml and core-site.xml. On
// failure the directory is deleted.
func (d *Deployer) stage(ctx context.Context, id yarn.ApplicationID) (*staging, error) {
	began := time.Now()
	provided, err := d.providedFiles()
	if err != nil {
		return nil, err
	}
	binaries := []struct{ name, local string }{
		{yarnam.FileAppMaster, d.opts.AppMaster}, {yarnam.FileTaskManager, d.opts.TaskManager}, {yarnam.FileJob, d.opts.Job},
	}
	var missing []error
	for _, b := range binaries {
		if _, ok := provided[b.name]; b.local == "" && !ok && b.name != yarnam.FileJob {
			missing = append(missing, fmt.Errorf("no %s binary: give its path, or put it in a directory of %s", b.name, conf.YarnProvidedLibDirs.Key()))
		}
	}
	if err := errors.Join(missing...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}

	dir, err := d.StagingDir(id)
	if err != nil {
		return nil, err
	}
	st, err := d.openStaging(dir)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*staging, error) {
		if rmErr := st.remove(); rmErr != nil {
			d.log.Warn("yarndeploy: could not delete the staging directory", "dir", dir.String(), "err", rmErr)
		}
		st.close()
		return nil, fmt.Errorf("%w: %w", ErrStaging, err)
	}
	if err := st.fs.MkdirAll(path.Dir(dir.Path)); err != nil {
		st.close()
		return nil, fmt.Errorf("%w: %w", ErrStaging, err)
	}
	if err := st.fs.Mkdir(dir.Path, 0o700); err != nil {
		st.close()
		return nil, fmt.Errorf("%w: %w", ErrStaging, err)
	}
	d.progress("Staging directory %s (mode 700)", dir)
	d.sweepStaging(ctx, st.fs, id, path.Dir(dir.Path))

	for _, b := range binaries {
		if r, ok := provided[b.name]; ok {
			st.files[b.name] = r
			d.progress("Using the pre-uploaded %s %s://%s:%d%s", b.name, r.URL.Scheme, r.URL.Host, r.URL.Port, r.URL.File)
			continue
		}
		if b.local == "" {
			continue
		}
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		if err := st.uploadFile(d, b.name, b.local); err != nil {
			return fail(err)
		}
	}
	cfg, err := configYAML(withRESTToken(withInternalSecurity(d.opts.Conf, internalTLSMode(d.opts.Conf))))
	if err != nil {
		return fail(err)
	}
	if err := st.upload(d, yarnam.FileConfig, bytes.NewReader(cfg), int64(len(cfg))); err != nil {
		return fail(err)
	}
	hx, err := hadoopXML(d.hadoop)
	if err != nil {
		return fail(err)
	}
	if err := st.upload(d, yarnam.FileHadoopConf, bytes.NewReader(hx), int64(len(hx))); err != nil {
		return fail(err)
	}
	if err := d.stageKerberos(st); err != nil {
		return fail(err)
	}
	if err := d.stageInternalSecurity(st, id); err != nil {
		return fail(err)
	}
	if err := d.stageRESTToken(st); err != nil {
		return fail(err)
	}
	d.log.Info("yarndeploy: staged", "dir", dir.String(), "files", len(st.files), "took", time.Since(began))
	return st, nil
}

func (s *staging) uploadFile(d *Deployer, name, local string) error {
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return s.upload(d, name, f, fi.Size())
}

// stageKerberos ships the Kerberos files with a secure application: the
// keytab (yarn.security.kerberos.ship-local-keytab), mode 0600 and a
// PRIVATE resource, so that the containers log in and keep their logins
// valid, and the krb5.conf when security.kerberos.krb5-conf.path names one.
func (d *Deployer) stageKerberos(st *staging) error {
	if d.login == nil {
		return nil
	}
	c := d.opts.Conf
	if hadoopenv.ShipsKeytab(c) {
		name, err := hadoopenv.KeytabLinkName(c)
		if err != nil {
			return err
		}
		if err := st.uploadFileMode(d, name, conf.Get(c, conf.KerberosKeytab), 0o600, yarn.VisibilityPrivate); err != nil {
			return fmt.Errorf("shipping the keytab: %w", err)
		}
		st.security = append(st.security, name)
		d.progress("Shipping the keytab of %s as %s (mode 600)", d.login.Principal(), name)
	} else if conf.Get(c, conf.KerberosKeytab) == "" {
		d.progress("No keytab (%s): the containers cannot log in to Kerberos; their HDFS access needs one", conf.KerberosKeytab.Key())
	}
	if p := conf.Get(c, conf.KerberosKrb5ConfPath); p != "" {
		if err := st.uploadFileMode(d, hadoopenv.FileKrb5Conf, p, 0o644, yarn.VisibilityApplication); err != nil {
			return fmt.Errorf("shipping %s: %w", conf.KerberosKrb5ConfPath.Key(), err)
		}
		st.security = append(st.security, hadoopenv.FileKrb5Conf)
	}
	return nil
}

// uploadFileMode uploads a local file whose mode in HDFS must be exactly
// perm: it is set right after the file is created, before any data is
// written to it.
func (s *staging) uploadFileMode(d *Deployer, name, local string, perm iofs.FileMode, vis yarn.LocalResourceVisibility) error {
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return s.uploadWith(d, name, f, fi.Size(), &perm, vis)
}

// upload writes r to the staging directory as name and records it with
// the size and timestamp HDFS reports.
func (s *staging) upload(d *Deployer, name string, r io.Reader, size int64) error {
	return s.uploadWith(d, name, r, size, nil, yarn.VisibilityApplication)
}

func (s *staging) uploadWith(d *Deployer, name string, r io.Reader, size int64, perm *iofs.FileMode, vis yarn.LocalResourceVisibility) error {
	p := path.Join(s.dir.Path, name)
	if size > 1<<20 {
		d.progress("Uploading %s (%.1f MiB) to %s", name, float64(size)/(1<<20), s.dir)
	}
	w, err := s.fs.Create(p)
	if err != nil {
		return err
	}
	if perm != nil {
		if err := s.fs.Chmod(p, *perm); err != nil {
			w.Close()
			return err
		}
	}
	if _, err := io.Copy(w, r); err != nil {
		w.Close()
		return fmt.Errorf("uploading %s: %w", p, err)
	}
	if err := w.Close(); err != nil {
		return err
	}
	fi, err := s.fs.Stat(p)
	if err != nil {
		return err
	}
	if fi.Size() != size {
		return fmt.Errorf("uploaded %s has %d bytes, want %d", p, fi.Size(), size)
	}
	if perm != nil && fi.Mode().Perm() != perm.Perm() {
		return fmt.Errorf("uploaded %s has mode %v, want %v", p, fi.Mode().Perm(), perm.Perm())
	}
	s.files[name] = localResource(s.dir, p, fi, vis)
	return nil
}

// providedFiles lists the binaries found in yarn.provided.lib.dirs, as
// PUBLIC local resources (YARN caches them across applications, and
// requires them to be world-readable).
func (d *Deployer) providedFiles() (map[string]yarn.LocalResource, error) {
	dirs := conf.Get(d.opts.Conf, conf.YarnProvidedLibDirs)
	out := make(map[string]yarn.LocalResource)
	if len(dirs) == 0 {
		return out, nil
	}
	def, err := url.Parse(d.hadoop.DefaultFS())
	if err != nil {
		return nil, fmt.Errorf("%w: fs.defaultFS: %v", ErrStaging, err)
	}
	var errs []error
	for _, dir := range dirs {
		u, err := url.Parse(dir)
		if err != nil || !path.IsAbs(u.Path) {
			errs = append(errs, fmt.Errorf("%s: %q is not an absolute path or URI", conf.YarnProvidedLibDirs.Key(), dir))
			continue
		}
		if u.Scheme == "" {
			u.Scheme, u.Host = def.Scheme, def.Host
		}
		if u.Scheme != "hdfs" {
			errs = append(errs, fmt.Errorf("%s: %s is not on HDFS", conf.YarnProvidedLibDirs.Key(), u))
			continue
		}
		found, err := d.listProvided(u)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", conf.YarnProvidedLibDirs.Key(), u, err))
			continue
		}
		for name, r := range found {
			if _, dup := out[name]; !dup { // the first directory listing a name wins
				out[name] = r
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStaging, err)
	}
	return out, nil
}

func (d *Deployer) listProvided(u *url.URL) (map[string]yarn.LocalResource, error) {
	fsys, err := d.dialFS(u.Host)
	if err != nil {
		return nil, err
	}
	defer fsys.Close()
	infos, err := fsys.ReadDir(u.Path)
	if err != nil {
		return nil, err
	}
	out := make(map[string]yarn.LocalResource)
	for _, fi := range infos {
		name := fi.Name()
		if name != yarnam.FileAppMaster && name != yarnam.FileTaskManager {
			continue
		}
		if fi.IsDir() || fi.Mode().Perm()&0o004 == 0 {
			return nil, fmt.Errorf("%s must be a world-readable file (YARN shares it between users as a PUBLIC resource); it is %v", path.Join(u.Path, name), fi.Mode())
		}
		out[name] = localResource(u, path.Join(u.Path, name), fi, yarn.VisibilityPublic)
	}
	return out, nil
}
