package yarn

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/security/kerberos"
	"github.com/sluice/sluice/yarn/internal/ipc/ipctest"
	"github.com/sluice/sluice/yarn/internal/proto/yarnpb"
)

// These tests drive the clients' own logic (failover, response-id
// bookkeeping, resync, token roll-over) against ipctest, Sluice's fake IPC
// server, with scripted handlers. The real protocol behaviour is covered by
// the integration tests against a MiniYARNCluster.

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func fakeServer(t *testing.T, opts ipctest.Options) *ipctest.Server {
	t.Helper()
	s, err := ipctest.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestClientFailsOverFromStandby(t *testing.T) {
	standby := fakeServer(t, ipctest.Options{})
	standby.Handle(protocolClient, "getClusterMetrics", func(context.Context, *ipctest.Call) (proto.Message, error) {
		return nil, &ipctest.Exception{Class: string(hadoop.ErrStandby), Message: "ResourceManager rm1 is not Active!"}
	})
	active := fakeServer(t, ipctest.Options{})
	active.Handle(protocolClient, "getClusterMetrics", func(_ context.Context, call *ipctest.Call) (proto.Message, error) {
		if call.User != "alice" {
			return nil, errors.New("wrong user " + call.User)
		}
		return &yarnpb.GetClusterMetricsResponseProto{ClusterMetrics: &yarnpb.YarnClusterMetricsProto{NumNodeManagers: proto.Int32(3), NumActiveNms: proto.Int32(2)}}, nil
	})
	c, err := NewClient(ClientConfig{
		ResourceManagers: []string{standby.Addr(), active.Addr()},
		User:             "alice", Logger: testLogger(t), FailoverBackoff: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := c.GetClusterMetrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m.NodeManagers != 3 || m.Active != 2 {
		t.Errorf("metrics = %+v", m)
	}
	if c.CurrentResourceManager() != active.Addr() {
		t.Errorf("current RM = %s, want the active one", c.CurrentResourceManager())
	}
	// A non-failover error is returned at once, typed.
	active.Handle(protocolClient, "getApplicationReport", func(context.Context, *ipctest.Call) (proto.Message, error) {
		return nil, &ipctest.Exception{Class: string(ErrApplicationNotFound), Message: "Application with id 'application_1_0001' doesn't exist in RM."}
	})
	_, err = c.GetApplicationReport(context.Background(), ApplicationID{1, 1})
	if !errors.Is(err, ErrApplicationNotFound) {
		t.Fatalf("err = %v, want ErrApplicationNotFound", err)
	}
	if active.Calls() != 2 {
		t.Errorf("active RM saw %d calls, want 2 (no retry of a real error)", active.Calls())
	}
}

// TestClientKerberosFallbackToSimple: a client configured for a secure
// cluster (ConfigureKerberos) refuses a ResourceManager that asks it to fall
// back to SIMPLE, unless ipc.client.fallback-to-simple-auth-allowed is true.
func TestClientKerberosFallbackToSimple(t *testing.T) {
	tests := []struct {
		name        string
		fallback    string // ipc.client.fallback-to-simple-auth-allowed; "" unset
		wantConfErr bool
		wantRefused bool
	}{
		{name: "unset: refused", wantRefused: true},
		{name: "false: refused", fallback: "false", wantRefused: true},
		{name: "true: allowed", fallback: "true"},
		{name: "not a boolean", fallback: "sometimes", wantConfErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rm := fakeServer(t, ipctest.Options{SimpleOnly: true})
			rm.Handle(protocolClient, "getClusterMetrics", func(context.Context, *ipctest.Call) (proto.Message, error) {
				return &yarnpb.GetClusterMetricsResponseProto{ClusterMetrics: &yarnpb.YarnClusterMetricsProto{NumNodeManagers: proto.Int32(1)}}, nil
			})
			h := hadoop.NewConfiguration(nil)
			h.Set(hadoop.KeySecurityAuthentication, "kerberos")
			h.Set(KeyRMPrincipal, "rm/_HOST@EXAMPLE.COM")
			if tt.fallback != "" {
				h.Set(hadoop.KeyFallbackToSimpleAuthAllowed, tt.fallback)
			}
			cfg := ClientConfig{ResourceManagers: []string{rm.Addr()}, User: "alice", Logger: testLogger(t)}
			// The server never asks for a ticket.
			err := ConfigureKerberos(&cfg, h, &kerberos.Login{})
			if tt.wantConfErr {
				if !errors.Is(err, hadoop.ErrBadConfig) || !strings.Contains(err.Error(), hadoop.KeyFallbackToSimpleAuthAllowed) {
					t.Fatalf("ConfigureKerberos: err = %v, want ErrBadConfig naming the key", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c, err := NewClient(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.GetClusterMetrics(context.Background())
			if tt.wantRefused {
				if !errors.Is(err, ErrFallbackToSimple) || !strings.Contains(err.Error(), rm.Addr()) || !strings.Contains(err.Error(), hadoop.KeyFallbackToSimpleAuthAllowed) {
					t.Fatalf("err = %v, want ErrFallbackToSimple naming %s and %s", err, rm.Addr(), hadoop.KeyFallbackToSimpleAuthAllowed)
				}
				if rm.Accepted() != 1 || rm.Calls() != 0 {
					t.Errorf("RM accepted %d connections, ran %d calls; want 1 (no retry) and 0", rm.Accepted(), rm.Calls())
				}
				return
			}
			if err != nil {
				t.Fatalf("with the fallback allowed: %v", err)
			}
		})
	}
}

// TestSubmitApplicationPriority: a submission without a priority sends no
// PriorityProto (the queue's default applies); an explicit one, 0 included,
// is sent.
func TestSubmitApplicationPriority(t *testing.T) {
	p := func(v Priority) *Priority { return &v }
	tests := []struct {
		name     string
		priority *Priority
		want     *int32 // nil: no priority field on the wire
	}{
		{name: "unset", priority: nil, want: nil},
		{name: "zero", priority: p(0), want: proto.Int32(0)},
		{name: "five", priority: p(5), want: proto.Int32(5)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rm := fakeServer(t, ipctest.Options{})
			got := make(chan *yarnpb.ApplicationSubmissionContextProto, 1)
			rm.Handle(protocolClient, "submitApplication", func(_ context.Context, call *ipctest.Call) (proto.Message, error) {
				var req yarnpb.SubmitApplicationRequestProto
				if err := proto.Unmarshal(call.Body, &req); err != nil {
					return nil, err
				}
				got <- req.GetApplicationSubmissionContext()
				return &yarnpb.SubmitApplicationResponseProto{}, nil
			})
			c, err := NewClient(ClientConfig{ResourceManagers: []string{rm.Addr()}, User: "alice", Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			err = c.SubmitApplication(context.Background(), &SubmissionContext{
				ID: ApplicationID{ClusterTimestamp: 1, ID: 1}, Name: "p", Priority: tt.priority,
				AMContainer: ContainerLaunchContext{Commands: []string{"true"}}, AMResource: Resource{MemoryMB: 128, VCores: 1},
			})
			if err != nil {
				t.Fatal(err)
			}
			sc := <-got
			switch {
			case tt.want == nil && sc.Priority != nil:
				t.Errorf("priority sent: %v, want none", sc.GetPriority())
			case tt.want != nil && (sc.Priority == nil || sc.GetPriority().Priority == nil):
				t.Errorf("no priority sent, want %d", *tt.want)
			case tt.want != nil && sc.GetPriority().GetPriority() != *tt.want:
				t.Errorf("priority %d sent, want %d", sc.GetPriority().GetPriority(), *tt.want)
			}
		})
	}
}

func TestClientConfigValidate(t *testing.T) {
	err := (&ClientConfig{ResourceManagers: []string{"nohost"}, MaxFailovers: -1}).Validate()
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{"nohost", "User is empty", "MaxFailovers"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// fakeScheduler scripts the ApplicationMasterProtocol side for AMClient
// tests and records what it was sent.
type fakeScheduler struct {
	mu            sync.Mutex
	registers     int
	expectedID    int32
	allocs        []*yarnpb.AllocateRequestProto
	users         []string
	forgetOnAlloc int // answer this allocate (1-based) with NotRegistered
	finishCalls   int
}

func TestAMClientProtocolState(t *testing.T) {
	tok1 := &hadoop.Token{Identifier: []byte("amrm-1"), Password: []byte("p1"), Kind: hadoop.KindAMRMToken}
	tok2 := &hadoop.Token{Identifier: []byte("amrm-2"), Password: []byte("p2"), Kind: hadoop.KindAMRMToken}
	nmTok := &hadoop.Token{Identifier: []byte("nm"), Password: []byte("nmp"), Kind: hadoop.KindNMToken}
	srv := fakeServer(t, ipctest.Options{RequireToken: true, Passwords: map[string]string{
		tok1.SASLUsername(): tok1.SASLPassword(), tok2.SASLUsername(): tok2.SASLPassword(),
	}})
	fs := &fakeScheduler{forgetOnAlloc: 3}
	app := ApplicationID{ClusterTimestamp: 77, ID: 5}
	attempt := ApplicationAttemptID{Application: app, Attempt: 1}
	srv.Handle(protocolAM, "registerApplicationMaster", func(_ context.Context, call *ipctest.Call) (proto.Message, error) {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		fs.registers++
		fs.expectedID = 0
		return &yarnpb.RegisterApplicationMasterResponseProto{MaximumCapability: resourceToProto(Resource{4096, 4}), Queue: proto.String("default")}, nil
	})
	srv.Handle(protocolAM, "allocate", func(_ context.Context, call *ipctest.Call) (proto.Message, error) {
		var req yarnpb.AllocateRequestProto
		if err := proto.Unmarshal(call.Body, &req); err != nil {
			return nil, err
		}
		fs.mu.Lock()
		defer fs.mu.Unlock()
		fs.allocs = append(fs.allocs, &req)
		fs.users = append(fs.users, call.User)
		n := len(fs.allocs)
		if n == fs.forgetOnAlloc {
			return nil, &ipctest.Exception{Class: string(ErrApplicationMasterNotRegistered), Message: "AM is not registered for known application attempt"}
		}
		if req.GetResponseId() != fs.expectedID {
			return nil, &ipctest.Exception{Class: string(ErrInvalidApplicationMasterRequest), Message: "response id mismatch"}
		}
		fs.expectedID++
		resp := &yarnpb.AllocateResponseProto{ResponseId: proto.Int32(fs.expectedID), NumClusterNodes: proto.Int32(2)}
		if n == 1 {
			c := &yarnpb.ContainerProto{
				Id:             containerIDToProto(ContainerID{Attempt: attempt, ID: 2}),
				NodeId:         nodeIDToProto(NodeID{"nm1", 4545}),
				Resource:       resourceToProto(Resource{1024, 1}),
				Priority:       &yarnpb.PriorityProto{Priority: proto.Int32(1)},
				ContainerToken: tokenToProto(&hadoop.Token{Identifier: []byte("ct"), Password: []byte("cp"), Kind: hadoop.KindContainerToken}),
			}
			resp.AllocatedContainers = append(resp.AllocatedContainers, c)
			resp.NmTokens = append(resp.NmTokens, &yarnpb.NMTokenProto{NodeId: nodeIDToProto(NodeID{"nm1", 4545}), Token: tokenToProto(nmTok)})
			resp.AmRmToken = tokenToProto(tok2)
		}
		if n == 2 {
			// As the real RM: the new token again, while the AM's
			// connection was authenticated with the old one.
			resp.AmRmToken = tokenToProto(tok2)
			resp.CompletedContainerStatuses = append(resp.CompletedContainerStatuses, &yarnpb.ContainerStatusProto{
				ContainerId: containerIDToProto(ContainerID{Attempt: attempt, ID: 2}),
				State:       yarnpb.ContainerStateProto_C_COMPLETE.Enum(),
				ExitStatus:  proto.Int32(ExitKilledByResourceManager),
				Diagnostics: proto.String("killed"),
			})
		}
		return resp, nil
	})
	srv.Handle(protocolAM, "finishApplicationMaster", func(context.Context, *ipctest.Call) (proto.Message, error) {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		fs.finishCalls++
		return &yarnpb.FinishApplicationMasterResponseProto{IsUnregistered: proto.Bool(fs.finishCalls >= 2)}, nil
	})

	ctx := context.Background()
	am, err := NewAMClient(AMClientConfig{Schedulers: []string{srv.Addr()}, AMRMToken: tok1, Attempt: attempt, Logger: testLogger(t), FinishPollInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer am.Close()

	if _, err := am.Allocate(ctx, AllocateRequest{}); !errors.Is(err, ErrNotRegistered) {
		t.Fatalf("allocate before register: %v", err)
	}
	reg, err := am.Register(ctx, RegisterRequest{Host: "am-host", RPCPort: 1234, TrackingURL: "http://am"})
	if err != nil {
		t.Fatal(err)
	}
	if reg.MaxCapability != (Resource{4096, 4}) {
		t.Errorf("max capability %v", reg.MaxCapability)
	}
	// Asks beyond the maximum never reach the RM.
	if _, err := am.Allocate(ctx, AllocateRequest{Asks: []ResourceRequest{{Priority: 1, ResourceName: AnyResource, Capability: Resource{8192, 1}, NumContainers: 1}}}); !errors.Is(err, ErrExceedsMaximum) {
		t.Fatalf("oversized ask: %v", err)
	}

	// 1: ask for two containers; get one, an NMToken and a rolled AMRMToken.
	ask := ResourceRequest{Priority: 1, ResourceName: AnyResource, Capability: Resource{1024, 1}, NumContainers: 2}
	r1, err := am.Allocate(ctx, AllocateRequest{Asks: []ResourceRequest{ask}, Progress: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if len(r1.Allocated) != 1 || r1.Allocated[0].ID.String() != "container_77_0005_01_000002" || r1.Allocated[0].Token == nil {
		t.Fatalf("allocated = %+v", r1.Allocated)
	}
	if !r1.AMRMTokenRolled || string(am.AMRMToken().Identifier) != "amrm-2" {
		t.Errorf("AMRMToken not rolled: %v", am.AMRMToken())
	}
	if tok, ok := am.NMToken("nm1:4545"); !ok || string(tok.Identifier) != "nm" {
		t.Errorf("NMToken = %v, %v", tok, ok)
	}
	if am.ResponseID() != 1 {
		t.Errorf("response id = %d, want 1", am.ResponseID())
	}

	// The rolled token authenticates the next connection.
	am.ipc.CloseConnections(am.rm.endpoint(0))

	// 2: one left outstanding; release the allocated one.
	ask.NumContainers = 1
	r2, err := am.Allocate(ctx, AllocateRequest{Asks: []ResourceRequest{ask}, Releases: []ContainerID{r1.Allocated[0].ID}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r2.Completed) != 1 || r2.Completed[0].ExitStatus != ExitKilledByResourceManager || r2.Completed[0].State != ContainerComplete {
		t.Fatalf("completed = %+v", r2.Completed)
	}
	if r2.AMRMTokenRolled {
		t.Error("the token already held reported as a new roll-over")
	}

	// 3: the RM "restarted": the client re-registers and re-sends its state.
	r3, err := am.Allocate(ctx, AllocateRequest{Releases: []ContainerID{{Attempt: attempt, ID: 9}}})
	if err != nil {
		t.Fatal(err)
	}
	if !r3.Resynced {
		t.Error("resync not reported")
	}

	fs.mu.Lock()
	if fs.registers != 2 {
		t.Errorf("registered %d times, want 2", fs.registers)
	}
	if len(fs.allocs) != 4 {
		t.Fatalf("%d allocate calls, want 4", len(fs.allocs))
	}
	resent := fs.allocs[3]
	if resent.GetResponseId() != 0 {
		t.Errorf("resent allocate has response id %d, want 0", resent.GetResponseId())
	}
	if len(resent.GetAsk()) != 1 || resent.GetAsk()[0].GetNumContainers() != 1 {
		t.Errorf("resent asks = %v, want the outstanding ask for 1", resent.GetAsk())
	}
	if len(resent.GetRelease()) != 1 || resent.GetRelease()[0].GetId() != 9 {
		t.Errorf("resent releases = %v, want only the unconfirmed release", resent.GetRelease())
	}
	if fs.users[0] != tok1.SASLUsername() || fs.users[1] != tok2.SASLUsername() {
		t.Errorf("users = %v, want the first token then the rolled one", fs.users[:2])
	}
	fs.mu.Unlock()
	if am.ResponseID() != 1 {
		t.Errorf("response id after resync = %d, want 1", am.ResponseID())
	}

	if err := am.Finish(ctx, FinishRequest{FinalStatus: FinalSucceeded, Diagnostics: "done"}); err != nil {
		t.Fatal(err)
	}
	fs.mu.Lock()
	if fs.finishCalls != 2 {
		t.Errorf("finish called %d times, want 2 (until unregistered)", fs.finishCalls)
	}
	fs.mu.Unlock()
}

func TestNMClientNeedsToken(t *testing.T) {
	nm, err := NewNMClient(NMClientConfig{Tokens: mapTokens{}})
	if err != nil {
		t.Fatal(err)
	}
	defer nm.Close()
	c := Container{ID: ContainerID{ID: 1}, Node: NodeID{"nm9", 1}, Token: &hadoop.Token{}}
	if err := nm.StartContainer(context.Background(), c, ContainerLaunchContext{Commands: []string{"true"}}); !errors.Is(err, ErrNoNMToken) {
		t.Fatalf("err = %v, want ErrNoNMToken", err)
	}
}

type mapTokens map[string]*hadoop.Token

func (m mapTokens) NMToken(n string) (*hadoop.Token, bool) { t, ok := m[n]; return t, ok }

func TestNMClientStartContainers(t *testing.T) {
	nmTok := &hadoop.Token{Identifier: []byte("nm-id"), Password: []byte("nm-pw"), Kind: hadoop.KindNMToken}
	srv := fakeServer(t, ipctest.Options{RequireToken: true, Passwords: map[string]string{nmTok.SASLUsername(): nmTok.SASLPassword()}})
	attempt := ApplicationAttemptID{Application: ApplicationID{1, 1}, Attempt: 1}
	ok1, bad := ContainerID{Attempt: attempt, ID: 2}, ContainerID{Attempt: attempt, ID: 3}
	srv.Handle(protocolNM, "startContainers", func(_ context.Context, call *ipctest.Call) (proto.Message, error) {
		var req yarnpb.StartContainersRequestProto
		if err := proto.Unmarshal(call.Body, &req); err != nil {
			return nil, err
		}
		if len(req.GetStartContainerRequest()) != 2 || string(req.GetStartContainerRequest()[0].GetContainerToken().GetIdentifier()) != "ct" {
			return nil, errors.New("unexpected request")
		}
		clc := req.GetStartContainerRequest()[0].GetContainerLaunchContext()
		if clc.GetCommand()[0] != "sleep 1" || clc.GetEnvironment()[0].GetKey() != "A" {
			return nil, errors.New("launch context lost")
		}
		return &yarnpb.StartContainersResponseProto{
			SucceededRequests: []*yarnpb.ContainerIdProto{containerIDToProto(ok1)},
			FailedRequests: []*yarnpb.ContainerExceptionMapProto{{
				ContainerId: containerIDToProto(bad),
				Exception:   &yarnpb.SerializedExceptionProto{ClassName: proto.String(string(ErrInvalidContainer)), Message: proto.String("bad token")},
			}},
		}, nil
	})
	host, port := splitAddr(t, srv.Addr())
	node := NodeID{host, port}
	nm, err := NewNMClient(NMClientConfig{Tokens: mapTokens{srv.Addr(): nmTok}, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer nm.Close()
	ct := &hadoop.Token{Identifier: []byte("ct"), Password: []byte("cp")}
	launch := ContainerLaunchContext{Commands: []string{"sleep 1"}, Environment: map[string]string{"A": "1"}}
	started, failed, err := nm.StartContainers(context.Background(), []StartRequest{
		{Container: Container{ID: ok1, Node: node, Token: ct}, Launch: launch},
		{Container: Container{ID: bad, Node: node, Token: ct}, Launch: launch},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(started) != 1 || started[0] != ok1 {
		t.Errorf("started = %v", started)
	}
	if !errors.Is(failed[bad], ErrInvalidContainer) {
		t.Errorf("failed = %v", failed)
	}
}

func splitAddr(t *testing.T, addr string) (string, int32) {
	n, err := ParseNodeID(addr)
	if err != nil {
		t.Fatal(err)
	}
	return n.Host, n.Port
}

func TestAMClientResendsUnacknowledgedChanges(t *testing.T) {
	tok := &hadoop.Token{Identifier: []byte("amrm"), Password: []byte("p"), Kind: hadoop.KindAMRMToken}
	srv := fakeServer(t, ipctest.Options{RequireToken: true, Passwords: map[string]string{tok.SASLUsername(): tok.SASLPassword()}})
	var mu sync.Mutex
	var allocs []*yarnpb.AllocateRequestProto
	srv.Handle(protocolAM, "registerApplicationMaster", func(context.Context, *ipctest.Call) (proto.Message, error) {
		return &yarnpb.RegisterApplicationMasterResponseProto{MaximumCapability: resourceToProto(Resource{4096, 4})}, nil
	})
	srv.Handle(protocolAM, "allocate", func(_ context.Context, call *ipctest.Call) (proto.Message, error) {
		var req yarnpb.AllocateRequestProto
		if err := proto.Unmarshal(call.Body, &req); err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		allocs = append(allocs, &req)
		if len(allocs) == 1 {
			return nil, &ipctest.Exception{Class: string(ErrInvalidResourceRequest), Message: "Invalid resource request"}
		}
		return &yarnpb.AllocateResponseProto{ResponseId: proto.Int32(req.GetResponseId() + 1)}, nil
	})
	am, err := NewAMClient(AMClientConfig{Schedulers: []string{srv.Addr()}, AMRMToken: tok, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer am.Close()
	ctx := context.Background()
	if _, err := am.Register(ctx, RegisterRequest{}); err != nil {
		t.Fatal(err)
	}
	ask := ResourceRequest{Priority: 2, ResourceName: AnyResource, Capability: Resource{512, 1}, NumContainers: 3}
	_, err = am.Allocate(ctx, AllocateRequest{Asks: []ResourceRequest{ask}, BlacklistAdditions: []string{"bad-node"}})
	if !errors.Is(err, ErrInvalidResourceRequest) {
		t.Fatalf("err = %v, want ErrInvalidResourceRequest", err)
	}
	if _, err := am.Allocate(ctx, AllocateRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := am.Allocate(ctx, AllocateRequest{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := allocs[1]; len(got.GetAsk()) != 1 || got.GetAsk()[0].GetNumContainers() != 3 || len(got.GetBlacklistRequest().GetBlacklistAdditions()) != 1 {
		t.Errorf("second allocate did not re-send the failed changes: %v", got)
	}
	if got := allocs[2]; len(got.GetAsk()) != 0 || got.GetBlacklistRequest() != nil || got.GetResponseId() != 1 {
		t.Errorf("third allocate re-sent acknowledged changes or wrong response id: %v", got)
	}
}

func TestNMClientStopContainers(t *testing.T) {
	nmTok := &hadoop.Token{Identifier: []byte("nm-id"), Password: []byte("nm-pw"), Kind: hadoop.KindNMToken}
	srv := fakeServer(t, ipctest.Options{RequireToken: true, Passwords: map[string]string{nmTok.SASLUsername(): nmTok.SASLPassword()}})
	attempt := ApplicationAttemptID{Application: ApplicationID{ClusterTimestamp: 42, ID: 7}, Attempt: 2}
	stopped := ContainerID{Attempt: attempt, ID: 2}
	unknown := ContainerID{Attempt: attempt, ID: 3}
	foreign := ContainerID{Attempt: attempt, ID: 4}
	var (
		mu    sync.Mutex
		calls []*ipctest.Call
		reqs  []*yarnpb.StopContainersRequestProto
		fail  bool // answer the whole call with an exception
	)
	srv.Handle(protocolNM, "stopContainers", func(_ context.Context, call *ipctest.Call) (proto.Message, error) {
		var req yarnpb.StopContainersRequestProto
		if err := proto.Unmarshal(call.Body, &req); err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, call)
		reqs = append(reqs, &req)
		if fail {
			return nil, &ipctest.Exception{Class: string(ErrNMNotYetReady), Message: "Rejecting new containers as NodeManager has not yet connected with ResourceManager"}
		}
		return &yarnpb.StopContainersResponseProto{
			SucceededRequests: []*yarnpb.ContainerIdProto{containerIDToProto(stopped)},
			FailedRequests: []*yarnpb.ContainerExceptionMapProto{
				{
					ContainerId: containerIDToProto(unknown),
					Exception: &yarnpb.SerializedExceptionProto{
						ClassName: proto.String(string(ErrContainerNotFound)),
						Message:   proto.String("Container " + unknown.String() + " is not handled by this NodeManager"),
					},
				},
				{
					ContainerId: containerIDToProto(foreign),
					Exception: &yarnpb.SerializedExceptionProto{
						ClassName: proto.String(string(ErrYarn)),
						Message:   proto.String("Unauthorized request to stop container"),
						Cause:     &yarnpb.SerializedExceptionProto{ClassName: proto.String("java.lang.SecurityException"), Message: proto.String("wrong application attempt")},
					},
				},
			},
		}, nil
	})
	host, port := splitAddr(t, srv.Addr())
	node := NodeID{host, port}
	nm, err := NewNMClient(NMClientConfig{Tokens: mapTokens{srv.Addr(): nmTok}, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer nm.Close()
	ctx := context.Background()

	// Nothing to stop: no call at all.
	if ok, failed, err := nm.StopContainers(ctx, node, nil); ok != nil || failed != nil || err != nil {
		t.Errorf("StopContainers(nil) = %v, %v, %v; want nothing", ok, failed, err)
	}
	// A node without an NMToken is refused before any connection.
	if _, _, err := nm.StopContainers(ctx, NodeID{"nm9", 1}, []ContainerID{stopped}); !errors.Is(err, ErrNoNMToken) {
		t.Errorf("stop on a node without NMToken: err = %v, want ErrNoNMToken", err)
	}
	if srv.Calls() != 0 {
		t.Fatalf("server saw %d calls before the first real stop, want 0", srv.Calls())
	}

	ok, failed, err := nm.StopContainers(ctx, node, []ContainerID{stopped, unknown, foreign})
	if err != nil {
		t.Fatal(err)
	}
	if len(ok) != 1 || ok[0] != stopped {
		t.Errorf("stopped = %v, want [%s]", ok, stopped)
	}
	if len(failed) != 2 {
		t.Fatalf("failed = %v, want two entries", failed)
	}
	if !errors.Is(failed[unknown], ErrContainerNotFound) {
		t.Errorf("failed[%s] = %v, want ErrContainerNotFound", unknown, failed[unknown])
	}
	var re *hadoop.RemoteError
	if !errors.As(failed[foreign], &re) || re.Class != string(ErrYarn) || !strings.Contains(re.Message, "wrong application attempt") {
		t.Errorf("failed[%s] = %#v, want a YarnException carrying its cause", foreign, failed[foreign])
	}

	mu.Lock()
	if len(reqs) != 1 {
		t.Fatalf("%d stopContainers calls, want 1", len(reqs))
	}
	var onWire []ContainerID
	for _, id := range reqs[0].GetContainerId() {
		onWire = append(onWire, containerIDFromProto(id))
	}
	if want := []ContainerID{stopped, unknown, foreign}; len(onWire) != len(want) || onWire[0] != want[0] || onWire[1] != want[1] || onWire[2] != want[2] {
		t.Errorf("request container ids = %v, want %v", onWire, want)
	}
	if id := reqs[0].GetContainerId()[0]; id.GetAppAttemptId().GetAttemptId() != 2 || id.GetAppId().GetClusterTimestamp() != 42 || id.GetAppId().GetId() != 7 {
		t.Errorf("wire container id = %v, want attempt 2 of application_42_0007", id)
	}
	if c := calls[0]; c.Auth != "TOKEN" || c.User != nmTok.SASLUsername() {
		t.Errorf("call authenticated as %s/%q, want TOKEN with the node's NMToken", c.Auth, c.User)
	}
	fail = true
	mu.Unlock()

	// A failure of the call as a whole is the error, typed; no per-container map.
	ok, failed, err = nm.StopContainers(ctx, node, []ContainerID{stopped})
	if !errors.Is(err, ErrNMNotYetReady) || ok != nil || failed != nil {
		t.Errorf("whole-call failure = %v, %v, %v; want ErrNMNotYetReady alone", ok, failed, err)
	}
}
