package tlsconf

import (
	"crypto/tls"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/conf"
)

// pki is a CA and a keystore it issued, in files.
type pki struct {
	ca, ks string
}

func newPKI(t *testing.T, name string) pki {
	t.Helper()
	now := time.Now()
	ca, err := NewCA(name+" CA", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := ca.Issue(name, []string{"localhost", "127.0.0.1"}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := pki{ca: filepath.Join(dir, "ca.pem"), ks: filepath.Join(dir, "keystore.pem")}
	for f, b := range map[string][]byte{p.ca: ca.CertPEM, p.ks: ks} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func confOf(kv ...string) *conf.Configuration {
	c := conf.New()
	for i := 0; i < len(kv); i += 2 {
		c = c.Set(kv[i], kv[i+1])
	}
	return c
}

func TestDisabledIsNil(t *testing.T) {
	c := conf.New()
	s, err1 := RESTServer(c)
	cl, err2 := RESTClient(c)
	is, ic, err3 := Internal(c)
	if s != nil || cl != nil || is != nil || ic != nil || errors.Join(err1, err2, err3) != nil {
		t.Error("TLS configured although security.ssl.*.enabled are off")
	}
}

func TestErrorsNameTheKeyAndFile(t *testing.T) {
	p := newPKI(t, "a")
	dir := t.TempDir()
	jks := filepath.Join(dir, "keystore.jks")
	os.WriteFile(jks, []byte{0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2}, 0o600)
	onlyCA := p.ca // a certificate without a key
	empty := filepath.Join(dir, "empty.pem")
	os.WriteFile(empty, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), 0o600)
	for _, tc := range []struct {
		name  string
		c     *conf.Configuration
		build func(*conf.Configuration) error
		want  []string
		is    error
	}{
		{"REST without a keystore", confOf("security.ssl.rest.enabled", "true"), restServer,
			[]string{"security.ssl.rest.keystore", "not set", "security.ssl.rest.enabled"}, nil},
		{"a damaged Java keystore", confOf("security.ssl.rest.enabled", "true", "security.ssl.rest.keystore", jks,
			"security.ssl.rest.keystore-password", "changeit"), restServer,
			[]string{"security.ssl.rest.keystore", jks, "JKS"}, nil},
		{"a certificate without its key", confOf("security.ssl.rest.enabled", "true", "security.ssl.rest.keystore", onlyCA), restServer,
			[]string{"security.ssl.rest.keystore", onlyCA, "unencrypted private key"}, nil},
		{"client authentication without a truststore", confOf("security.ssl.rest.enabled", "true", "security.ssl.rest.keystore", p.ks,
			"security.ssl.rest.authentication-enabled", "true"), restServer,
			[]string{"security.ssl.rest.truststore", "security.ssl.rest.authentication-enabled"}, nil},
		{"a truststore without certificates", confOf("security.ssl.rest.enabled", "true", "security.ssl.rest.truststore", empty), restClient,
			[]string{"security.ssl.rest.truststore", empty, "no PEM certificate"}, nil},
		{"a missing file", confOf("security.ssl.rest.enabled", "true", "security.ssl.rest.truststore", filepath.Join(dir, "nope")), restClient,
			[]string{"security.ssl.rest.truststore", "nope"}, os.ErrNotExist},
		{"internal: both missing at once", confOf("security.ssl.internal.enabled", "true"), internal,
			[]string{"security.ssl.internal.keystore", "security.ssl.internal.truststore"}, nil},
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
			var fe *FileError
			var ce *ConfigError
			if !errors.As(err, &fe) && !errors.As(err, &ce) {
				t.Errorf("%v is neither a FileError nor a ConfigError", err)
			}
		})
	}
}

func restServer(c *conf.Configuration) error { _, err := RESTServer(c); return err }
func restClient(c *conf.Configuration) error { _, err := RESTClient(c); return err }
func internal(c *conf.Configuration) error   { _, _, err := Internal(c); return err }

// handshake runs one TLS handshake between server and client configs over
// loopback and returns the client's and the server's errors.
func handshake(t *testing.T, server, client *tls.Config, serverName string) (clientErr, serverErr error) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", server)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		err = c.(*tls.Conn).Handshake()
		if err == nil {
			_, err = c.Write([]byte("ok"))
		}
		done <- err
	}()
	cfg := client.Clone()
	cfg.ServerName = serverName
	c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
	if err == nil {
		// TLS 1.3: a refused client certificate shows on the first read.
		_, err = io.ReadFull(c, make([]byte, 2))
		c.Close()
	}
	return err, <-done
}

