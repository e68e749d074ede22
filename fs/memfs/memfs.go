// Package memfs is an in-memory fs.FileSystem with fault injection, for
// tests of code that writes through package fs: a [Fault] can fail the Nth
// write, a rename, a close..., and the files left behind can be inspected
// and damaged afterwards, as after a crash.
//
// Semantics follow fs.FileSystem and the local filesystem, down to the
// errors (*fs.PathError and *os.LinkError holding POSIX errnos, so their
// text matches fs.Local's on Linux): paths are
// absolute and slash-separated; Create is exclusive and needs the parent
// directory; written bytes are visible to Open and Stat at once (as on a
// real filesystem, a file being written is visible with what it holds so
// far); Rename is atomic, moves whole directories and never replaces dst.
// Modes are recorded but not enforced: Create makes files 0644,
// CreatePrivate 0600, MkdirAll directories 0755, MkdirAllPrivate 0700 (and
// narrows an existing directory to 0700), and Stat reports them. There
// are no owners, links or modification times.
package memfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluice/sluice/fs"
)

// Op names an operation of the filesystem, as seen by a [Fault].
type Op string

// Operations.
const (
	OpCreate    Op = "create"
	OpWrite     Op = "write" // one File.Write call
	OpClose     Op = "close" // File.Close
	OpOpen      Op = "open"
	OpRead      Op = "read" // one Read of a file opened with Open
	OpRename    Op = "rename"
	OpStat      Op = "stat"
	OpReadDir   Op = "readdir"
	OpRemove    Op = "remove"
	OpRemoveAll Op = "removeall"
	OpMkdirAll  Op = "mkdirall"
)

// Call describes one operation about to run.
type Call struct {
	Op   Op
	Path string // the file or directory; for rename, the source
	Dst  string // for rename, the destination
	N    int    // 1 for the first call of this Op on this FS, 2 for the second...
}

// Fault decides whether a call fails: a non-nil error fails it before it
// has any effect, and is returned to the caller wrapped with the path (an
// error from a Fault on OpWrite fails that Write with nothing written).
type Fault func(c Call) error

// FailNth fails the nth call of op (1-based) with err.
func FailNth(op Op, n int, err error) Fault {
	return func(c Call) error {
		if c.Op == op && c.N == n {
			return err
		}
		return nil
	}
}

// FailMatching fails every call of op whose path satisfies match.
func FailMatching(op Op, match func(path string) bool, err error) Fault {
	return func(c Call) error {
		if c.Op == op && match(c.Path) {
			return err
		}
		return nil
	}
}

// ErrInjected is a convenient error for faults.
var ErrInjected = errors.New("memfs: injected fault")

// FS is an in-memory filesystem. The zero value is not usable; call New.
type FS struct {
	mu struct {
		sync.Mutex
		nodes map[string]*node // by clean absolute path; "/" always exists
		fault Fault
		calls map[Op]int
	}
}

type node struct {
	dir  bool
	perm iofs.FileMode
	data []byte
}

var _ fs.FileSystem = (*FS)(nil)

// New returns an empty filesystem holding only the root directory "/".
func New() *FS {
	m := &FS{}
	m.mu.nodes = map[string]*node{"/": {dir: true, perm: 0o755}}
	m.mu.calls = make(map[Op]int)
	return m
}

// SetFault installs f (nil removes the fault). Call counts (Call.N) keep
// running across SetFault calls.
func (m *FS) SetFault(f Fault) {
	m.mu.Lock()
	m.mu.fault = f
	m.mu.Unlock()
}

// Calls returns how many calls of op were made so far, including failed ones.
func (m *FS) Calls(op Op) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.calls[op]
}

// beginLocked counts the call and asks the fault.
// REQUIRES: m.mu held.
func (m *FS) beginLocked(op Op, p, dst string) error {
	m.mu.calls[op]++
	if m.mu.fault == nil {
		return nil
	}
	return m.mu.fault(Call{Op: op, Path: p, Dst: dst, N: m.mu.calls[op]})
}

// clean validates and cleans a path.
func clean(op, p string) (string, error) {
	if !path.IsAbs(p) {
		return "", &iofs.PathError{Op: op, Path: p, Err: fmt.Errorf("memfs: path is not absolute: %w", iofs.ErrInvalid)}
	}
	return path.Clean(p), nil
}

// parentDirLocked checks that the parent of p is an existing directory.
// REQUIRES: m.mu held.
func (m *FS) parentDirLocked(op, p string) error {
	parent, ok := m.mu.nodes[path.Dir(p)]
	switch {
	case !ok:
		return &iofs.PathError{Op: op, Path: p, Err: syscall.ENOENT}
	case !parent.dir:
		return &iofs.PathError{Op: op, Path: p, Err: syscall.ENOTDIR}
	}
	return nil
}

// Create implements fs.FileSystem.
func (m *FS) Create(name string) (fs.File, error) { return m.create(name, 0o644) }

// CreatePrivate implements fs.FileSystem.
func (m *FS) CreatePrivate(name string) (fs.File, error) { return m.create(name, fs.PrivateFileMode) }

