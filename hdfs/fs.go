package hdfs

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"net"
	"net/url"
	"os"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	colinmarc "github.com/colinmarc/hdfs/v2"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/security/kerberos"
)

// FileSystem is one HDFS cluster as an fs.FileSystem. Paths are absolute
// HDFS paths ("/sluice/checkpoints"). It is safe for concurrent use (calls
// to the NameNode are serialised on one connection). Close it when done:
// it holds a connection and renews the leases of files being written.
type FileSystem struct {
	client *colinmarc.Client
	opts   Options
	// defaults guards the first fetch of the server defaults: colinmarc's
	// client caches them without a lock on its first Create or datanode
	// dial, a data race when two subtasks start files at once.
	defaults struct {
		sync.Mutex
		fetched bool
	}
}

var (
	_ fs.FileSystem = (*FileSystem)(nil)
	_ io.Closer     = (*FileSystem)(nil)
)

// Dial connects to the NameNode (the first of opts.Addresses that
// answers).
func Dial(opts Options) (*FileSystem, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	co, err := clientOptions(opts)
	if err != nil {
		return nil, err
	}
	c, err := colinmarc.NewClient(co)
	if err != nil {
		if code := kerberos.KDCErrorCode(err); code != 0 {
			kind := kerberos.KindOfCode(code)
			err = &kerberos.Error{Kind: kind, Op: "authenticate to the NameNode", Principal: opts.Kerberos.Principal(), SPN: co.KerberosServicePrincipleName,
				Code: code, Hint: "check " + KeyNameNodePrincipal + " (" + opts.NameNodePrincipal + "): the KDC must know the NameNode's principal with _HOST replaced by its host", Err: err}
		}
		return nil, fmt.Errorf("hdfs: connecting to %v as %s: %w", opts.Addresses, opts.User, err)
	}
	return &FileSystem{client: c, opts: opts}, nil
}

// clientOptions is the one place that builds colinmarc's options.
func clientOptions(o Options) (colinmarc.ClientOptions, error) {
	dial := (&net.Dialer{Timeout: o.DialTimeout, KeepAlive: 30 * time.Second}).DialContext
	co := colinmarc.ClientOptions{
		Addresses:              o.Addresses,
		User:                   o.User,
		UseDatanodeHostname:    o.UseDatanodeHostname,
		NamenodeDialFunc:       dial,
		DatanodeDialFunc:       dial,
		DataTransferProtection: o.DataTransferProtection,
	}
	if o.Kerberos != nil {
		kc, err := o.Kerberos.GokrbClient()
		if err != nil {
			return co, fmt.Errorf("hdfs: %w", err)
		}
		co.KerberosClient = kc
		// colinmarc takes service/_HOST without the realm.
		co.KerberosServicePrincipleName, _, _ = strings.Cut(o.NameNodePrincipal, "@")
	}
	return co, nil
}

// Register makes r resolve hdfs:// URIs: each distinct authority
// (hdfs://host:port, hdfs://nameservice, or hdfs:/// for fs.defaultFS)
// gets a FileSystem built from c (OptionsFor) and dialled on first use; r
// closes them when it is closed.
func Register(r *fs.Resolver, c Config) error {
	return r.Register("hdfs", func(u *url.URL) (fs.FileSystem, error) {
		o, err := OptionsFor(c, u.Host)
		if err != nil {
			return nil, err
		}
		return Dial(o)
	})
}

// Close closes the connection to the NameNode. Files still open for
// writing are left for their leases to expire.
func (f *FileSystem) Close() error { return f.client.Close() }

// User is the user the filesystem acts as.
func (f *FileSystem) User() string { return f.opts.User }

// checkPath rejects relative paths (HDFS would resolve them against a home
// directory, which Sluice never means).
func checkPath(op, p string) error {
	if !path.IsAbs(p) {
		return &iofs.PathError{Op: op, Path: p, Err: fmt.Errorf("hdfs: path is not absolute: %w", iofs.ErrInvalid)}
	}
	return nil
}

// fetchDefaults makes the client fetch and cache the server defaults
// under f's lock, before an operation that would fetch them unguarded.
func (f *FileSystem) fetchDefaults() error {
	f.defaults.Lock()
	defer f.defaults.Unlock()
	if f.defaults.fetched {
		return nil
	}
	if _, err := f.client.ServerDefaults(); err != nil {
		return err
	}
	f.defaults.fetched = true
	return nil
}

// Create implements fs.FileSystem. The file gets HDFS's default
// replication and block size and mode 0644 (less the NameNode's umask).
func (f *FileSystem) Create(p string) (fs.File, error) {
	if err := checkPath("create", p); err != nil {
		return nil, err
	}
	if err := f.fetchDefaults(); err != nil {
		return nil, f.translate("create", p, err)
	}
	w, err := f.client.Create(p)
	if err != nil {
		return nil, f.translate("create", p, err)
	}
	return f.newFile(w, p), nil
}

