//go:build integration

package yarntest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/cluster/clusterpb/clusterpbtest"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/security/tlsconf"
	"github.com/sluice/sluice/security/tlsconf/keytooltest"
)

// TestInternalMutualTLSByDefault: an application submitted with nothing
// configured has internal mutual TLS with its own CA. A job runs exactly
// once over it (its keyBy exchange between two TaskManager containers),
// while a client built from cluster/clusterpb without the application's
// certificate (plaintext, TLS without a certificate, a certificate of
// another CA, or the certificate another application's TaskManagers were
// given) can neither register a TaskManager with the ApplicationMaster's
// RPC port nor fetch the job binary from it, nor cancel the job on a
// TaskManager. The control: the application's own TaskManager keystore,
// read from its staging directory, fetches the binary from the same port.
// Its HA store is private (directories 0700, files 0600). The other
// application (a session, B) refuses the first one's
// certificate in turn at the handshake, while its own gets an answer from
// its Blobs service: nothing one application is given opens another's.
func TestInternalMutualTLSByDefault(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	// Application B, a session started before A (it runs no job), so that
	// A's job still runs when both are attacked.
	pB := r.start(ctx, append([]string{"yarn-session", "-Dyarn.application.name=yarntest-tls-other"}, small...)...)
	appB := match(t, pB, reAppID, 2*time.Minute)
	defer r.sluice(t, context.Background(), "yarn-session", "--stop", "-Dyarn.application.id="+appB)
	if _, err := pB.wait(); err != nil {
		t.Fatalf("sluice yarn-session (application B): %v\n%s", err, pB.out.String())
	}
	out := r.hdfs + "/out"
	const n, keys = 30000, 4
	args := append([]string{"run", "--target", "yarn-application", "-p", "2",
		"-Dexecution.checkpointing.dir=hdfs://" + r.hdfs + "/ckpt", "-Dyarn.application.name=yarntest-tls"}, small...)
	args = append(args, checkpointed...)
	args = append(args, bins.job, "-out", "hdfs://"+out, "-n", strconv.Itoa(n), "-keys", strconv.Itoa(keys), "-rate", "1000")
	p, appID, _, rc, job := r.deploy(t, ctx, args...)
	if !strings.Contains(p.out.String(), "mutual TLS with a CA and certificates generated for "+appID) {
		t.Errorf("the CLI does not say it generated the application's certificates:\n%s", p.out.String())
	}

	// The ApplicationMasters' RPC endpoints, from their logs.
	reRPC := regexp.MustCompile(`registered with the ResourceManager.* host=(\S+) .*rpc_port=(\d+)`)
	amRPCOf := func(appID string) string {
		var amRPC string
		testwait.Eventually(t, 2*time.Minute, "the ApplicationMaster's RPC port in the log of "+appID, func() bool {
			for _, f := range containerLogs(t, r.c, appID, "jobmanager.log") {
				b, _ := os.ReadFile(f)
				if m := reRPC.FindSubmatch(b); m != nil {
					amRPC = net.JoinHostPort(string(m[1]), string(m[2]))
					if !bytes.Contains(b, []byte("authentication=\"mutual TLS")) {
						t.Errorf("the ApplicationMaster of %s does not authenticate with mutual TLS:\n%s", appID, grepLine(string(b), "authentication="))
					}
					return true
				}
			}
			return false
		})
		return amRPC
	}
	amRPC := amRPCOf(appID)
	tms, err := rc.TaskManagers(ctx)
	if err != nil || len(tms) == 0 {
		t.Fatalf("GET /taskmanagers: %v, %d", err, len(tms))
	}

	bin, err := os.ReadFile(bins.job)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bin)
	digest := hex.EncodeToString(sum[:])
	dial := func(addr string, opts []grpc.DialOption) *grpc.ClientConn {
		cc, err := grpc.NewClient(addr, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return cc
	}

	// The application's own TaskManager keystore and CA, from its
	// staging directory (the test runs as the application's user).
	user, err := hadoop.CurrentUser(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	// tmCert is the TaskManagers' certificate and key of an application,
	// from its staging directory.
	tmCert := func(appID string) tls.Certificate {
		name := path.Join("/user", user, ".sluice", appID, "internal-keystore-taskmanager.pem")
		if fi, err := r.fs.Stat(name); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("the staged TaskManager keystore %s: %v, %v; want mode 0600", name, err, fi)
		}
		f, err := r.fs.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		ks, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		c, err := tls.X509KeyPair(ks, ks)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	appCert := tmCert(appID)
	bCert := tmCert(appB)
	bRPC := amRPCOf(appB)
	other, err := tlsconf.NewCA("another application", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	oks, err := other.Issue("impostor", nil, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	otherCert, err := tls.X509KeyPair(oks, oks)
	if err != nil {
		t.Fatal(err)
	}
	withCert := func(c *tls.Certificate) []grpc.DialOption {
		cfg := &tls.Config{InsecureSkipVerify: true}
		if c != nil {
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return c, nil }
		}
		return []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(cfg))}
	}
	control := func(when string) {
		t.Helper()
		if got, err := clusterpbtest.FetchBlob(ctx, dial(amRPC, withCert(&appCert)), digest); err != nil || !bytes.Equal(got, bin) {
			t.Fatalf("%s, the application's own certificate fetched %d bytes from %s: %v; want the job binary", when, len(got), amRPC, err)
		}
	}
	control("before the attacks")
	for _, a := range []struct {
		name string
		opts []grpc.DialOption
	}{
		{"plaintext", []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}},
		{"TLS without a certificate", withCert(nil)},
		{"TLS with a certificate of another CA", withCert(&otherCert)},
		{"TLS with the TaskManagers' certificate of application B", withCert(&bCert)},
	} {
		t.Run(a.name, func(t *testing.T) {
			am := dial(amRPC, a.opts)
			if err := clusterpbtest.RegisterTaskManager(ctx, am, "impostor"); err == nil {
				t.Error("registered a TaskManager with the ApplicationMaster")
			} else {
				t.Logf("register: %v", err)
			}
			if got, err := clusterpbtest.FetchBlob(ctx, am, digest); err == nil || len(got) > 0 {
				t.Errorf("fetched %d bytes of the job binary from the ApplicationMaster (%v)", len(got), err)
			}
			for _, tm := range tms {
				if _, err := clusterpb.NewTaskManagerClient(dial(tm.Path, a.opts)).CancelJob(ctx,
					&clusterpb.CancelJobRequest{JobId: job, UpToAttempt: -1}); err == nil {
					t.Errorf("cancelled the job on TaskManager %s", tm.Path)
				}
			}
		})
	}
	control("after the attacks")
	if got, err := rc.TaskManagers(ctx); err != nil || len(got) != len(tms) {
		t.Errorf("TaskManagers after the attacks: %d (%v), want %d", len(got), err, len(tms))
	}
	// The application's HA store (in its staging directory: the job's
	// record with its -D values and arguments, its graph, its binary) is
	// its owner's alone.
	if files := r.checkPrivateTree(t, path.Join("/user", user, ".sluice", appID, "ha")); files < 3 {
		t.Errorf("the application's HA store holds %d files; want the job's record, graph and binary", files)
	}

	// B's ApplicationMaster answers a peer with B's own certificate (its
	// Blobs service: no such blob) and refuses A's at the handshake.
	if _, err := clusterpbtest.FetchBlob(ctx, dial(bRPC, withCert(&bCert)), digest); status.Code(err) != codes.NotFound {
		t.Errorf("application B's own certificate at its ApplicationMaster %s: %v, want NotFound from its Blobs service", bRPC, err)
	}
	bWithA := dial(bRPC, withCert(&appCert))
	if _, err := clusterpbtest.FetchBlob(ctx, bWithA, digest); status.Code(err) != codes.Unavailable {
		t.Errorf("application A's certificate at B's ApplicationMaster %s: %v, want Unavailable (the handshake refused)", bRPC, err)
	} else {
		t.Logf("A's certificate at B: %v", err)
	}
	if err := clusterpbtest.RegisterTaskManager(ctx, bWithA, "impostor-from-a"); err == nil {
		t.Errorf("application A's certificate registered a TaskManager with B's ApplicationMaster %s", bRPC)
	}

	succeeded(t, p, appID)
	checkExactlyOnce(t, r.fs, out, n, keys)
	r.stagingGone(t, appID)
}