func (m *FS) create(name string, perm iofs.FileMode) (fs.File, error) {
	p, err := clean("open", name)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.beginLocked(OpCreate, p, ""); err != nil {
		return nil, &iofs.PathError{Op: "open", Path: p, Err: err}
	}
	if err := m.parentDirLocked("open", p); err != nil {
		return nil, err
	}
	if _, ok := m.mu.nodes[p]; ok {
		return nil, &iofs.PathError{Op: "open", Path: p, Err: syscall.EEXIST}
	}
	n := &node{perm: perm}
	m.mu.nodes[p] = n
	return &file{m: m, path: p, n: n}, nil
}

type file struct {
	m      *FS
	path   string
	n      *node
	closed bool // guarded by m.mu
}

func (f *file) Write(b []byte) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return 0, &iofs.PathError{Op: "write", Path: f.path, Err: os.ErrClosed}
	}
	if err := f.m.beginLocked(OpWrite, f.path, ""); err != nil {
		return 0, &iofs.PathError{Op: "write", Path: f.path, Err: err}
	}
	// A file removed or renamed while open keeps receiving the bytes, as on
	// POSIX.
	f.n.data = append(f.n.data, b...)
	return len(b), nil
}

func (f *file) Close() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return &iofs.PathError{Op: "close", Path: f.path, Err: os.ErrClosed}
	}
	if err := f.m.beginLocked(OpClose, f.path, ""); err != nil {
		return &iofs.PathError{Op: "close", Path: f.path, Err: err}
	}
	f.closed = true
	return nil
}

// Open implements fs.FileSystem. The reader sees the file as it was when
// opened.
func (m *FS) Open(name string) (io.ReadCloser, error) {
	p, err := clean("open", name)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.beginLocked(OpOpen, p, ""); err != nil {
		return nil, &iofs.PathError{Op: "open", Path: p, Err: err}
	}
	n, ok := m.mu.nodes[p]
	switch {
	case !ok:
		return nil, &iofs.PathError{Op: "open", Path: p, Err: syscall.ENOENT}
	case n.dir:
		return nil, &iofs.PathError{Op: "read", Path: p, Err: syscall.EISDIR}
	}
	return &reader{m: m, path: p, r: bytes.NewReader(bytes.Clone(n.data))}, nil
}

type reader struct {
	m    *FS
	path string
	r    *bytes.Reader
}

func (r *reader) Read(b []byte) (int, error) {
	r.m.mu.Lock()
	err := r.m.beginLocked(OpRead, r.path, "")
	r.m.mu.Unlock()
	if err != nil {
		return 0, &iofs.PathError{Op: "read", Path: r.path, Err: err}
	}
	return r.r.Read(b)
}

func (r *reader) Close() error { return nil }

// Rename implements fs.FileSystem.
func (m *FS) Rename(src, dst string) error {
	s, err := clean("rename", src)
	if err != nil {
		return err
	}
	d, err := clean("rename", dst)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.beginLocked(OpRename, s, d); err != nil {
		return &os.LinkError{Op: "rename", Old: s, New: d, Err: err}
	}
	n, ok := m.mu.nodes[s]
	if !ok {
		return &os.LinkError{Op: "rename", Old: s, New: d, Err: syscall.ENOENT}
	}
	if _, ok := m.mu.nodes[d]; ok {
		return &os.LinkError{Op: "rename", Old: s, New: d, Err: syscall.EEXIST}
	}
	if err := m.parentDirLocked("rename", d); err != nil {
		return &os.LinkError{Op: "rename", Old: s, New: d, Err: errors.Unwrap(err)}
	}
	if s == "/" || n.dir && strings.HasPrefix(d, s+"/") {
		return &os.LinkError{Op: "rename", Old: s, New: d, Err: syscall.EINVAL}
	}
	if n.dir {
		for p, c := range m.mu.nodes {
			if strings.HasPrefix(p, s+"/") {
				delete(m.mu.nodes, p)
				m.mu.nodes[d+p[len(s):]] = c
			}
		}
	}
	delete(m.mu.nodes, s)
	m.mu.nodes[d] = n
	return nil
}

// Stat implements fs.FileSystem.
func (m *FS) Stat(name string) (iofs.FileInfo, error) {
	p, err := clean("stat", name)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.beginLocked(OpStat, p, ""); err != nil {
		return nil, &iofs.PathError{Op: "stat", Path: p, Err: err}
	}
	n, ok := m.mu.nodes[p]
	if !ok {
		return nil, &iofs.PathError{Op: "stat", Path: p, Err: syscall.ENOENT}
	}
	return info(p, n), nil
}

