package rpcauth

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/security/tlsconf"
)

// writePKI writes a new CA's certificate and a keystore it issued into dir
// as ca.pem and keystore.pem.
func writePKI(t *testing.T, dir, name string) {
	t.Helper()
	now := time.Now()
	ca, err := tlsconf.NewCA(name, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := ca.Issue(name+" process", []string{"127.0.0.1"}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keystore.pem"), ks, 0o600); err != nil {
		t.Fatal(err)
	}
}

func tlsConfIn(dir string) *conf.Configuration {
	return conf.New().Set(conf.SSLInternalEnabled.Key(), "true").
		Set(conf.SSLInternalKeystore.Key(), filepath.Join(dir, "keystore.pem")).
		Set(conf.SSLInternalTruststore.Key(), filepath.Join(dir, "ca.pem"))
}

// With security.ssl.internal.enabled, a server accepts only peers with a
// certificate of its CA, whatever secret they send; the secret file is not
// read.
func TestMutualTLSRefusesPeersWithoutTheCertificate(t *testing.T) {
	mine, other := t.TempDir(), t.TempDir()
	writePKI(t, mine, "this cluster")
	writePKI(t, other, "another cluster")
	c := tlsConfIn(mine).Set(conf.InternalSecretFile.Key(), filepath.Join(mine, "no-such-secret"))
	server, err := FromConf(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := server.Describe(); !strings.Contains(d, "mutual TLS") || !strings.Contains(d, filepath.Join(mine, "keystore.pem")) {
		t.Errorf("Describe = %q", d)
	}
	addr := serve(t, server)
	otherSec, err := FromConf(tlsConfIn(other), Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, client, err := tlsconf.Internal(tlsConfIn(mine))
	if err != nil {
		t.Fatal(err)
	}
	noCert := client.Clone()
	noCert.Certificates, noCert.GetClientCertificate = nil, nil
	trustAll := &tls.Config{InsecureSkipVerify: true}
	for _, tc := range []struct {
		name string
		opts []grpc.DialOption
		ok   bool
	}{
		{"a process of the cluster", server.DialOptions(), true},
		{"plaintext", []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, false},
		{"plaintext with a secret", WithSecret([]byte(strings.Repeat("s", 64))).DialOptions(), false},
		{"TLS without a certificate", []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(noCert))}, false},
		{"TLS without a certificate, trusting any server", []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(trustAll))}, false},
		{"a certificate of another CA", otherSec.DialOptions(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc, err := grpc.NewClient(addr, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ctx = metadata.AppendToOutgoingContext(ctx, MetadataKey, strings.Repeat("s", 64))
			_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
			if tc.ok != (err == nil) {
				t.Errorf("Check: %v, want ok=%v", err, tc.ok)
			}
		})
	}
	// A process of the cluster does not accept a server of another CA
	// either.
	otherAddr := serve(t, otherSec)
	cc, err := grpc.NewClient(otherAddr, server.DialOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}); err == nil {
		t.Error("a cluster process accepted a server of another CA")
	}
}

// Relative keystore and truststore paths (a YARN container's localized
// files) are resolved against the working directory, and a worker is
// handed absolute ones.
func TestMutualTLSWorkerConfiguration(t *testing.T) {
	dir := t.TempDir()
	writePKI(t, dir, "c")
	t.Chdir(dir)
	c := conf.New().Set(conf.SSLInternalEnabled.Key(), "true").
		Set(conf.SSLInternalKeystore.Key(), "keystore.pem").Set(conf.SSLInternalTruststore.Key(), "ca.pem").
		Set(conf.SSLInternalKeystoreType.Key(), "PEM").Set(conf.SSLInternalTruststorePassword.Key(), "unused")
	sec, err := FromConf(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	wc := sec.WorkerConfiguration()
	want := map[string]string{conf.SSLInternalEnabled.Key(): "true",
		conf.SSLInternalKeystore.Key(): filepath.Join(dir, "keystore.pem"), conf.SSLInternalTruststore.Key(): filepath.Join(dir, "ca.pem"),
		// A worker reads the same files as its TaskManager: their types
		// and passwords too.
		conf.SSLInternalKeystoreType.Key(): "pem", conf.SSLInternalTruststorePassword.Key(): "unused"}
	if len(wc) != len(want) {
		t.Errorf("WorkerConfiguration = %v, want %v", wc, want)
	}
	for k, v := range want {
		if wc[k] != v {
			t.Errorf("WorkerConfiguration[%s] = %q, want %q", k, wc[k], v)
		}
	}
	t.Chdir(t.TempDir())
	if _, err := FromConf(conf.FromMap(wc, conf.Source{Name: "worker deployment"}), Options{}); err != nil {
		t.Errorf("a worker elsewhere: %v", err)
	}
	// A missing truststore is an error naming its key.
	if _, err := FromConf(c.Set(conf.SSLInternalTruststore.Key(), "nope.pem"), Options{}); err == nil ||
		!strings.Contains(err.Error(), conf.SSLInternalTruststore.Key()) {
		t.Errorf("a missing truststore: %v", err)
	}
}

// Flink's shared keys alone (security.ssl.enabled, security.ssl.keystore,
// security.ssl.truststore and their passwords) turn mutual TLS on, and a
// worker is handed their values under the internal keys, paths absolute.
func TestMutualTLSFromFlinksSharedKeys(t *testing.T) {
	dir := t.TempDir()
	writePKI(t, dir, "c")
	t.Chdir(dir)
	c := conf.New().Set(conf.SSLEnabled.Key(), "true").Set(conf.SSLKeystore.Key(), "keystore.pem").
		Set(conf.SSLTruststore.Key(), "ca.pem").Set(conf.SSLTruststorePassword.Key(), "unused")
	sec, err := FromConf(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := sec.Describe(); d != "mutual TLS with "+filepath.Join(dir, "keystore.pem")+", trusting "+filepath.Join(dir, "ca.pem") {
		t.Errorf("Describe() = %q", d)
	}
	wc := sec.WorkerConfiguration()
	want := map[string]string{conf.SSLInternalEnabled.Key(): "true",
		conf.SSLInternalKeystore.Key(): filepath.Join(dir, "keystore.pem"), conf.SSLInternalTruststore.Key(): filepath.Join(dir, "ca.pem"),
		conf.SSLInternalTruststorePassword.Key(): "unused"}
	if len(wc) != len(want) {
		t.Errorf("WorkerConfiguration = %v, want %v", wc, want)
	}
	for k, v := range want {
		if wc[k] != v {
			t.Errorf("WorkerConfiguration[%s] = %q, want %q", k, wc[k], v)
		}
	}
	t.Chdir(t.TempDir())
	w, err := FromConf(conf.FromMap(wc, conf.Source{Name: "worker deployment"}), Options{})
	if err != nil {
		t.Fatalf("a worker elsewhere: %v", err)
	}
	// The worker's health check at its TaskManager's server.
	cc, err := grpc.NewClient(serve(t, sec), w.DialOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Errorf("the worker at its TaskManager: %v", err)
	}
}
