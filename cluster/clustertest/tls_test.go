package clustertest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluice/sluice/cluster/clusterpb"
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
	register := func(ctx context.Context, cc *grpc.ClientConn, id string) error {
		s, err := clusterpb.NewResourceManagerClient(cc).Connect(ctx)
		if err != nil {
			return err
		}
		if err := s.Send(&clusterpb.TaskManagerMessage{Msg: &clusterpb.TaskManagerMessage_Register{Register: &clusterpb.Register{
			TaskManagerId: id, Address: "127.0.0.1:1", Hostname: "impostor", Slots: 4, ResourceId: id}}}); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		_, err = s.Recv()
		return err
	}
	fetch := func(ctx context.Context, cc *grpc.ClientConn) ([]byte, error) {
		s, err := clusterpb.NewBlobsClient(cc).Get(ctx, &clusterpb.BlobRequest{Sha256: digest})
		if err != nil {
			return nil, err
		}
		var got bytes.Buffer
		for {
			ch, err := s.Recv()
			if errors.Is(err, io.EOF) {
				return got.Bytes(), nil
			}
			if err != nil {
				return got.Bytes(), err
			}
			got.Write(ch.GetData())
		}
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
	foreign := &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{otherCert}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
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
			if err := register(ctx, jm, "impostor"); err == nil {
				t.Error("registered a TaskManager")
			}
			if got, err := fetch(ctx, jm); err == nil || len(got) > 0 {
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
	if got, err := fetch(ctx, dial(jmAddr, tool.DialOptions())); err != nil || !bytes.Equal(got, bin) {
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
