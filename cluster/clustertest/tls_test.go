package clustertest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/cluster/clusterpb/clusterpbtest"
	"github.com/sluice/sluice/cluster/rpcauth"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/security/tlsconf"
)

// testPKI is a CA and the keystores it issued, in files.
type testPKI struct {
	ca  string            // the CA's certificate: a truststore
	kss map[string]string // keystore files by name
}

// newTestPKI generates a CA in dir and a keystore (for 127.0.0.1 and
// localhost) for each name.
func newTestPKI(t *testing.T, dir, caName string, names ...string) testPKI {
	t.Helper()
	now := time.Now()
	ca, err := tlsconf.NewCA(caName, now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := testPKI{ca: filepath.Join(dir, "ca.pem"), kss: map[string]string{}}
	if err := os.WriteFile(p.ca, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		ks, err := ca.Issue(n, []string{"127.0.0.1", "localhost"}, now, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		p.kss[n] = filepath.Join(dir, n+".pem")
		if err := os.WriteFile(p.kss[n], ks, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// internalTLS are the -D options of a cluster's internal mutual TLS.
func internalTLS(p testPKI, keystore string) []string {
	return []string{"security.ssl.internal.enabled=true", "security.ssl.internal.keystore=" + p.kss[keystore],
		"security.ssl.internal.truststore=" + p.ca}
}

// The attacks of issue 18 on the gRPC ports of a standalone cluster with
// security.ssl.internal.enabled: a client built from cluster/clusterpb
// that reaches them, in plaintext, over TLS without a certificate, or with
// a certificate of another CA, can neither register a TaskManager, nor
// fetch the job binary from the blob service, nor cancel a job on a
// TaskManager. A client with a certificate of the cluster's CA (the
// control) fetches it. Meanwhile the cluster's own processes speak mutual
// TLS to each other: a job runs end to end, its records crossing a keyBy
// exchange between two TaskManagers.
func TestInternalMutualTLSRefusesPeersWithoutTheClustersCertificate(t *testing.T) {
	pkiDir := t.TempDir()
	mine := newTestPKI(t, filepath.Join(pkiDir, "cluster"), "the cluster's CA", "node", "tool")
	other := newTestPKI(t, filepath.Join(pkiDir, "other"), "another CA", "impostor")
	c := &cluster{t: t, dir: t.TempDir(), rpcPort: freePort(t), restPort: freePort(t), props: internalTLS(mine, "node")}
	c.boot(2)
	for _, p := range append(c.tms, c.jm) {
		b, _ := os.ReadFile(p.log)
		if !strings.Contains(string(b), "mutual TLS with "+mine.kss["node"]) {
			t.Errorf("%s does not say it authenticates with mutual TLS:\n%s", p.name, tail(string(b), 20))
		}
	}
	// The secret is not the authentication: no process created it.
	if _, err := os.Stat(c.secretFile()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("with internal TLS a secret file was created: %v", err)
	}

	// A job, at parallelism 2 on two TaskManagers of one slot, so that
	// its keyBy exchange crosses processes: exactly once, end to end.
	const n, keys = 6000, 6
	out := filepath.Join(c.dir, "out")
	res := c.mustSluice("run", "-m", c.rest(), "-p", "2", jobBin, "-out", out, "-n", strconv.Itoa(n), "-keys", strconv.Itoa(keys))
	if !strings.Contains(res, "done: 0 restarts") {
		t.Fatalf("sluice run:\n%s", res)
	}
	checkExactlyOnce(t, out, n, keys)
	for _, tm := range c.tms {
		if b, _ := os.ReadFile(tm.log); !strings.Contains(string(b), "worker started") {
			t.Errorf("%s ran no worker: the exchange did not cross TaskManagers", tm.name)
		}
	}

	// A running job to attack.
	c.mustSluice("run", "-d", "-m", c.rest(), "-p", "2", jobBin, "-out", filepath.Join(c.dir, "out2"), "-n", "100000000", "-keys", "2", "-rate", "50")
	job := c.runningJob(t)
	bin, err := os.ReadFile(jobBin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bin)
	digest := hex.EncodeToString(sum[:])
	var tms struct {
		TaskManagers []struct {
			Path string `json:"path"`
		} `json:"taskmanagers"`
	}
	if b, err := c.get("/taskmanagers"); err != nil || json.Unmarshal(b, &tms) != nil || len(tms.TaskManagers) != 2 {
		t.Fatalf("GET /taskmanagers: %v %s", err, b)
	}
	jmAddr := "127.0.0.1:" + strconv.Itoa(c.rpcPort)

	dial := func(addr string, opts []grpc.DialOption) *grpc.ClientConn {
		cc, err := grpc.NewClient(addr, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return cc
	}
	impostor, err := rpcauth.FromConf(conf.New().Set(conf.SSLInternalEnabled.Key(), "true").
		Set(conf.SSLInternalKeystore.Key(), other.kss["impostor"]).Set(conf.SSLInternalTruststore.Key(), other.ca), rpcauth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The attacker trusts any server: only its own certificate is
	// missing or foreign.
	anyServer := &tls.Config{InsecureSkipVerify: true}
	otherCert, err := tls.LoadX509KeyPair(other.kss["impostor"], other.kss["impostor"])
	if err != nil {
		t.Fatal(err)
	}
	foreign := &tls.Config{InsecureSkipVerify: true, GetClientCertificate: always(otherCert)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, a := range []struct {
		name string
		opts []grpc.DialOption
	}{
		{"plaintext", []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}},
		{"TLS without a certificate", []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(anyServer))}},
		{"TLS with a certificate of another CA", []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(foreign))}},
		{"a process of another cluster", impostor.DialOptions()},
	} {
		t.Run(a.name, func(t *testing.T) {
			jm := dial(jmAddr, a.opts)
			if err := clusterpbtest.RegisterTaskManager(ctx, jm, "impostor"); err == nil {
				t.Error("registered a TaskManager")
			}
			if got, err := clusterpbtest.FetchBlob(ctx, jm, digest); err == nil || len(got) > 0 {
				t.Errorf("fetched %d bytes of the job binary (%v)", len(got), err)
			}
			for _, tm := range tms.TaskManagers {
				_, err := clusterpb.NewTaskManagerClient(dial(tm.Path, a.opts)).CancelJob(ctx,
					&clusterpb.CancelJobRequest{JobId: job.ID, UpToAttempt: -1})
				if err == nil {
					t.Errorf("cancelled the job on TaskManager %s", tm.Path)
				}
			}
		})
	}
	if got := c.runningJob(t); got.ID != job.ID {
		t.Errorf("the running job is %s after the refused cancellations, want %s", got.ID, job.ID)
	}

	// The workers' data endpoints (the keyBy exchange) demand a
	// certificate of the cluster's CA too: a TLS handshake without one,
	// or with another CA's, is refused, and the cluster's is accepted.
	nodeCert, err := tls.LoadX509KeyPair(mine.kss["tool"], mine.kss["tool"])
	if err != nil {
		t.Fatal(err)
	}
	var dataPorts []string
	for _, pid := range c.workerPids() {
		for _, port := range listeningPorts(pid) {
			dataPorts = append(dataPorts, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		}
	}
	if len(dataPorts) < 2 {
		t.Fatalf("the job's workers listen on %v, want a data endpoint each", dataPorts)
	}
	t.Logf("the workers' data endpoints: %v", dataPorts)
	for _, addr := range dataPorts {
		for _, h := range []struct {
			name string
			cert *tls.Certificate
			ok   bool
		}{{"no certificate", nil, false}, {"another CA's", &otherCert, false}, {"the cluster's", &nodeCert, true}} {
			err := tlsHandshake(addr, h.cert)
			if h.ok != (err == nil) {
				t.Errorf("worker data endpoint %s, a client with %s certificate: %v, want ok=%v", addr, h.name, err, h.ok)
			}
		}
	}
	if b, err := c.get("/taskmanagers"); err != nil || json.Unmarshal(b, &tms) != nil || len(tms.TaskManagers) != 2 {
		t.Errorf("GET /taskmanagers after the attacks: %v %s; want the cluster's 2", err, b)
	}

	// The control: a client with a certificate of the cluster's CA
	// fetches the binary (so the refusals above are TLS's doing).
	tool, err := rpcauth.FromConf(conf.New().Set(conf.SSLInternalEnabled.Key(), "true").
		Set(conf.SSLInternalKeystore.Key(), mine.kss["tool"]).Set(conf.SSLInternalTruststore.Key(), mine.ca), rpcauth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := clusterpbtest.FetchBlob(ctx, dial(jmAddr, tool.DialOptions()), digest); err != nil || !bytes.Equal(got, bin) {
		t.Errorf("fetching with the cluster's certificate: %d bytes, %v; want the job binary", len(got), err)
	}
	c.mustSluice("cancel", "-m", c.rest(), job.ID)
}

// runningJob waits for a job of the cluster to be RUNNING and returns it.
func (c *cluster) runningJob(t *testing.T) jobOverview {
	t.Helper()
	var running jobOverview
	testwait.Eventually(t, 30*time.Second, "a RUNNING job in GET /jobs/overview", func() bool {
		var jobs struct {
			Jobs []jobOverview `json:"jobs"`
		}
		b, err := c.get("/jobs/overview")
		if err != nil || json.Unmarshal(b, &jobs) != nil {
			return false
		}
		for _, j := range jobs.Jobs {
			if j.State == "RUNNING" {
				running = j
				return true
			}
		}
		return false
	})
	return running
}

// restTLS are the -D options of a JobManager serving HTTPS that requires a
// client certificate of the CA.
func restTLS(p testPKI) []string {
	return []string{"security.ssl.rest.enabled=true", "security.ssl.rest.keystore=" + p.kss["rest"],
		"security.ssl.rest.truststore=" + p.ca, "security.ssl.rest.authentication-enabled=true"}
}

// writeClientConf writes a config.yaml for the CLI into a new directory
// and returns the directory.
func writeClientConf(t *testing.T, kv ...string) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	for i := 0; i < len(kv); i += 2 {
		b.WriteString(kv[i] + ": " + strconv.Quote(kv[i+1]) + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The attacks of issue 18 on the REST endpoint, with
// security.ssl.rest.enabled and security.ssl.rest.authentication-enabled:
// neither a plain HTTP client nor a TLS client without a certificate of
// the CA (none, or another CA's) can submit a job (POST /jobs) or shut the
// cluster down (DELETE /cluster). The sluice CLI, given the client
// keystore in its config.yaml, runs (attached and detached), lists,
// savepoints and cancels; without the keystore it is refused.
func TestRESTOverMutualTLS(t *testing.T) {
	pkiDir := t.TempDir()
	mine := newTestPKI(t, filepath.Join(pkiDir, "rest"), "the REST CA", "rest", "cli")
	other := newTestPKI(t, filepath.Join(pkiDir, "other"), "another CA", "impostor")
	cliCert, err := tls.LoadX509KeyPair(mine.kss["cli"], mine.kss["cli"])
	if err != nil {
		t.Fatal(err)
	}
	trusted, err := os.ReadFile(mine.ca)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(trusted)
	c := &cluster{t: t, dir: t.TempDir(), rpcPort: freePort(t), restPort: freePort(t),
		jmProps:    append(restTLS(mine), "execution.checkpointing.savepoint-dir=file://"+filepath.Join(t.TempDir(), "savepoints")),
		restScheme: "https",
		restClient: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cliCert}}}},
	}
	c.boot(2)

	cliConf := writeClientConf(t, "security.ssl.rest.enabled", "true", "security.ssl.rest.truststore", mine.ca,
		"security.ssl.rest.authentication-enabled", "true", "security.ssl.rest.keystore", mine.kss["cli"])
	cli := func(verb string, args ...string) string {
		t.Helper()
		return c.mustSluice(append([]string{verb, "--configDir", cliConf, "-m", c.rest()}, args...)...)
	}
	// Attached: the CLI and the job program it starts both speak HTTPS
	// with the client certificate.
	const n, keys = 3000, 3
	out := filepath.Join(c.dir, "out")
	if res := cli("run", "-p", "2", jobBin, "-out", out, "-n", strconv.Itoa(n), "-keys", strconv.Itoa(keys)); !strings.Contains(res, "done: 0 restarts") {
		t.Fatalf("sluice run over HTTPS:\n%s", res)
	}
	checkExactlyOnce(t, out, n, keys)
	// Detached, then list, savepoint and cancel.
	o := cli("run", append(append([]string{"-d", "-p", "2", "-D", "execution.checkpointing.dir=file://" + filepath.Join(c.dir, "ckpt")},
		checkpointed...), jobBin, "-out", filepath.Join(c.dir, "out2"), "-n", "100000000", "-keys", "2", "-rate", "100")...)
	m := regexp.MustCompile(`JobID ([0-9a-f]{32})`).FindStringSubmatch(o)
	if m == nil {
		t.Fatalf("no job id in the output of sluice run -d:\n%s", o)
	}
	job := m[1]
	testwait.Eventually(t, 30*time.Second, "the job to run", func() bool {
		o, _ := c.sluice("list", "--configDir", cliConf, "-r", "-m", c.rest())
		return strings.Contains(o, job) && strings.Contains(o, "RUNNING")
	})
	if sp := cli("savepoint", job); !strings.Contains(sp, "savepoint-") {
		t.Errorf("sluice savepoint over HTTPS did not name a savepoint:\n%s", sp)
	}

	// Without the client keystore the CLI is refused.
	noCert := writeClientConf(t, "security.ssl.rest.enabled", "true", "security.ssl.rest.truststore", mine.ca)
	if o, err := c.sluice("list", "--configDir", noCert, "-m", c.rest()); err == nil || strings.Contains(o, job) {
		t.Errorf("sluice list without a client certificate succeeded:\n%s", o)
	}
	if o, err := c.sluice("list", "-m", c.rest()); err == nil || strings.Contains(o, job) {
		t.Errorf("sluice list over plain HTTP succeeded:\n%s", o)
	}

	// The attackers: they trust any server; only their certificate is
	// missing or foreign.
	impostorCert, err := tls.LoadX509KeyPair(other.kss["impostor"], other.kss["impostor"])
	if err != nil {
		t.Fatal(err)
	}
	tlsClient := func(cert *tls.Certificate) *http.Client {
		cfg := &tls.Config{InsecureSkipVerify: true}
		if cert != nil {
			cfg.GetClientCertificate = always(*cert)
		}
		return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	shell := []byte("#!/bin/sh\ntouch " + filepath.Join(c.dir, "pwned") + "\n")
	for _, a := range []struct {
		name, scheme string
		client       *http.Client
	}{
		{"plain HTTP", "http", &http.Client{Timeout: 30 * time.Second}},
		{"TLS without a certificate", "https", tlsClient(nil)},
		{"TLS with a certificate of another CA", "https", tlsClient(&impostorCert)},
	} {
		t.Run(a.name, func(t *testing.T) {
			for _, r := range []struct {
				method, path string
				body         []byte
			}{
				{http.MethodPost, "/jobs", shell},
				{http.MethodDelete, "/cluster", nil},
			} {
				req, err := http.NewRequest(r.method, a.scheme+"://"+c.rest()+r.path, bytes.NewReader(r.body))
				if err != nil {
					t.Fatal(err)
				}
				resp, err := a.client.Do(req)
				if err != nil {
					t.Logf("%s %s: refused: %v", r.method, r.path, err)
				} else {
					t.Logf("%s %s: refused: %s", r.method, r.path, resp.Status)
					resp.Body.Close()
					if resp.StatusCode < 400 {
						t.Errorf("%s %s: %s, want refused", r.method, r.path, resp.Status)
					}
				}
			}
		})
	}
	// The cluster still runs, its job too, and nothing ran the script.
	select {
	case <-c.jm.done:
		t.Fatal("the JobManager ended after the refused DELETE /cluster")
	default:
	}
	if got := c.runningJob(t); got.ID != job {
		t.Errorf("the running job is %s, want %s", got.ID, job)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "pwned")); err == nil {
		t.Error("the attacker's script ran")
	}
	cli("cancel", job)
	testwait.Eventually(t, 30*time.Second, "the job to be cancelled", func() bool {
		o, _ := c.sluice("list", "--configDir", cliConf, "-a", "-m", c.rest())
		return regexp.MustCompile(job + `.*CANCELED|CANCELED.*` + job).MatchString(o)
	})
}

// always presents cert whatever CAs the server asks for (crypto/tls would
// otherwise send no certificate the server's CAs did not sign).
func always(cert tls.Certificate) func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
}

// tlsHandshake completes a TLS handshake with addr, presenting cert (none
// if nil) and trusting any server, and reads: a server requiring another
// certificate fails it (with TLS 1.3, at the first read).
func tlsHandshake(addr string, cert *tls.Certificate) error {
	cfg := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}
	if cert != nil {
		cfg.GetClientCertificate = always(*cert)
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	// An HTTP/2 client preface; the server answers with its SETTINGS.
	if _, err := conn.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")); err != nil {
		return err
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = conn.Read(make([]byte, 1))
	return err
}

// listeningPorts are the TCP ports process pid listens on, from its
// sockets' inodes in /proc/<pid>/fd and /proc/net/tcp{,6}.
func listeningPorts(pid int) []int {
	inodes := map[string]bool{}
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var ports []int
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, _ := os.ReadFile(table)
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			// sl local_address rem_address st ... inode (the 10th field).
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
				continue
			}
			if i := strings.LastIndexByte(f[1], ':'); i >= 0 {
				if p, err := strconv.ParseUint(f[1][i+1:], 16, 16); err == nil {
					ports = append(ports, int(p))
				}
			}
		}
	}
	return ports
}
