// Package rpcauth authenticates the cluster's internal gRPC connections:
// the JobManager's (ResourceManager, JobMasters, blobs), the TaskManagers'
// and the workers' (sessions with their JobMaster, data exchange).
//
// A Security is built once per process from the configuration (FromConf).
// With security.ssl.internal.enabled on, every connection is mutual TLS
// (security.ssl.internal.keystore and .truststore, through
// security/tlsconf): a peer without a certificate signed by a CA of the
// truststore fails the handshake, so no RPC of it reaches a handler, and
// the secret is not used. With it off, every RPC carries the cluster's
// secret (security.internal.secret-file) and a server refuses one without
// it with codes.Unauthenticated before any handler runs; the comparison is
// constant-time. The secret authenticates peers, it does not encrypt.
package rpcauth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/security/tlsconf"
)

// MetadataKey is the gRPC metadata entry carrying the secret.
const MetadataKey = "sluice-internal-secret"

// minSecretLen is the shortest secret accepted, in bytes of file content.
const minSecretLen = 32

// ErrUnauthenticated begins the message of a refused RPC's status, whose
// code is codes.Unauthenticated (match that with status.Code).
var ErrUnauthenticated = errors.New("rpcauth: the request does not carry this cluster's secret")

// SecretFileError is a secret file that cannot be used: missing, unreadable,
// readable by other users, or too short. Key names the option that chose
// the file.
type SecretFileError struct {
	Key, Path string
	Err       error
}

func (e *SecretFileError) Error() string {
	return fmt.Sprintf("rpcauth: %s %s: %v", e.Key, e.Path, e.Err)
}

func (e *SecretFileError) Unwrap() error { return e.Err }

// ErrSecretFileMode is wrapped by the SecretFileError of a file that other
// users may read.
var ErrSecretFileMode = errors.New("readable by other users: chmod 600 it")

// Security is how one process authenticates its internal RPCs. The zero
// value and nil authenticate nothing (for tests of a single component).
type Security struct {
	secret     []byte
	secretFile string // absolute; "" without a file

	// With mutual TLS (then secret is nil): the configs of both ends, and
	// the options naming the certificates, with absolute paths, for
	// workers.
	tlsServer, tlsClient *tls.Config
	tlsConf              map[string]string
}

// Options of FromConf.
type Options struct {
	// CreateSecret: a missing secret file is created with a new random
	// secret (a standalone JobManager or TaskManager); otherwise it is an
	// error (a worker, which reads the file its TaskManager names).
	CreateSecret bool
	// Home is the directory of the default secret file,
	// ~/.sluice/internal-secret. Default: os.UserHomeDir.
	Home string
}

// SecretPath decides which secret file a process reads: the absolute path
// of security.internal.secret-file (relative to dir), else
// home/.sluice/internal-secret.
func SecretPath(c *conf.Configuration, dir, home string) (string, error) {
	p := conf.Get(c, conf.InternalSecretFile)
	if p == "" {
		if home == "" {
			return "", &SecretFileError{Key: conf.InternalSecretFile.Key(), Path: "~/.sluice/" + conf.InternalSecretFileName,
				Err: errors.New("there is no home directory: set the option")}
		}
		return filepath.Join(home, ".sluice", conf.InternalSecretFileName), nil
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Clean(p), nil
}

// FromConf builds the process's Security from its configuration: mutual
// TLS when security.ssl.internal.enabled is on, else the secret.
func FromConf(c *conf.Configuration, o Options) (*Security, error) {
	if tlsconf.InternalEnabled(c) {
		return fromTLSConf(c)
	}
	home := o.Home
	if home == "" && conf.Get(c, conf.InternalSecretFile) == "" {
		home, _ = os.UserHomeDir()
	}
	dir, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("rpcauth: %w", err)
	}
	path, err := SecretPath(c, dir, home)
	if err != nil {
		return nil, err
	}
	key := conf.InternalSecretFile.Key()
	if o.CreateSecret {
		if err := createSecretFile(path); err != nil {
			return nil, &SecretFileError{Key: key, Path: path, Err: err}
		}
	}
	secret, err := readSecretFile(path)
	if err != nil {
		return nil, &SecretFileError{Key: key, Path: path, Err: err}
	}
	return &Security{secret: secret, secretFile: path}, nil
}

// tlsKeys are the options a worker needs to authenticate as its
// TaskManager does with mutual TLS; the files among them are made
// absolute.
var tlsKeys = []struct {
	opt  conf.Option[string]
	file bool
}{
	{conf.SSLInternalKeystore, true}, {conf.SSLInternalTruststore, true},
	{conf.SSLInternalKeystorePassword, false}, {conf.SSLInternalKeyPassword, false},
	{conf.SSLInternalTruststorePassword, false}, {conf.SSLInternalKeystoreType, false}, {conf.SSLInternalTruststoreType, false},
}