// TestUserJKSKeystoreOnYARN: with security.ssl.internal.keystore naming a
// keystore on every node, as Flink takes it on YARN, the application's
// processes use it rather than generated certificates: one self-signed
// JKS keystore made by keytool, every process's keystore and truststore
// (Flink's documented setup). The CLI and the ApplicationMaster say so,
// and a job whose keyBy exchange crosses two TaskManager containers runs
// exactly once over it.
func TestUserJKSKeystoreOnYARN(t *testing.T) {
	r := newRig(t)
	kt := keytooltest.New(t, t.TempDir())
	ks := kt.SelfSigned("flink.internal", "JKS", "internal-store-pass")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := r.hdfs + "/out"
	const n, keys = 6000, 4
	args := append([]string{"run", "--target", "yarn-application", "-p", "2", "-Dyarn.application.name=yarntest-jks",
		"-Dsecurity.ssl.internal.enabled=true", "-Dsecurity.ssl.internal.keystore=" + ks.Path,
		"-Dsecurity.ssl.internal.truststore=" + ks.Path, "-Dsecurity.ssl.internal.keystore-password=" + ks.StorePassword,
		"-Dsecurity.ssl.internal.key-password=" + ks.KeyPassword, "-Dsecurity.ssl.internal.truststore-password=" + ks.StorePassword,
		"-Dsecurity.ssl.internal.keystore-type=jks"}, small...)
	args = append(args, bins.job, "-out", "hdfs://"+out, "-n", strconv.Itoa(n), "-keys", strconv.Itoa(keys), "-rate", "2000")
	p, appID, _, _, _ := r.deploy(t, ctx, args...)
	if want := "mutual TLS with " + ks.Path; !strings.Contains(p.out.String(), want) {
		t.Errorf("the CLI does not say %q:\n%s", want, p.out.String())
	}
	succeeded(t, p, appID)
	checkExactlyOnce(t, r.fs, out, n, keys)
	found := false
	for _, f := range containerLogs(t, r.c, appID, "jobmanager.log") {
		b, _ := os.ReadFile(f)
		found = found || bytes.Contains(b, []byte(`authentication="mutual TLS with `+ks.Path))
	}
	if !found && r.harness() {
		t.Errorf("the ApplicationMaster's log does not say it authenticates with mutual TLS with %s", ks.Path)
	}
}

