// Package tlsconf builds the tls.Configs of Sluice's endpoints from Flink's
// security.ssl.* keys: the REST endpoint and its clients
// (security.ssl.rest.*), and the mutual TLS of internal connections
// (security.ssl.internal.*). Keystores and truststores are what Flink
// reads, JKS and PKCS12 files (keytool's), or PEM files (a keystore: a
// certificate chain and its private key; a truststore: CA certificates);
// the format is told from the content unless the *-type option names it.
// A keystore must hold exactly one private key: Flink has no option
// choosing one by alias. Every error is a *FileError or *ConfigError
// naming the key (and the file).
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/sluice/sluice/conf"
)

// FileError is a keystore or truststore that cannot be used.
type FileError struct {
	Key, Path string
	Err       error
}

func (e *FileError) Error() string { return fmt.Sprintf("tlsconf: %s %s: %v", e.Key, e.Path, e.Err) }
func (e *FileError) Unwrap() error { return e.Err }

// ConfigError is a TLS setting that is missing or contradicts another.
type ConfigError struct {
	Key, Problem string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("tlsconf: %s: %s", e.Key, e.Problem) }

// RESTEnabled reports whether the REST endpoint is served over HTTPS.
func RESTEnabled(c *conf.Configuration) bool { return conf.Get(c, conf.SSLRESTEnabled) }

// RESTServer is the REST endpoint's tls.Config, nil when
// security.ssl.rest.enabled is off.
func RESTServer(c *conf.Configuration) (*tls.Config, error) {
	if !RESTEnabled(c) {
		return nil, nil
	}
	cert, err := keystore(c, restKeystore, conf.SSLRESTEnabled)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if conf.Get(c, conf.SSLRESTAuthenticationEnabled) {
		pool, err := truststore(c, restTruststore, conf.SSLRESTAuthenticationEnabled)
		if err != nil {
			return nil, err
		}
		cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, pool
	}
	return cfg, nil
}

// RESTClient is a REST client's tls.Config, nil when
// security.ssl.rest.enabled is off: it trusts security.ssl.rest.truststore
// (else the system's roots) and presents security.ssl.rest.keystore when
// security.ssl.rest.authentication-enabled is on.
func RESTClient(c *conf.Configuration) (*tls.Config, error) {
	if !RESTEnabled(c) {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if conf.Get(c, conf.SSLRESTTruststore) != "" {
		pool, err := truststore(c, restTruststore, conf.SSLRESTEnabled)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if conf.Get(c, conf.SSLRESTAuthenticationEnabled) {
		cert, err := keystore(c, restKeystore, conf.SSLRESTAuthenticationEnabled)
		if err != nil {
			return nil, err
		}
		cfg.Certificates, cfg.GetClientCertificate = []tls.Certificate{cert}, present(cert)
	}
	if !conf.Get(c, conf.SSLVerifyHostname) {
		// The chain is still verified, against RootCAs; only the name is not.
		cfg.InsecureSkipVerify = true
		cfg.VerifyPeerCertificate = verifyChain(cfg.RootCAs, x509.ExtKeyUsageServerAuth)
	}
	return cfg, nil
}

// InternalEnabled reports whether internal connections use mutual TLS.
func InternalEnabled(c *conf.Configuration) bool { return conf.Get(c, conf.SSLInternalEnabled) }

// Internal is the server and client tls.Configs of internal connections,
// nil when security.ssl.internal.enabled is off. Both present
// security.ssl.internal.keystore and require a peer certificate signed by
// a CA of security.ssl.internal.truststore; host names are not checked
// (peers dial one another by whatever address they advertise).
func Internal(c *conf.Configuration) (server, client *tls.Config, err error) {
	if !InternalEnabled(c) {
		return nil, nil, nil
	}
	cert, kerr := keystore(c, internalKeystore, conf.SSLInternalEnabled)
	pool, terr := truststore(c, internalTruststore, conf.SSLInternalEnabled)
	if err := errors.Join(kerr, terr); err != nil {
		return nil, nil, err
	}
	server = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	client = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, GetClientCertificate: present(cert),
		InsecureSkipVerify:    true, // the chain is verified below, the name is not
		VerifyPeerCertificate: verifyChain(pool, x509.ExtKeyUsageServerAuth)}
	return server, client, nil
}

// present has a client present cert (also its config's Certificates, for
// those who read it) whatever CAs the server names as acceptable. Go's client otherwise sends no certificate when its issuer
// is not among them, as when the server's truststore is a keystore whose
// key entry's own certificate is all it trusts (not the CA that signed it).
func present(cert tls.Certificate) func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
}