// CreatePrivate implements fs.FileSystem: Create with permission 0600 from
// the start (the NameNode's umask cannot widen it).
func (f *FileSystem) CreatePrivate(p string) (fs.File, error) {
	if err := checkPath("create", p); err != nil {
		return nil, err
	}
	if err := f.fetchDefaults(); err != nil {
		return nil, f.translate("create", p, err)
	}
	d, err := f.client.ServerDefaults()
	if err != nil {
		return nil, f.translate("create", p, err)
	}
	w, err := f.client.CreateFile(p, d.Replication, d.BlockSize, fs.PrivateFileMode)
	if err != nil {
		return nil, f.translate("create", p, err)
	}
	return f.newFile(w, p), nil
}

func (f *FileSystem) newFile(w *colinmarc.FileWriter, p string) *file {
	return &file{w: w, path: p, user: f.opts.User, retries: f.opts.CloseRetries, backoff: f.opts.CloseBackoff}
}

type file struct {
	w       *colinmarc.FileWriter
	path    string
	user    string
	retries int
	backoff time.Duration
}

func (w *file) Write(b []byte) (int, error) {
	if len(b) == 0 {
		// colinmarc/hdfs would allocate a block for nothing, which never
		// reaches minimal replication, so the file could never be completed.
		return 0, nil
	}
	n, err := w.w.Write(b)
	if err != nil {
		err = w.translate("write", w.path, err)
	}
	return n, err
}

// Close flushes the file to the DataNodes and completes it on the
// NameNode. While the NameNode reports the last block not yet minimally
// replicated, it retries with backoff, as the Java client does.
func (w *file) Close() error {
	err := w.w.Close()
	delay := w.backoff
	for i := 0; i < w.retries && colinmarc.IsErrReplicating(err); i++ {
		t := time.NewTimer(delay)
		<-t.C
		delay *= 2
		err = w.w.Close()
	}
	if err != nil {
		return w.translate("close", w.path, err)
	}
	return nil
}

// Open implements fs.FileSystem.
func (f *FileSystem) Open(p string) (io.ReadCloser, error) {
	if err := checkPath("open", p); err != nil {
		return nil, err
	}
	if err := f.fetchDefaults(); err != nil {
		return nil, f.translate("open", p, err)
	}
	r, err := f.client.Open(p)
	if err != nil {
		return nil, f.translate("open", p, err)
	}
	return &reader{r: r, path: p, user: f.opts.User}, nil
}

type reader struct {
	r    *colinmarc.FileReader
	path string
	user string
}

func (r *reader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	if err != nil && err != io.EOF {
		err = r.translate("read", r.path, err)
	}
	return n, err
}

func (r *reader) Close() error { return r.r.Close() }

// Rename implements fs.FileSystem. HDFS's rename2 would replace an existing
// file (colinmarc/hdfs asks for that), so Rename checks dst first: the
// check and the rename are two calls, and two clients renaming onto the
// same dst at once are not detected.
func (f *FileSystem) Rename(src, dst string) error {
	if err := checkPath("rename", src); err != nil {
		return err
	}
	if err := checkPath("rename", dst); err != nil {
		return err
	}
	link := func(err error) error {
		var pe *iofs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &os.LinkError{Op: "rename", Old: src, New: dst, Err: err}
	}
	if _, err := f.client.Stat(src); err != nil {
		return link(f.translate("rename", src, err))
	}
	if _, err := f.client.Stat(dst); err == nil {
		return link(iofs.ErrExist)
	} else if !errors.Is(err, iofs.ErrNotExist) {
		return link(f.translate("rename", dst, err))
	}
	if err := f.client.Rename(src, dst); err != nil {
		return link(f.translate("rename", src, err))
	}
	return nil
}

// Stat implements fs.FileSystem.
func (f *FileSystem) Stat(p string) (iofs.FileInfo, error) {
	if err := checkPath("stat", p); err != nil {
		return nil, err
	}
	fi, err := f.client.Stat(p)
	if err != nil {
		return nil, f.translate("stat", p, err)
	}
	return fi, nil
}

// ReadDir implements fs.FileSystem. HDFS lists a directory sorted by name.
func (f *FileSystem) ReadDir(p string) ([]iofs.FileInfo, error) {
	if err := checkPath("readdir", p); err != nil {
		return nil, err
	}
	infos, err := f.client.ReadDir(p)
	if err != nil {
		return nil, f.translate("readdir", p, err)
	}
	return infos, nil
}