func TestHandshakes(t *testing.T) {
	a, other := newPKI(t, "a"), newPKI(t, "other")
	rest := func(kv ...string) *conf.Configuration {
		return confOf(append([]string{"security.ssl.rest.enabled", "true", "security.ssl.rest.keystore", a.ks, "security.ssl.rest.truststore", a.ca}, kv...)...)
	}
	internalOf := func(p pki, trust string) *conf.Configuration {
		return confOf("security.ssl.internal.enabled", "true", "security.ssl.internal.keystore", p.ks, "security.ssl.internal.truststore", trust)
	}
	mustRESTServer := func(c *conf.Configuration) *tls.Config {
		s, err := RESTServer(c)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	mustRESTClient := func(c *conf.Configuration) *tls.Config {
		s, err := RESTClient(c)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	internalPair := func(c *conf.Configuration) (*tls.Config, *tls.Config) {
		s, cl, err := Internal(c)
		if err != nil {
			t.Fatal(err)
		}
		return s, cl
	}
	aServer, aClient := internalPair(internalOf(a, a.ca))
	_, otherClient := internalPair(internalOf(other, other.ca))
	noCert := aClient.Clone()
	noCert.Certificates, noCert.GetClientCertificate = nil, nil
	for _, tc := range []struct {
		name           string
		server, client *tls.Config
		serverName     string
		ok             bool
	}{
		{"REST: a client trusting the CA", mustRESTServer(rest()), mustRESTClient(rest()), "localhost", true},
		{"REST: a host name the certificate lacks", mustRESTServer(rest()), mustRESTClient(rest()), "jm.example.com", false},
		{"REST: verify-hostname off", mustRESTServer(rest()), mustRESTClient(rest("security.ssl.verify-hostname", "false")), "jm.example.com", true},
		{"REST: a client trusting another CA", mustRESTServer(rest()), mustRESTClient(rest("security.ssl.rest.truststore", other.ca)), "localhost", false},
		{"REST mutual: a client with its certificate", mustRESTServer(rest("security.ssl.rest.authentication-enabled", "true")),
			mustRESTClient(rest("security.ssl.rest.authentication-enabled", "true")), "localhost", true},
		{"REST mutual: a client without a certificate", mustRESTServer(rest("security.ssl.rest.authentication-enabled", "true")),
			mustRESTClient(rest()), "localhost", false},
		{"internal: a peer of the cluster, any address", aServer, aClient, "10.1.2.3", true},
		{"internal: a peer without a certificate", aServer, noCert, "", false},
		{"internal: a peer of another cluster", aServer, otherClient, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cerr, serr := handshake(t, tc.server, tc.client, tc.serverName)
			if tc.ok && (cerr != nil || serr != nil) {
				t.Errorf("refused: client %v, server %v", cerr, serr)
			}
			if !tc.ok && cerr == nil && serr == nil {
				t.Error("the handshake succeeded")
			}
		})
	}
}

// A keystore whose private key openssl encrypted is read with
// key-password, else keystore-password (Flink's keys); a wrong or missing
// password and PKCS#8 encryption are errors naming the key.
func TestEncryptedKeystore(t *testing.T) {
	p := newPKI(t, "a")
	ks, err := os.ReadFile(p.ks)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(ks) // the certificate; the key follows
	cert := pem.EncodeToMemory(blk)
	dir := t.TempDir()
	openssl := func(name string, args ...string) string {
		out := filepath.Join(dir, name)
		cmd := exec.Command("openssl", append([]string{"pkey", "-in", p.ks, "-out", out}, args...)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("openssl %v: %v\n%s", args, err, b)
		}
		key, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, append(append([]byte(nil), cert...), key...), 0o600); err != nil {
			t.Fatal(err)
		}
		return out
	}
	traditional := openssl("traditional.pem", "-aes256", "-passout", "pass:s3cret", "-traditional")
	pkcs8 := openssl("pkcs8.pem", "-aes256", "-passout", "pass:s3cret")
	internalWith := func(ks string, kv ...string) *conf.Configuration {
		return confOf(append([]string{"security.ssl.internal.enabled", "true", "security.ssl.internal.keystore", ks,
			"security.ssl.internal.truststore", p.ca}, kv...)...)
	}
	for _, tc := range []struct {
		name string
		c    *conf.Configuration
		want []string // nil: accepted
	}{
		{"key-password", internalWith(traditional, "security.ssl.internal.key-password", "s3cret"), nil},
		{"keystore-password when key-password is unset", internalWith(traditional, "security.ssl.internal.keystore-password", "s3cret"), nil},
		{"key-password before keystore-password", internalWith(traditional, "security.ssl.internal.keystore-password", "wrong",
			"security.ssl.internal.key-password", "s3cret"), nil},
		{"truststore-password is accepted", internalWith(p.ks, "security.ssl.internal.truststore-password", "changeit"), nil},
		{"no password", internalWith(traditional), []string{"security.ssl.internal.keystore", traditional, "encrypted", "security.ssl.internal.key-password is not set"}},
		{"a wrong password", internalWith(traditional, "security.ssl.internal.keystore-password", "wrong"),
			[]string{"security.ssl.internal.keystore-password does not decrypt it"}},
		{"PKCS#8 encryption", internalWith(pkcs8, "security.ssl.internal.key-password", "s3cret"), []string{pkcs8, "PKCS#8", "-traditional"}},
		{"REST: key-password", confOf("security.ssl.rest.enabled", "true", "security.ssl.rest.keystore", traditional,
			"security.ssl.rest.key-password", "s3cret"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if conf.Get(tc.c, conf.SSLRESTEnabled) {
				err = restServer(tc.c)
			} else {
				err = internal(tc.c)
			}
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrKeyPassword) {
				t.Fatalf("%v, want ErrKeyPassword", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}
