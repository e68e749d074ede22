//go:build integration

package clustertest

import (
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/security/tlsconf"
	"github.com/sluice/sluice/security/tlsconf/keytooltest"
)

// A standalone cluster configured as Flink's SSL documentation configures
// one, with keystores the JDK's keytool made: internal mutual TLS with one
// self-signed JKS keystore that is every process's keystore and truststore
// (the format told from the content), and REST over HTTPS with client
// certificates, the JobManager's CA-signed PKCS12 keystore (keystore-type
// pkcs12, Flink's default) and a JKS truststore of the CA. A job whose
// keyBy exchange crosses the two TaskManagers runs exactly once, started
// by the CLI with a JKS client keystore whose key has a password of its
// own; a peer with another keytool keystore is refused on the internal
// port, and a TaskManager given a wrong keystore password fails at start
// with an error naming the option and the file.
func TestFlinkKeystoresOnAStandaloneCluster(t *testing.T) {
	kt := keytooltest.New(t, filepath.Join(t.TempDir(), "keytool"))
	internal := kt.SelfSigned("flink.internal", "JKS", "internal-store-pass")
	stranger := kt.SelfSigned("stranger", "JKS", "internal-store-pass")
	ca := kt.NewCA("rest-ca")
	restKS := kt.Signed(ca, "rest", "PKCS12", "rest-store-pass", "")
	cliKS := kt.Signed(ca, "cli", "JKS", "cli-store-pass", "cli-key-pass")
	restTrust := kt.Truststore("rest-trust", "JKS", "rest-trust-pass", ca.CertPEM)

	internalProps := func(s keytooltest.Store, password string) []string {
		return []string{"security.ssl.internal.enabled=true", "security.ssl.internal.keystore=" + s.Path,
			"security.ssl.internal.keystore-password=" + password, "security.ssl.internal.key-password=" + s.KeyPassword,
			"security.ssl.internal.truststore=" + s.Path, "security.ssl.internal.truststore-password=" + s.StorePassword}
	}
	// The test's own REST requests: the CLI's configuration, read by
	// tlsconf as the CLI reads it.
	cliKV := []string{"security.ssl.rest.enabled", "true", "security.ssl.rest.authentication-enabled", "true",
		"security.ssl.rest.keystore", cliKS.Path, "security.ssl.rest.keystore-password", cliKS.StorePassword,
		"security.ssl.rest.key-password", cliKS.KeyPassword,
		"security.ssl.rest.truststore", restTrust.Path, "security.ssl.rest.truststore-password", restTrust.StorePassword}
	cliConfig := conf.New()
	for i := 0; i < len(cliKV); i += 2 {
		cliConfig = cliConfig.Set(cliKV[i], cliKV[i+1])
	}
	clientTLS, err := tlsconf.RESTClient(cliConfig)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, dir: t.TempDir(), rpcPort: freePort(t), restPort: freePort(t),
		props: internalProps(internal, internal.StorePassword),
		jmProps: []string{"security.ssl.rest.enabled=true", "security.ssl.rest.authentication-enabled=true",
			"security.ssl.rest.keystore=" + restKS.Path, "security.ssl.rest.keystore-password=" + restKS.StorePassword,
			"security.ssl.rest.keystore-type=pkcs12",
			"security.ssl.rest.truststore=" + restTrust.Path, "security.ssl.rest.truststore-password=" + restTrust.StorePassword},
		restScheme: "https",
		restClient: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: clientTLS}},
	}
	c.boot(2)
	for _, p := range append(c.tms, c.jm) {
		b, _ := os.ReadFile(p.log)
		if !strings.Contains(string(b), "mutual TLS with "+internal.Path) {
			t.Errorf("%s does not say it authenticates with mutual TLS:\n%s", p.name, tail(string(b), 20))
		}
	}

	cliConf := writeClientConf(t, cliKV...)
	const n, keys = 3000, 3
	out := filepath.Join(c.dir, "out")
	res := c.mustSluice("run", "--configDir", cliConf, "-m", c.rest(), "-p", "2", jobBin, "-out", out, "-n", strconv.Itoa(n), "-keys", strconv.Itoa(keys))
	if !strings.Contains(res, "done: 0 restarts") {
		t.Fatalf("sluice run:\n%s", res)
	}
	checkExactlyOnce(t, out, n, keys)
	for _, tm := range c.tms {
		if b, _ := os.ReadFile(tm.log); !strings.Contains(string(b), "worker started") {
			t.Errorf("%s ran no worker: the exchange did not cross TaskManagers", tm.name)
		}
	}

	// The internal port takes the cluster's certificate only.
	jmAddr := "127.0.0.1:" + strconv.Itoa(c.rpcPort)
	for _, h := range []struct {
		name string
		s    *keytooltest.Store
		ok   bool
	}{{"no certificate", nil, false}, {"another keytool keystore's", &stranger, false}, {"the cluster's", &internal, true}} {
		var cert *tls.Certificate
		if h.s != nil {
			_, client, err := tlsconf.Internal(conf.New().Set("security.ssl.internal.enabled", "true").
				Set("security.ssl.internal.keystore", h.s.Path).Set("security.ssl.internal.keystore-password", h.s.StorePassword).
				Set("security.ssl.internal.truststore", h.s.Path).Set("security.ssl.internal.truststore-password", h.s.StorePassword))
			if err != nil {
				t.Fatal(err)
			}
			cert = &client.Certificates[0]
		}
		if err := tlsHandshake(jmAddr, cert); h.ok != (err == nil) {
			t.Errorf("the JobManager's RPC port, a client with %s certificate: %v, want ok=%v", h.name, err, h.ok)
		}
	}

	// A TaskManager with a wrong keystore password does not start, and
	// says why.
	c.props = internalProps(internal, "wrong-password")
	tm := c.startTaskManager()
	if code := tm.exitCode(t, 60*time.Second, "a TaskManager with a wrong keystore password kept running"); code == 0 {
		t.Error("a TaskManager with a wrong keystore password exited with status 0")
	}
	b, _ := os.ReadFile(tm.log)
	for _, want := range []string{"security.ssl.internal.keystore", internal.Path, "security.ssl.internal.keystore-password does not verify"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the failed TaskManager's log does not say %q:\n%s", want, tail(string(b), 20))
		}
	}
}