// Remove implements fs.FileSystem.
func (f *FileSystem) Remove(p string) error {
	if err := checkPath("remove", p); err != nil {
		return err
	}
	if err := f.client.Remove(p); err != nil {
		return f.translate("remove", p, err)
	}
	return nil
}

// RemoveAll implements fs.FileSystem. HDFS deletes a directory tree in one
// call, atomically.
func (f *FileSystem) RemoveAll(p string) error {
	if err := checkPath("removeall", p); err != nil {
		return err
	}
	if err := f.client.RemoveAll(p); err != nil {
		return f.translate("removeall", p, err)
	}
	return nil
}

// MkdirAll implements fs.FileSystem. New directories get mode 0755 (less
// the NameNode's umask).
func (f *FileSystem) MkdirAll(p string) error {
	if err := checkPath("mkdir", p); err != nil {
		return err
	}
	if err := f.client.MkdirAll(p, 0o755); err != nil {
		return f.translate("mkdir", p, err)
	}
	return nil
}

// MkdirAllPrivate implements fs.FileSystem: the directories it makes get
// permission 0700, and p is set to 0700 whether it was made or existed.
func (f *FileSystem) MkdirAllPrivate(p string) error {
	if err := checkPath("mkdir", p); err != nil {
		return err
	}
	if err := f.client.MkdirAll(p, fs.PrivateDirMode); err != nil {
		return f.translate("mkdir", p, err)
	}
	if err := f.client.Chmod(p, fs.PrivateDirMode); err != nil {
		return f.translate("chmod", p, err)
	}
	return nil
}

// Mkdir creates the directory p with permissions perm (less the NameNode's
// umask), e.g. 0o700 for a directory only its owner may read. The parent
// must exist; an existing p is an error matching fs.ErrExist.
func (f *FileSystem) Mkdir(p string, perm iofs.FileMode) error {
	if err := checkPath("mkdir", p); err != nil {
		return err
	}
	if err := f.client.Mkdir(p, perm.Perm()); err != nil {
		return f.translate("mkdir", p, err)
	}
	return nil
}

// Chmod sets the permissions of p to perm (e.g. 0o600 for a file only its
// owner may read, such as a keytab).
func (f *FileSystem) Chmod(p string, perm iofs.FileMode) error {
	if err := checkPath("chmod", p); err != nil {
		return err
	}
	if err := f.client.Chmod(p, perm.Perm()); err != nil {
		return f.translate("chmod", p, err)
	}
	return nil
}

// Java exception classes colinmarc/hdfs leaves untranslated.
const (
	classFileNotFound      = "java.io.FileNotFoundException"
	classFileAlreadyExists = "org.apache.hadoop.fs.FileAlreadyExistsException"
	classParentNotDir      = "org.apache.hadoop.fs.ParentNotDirectoryException"
	classNotEmpty          = "org.apache.hadoop.fs.PathIsNotEmptyDirectoryException"
	classBeingCreated      = "org.apache.hadoop.hdfs.protocol.AlreadyBeingCreatedException"
)

func (f *FileSystem) translate(op, p string, err error) error {
	return translate(f.opts.User, op, p, err)
}
func (w *file) translate(op, p string, err error) error   { return translate(w.user, op, p, err) }
func (r *reader) translate(op, p string, err error) error { return translate(r.user, op, p, err) }

// translate turns an error of colinmarc/hdfs into a *fs.PathError naming p
// whose Err matches fs.ErrNotExist, fs.ErrExist or fs.ErrPermission where
// that is what happened; a permission error also names the user. A Java
// exception colinmarc passes through becomes a *hadoop.RemoteError
// (wrapped with the matching fs error, if any).
func translate(user, op, p string, err error) error {
	var pe *iofs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
		if pe.Path != "" {
			p = pe.Path
		}
	}
	var remote colinmarc.Error
	if errors.As(err, &remote) {
		re := &hadoop.RemoteError{Class: remote.Exception(), Message: remote.Message(), Method: remote.Method(), Code: remote.Desc()}
		switch re.Class {
		case classFileNotFound:
			err = fmt.Errorf("%w: %w", iofs.ErrNotExist, re)
		case classFileAlreadyExists, classBeingCreated:
			err = fmt.Errorf("%w: %w", iofs.ErrExist, re)
		case string(hadoop.ErrAccessControl):
			err = fmt.Errorf("%w: %w", iofs.ErrPermission, re)
		case classParentNotDir:
			err = fmt.Errorf("%w: %w", syscall.ENOTDIR, re)
		case classNotEmpty:
			err = fmt.Errorf("%w: %w", syscall.ENOTEMPTY, re)
		default:
			err = re
		}
	}
	if errors.Is(err, iofs.ErrPermission) {
		err = fmt.Errorf("%w (as HDFS user %q)", err, user)
	}
	return &iofs.PathError{Op: op, Path: p, Err: err}
}