// ReadDir implements fs.FileSystem.
func (m *FS) ReadDir(name string) ([]iofs.FileInfo, error) {
	p, err := clean("readdir", name)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.beginLocked(OpReadDir, p, ""); err != nil {
		return nil, &iofs.PathError{Op: "readdir", Path: p, Err: err}
	}
	n, ok := m.mu.nodes[p]
	switch {
	case !ok:
		return nil, &iofs.PathError{Op: "open", Path: p, Err: syscall.ENOENT}
	case !n.dir:
		return nil, &iofs.PathError{Op: "readdir", Path: p, Err: syscall.ENOTDIR}
	}
	var out []iofs.FileInfo
	for c, cn := range m.mu.nodes {
		if c != "/" && path.Dir(c) == p {
			out = append(out, info(c, cn))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// Remove implements fs.FileSystem.
func (m *FS) Remove(name string) error {
	p, err := clean("remove", name)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.beginLocked(OpRemove, p, ""); err != nil {
		return &iofs.PathError{Op: "remove", Path: p, Err: err}
	}
	n, ok := m.mu.nodes[p]
	if !ok {
		return &iofs.PathError{Op: "remove", Path: p, Err: syscall.ENOENT}
	}
	if p == "/" {
		return &iofs.PathError{Op: "remove", Path: p, Err: syscall.EINVAL}
	}
	if n.dir {
		for c := range m.mu.nodes {
			if strings.HasPrefix(c, p+"/") {
				return &iofs.PathError{Op: "remove", Path: p, Err: syscall.ENOTEMPTY}
			}
		}
	}
	delete(m.mu.nodes, p)
	return nil
}

// RemoveAll implements fs.FileSystem.
func (m *FS) RemoveAll(name string) error {
	p, err := clean("removeall", name)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.beginLocked(OpRemoveAll, p, ""); err != nil {
		return &iofs.PathError{Op: "removeall", Path: p, Err: err}
	}
	if p == "/" {
		return &iofs.PathError{Op: "removeall", Path: p, Err: syscall.EINVAL}
	}
	for c := range m.mu.nodes {
		if c == p || strings.HasPrefix(c, p+"/") {
			delete(m.mu.nodes, c)
		}
	}
	return nil
}

// MkdirAll implements fs.FileSystem.
func (m *FS) MkdirAll(name string) error { return m.mkdirAll(name, 0o755, false) }

// MkdirAllPrivate implements fs.FileSystem.
func (m *FS) MkdirAllPrivate(name string) error { return m.mkdirAll(name, fs.PrivateDirMode, true) }

// mkdirAll makes the missing directories of name with perm, and sets name's
// own to perm if narrow.
func (m *FS) mkdirAll(name string, perm iofs.FileMode, narrow bool) error {
	p, err := clean("mkdir", name)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.beginLocked(OpMkdirAll, p, ""); err != nil {
		return &iofs.PathError{Op: "mkdir", Path: p, Err: err}
	}
	// Check every ancestor first, so that a failure creates nothing.
	var missing []string
	for q := p; ; q = path.Dir(q) {
		n, ok := m.mu.nodes[q]
		if ok {
			if !n.dir {
				return &iofs.PathError{Op: "mkdir", Path: q, Err: syscall.ENOTDIR}
			}
			break
		}
		missing = append(missing, q)
	}
	for _, q := range missing {
		m.mu.nodes[q] = &node{dir: true, perm: perm}
	}
	if narrow {
		m.mu.nodes[p].perm = perm
	}
	return nil
}

// ReadFile returns the content of a file, for tests.
func (m *FS) ReadFile(name string) ([]byte, error) {
	p, err := clean("open", name)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.mu.nodes[p]
	if !ok || n.dir {
		return nil, &iofs.PathError{Op: "open", Path: p, Err: syscall.ENOENT}
	}
	return bytes.Clone(n.data), nil
}

// WriteFile sets the content of a file, creating or replacing it, without
// consulting the fault; for tests that damage files. The parent directory
// must exist.
func (m *FS) WriteFile(name string, data []byte) error {
	p, err := clean("open", name)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.parentDirLocked("open", p); err != nil {
		return err
	}
	if n, ok := m.mu.nodes[p]; ok && n.dir {
		return &iofs.PathError{Op: "open", Path: p, Err: syscall.EISDIR}
	}
	m.mu.nodes[p] = &node{perm: 0o644, data: bytes.Clone(data)}
	return nil
}

// Paths lists every file and directory at or below root, sorted, with "/"
// appended to directories; for test assertions.
func (m *FS) Paths(root string) []string {
	root = path.Clean(root)
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for p, n := range m.mu.nodes {
		if p == root || strings.HasPrefix(p, root+"/") || root == "/" {
			if n.dir {
				p += "/"
				if p == "//" {
					p = "/"
				}
			}
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

type fileInfo struct {
	name string
	size int64
	dir  bool
	perm iofs.FileMode
}

func info(p string, n *node) fileInfo {
	return fileInfo{name: path.Base(p), size: int64(len(n.data)), dir: n.dir, perm: n.perm}
}

func (i fileInfo) Name() string { return i.name }
func (i fileInfo) Size() int64  { return i.size }
func (i fileInfo) Mode() iofs.FileMode {
	if i.dir {
		return iofs.ModeDir | i.perm
	}
	return i.perm
}
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.dir }
func (i fileInfo) Sys() any           { return nil }
