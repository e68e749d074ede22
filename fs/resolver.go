package fs

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Errors of [Resolver.For] and [Resolver.Register]; the returned errors wrap
// one of these and name the URI.
var (
	// ErrBadURI: the URI cannot name a file (relative, malformed, with a
	// query or fragment, a file: URI naming another host...).
	ErrBadURI = errors.New("fs: bad URI")
	// ErrUnknownScheme: no filesystem is registered for the URI's scheme.
	ErrUnknownScheme = errors.New("fs: no filesystem for this URI scheme")
	// ErrClosed: the resolver was closed.
	ErrClosed = errors.New("fs: resolver closed")
)

// Opener opens the filesystem a URI belongs to. It looks at the scheme and
// the authority (host[:port], possibly empty, e.g. hdfs:///path meaning the
// default NameNode) and ignores the path. A FileSystem it returns that
// implements io.Closer is closed by [Resolver.Close].
type Opener func(u *url.URL) (FileSystem, error)

// Resolver maps URIs to the filesystems that serve them. It is built by the
// caller (there is no global registry): NewResolver knows file:// and plain
// absolute paths; other schemes are added with Register (package hdfs
// registers hdfs://).
//
// A Resolver opens each distinct scheme://authority once and hands the
// same FileSystem to later calls; Close closes what it opened. It is safe
// for concurrent use; an Opener runs with the resolver's lock held, so a
// slow dial delays other resolutions of the same resolver.
type Resolver struct {
	mu struct {
		sync.Mutex
		schemes map[string]Opener
		open    map[string]FileSystem // by scheme://authority
		closed  bool
	}
}

// NewResolver returns a resolver that knows the local filesystem: URIs
// file:///abs/path (and file://localhost/abs/path, file:/abs/path) and plain
// absolute paths.
func NewResolver() *Resolver {
	r := &Resolver{}
	r.mu.schemes = map[string]Opener{"file": openLocal}
	r.mu.open = make(map[string]FileSystem)
	return r
}

func openLocal(u *url.URL) (FileSystem, error) {
	if u.Host != "" && u.Host != "localhost" {
		return nil, fmt.Errorf("%w: %q: a file: URI must not name a host (%q); write file:///path", ErrBadURI, u.String(), u.Host)
	}
	return Local{}, nil
}

// Register makes scheme (lower case, e.g. "hdfs") resolve through open. A
// scheme registered already, including file, is an error.
func (r *Resolver) Register(scheme string, open Opener) error {
	if open == nil {
		return fmt.Errorf("fs: registering scheme %q: nil Opener", scheme)
	}
	if !validScheme(scheme) {
		return fmt.Errorf("fs: registering scheme %q: want a lower-case URI scheme such as \"hdfs\"", scheme)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.closed {
		return ErrClosed
	}
	if _, ok := r.mu.schemes[scheme]; ok {
		return fmt.Errorf("fs: scheme %q is registered already", scheme)
	}
	r.mu.schemes[scheme] = open
	return nil
}

// Schemes lists the registered schemes, sorted.
func (r *Resolver) Schemes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.mu.schemes))
	for s := range r.mu.schemes {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// validScheme: RFC 3986 scheme, restricted to lower case.
func validScheme(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, c := range s[1:] {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// For returns the filesystem serving uri and the path of uri within it.
// uri is an absolute local path ("/data/ckp"), a file: URI
// ("file:///data/ckp") or a URI of a registered scheme
// ("hdfs://nn:8020/ckp", "hdfs:///ckp"); the path returned is cleaned and
// absolute ("/ckp"). Relative paths, query strings and fragments are
// rejected with an error wrapping ErrBadURI that names uri; an unregistered
// scheme gives ErrUnknownScheme.
func (r *Resolver) For(uri string) (FileSystem, string, error) {
	if strings.TrimSpace(uri) == "" {
		return nil, "", fmt.Errorf("%w: the URI is empty", ErrBadURI)
	}
	if strings.HasPrefix(uri, "/") {
		r.mu.Lock()
		closed := r.mu.closed
		r.mu.Unlock()
		if closed {
			return nil, "", ErrClosed
		}
		return Local{}, filepath.Clean(uri), nil
	}
	u, err := url.Parse(uri)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %q: %v", ErrBadURI, uri, err)
	}
	switch {
	case u.Scheme == "":
		return nil, "", fmt.Errorf("%w: %q is a relative path; give an absolute path or a URI such as file:///path or hdfs://namenode:8020/path", ErrBadURI, uri)
	case u.Opaque != "":
		return nil, "", fmt.Errorf("%w: %q has a relative path; write %s:///path", ErrBadURI, uri, u.Scheme)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(uri, "#"):
		return nil, "", fmt.Errorf("%w: %q has a query or fragment (a '?' or '#' in a path must be escaped)", ErrBadURI, uri)
	case u.User != nil:
		return nil, "", fmt.Errorf("%w: %q carries user information; Sluice takes the user from the configuration", ErrBadURI, uri)
	}
	scheme := strings.ToLower(u.Scheme)
	p := u.Path
	if p == "" {
		p = "/"
	}
	p = path.Clean(p)
	if !path.IsAbs(p) {
		return nil, "", fmt.Errorf("%w: %q: the path is not absolute", ErrBadURI, uri)
	}
	host := strings.ToLower(u.Host)
	key := scheme + "://" + host

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.closed {
		return nil, "", ErrClosed
	}
	if fsys, ok := r.mu.open[key]; ok {
		return fsys, p, nil
	}
	open, ok := r.mu.schemes[scheme]
	if !ok {
		known := make([]string, 0, len(r.mu.schemes))
		for s := range r.mu.schemes {
			known = append(known, s+"://")
		}
		sort.Strings(known)
		return nil, "", fmt.Errorf("%w: %q (known: %s)", ErrUnknownScheme, uri, strings.Join(known, ", "))
	}
	nu := *u
	nu.Scheme, nu.Host, nu.Path, nu.RawPath = scheme, host, p, ""
	fsys, err := open(&nu)
	if err != nil {
		return nil, "", fmt.Errorf("fs: opening the filesystem of %q: %w", uri, err)
	}
	if scheme == "file" {
		p = filepath.FromSlash(p)
	}
	r.mu.open[key] = fsys
	return fsys, p, nil
}

// URI returns the URI of path p in fsys for another process to resolve:
// scheme://authority/p when fsys is a filesystem this resolver opened
// (For), else p itself (a local path).
func (r *Resolver) URI(fsys FileSystem, p string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, open := range r.mu.open {
		if open == fsys && !strings.HasPrefix(key, "file://") {
			return key + p
		}
	}
	return p
}

// Close closes every filesystem the resolver opened that implements
// io.Closer and makes later calls fail with ErrClosed. It returns the
// errors of those Close calls, joined.
func (r *Resolver) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.closed {
		return nil
	}
	r.mu.closed = true
	keys := make([]string, 0, len(r.mu.open))
	for k := range r.mu.open {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		if c, ok := r.mu.open[k].(io.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("fs: closing %s: %w", k, err))
			}
		}
	}
	r.mu.open = nil
	return errors.Join(errs...)
}