// verifyChain verifies a peer's chain against roots (nil: the system's),
// ignoring its names.
func verifyChain(roots *x509.CertPool, usage x509.ExtKeyUsage) func([][]byte, [][]*x509.Certificate) error {
	return func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return errors.New("tlsconf: the peer presented no certificate")
		}
		certs := make([]*x509.Certificate, len(raw))
		for i, r := range raw {
			c, err := x509.ParseCertificate(r)
			if err != nil {
				return fmt.Errorf("tlsconf: the peer's certificate: %w", err)
			}
			certs[i] = c
		}
		inter := x509.NewCertPool()
		for _, c := range certs[1:] {
			inter.AddCert(c)
		}
		if _, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			return fmt.Errorf("tlsconf: the peer's certificate is not signed by a trusted CA: %w", err)
		}
		return nil
	}
}

// keystoreKeys are the options of one keystore: its file, its format and
// the passwords of the file and of its private key.
type keystoreKeys struct {
	path, storePassword, keyPassword, typ conf.Option[string]
}

// truststoreKeys are the options of one truststore.
type truststoreKeys struct {
	path, password, typ conf.Option[string]
}

var (
	restKeystore = keystoreKeys{conf.SSLRESTKeystore, conf.SSLRESTKeystorePassword, conf.SSLRESTKeyPassword,
		conf.SSLRESTKeystoreType}
	internalKeystore = keystoreKeys{conf.SSLInternalKeystore, conf.SSLInternalKeystorePassword, conf.SSLInternalKeyPassword,
		conf.SSLInternalKeystoreType}
	restTruststore     = truststoreKeys{conf.SSLRESTTruststore, conf.SSLRESTTruststorePassword, conf.SSLRESTTruststoreType}
	internalTruststore = truststoreKeys{conf.SSLInternalTruststore, conf.SSLInternalTruststorePassword, conf.SSLInternalTruststoreType}
)

// ErrKeyPassword is wrapped by the FileError of a keystore whose encrypted
// private key the configured password does not decrypt, or which is
// encrypted while no password is configured.
var ErrKeyPassword = errors.New("the private key is encrypted")

// keystore reads the certificate chain and private key of the keystore
// ks names, in its format; because says which setting needs it.
func keystore(c *conf.Configuration, ks keystoreKeys, because conf.AnyOption) (tls.Certificate, error) {
	path := conf.Get(c, ks.path)
	if path == "" {
		return tls.Certificate{}, &ConfigError{Key: ks.path.Key(), Problem: notSet(c, ks.path, because)}
	}
	// Messages name the keys the values come from: the option's own, or
	// Flink's shared security.ssl.* key it falls back to.
	pathKey, storePasswordKey := conf.KeyOf(c, ks.path), conf.KeyOf(c, ks.storePassword)
	fail := func(err error) (tls.Certificate, error) {
		return tls.Certificate{}, &FileError{Key: pathKey, Path: path, Err: err}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fail(err)
	}
	typ, err := storeType(c, ks.typ)
	if err != nil {
		return tls.Certificate{}, err
	}
	f, err := format(b, typ, ks.typ.Key())
	if err != nil {
		return fail(err)
	}
	storePassword := conf.Get(c, ks.storePassword)
	keyPassword, keyPasswordKey := conf.Get(c, ks.keyPassword), conf.KeyOf(c, ks.keyPassword)
	if keyPassword == "" {
		keyPassword, keyPasswordKey = storePassword, storePasswordKey
	}
	switch f {
	case FormatJKS:
		if storePassword == "" {
			return fail(fmt.Errorf("%w: a JKS keystore, and %s is not set", ErrStorePassword, storePasswordKey))
		}
		cert, err := jksKeystore(b, storePassword, keyPassword, keyPasswordKey)
		if errors.Is(err, ErrStorePassword) {
			err = fmt.Errorf("%w: %s does not verify the JKS file", ErrStorePassword, storePasswordKey)
		}
		if err != nil {
			return fail(err)
		}
		return cert, nil
	case FormatPKCS12:
		password, passwordKey := storePassword, storePasswordKey
		if password == "" {
			password, passwordKey = keyPassword, keyPasswordKey
		}
		cert, err := pkcs12Keystore(b, password)
		if errors.Is(err, ErrStorePassword) {
			err = fmt.Errorf("%w: %s does not open the PKCS12 file", ErrStorePassword, describeKey(passwordKey, password))
		}
		if err != nil {
			return fail(err)
		}
		return cert, nil
	}
	b, err = decryptKeys(b, keyPassword, keyPasswordKey, ks.keyPassword.Key())
	if err != nil {
		return fail(err)
	}
	cert, err := tls.X509KeyPair(b, b)
	if err != nil {
		return fail(fmt.Errorf("want a certificate chain and an unencrypted private key (or an encrypted one and its password): %w", err))
	}
	return cert, nil
}

// notSet says that opt, which the setting because needs, is set neither
// under its own key nor under the shared key it falls back to.
func notSet(c *conf.Configuration, opt conf.Option[string], because conf.AnyOption) string {
	p := "not set"
	if fb := opt.FallbackKeys(); len(fb) > 0 {
		p += " (nor " + strings.Join(fb, ", ") + ")"
	}
	return p + ", but " + conf.KeyOf(c, because) + " needs it"
}