// TestInternalSecretOnYARN: with security.ssl.internal.enabled false an
// application's internal RPCs carry a secret the client generated for it
// alone and shipped as a private 0600 resource. A job runs exactly once,
// while a client built from cluster/clusterpb without the secret, or with
// another one, can neither register a TaskManager with the
// ApplicationMaster nor fetch the job binary from it, nor cancel the job on
// a TaskManager: UNAUTHENTICATED naming security.internal.secret-file. The
// control: the application's secret, read from its staging directory,
// fetches the binary.
func TestInternalSecretOnYARN(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := r.hdfs + "/out"
	const n, keys = 30000, 4
	args := append([]string{"run", "--target", "yarn-application", "-p", "2", "-Dsecurity.ssl.internal.enabled=false",
		"-Dexecution.checkpointing.dir=hdfs://" + r.hdfs + "/ckpt", "-Dyarn.application.name=yarntest-secret"}, small...)
	args = append(args, checkpointed...)
	args = append(args, bins.job, "-out", "hdfs://"+out, "-n", strconv.Itoa(n), "-keys", strconv.Itoa(keys), "-rate", "1000")
	p, appID, _, rc, job := r.deploy(t, ctx, args...)
	if !strings.Contains(p.out.String(), "Shipping a secret for this application's internal RPCs") {
		t.Errorf("the CLI does not say it ships a secret:\n%s", p.out.String())
	}

	reRPC := regexp.MustCompile(`registered with the ResourceManager.* host=(\S+) .*rpc_port=(\d+)`)
	var amRPC string
	testwait.Eventually(t, time.Minute, "the ApplicationMaster's RPC port in its log", func() bool {
		for _, f := range containerLogs(t, r.c, appID, "jobmanager.log") {
			b, _ := os.ReadFile(f)
			if m := reRPC.FindSubmatch(b); m != nil {
				amRPC = net.JoinHostPort(string(m[1]), string(m[2]))
				if !bytes.Contains(b, []byte(`authentication="the cluster's secret`)) {
					t.Errorf("the ApplicationMaster does not authenticate with the secret:\n%s", grepLine(string(b), "authentication="))
				}
				return true
			}
		}
		return false
	})
	tms, err := rc.TaskManagers(ctx)
	if err != nil || len(tms) == 0 {
		t.Fatalf("GET /taskmanagers: %v, %d", err, len(tms))
	}
	bin, err := os.ReadFile(bins.job)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bin)
	digest := hex.EncodeToString(sum[:])
	user, err := hadoop.CurrentUser(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	name := path.Join("/user", user, ".sluice", appID, "internal-secret")
	if fi, err := r.fs.Stat(name); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the staged secret %s: %v, %v; want mode 0600", name, err, fi)
	}
	f, err := r.fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	secret, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	dial := func(addr string) *grpc.ClientConn {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return cc
	}
	am := dial(amRPC)
	// rpcauth.MetadataKey: the key the cluster's processes send it under.
	withSecret := func(s string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "sluice-internal-secret", s)
	}
	for _, a := range []struct {
		name string
		ctx  context.Context
	}{
		{"no secret", ctx},
		{"another secret", withSecret(strings.Repeat("0", 64))},
	} {
		t.Run(a.name, func(t *testing.T) {
			refused := func(what string, err error) {
				t.Helper()
				if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "security.internal.secret-file") {
					t.Errorf("%s: %v; want UNAUTHENTICATED naming security.internal.secret-file", what, err)
				}
			}
			refused("registering a TaskManager", clusterpbtest.RegisterTaskManager(a.ctx, am, "impostor"))
			got, err := clusterpbtest.FetchBlob(a.ctx, am, digest)
			if len(got) > 0 {
				t.Errorf("fetched %d bytes of the job binary", len(got))
			}
			refused("fetching the job binary", err)
			for _, tm := range tms {
				_, err := clusterpb.NewTaskManagerClient(dial(tm.Path)).CancelJob(a.ctx, &clusterpb.CancelJobRequest{JobId: job, UpToAttempt: -1})
				refused("cancelling the job on TaskManager "+tm.Path, err)
			}
		})
	}
	if got, err := clusterpbtest.FetchBlob(withSecret(strings.TrimSpace(string(secret))), am, digest); err != nil || !bytes.Equal(got, bin) {
		t.Errorf("the application's secret fetched %d bytes from %s: %v; want the job binary", len(got), amRPC, err)
	}
	succeeded(t, p, appID)
	checkExactlyOnce(t, r.fs, out, n, keys)
	r.stagingGone(t, appID)
}

