package clustertest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/cluster/clusterpb/clusterpbtest"
	"github.com/sluice/sluice/cluster/rpcauth"
	"github.com/sluice/sluice/internal/testwait"
)

// The attacks of issue 18 on a standalone cluster's gRPC ports, by a
// client built from cluster/clusterpb that reaches them but lacks the
// cluster's secret: it can neither register a TaskManager, nor fetch the
// job binary from the blob service, nor cancel a job on a TaskManager.
// Each is refused with UNAUTHENTICATED; the same client given the secret
// (the control) registers and fetches.
func TestInternalRPCsRefuseAPeerWithoutTheSecret(t *testing.T) {
	c := newCluster(t, 1)
	out := filepath.Join(c.dir, "out")
	c.mustSluice("run", "-d", "-m", c.rest(), "-p", "1", jobBin, "-out", out, "-n", "100000000", "-keys", "2", "-rate", "50")
	job := c.onlyJob(t)
	testwait.Eventually(t, 30*time.Second, "the job to run", func() bool { return c.onlyJob(t).State == "RUNNING" })
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
	b, err := httpGet(c.rest() + "/taskmanagers")
	if err != nil || json.Unmarshal(b, &tms) != nil || len(tms.TaskManagers) != 1 {
		t.Fatalf("GET /taskmanagers: %v %s", err, b)
	}
	secret, err := os.ReadFile(c.secretFile())
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(c.secretFile()); fi.Mode().Perm() != 0o600 {
		t.Errorf("the secret file has mode %v, want 0600", fi.Mode().Perm())
	}

	dial := func(addr string) *grpc.ClientConn {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return cc
	}
	jm := dial("127.0.0.1:" + strconv.Itoa(c.rpcPort))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	withSecret := metadata.AppendToOutgoingContext(ctx, rpcauth.MetadataKey, strings.TrimSpace(string(secret)))
	refused := func(what string, err error) {
		t.Helper()
		if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "security.internal.secret-file") {
			t.Errorf("%s without the secret: %v; want UNAUTHENTICATED naming security.internal.secret-file", what, err)
		}
	}

	refused("registering a TaskManager", clusterpbtest.RegisterTaskManager(ctx, jm, "impostor"))

	if got, err := clusterpbtest.FetchBlob(ctx, jm, digest); err == nil || len(got) > 0 {
		t.Errorf("fetched %d bytes of the job binary without the secret", len(got))
	} else {
		refused("fetching the job binary", err)
	}

	tm := dial(tms.TaskManagers[0].Path)
	_, err = clusterpb.NewTaskManagerClient(tm).CancelJob(ctx, &clusterpb.CancelJobRequest{JobId: job.ID, UpToAttempt: -1})
	refused("cancelling the job on its TaskManager", err)
	// Its log files, goroutines and metrics are for the JobManager only.
	tmc := clusterpb.NewTaskManagerClient(tm)
	_, err = tmc.ListLogs(ctx, &clusterpb.ListLogsRequest{})
	refused("listing the TaskManager's log files", err)
	if s, err := tmc.ReadLog(ctx, &clusterpb.ReadLogRequest{Kind: clusterpb.LogFileKind_LOG_FILE_MAIN}); err != nil {
		refused("reading the TaskManager's log", err)
	} else {
		m, err := s.Recv()
		if len(m.GetData()) > 0 || m.GetHeader() != nil {
			t.Errorf("read the TaskManager's log without the secret")
		}
		refused("reading the TaskManager's log", err)
	}
	_, err = tmc.ThreadDump(ctx, &clusterpb.ThreadDumpRequest{})
	refused("dumping the TaskManager's goroutines", err)
	_, err = tmc.ProcessMetrics(ctx, &clusterpb.ProcessMetricsRequest{})
	refused("reading the TaskManager's metrics", err)
	if withSecretMetrics, err := tmc.ProcessMetrics(withSecret, &clusterpb.ProcessMetricsRequest{}); err != nil || len(withSecretMetrics.GetMetrics()) == 0 {
		t.Errorf("the TaskManager's metrics with the secret: %v", err)
	}
	if st := c.onlyJob(t).State; st != "RUNNING" {
		t.Errorf("the job is %s after the refused cancellation, want RUNNING", st)
	}

	// The control: with the secret, the same client fetches the binary and
	// registers (so the refusals above are the secret's doing).
	if got, err := clusterpbtest.FetchBlob(withSecret, jm, digest); err != nil || !bytes.Equal(got, bin) {
		t.Errorf("fetching with the secret: %d bytes, %v; want the job binary", len(got), err)
	}
	regCtx, stopReg := context.WithCancel(withSecret)
	defer stopReg()
	go clusterpbtest.RegisterTaskManager(regCtx, jm, "registered-with-the-secret")
	c.waitTaskManagers(2)
	stopReg()

	c.mustSluice("cancel", "-m", c.rest(), job.ID)
}
