//go:build integration

package tlsconf

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/security/tlsconf/keytooltest"
)

// Keystores and truststores that the JDK's keytool made, as Flink's SSL
// documentation makes them, serve HTTPS: a server configured by
// RESTServer answers a client configured by RESTClient, with and without
// security.ssl.rest.authentication-enabled, for JKS and PKCS12 files and
// their mixtures, the format told from the content or named. keytool's
// broken cases (a wrong password, a truststore as keystore, several keys)
// are errors naming the option and the file.
func TestKeytoolKeystores(t *testing.T) {
	kt := keytooltest.New(t, t.TempDir())
	ca := kt.NewCA("sluice-test-ca")
	serverJKS := kt.Signed(ca, "rest-jks", "JKS", "store-pass", "key-pass")
	clientJKS := kt.Signed(ca, "client-jks", "JKS", "store-pass", "")
	serverP12 := kt.Signed(ca, "rest-p12", "PKCS12", "p12-pass", "")
	clientP12 := kt.Signed(ca, "client-p12", "PKCS12", "p12-pass", "")
	trustJKS := kt.Truststore("trust-jks", "JKS", "trust-pass", ca.CertPEM)
	trustP12 := kt.Truststore("trust-p12", "PKCS12", "trust-pass", ca.CertPEM)
	selfJKS := kt.SelfSigned("flink-internal-jks", "JKS", "internal-pass")
	selfP12 := kt.SelfSigned("flink-internal-p12", "PKCS12", "internal-pass")

	rest := func(ks, ts keytooltest.Store, extra ...string) []string {
		kv := []string{"security.ssl.rest.enabled", "true",
			"security.ssl.rest.keystore", ks.Path, "security.ssl.rest.keystore-password", ks.StorePassword,
			"security.ssl.rest.truststore", ts.Path, "security.ssl.rest.truststore-password", ts.StorePassword}
		if ks.KeyPassword != ks.StorePassword {
			kv = append(kv, "security.ssl.rest.key-password", ks.KeyPassword)
		}
		return append(kv, extra...)
	}
	mutual := []string{"security.ssl.rest.authentication-enabled", "true"}
	for _, tc := range []struct {
		name           string
		server, client []string
		ok             bool
	}{
		{"JKS, server authentication", rest(serverJKS, trustJKS), rest(clientJKS, trustJKS), true},
		{"JKS, client certificates", rest(serverJKS, trustJKS, mutual...), rest(clientJKS, trustJKS, mutual...), true},
		{"PKCS12, server authentication", rest(serverP12, trustP12), rest(clientP12, trustP12), true},
		{"PKCS12, client certificates", rest(serverP12, trustP12, mutual...), rest(clientP12, trustP12, mutual...), true},
		{"PKCS12 server, JKS client, client certificates", rest(serverP12, trustJKS, mutual...), rest(clientJKS, trustP12, mutual...), true},
		{"types named as Flink's users do", rest(serverJKS, trustJKS, "security.ssl.rest.keystore-type", "jks", "security.ssl.rest.truststore-type", "JKS"),
			rest(clientP12, trustP12, "security.ssl.rest.keystore-type", "pkcs12", "security.ssl.rest.truststore-type", "PKCS12"), true},
		{"Flink's default type (pkcs12) of JKS files", rest(serverJKS, trustJKS, "security.ssl.rest.keystore-type", "pkcs12",
			"security.ssl.rest.truststore-type", "pkcs12"), rest(clientJKS, trustJKS), true},
		{"a client certificate of another CA is refused", rest(serverJKS, trustJKS, mutual...), rest(selfJKS, trustJKS, mutual...), false},
		{"a client without a certificate is refused", rest(serverP12, trustP12, mutual...), rest(clientP12, trustP12), false},
		{"a server of another CA is refused", rest(selfP12, trustP12), rest(clientP12, trustP12), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scfg, err := RESTServer(confOf(tc.server...))
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
			srv.TLS = scfg
			srv.Config.ErrorLog = nil
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
				if resp.StatusCode != http.StatusOK {
					err = errors.New(resp.Status)
				}
			}
			if tc.ok != (err == nil) {
				t.Errorf("GET over HTTPS: %v, want ok=%v", err, tc.ok)
			}
			// keytool put the CA's certificate in the key's chain.
			if n := len(scfg.Certificates[0].Certificate); tc.ok && n != 2 {
				t.Errorf("the server presents %d certificates, want its own and the CA's", n)
			}
		})
	}

	// Internal mutual TLS as Flink's documentation sets it up: one
	// self-signed keystore, the keystore and truststore of every process.
	internalOf := func(s keytooltest.Store) []string {
		return []string{"security.ssl.internal.enabled", "true", "security.ssl.internal.keystore", s.Path, "security.ssl.internal.truststore", s.Path,
			"security.ssl.internal.keystore-password", s.StorePassword, "security.ssl.internal.key-password", s.KeyPassword,
			"security.ssl.internal.truststore-password", s.StorePassword}
	}
	for _, tc := range []struct {
		name         string
		server, peer keytooltest.Store
		ok           bool
	}{
		{"internal: JKS", selfJKS, selfJKS, true},
		{"internal: PKCS12", selfP12, selfP12, true},
		{"internal: a peer of another keystore", selfJKS, selfP12, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server, _, err := Internal(confOf(internalOf(tc.server)...))
			if err != nil {
				t.Fatal(err)
			}
			_, client, err := Internal(confOf(internalOf(tc.peer)...))
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

	twoP12 := kt.SelfSigned("two-keys-p12", "PKCS12", "two-pass")
	kt.AddKey(twoP12, "second-key")
	twoJKS := kt.SelfSigned("two-keys-jks", "JKS", "two-pass")
	kt.AddKey(twoJKS, "second-key")
	ks := func(s keytooltest.Store, password string) []string {
		return []string{"security.ssl.rest.enabled", "true", "security.ssl.rest.keystore", s.Path, "security.ssl.rest.keystore-password", password}
	}
	var several *SeveralKeysError
	for _, tc := range []struct {
		name string
		kv   []string
		want []string
		is   error
		as   any
	}{
		{"JKS: a wrong password", ks(serverJKS, "wrong"), []string{serverJKS.Path, "security.ssl.rest.keystore-password does not verify"}, ErrStorePassword, nil},
		{"JKS: the key's password missing", ks(serverJKS, serverJKS.StorePassword), []string{serverJKS.Path, `"rest-jks"`}, ErrKeyPassword, nil},
		{"PKCS12: a wrong password", ks(serverP12, "wrong"), []string{serverP12.Path, "security.ssl.rest.keystore-password does not open"}, ErrStorePassword, nil},
		{"JKS: a truststore", ks(trustJKS, trustJKS.StorePassword), []string{trustJKS.Path, "no private key"}, ErrNoPrivateKey, nil},
		{"PKCS12: a truststore", ks(trustP12, trustP12.StorePassword), []string{trustP12.Path, "no private key"}, ErrNoPrivateKey, nil},
		{"JKS: two keys", ks(twoJKS, "two-pass"), []string{twoJKS.Path, "second-key, two-keys-jks"}, nil, &several},
		{"PKCS12: two keys", ks(twoP12, "two-pass"), []string{twoP12.Path, "second-key, two-keys-p12"}, nil, &several},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := RESTServer(confOf(tc.kv...))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range append(tc.want, "security.ssl.rest.keystore") {
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
		})
	}
}
