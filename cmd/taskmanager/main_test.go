package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/cluster/resourcemanager"
	"github.com/sluice/sluice/cluster/rpcauth"
	"github.com/sluice/sluice/internal/testwait"
)

const wait = 30 * time.Second

func TestExpandDynamic(t *testing.T) {
	got := expandDynamic([]string{"taskmanager", "-Da=b", "-D", "c=d", "-D=e=f", "--configDir", "-Dx"})
	want := []string{"taskmanager", "-D", "a=b", "-D", "c=d", "-D=e=f", "--configDir", "-D", "x"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestBadConfiguration(t *testing.T) {
	var out bytes.Buffer
	err := newApp(&out, func(string) string { return "" }).Run(expandDynamic([]string{"taskmanager", "-Dtaskmanager.numberOfTaskSlots=0", "-D", "taskmanager.rpc.port=1,x"}))
	if err == nil {
		t.Fatal("a bad configuration was accepted")
	}
	for _, w := range []string{"taskmanager.numberOfTaskSlots", "must be at least 1", "taskmanager.rpc.port", `"x" is not a port`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not say %q", err, w)
		}
	}
}

type tWriter struct {
	t  testing.TB
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *tWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.b.Write(p)
	w.mu.Unlock()
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func (w *tWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func build(t *testing.T, dir, pkg, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", path, pkg)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return path
}

// jobMaster accepts every slot offer and serves one binary.
type jobMaster struct {
	clusterpb.UnimplementedJobMasterServer
	clusterpb.UnimplementedBlobsServer
	binary []byte
	digest string
	offers chan *clusterpb.SlotOffer
}

func (jm *jobMaster) OfferSlots(_ context.Context, o *clusterpb.SlotOffer) (*clusterpb.SlotOfferResponse, error) {
	jm.offers <- o
	resp := &clusterpb.SlotOfferResponse{}
	for _, s := range o.Slots {
		resp.Accepted = append(resp.Accepted, s.AllocationId)
	}
	return resp, nil
}

func (jm *jobMaster) Get(r *clusterpb.BlobRequest, stream grpc.ServerStreamingServer[clusterpb.BlobChunk]) error {
	if r.Sha256 != jm.digest {
		return status.Errorf(codes.NotFound, "no blob %s", r.Sha256)
	}
	return stream.Send(&clusterpb.BlobChunk{Data: jm.binary})
}

// testSecret is the cluster's secret the test's servers require and its
// TaskManager process reads from secretFile.
var testSecret = rpcauth.NewSecret()

func writeSecret(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "internal-secret")
	if err := os.WriteFile(p, testSecret, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func serve(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(rpcauth.WithSecret(testSecret).ServerOptions()...)
	register(srv)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestProcess runs the taskmanager command as a process against a
// ResourceManager and a JobMaster of the test: it registers, runs a worker,
// stops it with itself on SIGTERM, and when killed outright its worker dies
// with it.
func TestProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	bin := t.TempDir()
	tmBin := build(t, bin, ".", "taskmanager")
	jobBin := build(t, bin, "../../cluster/taskmanager/testdata/fakejob", "fakejob")
	data, err := os.ReadFile(jobBin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	jm := &jobMaster{binary: data, digest: hex.EncodeToString(sum[:]), offers: make(chan *clusterpb.SlotOffer, 16)}
	jmAddr := serve(t, func(s *grpc.Server) {
		clusterpb.RegisterJobMasterServer(s, jm)
		clusterpb.RegisterBlobsServer(s, jm)
	})

	rmLogs := &tWriter{t: t}
	lost := make(chan resourcemanager.LostTaskManager, 4)
	rm, err := resourcemanager.New(resourcemanager.Config{
		HeartbeatInterval: 100 * time.Millisecond, HeartbeatTimeout: 2 * time.Second,
		Logger:            slog.New(slog.NewTextHandler(rmLogs, nil)),
		OnTaskManagerLost: func(l resourcemanager.LostTaskManager) { lost <- l },
	}, resourcemanager.NewStandalone(nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rmDone := make(chan error, 1)
	go func() { rmDone <- rm.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-rmDone })
	rmAddr := serve(t, func(s *grpc.Server) { clusterpb.RegisterResourceManagerServer(s, rm) })
	_, rmPort, _ := net.SplitHostPort(rmAddr)
	conn, err := grpc.NewClient(rmAddr, rpcauth.WithSecret(testSecret).DialOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rmClient := clusterpb.NewResourceManagerClient(conn)
	secretFile := writeSecret(t)

	for _, tc := range []struct {
		name   string
		signal syscall.Signal
		// container sets SLUICE_LOG_DIR as in a YARN container: the log
		// and the workers' output go there.
		container bool
	}{{"SIGTERM", syscall.SIGTERM, false}, {"SIGKILL", syscall.SIGKILL, false}, {"container", syscall.SIGTERM, true}} {
		t.Run(tc.name, func(t *testing.T) {
			workDir := t.TempDir()
			out := &tWriter{t: t}
			cmd := exec.Command(tmBin, "-Djobmanager.rpc.address=127.0.0.1", "-Djobmanager.rpc.port="+rmPort,
				"-Dtaskmanager.host=127.0.0.1", "-Dtaskmanager.numberOfTaskSlots=2",
				"-Dprocess.taskmanager.working-dir="+workDir, "-D", "heartbeat.interval=100 ms", "-Dheartbeat.timeout=2 s",
				"-Dsecurity.internal.secret-file="+secretFile)
			cmd.Stdout, cmd.Stderr = out, out
			workerLogDir := filepath.Join(workDir, "log")
			if tc.container {
				workerLogDir = t.TempDir()
				cmd.Env = append(os.Environ(), envLogDir+"="+workerLogDir)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			defer func() {
				cmd.Process.Kill()
				<-exited
			}()

			var tm resourcemanager.TaskManagerInfo
			testwait.Eventually(t, wait, "registered", func() bool {
				tms, err := rm.TaskManagers(context.Background())
				if err != nil || len(tms) != 1 {
					return false
				}
				tm = tms[0]
				return true
			})
			if tm.SlotsTotal != 2 || tm.PID != int64(cmd.Process.Pid) {
				t.Fatalf("registered %+v", tm)
			}
			job := "job-" + strings.ToLower(tc.name)
			if _, err := rmClient.DeclareSlots(context.Background(), &clusterpb.SlotDemand{JobId: job, JobMasterAddress: jmAddr, Slots: 1}); err != nil {
				t.Fatal(err)
			}
			defer rmClient.DeclareSlots(context.Background(), &clusterpb.SlotDemand{JobId: job})
			var o *clusterpb.SlotOffer
			select {
			case o = <-jm.offers:
			case <-time.After(wait):
				t.Fatal("no slot offer")
			}
			record := filepath.Join(t.TempDir(), "record")
			tmConn, err := grpc.NewClient(tm.Address, rpcauth.WithSecret(testSecret).DialOptions()...)
			if err != nil {
				t.Fatal(err)
			}
			defer tmConn.Close()
			if _, err := clusterpb.NewTaskManagerClient(tmConn).SubmitTasks(context.Background(), &clusterpb.SubmitTasksRequest{
				JobId: job, WorkerId: "w0", BinarySha256: jm.digest, BinarySize: int64(len(data)), JobMasterAddress: jmAddr,
				AllocationIds: []string{o.Slots[0].AllocationId}, Env: map[string]string{"FAKEJOB_OUT": record},
			}); err != nil {
				t.Fatal(err)
			}
			var rec struct {
				PID int `json:"pid"`
			}
			testwait.Eventually(t, wait, "worker record", func() bool {
				b, err := os.ReadFile(record)
				return err == nil && json.Unmarshal(b, &rec) == nil
			})
			for _, suffix := range []string{".out", ".err"} {
				if _, err := os.Stat(filepath.Join(workerLogDir, job+"-0-w0"+suffix)); err != nil {
					t.Errorf("worker output: %v", err)
				}
			}

			if err := cmd.Process.Signal(tc.signal); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				exited <- err
				if tc.signal == syscall.SIGTERM && err != nil {
					t.Errorf("taskmanager exited with %v after SIGTERM", err)
				}
			case <-time.After(wait):
				t.Fatalf("taskmanager did not exit after %v", tc.signal)
			}
			// Killed or stopped, its worker goes with it (SIGKILL: by the
			// kernel, Pdeathsig), and the ResourceManager notices at once.
			testwait.Eventually(t, wait, "worker gone", func() bool { return !alive(rec.PID) })
			select {
			case l := <-lost:
				if l.ID != tm.ID {
					t.Fatalf("lost %+v", l)
				}
			case <-time.After(wait):
				t.Fatal("the ResourceManager did not notice")
			}
			logs := out.String()
			if tc.container {
				if logs != "" {
					t.Errorf("in a container the TaskManager wrote to stderr:\n%s", logs)
				}
				b, err := os.ReadFile(filepath.Join(workerLogDir, logFileName))
				if err != nil {
					t.Fatal(err)
				}
				logs = string(b)
				t.Logf("%s:\n%s", logFileName, logs)
			}
			if tc.signal == syscall.SIGTERM && !strings.Contains(logs, `msg="worker stopped"`) {
				t.Error("the worker was not stopped by the TaskManager")
			}
		})
	}
}