func fromTLSConf(c *conf.Configuration) (*Security, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("rpcauth: %w", err)
	}
	wc := map[string]string{conf.SSLInternalEnabled.Key(): "true"}
	for _, k := range tlsKeys {
		v := conf.Get(c, k.opt)
		if v == "" {
			continue
		}
		if k.file && !filepath.IsAbs(v) {
			// A YARN container's certificates are localized into its
			// working directory; its workers run elsewhere.
			v = filepath.Join(dir, v)
			c = c.Set(k.opt.Key(), v)
		}
		wc[k.opt.Key()] = v
	}
	server, client, err := tlsconf.Internal(c)
	if err != nil {
		return nil, fmt.Errorf("rpcauth: %w", err)
	}
	return &Security{tlsServer: server, tlsClient: client, tlsConf: wc}, nil
}

// WithTLS is a Security of mutual TLS with the given configs (for tests;
// WorkerConfiguration then names no files).
func WithTLS(server, client *tls.Config) *Security {
	return &Security{tlsServer: server, tlsClient: client}
}

// WithSecret is a Security authenticating with secret, kept in no file
// (for tests; WorkerConfiguration then names none).
func WithSecret(secret []byte) *Security {
	return &Security{secret: append([]byte(nil), secret...)}
}

// NewSecret is a new random secret as a secret file holds it (64 hex
// digits).
func NewSecret() []byte {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return []byte(hex.EncodeToString(b))
}

// createSecretFile writes a new secret to path unless a file is there: the
// directory is made 0700, the file 0600, and the file appears whole or not
// at all (written aside, then linked), so processes starting together on
// one host agree on one secret.
func createSecretFile(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".secret-*") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(NewSecret(), '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// readSecretFile reads a secret, refusing a file others may read.
func readSecretFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w (mode %04o)", ErrSecretFileMode, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := strings.TrimSpace(string(b))
	if len(s) < minSecretLen {
		return nil, fmt.Errorf("the secret is %d characters long, want at least %d", len(s), minSecretLen)
	}
	return []byte(s), nil
}

// Describe says how the process authenticates, for its log; never the
// secret.
func (s *Security) Describe() string {
	switch {
	case s != nil && s.tlsServer != nil:
		if ks := s.tlsConf[conf.SSLInternalKeystore.Key()]; ks != "" {
			return "mutual TLS with " + ks + ", trusting " + s.tlsConf[conf.SSLInternalTruststore.Key()]
		}
		return "mutual TLS"
	case s == nil || s.secret == nil:
		return "none"
	case s.secretFile != "":
		return "the cluster's secret in " + s.secretFile
	default:
		return "the cluster's secret"
	}
}

// WorkerConfiguration is what a TaskManager adds to its workers'
// configuration for them to authenticate as it does: the absolute path of
// the secret file (never the secret), or with mutual TLS the absolute paths
// of the keystore and truststore (and their passwords and types, if any:
// the deployment file is the user's alone, mode 0600).
func (s *Security) WorkerConfiguration() map[string]string {
	if s != nil && s.tlsConf != nil {
		return maps.Clone(s.tlsConf)
	}
	if s == nil || s.secretFile == "" {
		return nil
	}
	return map[string]string{conf.InternalSecretFile.Key(): s.secretFile}
}

// ServerOptions make a gRPC server refuse a peer without a certificate of
// the cluster's CA (mutual TLS), or RPCs without the secret.
func (s *Security) ServerOptions() []grpc.ServerOption {
	if s != nil && s.tlsServer != nil {
		return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(s.tlsServer))}
	}
	if s == nil || s.secret == nil {
		return nil
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := s.Check(ctx); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if err := s.Check(ss.Context()); err != nil {
				return err
			}
			return h(srv, ss)
		}),
	}
}

// DialOptions make a gRPC client present the process's certificate and
// verify the server's (mutual TLS), or send the secret with every RPC.
func (s *Security) DialOptions() []grpc.DialOption {
	if s != nil && s.tlsClient != nil {
		return []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(s.tlsClient))}
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if s == nil || s.secret == nil {
		return opts
	}
	return append(opts, grpc.WithPerRPCCredentials(secretCredentials{secret: string(s.secret)}))
}

// Check is the server's decision on an incoming RPC's metadata: nil if it
// carries the secret, else a status error with codes.Unauthenticated.
func (s *Security) Check(ctx context.Context) error {
	if s == nil || s.secret == nil { // no secret, or TLS: the handshake decided
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	got := md.Get(MetadataKey)
	switch {
	case len(got) == 0:
		return status.Errorf(codes.Unauthenticated, "%v (%s): the peer sent none; it is not a process of this cluster",
			ErrUnauthenticated, conf.InternalSecretFile.Key())
	case len(got) > 1:
		return status.Errorf(codes.Unauthenticated, "%v (%s): the peer sent %d", ErrUnauthenticated, conf.InternalSecretFile.Key(), len(got))
	}
	if subtle.ConstantTimeCompare([]byte(got[0]), s.secret) != 1 {
		return status.Errorf(codes.Unauthenticated, "%v (%s): the peer sent another; it belongs to another cluster, "+
			"or its host has another secret file (copy the JobManager's)", ErrUnauthenticated, conf.InternalSecretFile.Key())
	}
	return nil
}

// secretCredentials put the secret in every RPC's metadata.
type secretCredentials struct{ secret string }

var _ credentials.PerRPCCredentials = secretCredentials{}

func (c secretCredentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{MetadataKey: c.secret}, nil
}

func (secretCredentials) RequireTransportSecurity() bool { return false }
