//go:build integration

package yarn_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/integration/minicluster"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/yarn"
)

// Integration tests against a real MiniYARNCluster (see
// integration/minicluster). Run with: go test -tags integration ./yarn/

func TestMain(m *testing.M) { os.Exit(minicluster.RunMain(m)) }

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

func logger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func user(t *testing.T) string {
	u, err := hadoop.CurrentUser(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func newClient(t *testing.T, c *minicluster.Cluster) *yarn.Client {
	t.Helper()
	// The client is configured the way the Sluice CLI does it: from the
	// cluster's configuration directory.
	conf := hadoop.NewConfiguration(os.Getenv)
	if err := conf.AddDir(c.ConfDir); err != nil {
		t.Fatal(err)
	}
	rms, err := conf.ResourceManagerAddresses()
	if err != nil {
		t.Fatal(err)
	}
	if len(rms) != 1 || rms[0].Address != c.ResourceManager {
		t.Fatalf("configuration gives RM %v, harness says %s", rms, c.ResourceManager)
	}
	cl, err := yarn.NewClientFromConfiguration(conf, user(t), logger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestClusterState(t *testing.T) {
	c := minicluster.Shared(t)
	cl := newClient(t, c)
	ctx := testCtx(t, time.Minute)

	m, err := cl.GetClusterMetrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.NodeManagers < 2 || m.Active < 2 {
		t.Fatalf("cluster metrics %+v, want at least 2 active NodeManagers", m)
	}
	nodes, err := cl.GetClusterNodes(ctx, yarn.NodeRunning)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != int(m.Active) {
		t.Errorf("%d running nodes, metrics say %d active", len(nodes), m.Active)
	}
	for _, n := range nodes {
		if n.State != yarn.NodeRunning || n.ID.Host == "" || n.ID.Port <= 0 || n.Capability.MemoryMB <= 0 {
			t.Errorf("node report %+v", n)
		}
	}
	q, err := cl.GetQueueInfo(ctx, "default", yarn.QueueInfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q.Name != "default" || q.State != yarn.QueueRunning {
		t.Errorf("default queue = %+v", q)
	}
	_, err = cl.GetApplicationReport(ctx, yarn.ApplicationID{ClusterTimestamp: 1, ID: 4242})
	if !errors.Is(err, yarn.ErrApplicationNotFound) {
		t.Errorf("report of unknown app: err = %v, want ErrApplicationNotFound", err)
	}
}

func TestSubmitListAndKill(t *testing.T) {
	c := minicluster.Shared(t)
	cl := newClient(t, c)
	ctx := testCtx(t, 2*time.Minute)

	na, err := cl.GetNewApplication(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if na.ID.IsZero() || na.MaxCapability.MemoryMB <= 0 || na.MaxCapability.VCores <= 0 {
		t.Fatalf("new application %+v", na)
	}
	tag := "sluice-it-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	sub := &yarn.SubmissionContext{
		ID: na.ID, Name: "sluice-sleep", Queue: "default", Type: "SLUICE-TEST", Tags: []string{tag},
		AMResource:     yarn.Resource{MemoryMB: 128, VCores: 1},
		MaxAppAttempts: 1,
		// An "AM" that never registers: the application stays ACCEPTED
		// until it is killed.
		AMContainer: yarn.ContainerLaunchContext{Commands: []string{"sleep 600"}, Tokens: amTokens(t)},
	}
	if err := cl.SubmitApplication(ctx, sub); err != nil {
		t.Fatal(err)
	}
	r, err := cl.WaitForState(ctx, na.ID, 100*time.Millisecond, yarn.StateAccepted, yarn.StateRunning)
	if err != nil {
		t.Fatal(err)
	}
	// Schedulers report the queue by leaf name or by full path.
	if r.Name != "sluice-sleep" || r.Type != "SLUICE-TEST" || (r.Queue != "default" && r.Queue != "root.default") || r.User != user(t) {
		t.Errorf("report = %+v", r)
	}

	apps, err := cl.GetApplications(ctx, yarn.ApplicationFilter{Tags: []string{tag}})
	if err != nil {
		t.Fatal(err)
	}
	if len(apps) != 1 || apps[0].ID != na.ID {
		t.Fatalf("by tag %q: %v, want exactly %s", tag, apps, na.ID)
	}
	apps, err = cl.GetApplications(ctx, yarn.ApplicationFilter{Types: []string{"SLUICE-TEST"}, States: []yarn.ApplicationState{yarn.StateAccepted, yarn.StateRunning}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, a := range apps {
		found = found || a.ID == na.ID
		if a.Type != "SLUICE-TEST" {
			t.Errorf("type filter returned %s of type %q", a.ID, a.Type)
		}
	}
	if !found {
		t.Errorf("type filter missed %s", na.ID)
	}
	apps, err = cl.GetApplications(ctx, yarn.ApplicationFilter{Types: []string{"NO-SUCH-TYPE"}, Tags: []string{tag}})
	if err != nil || len(apps) != 0 {
		t.Errorf("non-matching filter: %v, %v", apps, err)
	}

	if _, err := cl.ForceKillApplication(ctx, na.ID, "killed by the Sluice integration test"); err != nil {
		t.Fatal(err)
	}
	r, err = cl.WaitForState(ctx, na.ID, 100*time.Millisecond, yarn.StateKilled)
	if err != nil {
		t.Fatal(err)
	}
	if r.FinalStatus != yarn.FinalKilled || r.FinishTime.IsZero() {
		t.Errorf("killed report = %+v", r)
	}
}

func TestSubmitValidation(t *testing.T) {
	c := minicluster.Shared(t)
	cl := newClient(t, c)
	ctx := testCtx(t, time.Minute)
	na, err := cl.GetNewApplication(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base := yarn.SubmissionContext{
		ID: na.ID, Name: "bad", AMResource: yarn.Resource{MemoryMB: 128, VCores: 1},
		AMContainer: yarn.ContainerLaunchContext{Commands: []string{"true"}},
	}
	bad := base
	bad.Queue = "no-such-queue"
	err = cl.SubmitApplication(ctx, &bad)
	var qe *yarn.QueueError
	if !errors.As(err, &qe) || !errors.Is(err, yarn.ErrUnknownQueue) || qe.Queue != "no-such-queue" {
		t.Fatalf("unknown queue: err = %v, want a QueueError", err)
	}
	big := base
	big.AMResource = yarn.Resource{MemoryMB: na.MaxCapability.MemoryMB + 1, VCores: 1}
	if err := cl.SubmitApplication(ctx, &big); !errors.Is(err, yarn.ErrExceedsMaximum) || !errors.Is(err, yarn.ErrInvalidSubmission) {
		t.Fatalf("oversized AM: err = %v, want ErrExceedsMaximum", err)
	}
	if _, err := cl.GetApplicationReport(ctx, na.ID); !errors.Is(err, yarn.ErrApplicationNotFound) {
		t.Errorf("a refused submission reached the RM: %v", err)
	}
}

// TestUnmanagedAMFlow runs a whole ApplicationMaster from the test process:
// register with the AMRMToken from the report, allocate a container, start
// it through its NodeManager with the NMToken (localizing a file), see it
// complete; start a second one and stop it through its NodeManager;
// unregister.
func TestUnmanagedAMFlow(t *testing.T) {
	c := minicluster.Shared(t)
	cl := newClient(t, c)
	ctx := testCtx(t, 3*time.Minute)

	na, err := cl.GetNewApplication(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.SubmitApplication(ctx, &yarn.SubmissionContext{
		ID: na.ID, Name: "sluice-unmanaged-am", Queue: "default", Type: "SLUICE-TEST", UnmanagedAM: true, MaxAppAttempts: 1,
	}); err != nil {
		t.Fatal(err)
	}
	// The AMRMToken appears in the report once the attempt is launched.
	var report *yarn.ApplicationReport
	testwait.EventuallyNil(t, time.Minute, "an AMRMToken in the report", func() error {
		report, err = cl.GetApplicationReport(ctx, na.ID)
		if err != nil {
			t.Fatal(err)
		}
		if report.AMRMToken != nil {
			return nil
		}
		if report.State.Terminal() {
			t.Fatalf("no AMRMToken in report: %+v", report)
		}
		return fmt.Errorf("no AMRMToken in report: %+v", report)
	})
	if report.AMRMToken.Kind != hadoop.KindAMRMToken || !report.Unmanaged {
		t.Errorf("token %v, unmanaged %v", report.AMRMToken, report.Unmanaged)
	}

	am, err := yarn.NewAMClient(yarn.AMClientConfig{
		Schedulers: []string{c.Scheduler}, AMRMToken: report.AMRMToken, Attempt: report.CurrentAttempt, Logger: logger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer am.Close()
	reg, err := am.Register(ctx, yarn.RegisterRequest{Host: "localhost", RPCPort: 0, TrackingURL: ""})
	if err != nil {
		t.Fatal(err)
	}
	if reg.MaxCapability.MemoryMB <= 0 {
		t.Errorf("register response %+v", reg)
	}
	if r, err := cl.WaitForState(ctx, na.ID, 100*time.Millisecond, yarn.StateRunning); err != nil {
		t.Fatalf("after register: %v (%+v)", err, r)
	}

	// Registering the same attempt twice is refused, with a typed error.
	if _, err := am.Register(ctx, yarn.RegisterRequest{Host: "localhost"}); !errors.Is(err, yarn.ErrInvalidApplicationMasterRequest) {
		t.Errorf("second registration: err = %v, want ErrInvalidApplicationMasterRequest", err)
	}

	ask := yarn.ResourceRequest{Priority: 1, ResourceName: yarn.AnyResource, Capability: yarn.Resource{MemoryMB: 128, VCores: 1}, NumContainers: 1}
	var container *yarn.Container
	req := yarn.AllocateRequest{Asks: []yarn.ResourceRequest{ask}, Progress: 0.1}
	// Allocate is the AM's heartbeat: it is called until the RM answers.
	testwait.Eventually(t, 2*time.Minute, "a container allocated", func() bool {
		resp, err := am.Allocate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		req = yarn.AllocateRequest{Progress: 0.2}
		if len(resp.Allocated) > 0 {
			cc := resp.Allocated[0]
			container = &cc
			// Withdraw the ask now it is satisfied.
			ask.NumContainers = 0
			req.Asks = []yarn.ResourceRequest{ask}
			return true
		}
		return false
	})
	if container.Token == nil || container.Resource.MemoryMB < 128 {
		t.Fatalf("container %+v", container)
	}
	if _, ok := am.NMToken(container.Node.String()); !ok {
		t.Fatalf("no NMToken for %s", container.Node)
	}

	// A local file the NodeManager must localize into the working directory.
	dir := t.TempDir()
	data := filepath.Join(dir, "data.txt")
	if err := os.WriteFile(data, []byte("sluice"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(data)
	if err != nil {
		t.Fatal(err)
	}
	// Credentials travel as a token storage document in our protobuf
	// format; the NodeManager (Java) parses it and writes the container's
	// token file in Hadoop's Writable format, which the container copies out
	// for us to parse: both directions of the format against Hadoop's code.
	var creds hadoop.Credentials
	creds.AddToken("sluice-test", &hadoop.Token{Identifier: []byte{0, 1, 2, 250}, Password: []byte("pw"), Kind: "SLUICE_TEST", Service: "svc:1"})
	creds.AddSecret("sluice-secret", []byte("s3cr3t"))
	credBytes, err := creds.Marshal(hadoop.FormatProtobuf)
	if err != nil {
		t.Fatal(err)
	}
	tokensOut := filepath.Join(dir, "tokens.out")

	nm, err := yarn.NewNMClient(yarn.NMClientConfig{Tokens: am, Logger: logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer nm.Close()
	launch := yarn.ContainerLaunchContext{
		LocalResources: map[string]yarn.LocalResource{"data.txt": {
			URL: yarn.URL{Scheme: "file", Port: -1, File: data}, Size: fi.Size(), Timestamp: fi.ModTime().UnixMilli(),
			Type: yarn.ResourceFile, Visibility: yarn.VisibilityApplication,
		}},
		Environment: map[string]string{"SLUICE_EXPECT": "sluice", "SLUICE_TOKENS_OUT": tokensOut},
		Commands:    []string{`test "$(cat data.txt)" = "$SLUICE_EXPECT" && cp "$HADOOP_TOKEN_FILE_LOCATION" "$SLUICE_TOKENS_OUT"`},
		Tokens:      credBytes,
	}
	if err := nm.StartContainer(ctx, *container, launch); err != nil {
		t.Fatal(err)
	}
	statuses, failed, err := nm.GetContainerStatuses(ctx, container.Node, []yarn.ContainerID{container.ID})
	if err != nil || len(failed) != 0 || len(statuses) != 1 || statuses[0].ID != container.ID {
		t.Fatalf("container status: %v, %v, %v", statuses, failed, err)
	}

	var done *yarn.ContainerStatus
	// Allocate is the AM's heartbeat: it is called until the RM answers.
	testwait.Eventually(t, 2*time.Minute, "the container to complete", func() bool {
		resp, err := am.Allocate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		req = yarn.AllocateRequest{Progress: 0.5}
		for _, s := range resp.Completed {
			if s.ID == container.ID {
				s := s
				done = &s
			}
		}
		return done != nil
	})
	if done.ExitStatus != yarn.ExitSuccess || done.State != yarn.ContainerComplete {
		t.Fatalf("container ended with %s: %q", yarn.ExitStatusName(done.ExitStatus), done.Diagnostics)
	}
	written, err := hadoop.ReadTokenFile(tokensOut)
	if err != nil {
		t.Fatalf("the NodeManager's token file: %v", err)
	}
	if tok, ok := written.Token("sluice-test"); !ok || tok.Kind != "SLUICE_TEST" || tok.Service != "svc:1" || string(tok.Identifier) != "\x00\x01\x02\xfa" || string(tok.Password) != "pw" {
		t.Errorf("token in the NodeManager's file: %v, %v", tok, ok)
	}
	if sec, ok := written.Secret("sluice-secret"); !ok || string(sec) != "s3cr3t" {
		t.Errorf("secret in the NodeManager's file: %q, %v", sec, ok)
	}

	// A second container runs a long command; the AM stops it through
	// its NodeManager (ContainerManagementProtocol.stopContainers) and
	// the ResourceManager reports it killed by the ApplicationMaster.
	ask.NumContainers = 1
	req = yarn.AllocateRequest{Asks: []yarn.ResourceRequest{ask}, Progress: 0.6}
	var sleeper *yarn.Container
	// Allocate is the AM's heartbeat: it is called until the RM answers.
	testwait.Eventually(t, 2*time.Minute, "a container for the sleeper", func() bool {
		resp, err := am.Allocate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		req = yarn.AllocateRequest{Progress: 0.6}
		if len(resp.Allocated) > 0 {
			cc := resp.Allocated[0]
			sleeper = &cc
			ask.NumContainers = 0
			req.Asks = []yarn.ResourceRequest{ask}
			return true
		}
		return false
	})
	if err := nm.StartContainer(ctx, *sleeper, yarn.ContainerLaunchContext{Commands: []string{"sleep 600"}}); err != nil {
		t.Fatal(err)
	}
	stopped, stopFailed, err := nm.StopContainers(ctx, sleeper.Node, []yarn.ContainerID{sleeper.ID})
	if err != nil || len(stopFailed) != 0 || len(stopped) != 1 || stopped[0] != sleeper.ID {
		t.Fatalf("stopContainers: stopped %v, failed %v, err %v", stopped, stopFailed, err)
	}
	var killed *yarn.ContainerStatus
	// Allocate is the AM's heartbeat: it is called until the RM answers.
	testwait.Eventually(t, 2*time.Minute, "the stopped container to complete", func() bool {
		resp, err := am.Allocate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		req = yarn.AllocateRequest{Progress: 0.8}
		for _, s := range resp.Completed {
			if s.ID == sleeper.ID {
				s := s
				killed = &s
			}
		}
		return killed != nil
	})
	if killed.ExitStatus != yarn.ExitKilledByAppMaster {
		t.Errorf("the stopped container ended with %s (%q), want KILLED_BY_APPMASTER", yarn.ExitStatusName(killed.ExitStatus), killed.Diagnostics)
	}

	if err := am.Finish(ctx, yarn.FinishRequest{FinalStatus: yarn.FinalSucceeded, Diagnostics: "done"}); err != nil {
		t.Fatal(err)
	}
	r, err := cl.WaitForState(ctx, na.ID, 100*time.Millisecond, yarn.StateFinished)
	if err != nil {
		t.Fatal(err)
	}
	if r.FinalStatus != yarn.FinalSucceeded {
		t.Errorf("final status %s", r.FinalStatus)
	}
}

// amTokens is a token storage document in Hadoop's Writable format; the
// ResourceManager parses it at submission (and refuses the application if it
// cannot).
func amTokens(t *testing.T) []byte {
	var c hadoop.Credentials
	c.AddToken("sluice-test", &hadoop.Token{Identifier: []byte("id"), Password: []byte("pw"), Kind: "SLUICE_TEST", Service: "svc:1"})
	b, err := c.Marshal(hadoop.FormatWritable)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
