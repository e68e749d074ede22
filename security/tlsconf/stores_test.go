package tlsconf

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	jks "github.com/pavlo-v-chernykh/keystore-go/v4"
	pkcs12 "software.sslmate.com/src/go-pkcs12"

	"github.com/sluice/sluice/conf"
)

// material is a CA of the test and the keystores and truststores written
// from it, in one directory: PKCS12 files made with go-pkcs12's encoder,
// JKS files with keystore-go's writer (keytool's own files are the
// integration test's).
type material struct {
	t   *testing.T
	dir string
	ca  *CA
}

func newMaterial(t *testing.T, name string) *material {
	t.Helper()
	ca, err := NewCA(name+" CA", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &material{t: t, dir: t.TempDir(), ca: ca}
}

// issue is a new key and its certificate (for localhost and 127.0.0.1)
// signed by the CA.
func (m *material) issue(name string) (key any, leaf *x509.Certificate) {
	m.t.Helper()
	b, err := m.ca.Issue(name, []string{"localhost", "127.0.0.1"}, time.Now(), time.Hour)
	if err != nil {
		m.t.Fatal(err)
	}
	kp, err := tls.X509KeyPair(b, b)
	if err != nil {
		m.t.Fatal(err)
	}
	leaf, err = x509.ParseCertificate(kp.Certificate[0])
	if err != nil {
		m.t.Fatal(err)
	}
	return kp.PrivateKey, leaf
}

func (m *material) write(name string, b []byte) string {
	m.t.Helper()
	p := filepath.Join(m.dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		m.t.Fatal(err)
	}
	return p
}

// selfSigned is a new key and a self-signed certificate of it, as keytool
// -genkeypair makes (no CA, no key usages).
func selfSigned(t *testing.T, name string) (any, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert
}

// caPEM is the CA's certificate in a PEM file.
func (m *material) caPEM() string { return m.write("ca.pem", m.ca.CertPEM) }

// pkcs12 writes a PKCS12 keystore of key and its chain (leaf, then the
// CA) with password, as go-pkcs12's Modern encoder writes it (AES-256,
// SHA-256: what keytool of Java 17 writes too).
func (m *material) pkcs12(name, password string, key any, leaf *x509.Certificate) string {
	m.t.Helper()
	b, err := pkcs12.Modern.Encode(key, leaf, []*x509.Certificate{m.ca.cert}, password)
	if err != nil {
		m.t.Fatal(err)
	}
	return m.write(name, b)
}

// pkcs12Trust writes a PKCS12 truststore of certs, as Java marks trusted
// certificates.
func (m *material) pkcs12Trust(name, password string, certs ...*x509.Certificate) string {
	m.t.Helper()
	b, err := pkcs12.Modern.EncodeTrustStore(certs, password)
	if err != nil {
		m.t.Fatal(err)
	}
	return m.write(name, b)
}

// jksEntry is an entry of a JKS file: a private key entry (key, its chain
// and the key's password), or with key nil a trusted certificate entry of
// chain[0].
type jksEntry struct {
	alias       string
	key         any
	chain       []*x509.Certificate
	keyPassword string
}

func (m *material) jks(name, storePassword string, entries ...jksEntry) string {
	m.t.Helper()
	ks := jks.New()
	now := time.Now()
	for _, e := range entries {
		var chain []jks.Certificate
		for _, c := range e.chain {
			chain = append(chain, jks.Certificate{Type: "X509", Content: c.Raw})
		}
		if e.key == nil {
			if err := ks.SetTrustedCertificateEntry(e.alias, jks.TrustedCertificateEntry{CreationTime: now, Certificate: chain[0]}); err != nil {
				m.t.Fatal(err)
			}
			continue
		}
		der, err := x509.MarshalPKCS8PrivateKey(e.key)
		if err != nil {
			m.t.Fatal(err)
		}
		if err := ks.SetPrivateKeyEntry(e.alias, jks.PrivateKeyEntry{CreationTime: now, PrivateKey: der, CertificateChain: chain},
			[]byte(e.keyPassword)); err != nil {
			m.t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if err := ks.Store(&b, []byte(storePassword)); err != nil {
		m.t.Fatal(err)
	}
	return m.write(name, b.Bytes())
}

// Keystores and truststores of every format serve TLS: a REST server and
// a client built from each configuration complete a handshake (a mutual
// one with authentication-enabled), and internal peers with the same
// configuration accept each other.
func TestKeystoreFormatsHandshake(t *testing.T) {
	m := newMaterial(t, "formats")
	serverKey, serverCert := m.issue("server")
	clientKey, clientCert := m.issue("client")
	caPEM := m.caPEM()
	serverP12 := m.pkcs12("server.p12", "p12-pass", serverKey, serverCert)
	clientP12 := m.pkcs12("client.p12", "p12-pass", clientKey, clientCert)
	trustP12 := m.pkcs12Trust("trust.p12", "trust-pass", m.ca.cert)
	chain := func(c *x509.Certificate) []*x509.Certificate { return []*x509.Certificate{c, m.ca.cert} }
	serverJKS := m.jks("server.jks", "store-pass", jksEntry{alias: "server", key: serverKey, chain: chain(serverCert), keyPassword: "store-pass"})
	// keytool -keypass: a key password of its own.
	clientJKS := m.jks("client.jks", "store-pass", jksEntry{alias: "client", key: clientKey, chain: chain(clientCert), keyPassword: "key-pass"})
	trustJKS := m.jks("trust.jks", "trust-pass", jksEntry{alias: "ca", chain: []*x509.Certificate{m.ca.cert}})
	// A keystore of a self-signed certificate used as its own truststore,
	// as Flink's documentation sets internal SSL up: the key entry's
	// certificate is trusted.
	selfKey, selfCert := selfSigned(t, "flink.internal")
	selfJKS := m.jks("self.jks", "self-pass", jksEntry{alias: "flink.internal", key: selfKey, chain: []*x509.Certificate{selfCert}, keyPassword: "self-pass"})
	selfP12 := m.write("self.p12", func() []byte {
		b, err := pkcs12.Modern.Encode(selfKey, selfCert, nil, "self-pass")
		if err != nil {
			t.Fatal(err)
		}
		return b
	}())

	type side struct{ kv []string }
	rest := func(ks, ksPass, keyPass, ts, tsPass string, extra ...string) []string {
		kv := []string{"security.ssl.rest.enabled", "true", "security.ssl.rest.keystore", ks, "security.ssl.rest.truststore", ts}
		for k, v := range map[string]string{"security.ssl.rest.keystore-password": ksPass, "security.ssl.rest.key-password": keyPass,
			"security.ssl.rest.truststore-password": tsPass} {
			if v != "" {
				kv = append(kv, k, v)
			}
		}
		return append(kv, extra...)
	}
	mutual := []string{"security.ssl.rest.authentication-enabled", "true"}
	for _, tc := range []struct {
		name           string
		server, client []string
	}{
		{"PKCS12 keystore, PKCS12 truststore", rest(serverP12, "p12-pass", "", trustP12, "trust-pass"), rest(clientP12, "p12-pass", "", trustP12, "trust-pass")},
		{"JKS keystore, JKS truststore", rest(serverJKS, "store-pass", "", trustJKS, "trust-pass"), rest(clientJKS, "store-pass", "key-pass", trustJKS, "trust-pass")},
		{"mutual: PKCS12 server, JKS client", rest(serverP12, "p12-pass", "", trustJKS, "trust-pass", mutual...),
			rest(clientJKS, "store-pass", "key-pass", trustP12, "trust-pass", mutual...)},
		{"mutual: JKS server, PKCS12 client, PEM truststores", rest(serverJKS, "store-pass", "", caPEM, "", mutual...),
			rest(clientP12, "p12-pass", "", caPEM, "", mutual...)},
		{"types given, jks of a PKCS12 file as Java reads it", rest(serverP12, "p12-pass", "", trustJKS, "trust-pass",
			"security.ssl.rest.keystore-type", "JKS", "security.ssl.rest.truststore-type", "jks"), rest(clientP12, "p12-pass", "", caPEM, "")},
		{"PKCS12 read with key-password alone", rest(serverP12, "", "p12-pass", caPEM, ""), rest(clientP12, "", "", caPEM, "")},
		{"mutual: a JKS keystore as its own truststore", rest(selfJKS, "self-pass", "", selfJKS, "self-pass", mutual...),
			rest(selfJKS, "self-pass", "", selfJKS, "self-pass", mutual...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server, err := RESTServer(confOf(tc.server...))
			if err != nil {
				t.Fatal(err)
			}
			client, err := RESTClient(confOf(tc.client...))
			if err != nil {
				t.Fatal(err)
			}
			if cerr, serr := handshake(t, server, client, "localhost"); cerr != nil || serr != nil {
				t.Errorf("refused: client %v, server %v", cerr, serr)
			}
			// The server's chain is the leaf, then its CA.
			if n := len(server.Certificates[0].Certificate); n != 2 && !strings.Contains(tc.name, "own truststore") {
				t.Errorf("the server presents %d certificates, want its own and its CA's", n)
			}
		})
	}

	internalOf := func(ks, ts, password string) *conf.Configuration {
		return confOf("security.ssl.internal.enabled", "true", "security.ssl.internal.keystore", ks, "security.ssl.internal.truststore", ts,
			"security.ssl.internal.keystore-password", password, "security.ssl.internal.truststore-password", password)
	}
	otherKey, otherCert := selfSigned(t, "impostor")
	otherJKS := m.jks("other.jks", "self-pass", jksEntry{alias: "impostor", key: otherKey, chain: []*x509.Certificate{otherCert}, keyPassword: "self-pass"})
	for _, tc := range []struct {
		name         string
		server, peer *conf.Configuration
		ok           bool
	}{
		{"internal: Flink's JKS keystore as its own truststore", internalOf(selfJKS, selfJKS, "self-pass"), internalOf(selfJKS, selfJKS, "self-pass"), true},
		{"internal: Flink's PKCS12 keystore as its own truststore", internalOf(selfP12, selfP12, "self-pass"), internalOf(selfP12, selfP12, "self-pass"), true},
		{"internal: a peer of another self-signed keystore", internalOf(selfJKS, selfJKS, "self-pass"), internalOf(otherJKS, otherJKS, "self-pass"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server, _, err := Internal(tc.server)
			if err != nil {
				t.Fatal(err)
			}
			_, client, err := Internal(tc.peer)
			if err != nil {
				t.Fatal(err)
			}
			cerr, serr := handshake(t, server, client, "")
			if tc.ok && (cerr != nil || serr != nil) {
				t.Errorf("refused: client %v, server %v", cerr, serr)
			}
			if !tc.ok && cerr == nil && serr == nil {
				t.Error("the handshake succeeded")
			}
		})
	}
}

// An HTTPS server configured by RESTServer from a JKS keystore answers a
// client configured by RESTClient, and with authentication-enabled
// refuses one without a certificate.
func TestRESTOverJKS(t *testing.T) {
	m := newMaterial(t, "rest")
	key, cert := m.issue("server")
	ks := m.jks("rest.jks", "store-pass", jksEntry{alias: "rest", key: key, chain: []*x509.Certificate{cert, m.ca.cert}, keyPassword: "store-pass"})
	ts := m.jks("trust.jks", "trust-pass", jksEntry{alias: "ca", chain: []*x509.Certificate{m.ca.cert}})
	base := []string{"security.ssl.rest.enabled", "true", "security.ssl.rest.keystore", ks, "security.ssl.rest.keystore-password", "store-pass",
		"security.ssl.rest.truststore", ts, "security.ssl.rest.truststore-password", "trust-pass"}
	for _, tc := range []struct {
		name           string
		server, client []string
		ok             bool
	}{
		{"server authentication", base, base, true},
		{"client certificates", append(base, "security.ssl.rest.authentication-enabled", "true"), append(base, "security.ssl.rest.authentication-enabled", "true"), true},
		{"client certificates, a client without one", append(base, "security.ssl.rest.authentication-enabled", "true"), base, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scfg, err := RESTServer(confOf(tc.server...))
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
			srv.TLS = scfg
			srv.StartTLS()
			defer srv.Close()
			ccfg, err := RESTClient(confOf(tc.client...))
			if err != nil {
				t.Fatal(err)
			}
			hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: ccfg}}
			defer hc.CloseIdleConnections()
			resp, err := hc.Get(strings.Replace(srv.URL, "127.0.0.1", "localhost", 1))
			if err == nil {
				resp.Body.Close()
			}
			if tc.ok != (err == nil) {
				t.Errorf("GET: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// Each broken keystore or truststore is an error naming the option and the
// file, and matching its sentinel (or typed) error.
func TestKeystoreErrors(t *testing.T) {
	m := newMaterial(t, "errors")
	key, cert := m.issue("server")
	key2, cert2 := m.issue("second")
	chain := []*x509.Certificate{cert, m.ca.cert}
	ksJKS := m.jks("ks.jks", "store-pass", jksEntry{alias: "server", key: key, chain: chain, keyPassword: "key-pass"})
	twoKeys := m.jks("two.jks", "store-pass", jksEntry{alias: "rest-a", key: key, chain: chain, keyPassword: "store-pass"},
		jksEntry{alias: "rest-b", key: key2, chain: []*x509.Certificate{cert2}, keyPassword: "store-pass"})
	trustJKS := m.jks("trust.jks", "store-pass", jksEntry{alias: "ca", chain: []*x509.Certificate{m.ca.cert}})
	ksP12 := m.pkcs12("ks.p12", "p12-pass", key, cert)
	trustP12 := m.pkcs12Trust("trust.p12", "p12-pass", m.ca.cert)
	caPEM := m.caPEM()
	jceks := m.write("ks.jceks", []byte{0xce, 0xce, 0xce, 0xce, 0, 0, 0, 2, 0, 0, 0, 0})
	garbage := m.write("garbage.bin", []byte("neither a keystore nor a truststore"))
	der := m.write("ca.der", m.ca.cert.Raw)
	missing := filepath.Join(m.dir, "nope.jks")

	restKS := func(ks string, kv ...string) *conf.Configuration {
		return confOf(append([]string{"security.ssl.rest.enabled", "true", "security.ssl.rest.keystore", ks}, kv...)...)
	}
	restTS := func(ts string, kv ...string) *conf.Configuration {
		return confOf(append([]string{"security.ssl.rest.enabled", "true", "security.ssl.rest.truststore", ts}, kv...)...)
	}
	internalKS := func(ks string, kv ...string) *conf.Configuration {
		return confOf(append([]string{"security.ssl.internal.enabled", "true", "security.ssl.internal.keystore", ks,
			"security.ssl.internal.truststore", caPEM}, kv...)...)
	}
	var severalKeys *SeveralKeysError
	var configError *ConfigError
	for _, tc := range []struct {
		name  string
		c     *conf.Configuration
		build func(*conf.Configuration) error
		want  []string
		is    error
		as    any
	}{
		{"JKS: a wrong keystore password", restKS(ksJKS, "security.ssl.rest.keystore-password", "wrong"), restServer,
			[]string{"security.ssl.rest.keystore", ksJKS, "security.ssl.rest.keystore-password does not verify"}, ErrStorePassword, nil},
		{"JKS: no keystore password", restKS(ksJKS), restServer,
			[]string{"security.ssl.rest.keystore", ksJKS, "security.ssl.rest.keystore-password is not set"}, ErrStorePassword, nil},
		{"JKS: a wrong key password", internalKS(ksJKS, "security.ssl.internal.keystore-password", "store-pass",
			"security.ssl.internal.key-password", "wrong"), internal,
			[]string{"security.ssl.internal.keystore", ksJKS, "security.ssl.internal.key-password does not decrypt", `"server"`}, ErrKeyPassword, nil},
		{"JKS: the key password defaults to the keystore's", internalKS(ksJKS, "security.ssl.internal.keystore-password", "store-pass"), internal,
			[]string{"security.ssl.internal.keystore-password does not decrypt"}, ErrKeyPassword, nil},
		{"JKS: several keys", restKS(twoKeys, "security.ssl.rest.keystore-password", "store-pass"), restServer,
			[]string{"security.ssl.rest.keystore", twoKeys, "2 private keys", "rest-a, rest-b"}, nil, &severalKeys},
		{"JKS: a truststore as keystore", restKS(trustJKS, "security.ssl.rest.keystore-password", "store-pass"), restServer,
			[]string{"security.ssl.rest.keystore", trustJKS, "no private key"}, ErrNoPrivateKey, nil},
		{"JKS truststore: a wrong password", restTS(trustJKS, "security.ssl.rest.truststore-password", "wrong"), restClient,
			[]string{"security.ssl.rest.truststore", trustJKS, "security.ssl.rest.truststore-password does not verify"}, ErrStorePassword, nil},
		{"JKS truststore: no password", restTS(trustJKS), restClient,
			[]string{"security.ssl.rest.truststore", trustJKS, "security.ssl.rest.truststore-password is not set"}, ErrStorePassword, nil},
		{"PKCS12: a wrong password", restKS(ksP12, "security.ssl.rest.keystore-password", "wrong"), restServer,
			[]string{"security.ssl.rest.keystore", ksP12, "security.ssl.rest.keystore-password does not open"}, ErrStorePassword, nil},
		{"PKCS12: no password", restKS(ksP12), restServer,
			[]string{"security.ssl.rest.keystore", ksP12, "(not set)"}, ErrStorePassword, nil},
		{"PKCS12: a truststore as keystore", restKS(trustP12, "security.ssl.rest.keystore-password", "p12-pass"), restServer,
			[]string{"security.ssl.rest.keystore", trustP12, "no private key", "1 trusted certificates"}, ErrNoPrivateKey, nil},
		{"PKCS12 truststore: a wrong password", restTS(trustP12, "security.ssl.rest.truststore-password", "wrong"), restClient,
			[]string{"security.ssl.rest.truststore", trustP12, "security.ssl.rest.truststore-password does not open"}, ErrStorePassword, nil},
		{"a missing keystore", restKS(missing, "security.ssl.rest.keystore-password", "store-pass"), restServer,
			[]string{"security.ssl.rest.keystore", missing}, os.ErrNotExist, nil},
		{"type pem of a JKS file", restKS(ksJKS, "security.ssl.rest.keystore-password", "store-pass", "security.ssl.rest.keystore-type", "pem"), restServer,
			[]string{"security.ssl.rest.keystore", ksJKS, "security.ssl.rest.keystore-type is pem", "a JKS keystore"}, ErrFormat, nil},
		{"type pkcs12 of a PEM file", restTS(caPEM, "security.ssl.rest.truststore-type", "PKCS12"), restClient,
			[]string{"security.ssl.rest.truststore", caPEM, "security.ssl.rest.truststore-type is pkcs12", "PEM"}, ErrFormat, nil},
		{"a type Sluice does not read", restKS(ksP12, "security.ssl.rest.keystore-password", "p12-pass", "security.ssl.rest.keystore-type", "JCEKS"), restServer,
			[]string{"security.ssl.rest.keystore-type", "JCEKS", "pkcs12, jks, pem"}, nil, &configError},
		{"a JCEKS keystore", restKS(jceks, "security.ssl.rest.keystore-password", "store-pass"), restServer,
			[]string{"security.ssl.rest.keystore", jceks, "JCEKS", "keytool -importkeystore"}, ErrUnknownFormat, nil},
		{"a DER certificate as truststore", restTS(der), restClient,
			[]string{"security.ssl.rest.truststore", der, "DER certificate", "openssl x509"}, ErrUnknownFormat, nil},
		{"neither format", restTS(garbage), restClient,
			[]string{"security.ssl.rest.truststore", garbage}, ErrUnknownFormat, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.build(tc.c)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("%v does not match %v", err, tc.is)
			}
			if tc.as != nil && !errors.As(err, tc.as) {
				t.Errorf("%v is not a %T", err, tc.as)
			}
			var fe *FileError
			if !errors.As(err, &fe) && !errors.As(err, &configError) {
				t.Errorf("%v is neither a FileError nor a ConfigError", err)
			}
		})
	}
	if len(severalKeys.Aliases) != 2 {
		t.Errorf("SeveralKeysError.Aliases = %v, want rest-a and rest-b", severalKeys.Aliases)
	}
}

// The format is told from the content alone.
func TestDetectFormat(t *testing.T) {
	m := newMaterial(t, "detect")
	key, cert := m.issue("server")
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"PEM", m.ca.CertPEM, FormatPEM},
		{"JKS", read(m.jks("a.jks", "pw", jksEntry{alias: "a", key: key, chain: []*x509.Certificate{cert}, keyPassword: "pw"})), FormatJKS},
		{"PKCS12 keystore", read(m.pkcs12("a.p12", "pw", key, cert)), FormatPKCS12},
		{"PKCS12 truststore", read(m.pkcs12Trust("t.p12", "pw", cert)), FormatPKCS12},
		{"a DER certificate", cert.Raw, ""},
		{"empty", nil, ""},
		{"a PEM header alone", []byte("-----BEGIN CERTIFICATE-----\n"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := detectFormat(tc.b)
			if got != tc.want || (tc.want == "") != (err != nil) {
				t.Errorf("detectFormat = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// The walk of a PKCS12 file's unencrypted safes counts its keys (the
// integration test's keytool files have several, with aliases).
func TestPKCS12KeyCount(t *testing.T) {
	m := newMaterial(t, "count")
	key, cert := m.issue("server")
	for _, tc := range []struct {
		name string
		path string
		keys int
	}{
		{"a keystore", m.pkcs12("a.p12", "pw", key, cert), 1},
		{"a truststore", m.pkcs12Trust("t.p12", "pw", cert), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := os.ReadFile(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if _, keys := pkcs12KeyAliases(b); keys != tc.keys {
				t.Errorf("%d keys, want %d", keys, tc.keys)
			}
		})
	}
}

// Fuzz the format detection and the PKCS12 walk: whatever the file, they
// return, and never both a format and an error.
func FuzzDetectFormat(f *testing.F) {
	f.Add([]byte{0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2})
	f.Add([]byte{0x30, 0x03, 0x02, 0x01, 0x03})
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := detectFormat(b)
		if (got == "") == (err == nil) {
			t.Fatalf("detectFormat = %q, %v", got, err)
		}
		pkcs12KeyAliases(b)
	})
}

// Flink's shared keys (security.ssl.enabled, security.ssl.keystore,
// keystore-password, key-password, truststore, truststore-password) serve
// both the internal and the REST TLS where their own keys are not set, as
// Flink's SSLUtils reads them; an own key wins, and messages name the key
// a value came from.
func TestSharedKeys(t *testing.T) {
	m := newMaterial(t, "shared")
	key, cert := m.issue("node")
	ks := m.jks("node.jks", "store-pass", jksEntry{alias: "node", key: key, chain: []*x509.Certificate{cert, m.ca.cert}, keyPassword: "key-pass"})
	ts := m.jks("trust.jks", "trust-pass", jksEntry{alias: "ca", chain: []*x509.Certificate{m.ca.cert}})
	shared := []string{"security.ssl.enabled", "true", "security.ssl.keystore", ks, "security.ssl.keystore-password", "store-pass",
		"security.ssl.key-password", "key-pass", "security.ssl.truststore", ts, "security.ssl.truststore-password", "trust-pass"}
	with := func(kv ...string) *conf.Configuration { return confOf(append(slices.Clone(shared), kv...)...) }

	t.Run("internal and REST from the shared keys alone", func(t *testing.T) {
		c := with("security.ssl.rest.authentication-enabled", "true")
		if !InternalEnabled(c) || !RESTEnabled(c) {
			t.Fatalf("security.ssl.enabled: internal %v, REST %v; want both on", InternalEnabled(c), RESTEnabled(c))
		}
		server, client, err := Internal(c)
		if err != nil {
			t.Fatal(err)
		}
		if cerr, serr := handshake(t, server, client, ""); cerr != nil || serr != nil {
			t.Errorf("internal: refused: client %v, server %v", cerr, serr)
		}
		rs, err := RESTServer(c)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := RESTClient(c)
		if err != nil {
			t.Fatal(err)
		}
		if rs.ClientAuth != tls.RequireAndVerifyClientCert || len(rc.Certificates) != 1 {
			t.Errorf("REST: client auth %v, client certificates %d; want required and one", rs.ClientAuth, len(rc.Certificates))
		}
		if cerr, serr := handshake(t, rs, rc, "localhost"); cerr != nil || serr != nil {
			t.Errorf("REST: refused: client %v, server %v", cerr, serr)
		}
	})

	t.Run("own enabled flag wins", func(t *testing.T) {
		c := with("security.ssl.rest.enabled", "false")
		if !InternalEnabled(c) || RESTEnabled(c) {
			t.Errorf("internal %v, REST %v; want internal on, REST off", InternalEnabled(c), RESTEnabled(c))
		}
		if rs, err := RESTServer(c); rs != nil || err != nil {
			t.Errorf("RESTServer = %v, %v; want none", rs, err)
		}
	})

	t.Run("own keystore wins", func(t *testing.T) {
		missing := filepath.Join(m.dir, "internal-only.jks")
		c := with("security.ssl.internal.keystore", missing)
		_, _, err := Internal(c)
		var fe *FileError
		if !errors.As(err, &fe) || fe.Key != "security.ssl.internal.keystore" || fe.Path != missing || !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Internal: %v; want the missing %s named by security.ssl.internal.keystore", err, missing)
		}
		if _, err := RESTServer(c); err != nil {
			t.Errorf("REST, still from security.ssl.keystore: %v", err)
		}
	})

	for _, tc := range []struct {
		name  string
		c     *conf.Configuration
		build func(*conf.Configuration) error
		want  []string
	}{
		{"a missing shared keystore", with("security.ssl.keystore", filepath.Join(m.dir, "none.jks")), restServer,
			[]string{"tlsconf: security.ssl.keystore " + filepath.Join(m.dir, "none.jks")}},
		{"a wrong shared keystore password", with("security.ssl.keystore-password", "wrong"), internal,
			[]string{"security.ssl.keystore", "security.ssl.keystore-password does not verify the JKS file"}},
		{"a wrong shared key password", with("security.ssl.key-password", "wrong"), internal,
			[]string{"security.ssl.key-password does not decrypt the key"}},
		{"a wrong shared truststore password", with("security.ssl.truststore-password", "wrong"), restClient,
			[]string{"security.ssl.truststore " + ts, "security.ssl.truststore-password does not verify the JKS file"}},
		{"no keystore anywhere", confOf("security.ssl.enabled", "true"), restServer,
			[]string{"security.ssl.rest.keystore: not set (nor security.ssl.keystore), but security.ssl.enabled needs it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.build(tc.c)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}

// A JKS or PKCS12 file with a key entry used as a truststore trusts that
// entry's certificate only, as Java's trust managers take a key entry (its
// chain's first certificate): not the CA in its chain, so a sibling
// certificate the same CA signed is refused.
func TestKeyEntryTruststoreTrustsOnlyItsCertificate(t *testing.T) {
	m := newMaterial(t, "key entry")
	key, cert := m.issue("trusted")
	chain := []*x509.Certificate{cert, m.ca.cert}
	p12 := m.pkcs12("trusted.p12", "pass", key, cert) // chain: cert, then the CA
	jksFile := m.jks("trusted.jks", "pass", jksEntry{alias: "trusted", key: key, chain: chain, keyPassword: "pass"})
	pemOf := func(name string) string {
		b, err := m.ca.Issue(name, nil, time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return m.write(name+".pem", b)
	}
	sibling, self := pemOf("sibling"), m.write("trusted.pem", func() []byte {
		b, err := os.ReadFile(p12)
		if err != nil {
			t.Fatal(err)
		}
		c, err := pkcs12Keystore(b, "pass")
		if err != nil {
			t.Fatal(err)
		}
		k, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
		if err != nil {
			t.Fatal(err)
		}
		out := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]})
		return append(out, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k})...)
	}())
	caPEM := m.caPEM()
	for _, store := range []struct{ name, path string }{{"PKCS12", p12}, {"JKS", jksFile}} {
		server, _, err := Internal(confOf("security.ssl.internal.enabled", "true", "security.ssl.internal.keystore", store.path,
			"security.ssl.internal.keystore-password", "pass", "security.ssl.internal.truststore", store.path,
			"security.ssl.internal.truststore-password", "pass"))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(server.ClientCAs.Subjects()); n != 1 { //nolint:staticcheck // a pool built from certificates, not the system's
			t.Errorf("%s: the truststore trusts %d certificates, want the key entry's one", store.name, n)
		}
		for _, peer := range []struct {
			name, keystore string
			ok             bool
		}{{"the key entry's own certificate", self, true}, {"a sibling of the same CA", sibling, false}} {
			t.Run(store.name+": "+peer.name, func(t *testing.T) {
				_, client, err := Internal(confOf("security.ssl.internal.enabled", "true", "security.ssl.internal.keystore", peer.keystore,
					"security.ssl.internal.truststore", caPEM))
				if err != nil {
					t.Fatal(err)
				}
				cerr, serr := handshake(t, server, client, "")
				if peer.ok && (cerr != nil || serr != nil) {
					t.Errorf("refused: client %v, server %v", cerr, serr)
				}
				if !peer.ok && serr == nil {
					t.Errorf("the server accepted it (client: %v)", cerr)
				}
			})
		}
	}
}