// TestRESTOverMutualTLSOnYARN: security.ssl.rest.* with client
// certificates on a yarn-application, its keystore and truststore paths on
// every node as Flink takes them. The ApplicationMaster serves HTTPS and
// registers an https endpoint, which the CLI prints; the CLI given the
// keys (its client certificate the keystore's, as Flink's REST client
// presents it) lists the job through it; a client without a certificate,
// plain HTTP, or without the keystore is refused, and the job runs on,
// exactly once.
func TestRESTOverMutualTLSOnYARN(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	ca, err := tlsconf.NewCA("yarntest REST CA", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := ca.Issue("yarntest REST", []string{"localhost", "127.0.0.1"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	caFile, ksFile := path.Join(dir, "ca.pem"), path.Join(dir, "rest.pem")
	for f, b := range map[string][]byte{caFile: ca.CertPEM, ksFile: ks} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	restTLS := []string{"-Dsecurity.ssl.rest.enabled=true", "-Dsecurity.ssl.rest.keystore=" + ksFile,
		"-Dsecurity.ssl.rest.truststore=" + caFile, "-Dsecurity.ssl.rest.authentication-enabled=true"}
	out := r.hdfs + "/out"
	const n, keys = 20000, 4
	args := append(append([]string{"run", "--target", "yarn-application", "-p", "2",
		"-Dexecution.checkpointing.dir=hdfs://" + r.hdfs + "/ckpt", "-Dyarn.application.name=yarntest-rest-tls"}, restTLS...), small...)
	args = append(args, checkpointed...)
	args = append(args, bins.job, "-out", "hdfs://"+out, "-n", strconv.Itoa(n), "-keys", strconv.Itoa(keys), "-rate", "1000")
	p := r.start(ctx, args...)
	appID := match(t, p, reAppID, 2*time.Minute)
	addr := match(t, p, regexp.MustCompile(`REST endpoint: https://(\S+)`), time.Second)
	session := []string{"--target", "yarn-session", "-Dyarn.application.id=" + appID}
	var job string
	testwait.Eventually(t, 2*time.Minute, "the job RUNNING in sluice list over HTTPS", func() bool {
		o, err := r.start(ctx, append(append([]string{"list", "-r"}, session...), restTLS...)...).wait()
		m := regexp.MustCompile(`([0-9a-f]{32}) : .* \(RUNNING\)`).FindStringSubmatch(o)
		if err != nil || m == nil {
			return false
		}
		job = m[1]
		return true
	})

	if o, err := r.start(ctx, append(append([]string{"list", "-r"}, session...), restTLS[:3]...)...).wait(); err == nil || strings.Contains(o, job) {
		t.Errorf("sluice list without a client certificate (security.ssl.rest.authentication-enabled off in the CLI) succeeded:\n%s", o)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	for _, a := range []struct {
		name, scheme string
		client       *http.Client
	}{
		{"plain HTTP", "http", &http.Client{Timeout: 30 * time.Second}},
		{"TLS without a certificate", "https", &http.Client{Timeout: 30 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}},
	} {
		for _, req := range []struct{ method, path string }{{http.MethodPost, "/jobs"}, {http.MethodDelete, "/cluster"}, {http.MethodGet, "/jobs/overview"}} {
			hr, err := http.NewRequestWithContext(ctx, req.method, a.scheme+"://"+addr+req.path, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := a.client.Do(hr)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode < 400 {
					t.Errorf("%s: %s %s: %s, want refused", a.name, req.method, req.path, resp.Status)
				}
			}
		}
	}
	succeeded(t, p, appID)
	checkExactlyOnce(t, r.fs, out, n, keys)
}
