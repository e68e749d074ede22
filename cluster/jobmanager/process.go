package jobmanager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	"google.golang.org/grpc"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/cluster/resourcemanager"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/rest"
)

// Options configure a JobManager process.
type Options struct {
	Conf *conf.Configuration
	Log  *slog.Logger
	// Driver acquires TaskManagers (default: standalone, a fixed set the
	// user starts).
	Driver resourcemanager.Driver
	// RPC and REST are listeners to serve on (default: listen on
	// jobmanager.rpc.address:jobmanager.rpc.port and
	// rest.bind-address:rest.port).
	RPC, REST net.Listener
	// RPCAddress is the address TaskManagers and workers dial (default:
	// jobmanager.rpc.address and the RPC listener's port).
	RPCAddress string
	// FileSystems resolves checkpoint, savepoint and HA URIs.
	FileSystems *fs.Resolver
	// WorkDir keeps job binaries without HA (default: a temporary
	// directory).
	WorkDir string
	// Ready, if set, is called once the JobManager serves, with the REST
	// address.
	Ready func(restAddr string)
}

// Run runs a standalone JobManager until ctx ends.
func Run(ctx context.Context, c *conf.Configuration, log *slog.Logger) error {
	return RunWith(ctx, Options{Conf: c, Log: log})
}

// RunWith runs a JobManager: the ResourceManager, the Dispatcher with its
// JobMasters, their gRPC services and the REST endpoint. Jobs left in the
// HA store by a previous JobManager are recovered first.
func RunWith(ctx context.Context, o Options) error {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Conf == nil {
		o.Conf = conf.New()
	}
	c, log := o.Conf, o.Log
	if o.Driver == nil {
		o.Driver = resourcemanager.NewStandalone(log)
	}
	if o.RPC == nil {
		addr := net.JoinHostPort(conf.Get(c, conf.JobManagerRPCAddress), strconv.Itoa(conf.Get(c, conf.JobManagerRPCPort)))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("jobmanager: listening on %s (jobmanager.rpc.address, jobmanager.rpc.port): %w", addr, err)
		}
		o.RPC = ln
	}
	defer o.RPC.Close()
	if o.RPCAddress == "" {
		_, port, _ := net.SplitHostPort(o.RPC.Addr().String())
		o.RPCAddress = net.JoinHostPort(conf.Get(c, conf.JobManagerRPCAddress), port)
	}
	if o.WorkDir == "" {
		d, err := os.MkdirTemp("", "sluice-jobmanager-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		o.WorkDir = d
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var d *Dispatcher
	rmCfg := resourcemanager.ConfigFrom(c)
	rmCfg.Logger = log
	rmCfg.OnTaskManagerLost = func(l resourcemanager.LostTaskManager) {
		log.Warn("TaskManager lost", "taskmanager", l.ID, "reason", l.Reason, "jobs", l.Jobs)
		if d != nil {
			d.TaskManagerLost(l.ID)
		}
	}
	rm, err := resourcemanager.New(rmCfg, o.Driver)
	if err != nil {
		return err
	}
	d, err = NewDispatcher(Config{Conf: c, Log: log, RPCAddress: o.RPCAddress, ResourceManager: rm,
		FileSystems: o.FileSystems, WorkDir: o.WorkDir})
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	clusterpb.RegisterResourceManagerServer(srv, rm)
	d.Register(srv)

	errs := make(chan error, 3)
	go func() { errs <- rm.Run(ctx) }()
	go func() { errs <- srv.Serve(o.RPC) }()

	rcfg := rest.ConfigFrom(c)
	rcfg.Log = log
	rcfg.UploadDir = o.WorkDir
	var rs *rest.Server
	backend := Backend{D: d, TMs: rmLister{rm}}
	if o.REST != nil {
		rs = rest.Serve(rcfg, backend, o.REST)
	} else {
		rs, err = rest.New(rcfg, backend)
	}
	if err != nil {
		srv.Stop()
		cancel()
		return err
	}
	if err := d.Recover(); err != nil {
		log.Error("recovering jobs from the HA store failed", "err", err)
	}
	log.Info("JobManager running", "rpc", o.RPCAddress, "rest", rs.Addr())
	if o.Ready != nil {
		o.Ready(rs.Addr().String())
	}
	select {
	case <-ctx.Done():
		err = nil
	case err = <-errs:
		if err != nil {
			err = fmt.Errorf("jobmanager: %w", err)
		}
	}
	shut, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()
	rs.Shutdown(shut)
	d.Close()
	cancel()
	srv.Stop()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// rmLister lists the ResourceManager's TaskManagers for the REST API.
type rmLister struct {
	rm *resourcemanager.ResourceManager
}

func (l rmLister) TaskManagerInfos(ctx context.Context) ([]rest.TaskManagerInfo, error) {
	tms, err := l.rm.TaskManagers(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", rest.ErrUnavailable, err)
	}
	out := make([]rest.TaskManagerInfo, 0, len(tms))
	for _, t := range tms {
		res := func(r resourcemanager.Resources) rest.ResourceProfile {
			return rest.ResourceProfile{CPUCores: r.CPUCores, TaskHeapMemory: int(r.MemoryBytes >> 20), ExtendedResources: map[string]float64{}}
		}
		free := resourcemanager.Resources{CPUCores: t.SlotResources.CPUCores * float64(t.SlotsFree), MemoryBytes: t.SlotResources.MemoryBytes * int64(t.SlotsFree)}
		out = append(out, rest.TaskManagerInfo{ID: t.ID, Path: t.Address, DataPort: -1, JMXPort: -1,
			TimeSinceLastHeartbeat: time.Since(t.LastHeartbeat).Milliseconds(), SlotsNumber: t.SlotsTotal, FreeSlots: t.SlotsFree,
			TotalResource: res(t.Resources), FreeResource: res(free)})
	}
	return out, nil
}