// storeType is the value of a keystore-type or truststore-type option:
// a type Java has and Sluice does not read (JCEKS, PKCS11, BCFKS) is a
// ConfigError, not a silent detection.
func storeType(c *conf.Configuration, opt conf.Option[string]) (string, error) {
	v, _, err := conf.Lookup(c, opt)
	if err != nil {
		return "", &ConfigError{Key: opt.Key(), Problem: err.Error() + " (Sluice reads JKS, PKCS12 and PEM files)"}
	}
	return v, nil
}

// describeKey names the password option, or says none is set.
func describeKey(key, value string) string {
	if value == "" {
		return key + " (not set)"
	}
	return key
}

// decryptKeys returns the PEM blocks of b with every encrypted private
// key (RFC 1423, "Proc-Type: 4,ENCRYPTED") decrypted with password, which
// passwordKey names (wantKey is the option to set when none is).
func decryptKeys(b []byte, password, passwordKey, wantKey string) ([]byte, error) {
	var out []byte
	for rest := b; ; {
		blk, r := pem.Decode(rest)
		if blk == nil {
			break
		}
		rest = r
		switch {
		case blk.Type == "ENCRYPTED PRIVATE KEY":
			return nil, fmt.Errorf("%w as PKCS#8, which is not read: write it with openssl pkcs8 -traditional, or unencrypted", ErrKeyPassword)
		// RFC 1423 encryption is what openssl -traditional writes; Go
		// deprecates it for its weakness, which is the file's, not ours.
		case x509.IsEncryptedPEMBlock(blk): //nolint:staticcheck
			if password == "" {
				return nil, fmt.Errorf("%w and %s is not set", ErrKeyPassword, wantKey)
			}
			der, err := x509.DecryptPEMBlock(blk, []byte(password)) //nolint:staticcheck
			if err == nil && !parsesAsKey(der) {
				// A wrong password passes RFC 1423's padding check once
				// in about 256 tries: what it yields is not a key.
				err = errors.New("what it decrypts to is not a private key")
			}
			if err != nil {
				return nil, fmt.Errorf("%w and %s does not decrypt it: %v", ErrKeyPassword, passwordKey, err)
			}
			blk = &pem.Block{Type: blk.Type, Bytes: der}
		}
		out = append(out, pem.EncodeToMemory(blk)...)
	}
	return out, nil
}

// parsesAsKey reports whether der is a private key of a form a PEM key
// block holds (PKCS#1, SEC 1 or PKCS#8).
func parsesAsKey(der []byte) bool {
	if _, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return true
	}
	if _, err := x509.ParseECPrivateKey(der); err == nil {
		return true
	}
	_, err := x509.ParsePKCS8PrivateKey(der)
	return err == nil
}

// truststore reads the certificates the truststore ts names trusts, in
// its format.
func truststore(c *conf.Configuration, ts truststoreKeys, because conf.AnyOption) (*x509.CertPool, error) {
	path := conf.Get(c, ts.path)
	if path == "" {
		return nil, &ConfigError{Key: ts.path.Key(), Problem: notSet(c, ts.path, because)}
	}
	pathKey, passwordKey := conf.KeyOf(c, ts.path), conf.KeyOf(c, ts.password)
	fail := func(err error) (*x509.CertPool, error) {
		return nil, &FileError{Key: pathKey, Path: path, Err: err}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fail(err)
	}
	typ, err := storeType(c, ts.typ)
	if err != nil {
		return nil, err
	}
	f, err := format(b, typ, ts.typ.Key())
	if err != nil {
		return fail(err)
	}
	password := conf.Get(c, ts.password)
	var certs []*x509.Certificate
	switch f {
	case FormatPEM:
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return fail(errors.New("holds no PEM certificate"))
		}
		return pool, nil
	case FormatJKS:
		if password == "" {
			return fail(fmt.Errorf("%w: a JKS truststore, and %s is not set", ErrStorePassword, passwordKey))
		}
		certs, err = jksTruststore(b, password)
		if errors.Is(err, ErrStorePassword) {
			err = fmt.Errorf("%w: %s does not verify the JKS file", ErrStorePassword, passwordKey)
		}
	case FormatPKCS12:
		certs, err = pkcs12Truststore(b, password)
		if errors.Is(err, ErrStorePassword) {
			err = fmt.Errorf("%w: %s does not open the PKCS12 file", ErrStorePassword, describeKey(passwordKey, password))
		}
	}
	if err != nil {
		return fail(err)
	}
	if len(certs) == 0 {
		return fail(errors.New("holds no certificate"))
	}
	pool := x509.NewCertPool()
	for _, cert := range certs {
		pool.AddCert(cert)
	}
	return pool, nil
}
