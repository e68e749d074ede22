// Package fnapi hosts the Beam Fn API services a runner offers its SDK
// harnesses — Control (with GetProcessBundleDescriptor), Data, State,
// Logging and Provision — on one gRPC endpoint, and drives a connected
// harness: Worker.ProcessBundle sends a bundle's instruction and input and
// collects its outputs.
//
// A harness is started by asking an external worker pool
// (BeamFnExternalWorkerPool, which the Python SDK runs for LOOPBACK) to
// start a worker with this server's endpoints; it connects with its
// worker ID in the "worker_id" gRPC metadata.
package fnapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// ErrWorkerGone is wrapped by the errors of bundles whose harness
// disconnected or was stopped.
var ErrWorkerGone = errors.New("fnapi: SDK harness disconnected")

// BundleError is a bundle the harness failed, with its error text.
type BundleError struct {
	Worker      string
	Instruction string
	Message     string
}

func (e *BundleError) Error() string {
	return fmt.Sprintf("fnapi: SDK harness %s failed bundle %s: %s", e.Worker, e.Instruction, e.Message)
}

// maxChunk bounds the data of one Elements message (gRPC's default limit
// is 4 MiB).
const maxChunk = 1 << 20

// Server hosts the Fn API services.
type Server struct {
	log  *slog.Logger
	lis  net.Listener
	srv  *grpc.Server
	done chan struct{}
	err  error
	next atomic.Int64
	mu   struct {
		sync.Mutex
		workers     map[string]*Worker
		descriptors map[string]*fnpb.ProcessBundleDescriptor
		// states serves the state requests of bundles in flight, by
		// instruction: a harness's state channel need not carry its
		// worker ID.
		states map[string]StateFunc
	}
}

// StateFunc answers a bundle's state request (a side input's values).
// It runs on the state stream's goroutine while the bundle is in flight.
type StateFunc func(*fnpb.StateRequest) *fnpb.StateResponse

// SDKKeepalive lets a Beam SDK keep its idle connections alive with pings
// (the Python SDK's come every 20 s, the Go SDK's channels' as gRPC-Go's
// allow, every 10 s at most): gRPC's default policy allows one every 5
// minutes and ends a connection, with every stream on it, at the third
// early ping, so a job quiet for a minute lost its state stream.
func SDKKeepalive() grpc.ServerOption {
	return grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true})
}

// Listen starts the services on addr ("localhost:0" for any port).
func Listen(addr string, log *slog.Logger) (*Server, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fnapi: listening on %s: %w", addr, err)
	}
	s := &Server{log: log, lis: lis, done: make(chan struct{})}
	s.mu.workers = map[string]*Worker{}
	s.mu.descriptors = map[string]*fnpb.ProcessBundleDescriptor{}
	s.mu.states = map[string]StateFunc{}
	s.srv = grpc.NewServer(grpc.MaxRecvMsgSize(64<<20), grpc.MaxSendMsgSize(64<<20), SDKKeepalive())
	fnpb.RegisterBeamFnControlServer(s.srv, control{s: s})
	fnpb.RegisterBeamFnDataServer(s.srv, data{s: s})
	fnpb.RegisterBeamFnStateServer(s.srv, state{s: s})
	fnpb.RegisterBeamFnLoggingServer(s.srv, logging{s: s})
	fnpb.RegisterProvisionServiceServer(s.srv, provision{s: s})
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			s.err = err
		}
	}()
	return s, nil
}

// Endpoint is the address harnesses connect to.
func (s *Server) Endpoint() string { return s.lis.Addr().String() }

// Descriptor is this server as an ApiServiceDescriptor.
func (s *Server) Descriptor() *pipepb.ApiServiceDescriptor {
	return &pipepb.ApiServiceDescriptor{Url: s.Endpoint()}
}

// Close stops the services, ending every harness's streams.
func (s *Server) Close() error {
	s.mu.Lock()
	for _, w := range s.mu.workers {
		w.stop(ErrWorkerGone)
	}
	s.mu.Unlock()
	s.srv.Stop()
	<-s.done
	return s.err
}

// RegisterDescriptor makes a bundle descriptor available to harnesses.
func (s *Server) RegisterDescriptor(d *fnpb.ProcessBundleDescriptor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.descriptors[d.GetId()] = d
}

// NewWorker registers a harness expected to connect as id.
func (s *Server) NewWorker(id string, info *fnpb.ProvisionInfo) *Worker {
	w := &Worker{
		id: id, srv: s, info: info, log: s.log.With("worker", id),
		connected: make(chan struct{}), dataReady: make(chan struct{}), gone: make(chan struct{}),
	}
	w.mu.pending = map[string]chan *fnpb.InstructionResponse{}
	w.mu.collectors = map[string]*collector{}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.workers[id] = w
	return w
}

// Forget drops a worker's registration and stops it.
func (s *Server) Forget(w *Worker) {
	w.stop(ErrWorkerGone)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.mu.workers, w.id)
}

func (s *Server) worker(ctx context.Context) (*Worker, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	ids := md.Get("worker_id")
	if len(ids) != 1 {
		return nil, status.Error(codes.InvalidArgument, "fnapi: a harness must send its worker_id in the gRPC metadata")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.mu.workers[ids[0]]
	if w == nil {
		return nil, status.Errorf(codes.NotFound, "fnapi: no worker %q is expected", ids[0])
	}
	return w, nil
}

// Worker is one SDK harness.
type Worker struct {
	id   string
	srv  *Server
	info *fnpb.ProvisionInfo
	log  *slog.Logger

	connected chan struct{} // closed when the control stream opened
	dataReady chan struct{} // closed when the data stream opened
	gone      chan struct{} // closed once by stop
	goneErr   error
	stopOnce  sync.Once
	ctlMu     sync.Mutex // serialises control sends
	dataMu    sync.Mutex // serialises data sends
	mu        struct {
		sync.Mutex
		control    fnpb.BeamFnControl_ControlServer
		data       fnpb.BeamFnData_DataServer
		pending    map[string]chan *fnpb.InstructionResponse
		collectors map[string]*collector
	}
}

// ID is the worker's ID.
func (w *Worker) ID() string { return w.id }

func (w *Worker) stop(err error) {
	w.stopOnce.Do(func() {
		w.goneErr = err
		close(w.gone)
	})
}

// Stop ends the harness's streams; bundles in flight fail.
func (w *Worker) Stop() { w.stop(ErrWorkerGone) }

// WaitConnected waits until the harness opened its control stream.
func (w *Worker) WaitConnected(ctx context.Context) error {
	select {
	case <-w.connected:
		return nil
	case <-w.gone:
		return w.goneErr
	case <-ctx.Done():
		return fmt.Errorf("fnapi: waiting for SDK harness %s to connect: %w", w.id, ctx.Err())
	}
}

// Timers are a bundle's timers: Families the (transform, family) pairs of
// its descriptor, In the encoded timers to fire, Out (filled by
// ProcessBundle) the timers the bundle set.
type Timers struct {
	Families [][2]string
	In       map[[2]string][]byte
	Out      map[[2]string][]byte
}

func timerStream(tf [2]string) string { return "timers\x00" + tf[0] + "\x00" + tf[1] }

// collector gathers a bundle's output data by transform.
type collector struct {
	timers map[[2]string][]byte
	data   map[string][]byte
	open   map[string]bool // outputs without their is_last yet
	done   chan struct{}   // closed when open is empty
}

// ProcessBundle runs one bundle of the descriptor: the input data
// (concatenated encoded elements) goes to the data source transform
// input, and the data each sink transform of outputs received is
// returned. It returns once the harness answered and every output ended.
//
// state, if not nil, answers the bundle's state requests; metrics, if not
// nil, gets the bundle's monitoring infos.
//
// The residuals are what the harness did not process (a splittable
// DoFn's checkpoint): the caller runs them in later bundles.
func (w *Worker) ProcessBundle(ctx context.Context, descriptor, input string, data []byte, outputs []string, state StateFunc, metrics func([]*pipepb.MonitoringInfo), timers *Timers) (map[string][]byte, []*fnpb.DelayedBundleApplication, error) {
	inst := "inst" + strconv.FormatInt(w.srv.next.Add(1), 10)
	col := &collector{data: map[string][]byte{}, timers: map[[2]string][]byte{}, open: map[string]bool{}, done: make(chan struct{})}
	for _, o := range outputs {
		col.open[o] = true
	}
	if timers != nil {
		for _, tf := range timers.Families {
			col.open[timerStream(tf)] = true
		}
	}
	if len(col.open) == 0 {
		close(col.done)
	}
	resp := make(chan *fnpb.InstructionResponse, 1)
	w.mu.Lock()
	ctl := w.mu.control
	w.mu.pending[inst] = resp
	w.mu.collectors[inst] = col
	w.mu.Unlock()
	if state != nil {
		w.srv.mu.Lock()
		w.srv.mu.states[inst] = state
		w.srv.mu.Unlock()
		defer func() {
			w.srv.mu.Lock()
			delete(w.srv.mu.states, inst)
			w.srv.mu.Unlock()
		}()
	}
	defer func() {
		w.mu.Lock()
		delete(w.mu.pending, inst)
		delete(w.mu.collectors, inst)
		w.mu.Unlock()
	}()
	if ctl == nil {
		return nil, nil, fmt.Errorf("fnapi: SDK harness %s is not connected", w.id)
	}
	w.ctlMu.Lock()
	err := ctl.Send(&fnpb.InstructionRequest{
		InstructionId: inst,
		Request:       &fnpb.InstructionRequest_ProcessBundle{ProcessBundle: &fnpb.ProcessBundleRequest{ProcessBundleDescriptorId: descriptor}},
	})
	w.ctlMu.Unlock()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: sending bundle %s to %s: %v", ErrWorkerGone, inst, w.id, err)
	}
	// The harness opens its data stream when it first reads a descriptor.
	select {
	case <-w.dataReady:
	case <-w.gone:
		return nil, nil, w.goneErr
	case r := <-resp:
		if r.GetError() != "" {
			return nil, nil, &BundleError{Worker: w.id, Instruction: inst, Message: r.GetError()}
		}
		return nil, nil, fmt.Errorf("fnapi: SDK harness %s finished bundle %s before reading its input", w.id, inst)
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	if err := w.sendData(inst, input, data, timers); err != nil {
		return nil, nil, err
	}
	var r *fnpb.InstructionResponse
	select {
	case r = <-resp:
	case <-w.gone:
		return nil, nil, fmt.Errorf("bundle %s: %w", inst, w.goneErr)
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	if r.GetError() != "" {
		return nil, nil, &BundleError{Worker: w.id, Instruction: inst, Message: r.GetError()}
	}
	if metrics != nil {
		metrics(r.GetProcessBundle().GetMonitoringInfos())
	}
	select {
	case <-col.done:
	case <-w.gone:
		return nil, nil, fmt.Errorf("bundle %s outputs: %w", inst, w.goneErr)
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	if r.GetProcessBundle().GetRequiresFinalization() {
		// The outputs are with the engine: let the DoFns finalize.
		if err := w.finalize(ctx, inst); err != nil {
			return nil, nil, err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if timers != nil {
		timers.Out = col.timers
	}
	return col.data, r.GetProcessBundle().GetResidualRoots(), nil
}

// finalize sends FinalizeBundle for a bundle and waits for the answer.
func (w *Worker) finalize(ctx context.Context, bundle string) error {
	inst := "inst" + strconv.FormatInt(w.srv.next.Add(1), 10)
	resp := make(chan *fnpb.InstructionResponse, 1)
	w.mu.Lock()
	ctl := w.mu.control
	w.mu.pending[inst] = resp
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.mu.pending, inst)
		w.mu.Unlock()
	}()
	w.ctlMu.Lock()
	err := ctl.Send(&fnpb.InstructionRequest{
		InstructionId: inst,
		Request:       &fnpb.InstructionRequest_FinalizeBundle{FinalizeBundle: &fnpb.FinalizeBundleRequest{InstructionId: bundle}},
	})
	w.ctlMu.Unlock()
	if err != nil {
		return fmt.Errorf("%w: finalizing bundle %s on %s: %v", ErrWorkerGone, bundle, w.id, err)
	}
	select {
	case r := <-resp:
		if r.GetError() != "" {
			return &BundleError{Worker: w.id, Instruction: bundle, Message: "finalization: " + r.GetError()}
		}
		return nil
	case <-w.gone:
		return fmt.Errorf("finalizing bundle %s: %w", bundle, w.goneErr)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *Worker) sendData(inst, transform string, data []byte, timers *Timers) error {
	w.mu.Lock()
	ds := w.mu.data
	w.mu.Unlock()
	w.dataMu.Lock()
	defer w.dataMu.Unlock()
	for len(data) > 0 {
		n := min(len(data), maxChunk)
		if err := ds.Send(&fnpb.Elements{Data: []*fnpb.Elements_Data{{InstructionId: inst, TransformId: transform, Data: data[:n]}}}); err != nil {
			return fmt.Errorf("%w: sending bundle %s input to %s: %v", ErrWorkerGone, inst, w.id, err)
		}
		data = data[n:]
	}
	// The end of input comes in an element of its own: the harness drops
	// the data of an is_last element.
	if err := ds.Send(&fnpb.Elements{Data: []*fnpb.Elements_Data{{InstructionId: inst, TransformId: transform, IsLast: true}}}); err != nil {
		return fmt.Errorf("%w: ending bundle %s input to %s: %v", ErrWorkerGone, inst, w.id, err)
	}
	if timers == nil {
		return nil
	}
	// Every timer family the bundle reads ends, fired timers or not.
	for _, tf := range timers.Families {
		e := &fnpb.Elements{}
		if b := timers.In[tf]; len(b) > 0 {
			e.Timers = append(e.Timers, &fnpb.Elements_Timers{InstructionId: inst, TransformId: tf[0], TimerFamilyId: tf[1], Timers: b})
		}
		e.Timers = append(e.Timers, &fnpb.Elements_Timers{InstructionId: inst, TransformId: tf[0], TimerFamilyId: tf[1], IsLast: true})
		if err := ds.Send(e); err != nil {
			return fmt.Errorf("%w: sending bundle %s timers to %s: %v", ErrWorkerGone, inst, w.id, err)
		}
	}
	return nil
}

type control struct {
	fnpb.UnimplementedBeamFnControlServer
	s *Server
}

func (c control) Control(stream fnpb.BeamFnControl_ControlServer) error {
	w, err := c.s.worker(stream.Context())
	if err != nil {
		return err
	}
	w.mu.Lock()
	if w.mu.control != nil {
		w.mu.Unlock()
		return status.Errorf(codes.AlreadyExists, "fnapi: worker %s already has a control stream", w.id)
	}
	w.mu.control = stream
	w.mu.Unlock()
	close(w.connected)
	w.log.Debug("SDK harness connected")
	recvErr := make(chan error, 1)
	go func() {
		for {
			r, err := stream.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			w.mu.Lock()
			ch := w.mu.pending[r.GetInstructionId()]
			w.mu.Unlock()
			if ch != nil {
				ch <- r
			}
		}
	}()
	select {
	case err := <-recvErr:
		if errors.Is(err, io.EOF) {
			err = nil
		}
		w.stop(fmt.Errorf("%w: %s closed its control stream (%v)", ErrWorkerGone, w.id, err))
		return nil
	case <-w.gone:
		// Returning ends the stream; the harness shuts down.
		return nil
	}
}

func (c control) GetProcessBundleDescriptor(_ context.Context, r *fnpb.GetProcessBundleDescriptorRequest) (*fnpb.ProcessBundleDescriptor, error) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	d := c.s.mu.descriptors[r.GetProcessBundleDescriptorId()]
	if d == nil {
		return nil, status.Errorf(codes.NotFound, "fnapi: no bundle descriptor %q", r.GetProcessBundleDescriptorId())
	}
	return d, nil
}

type data struct {
	fnpb.UnimplementedBeamFnDataServer
	s *Server
}

func (d data) Data(stream fnpb.BeamFnData_DataServer) error {
	w, err := d.s.worker(stream.Context())
	if err != nil {
		return err
	}
	w.mu.Lock()
	first := w.mu.data == nil
	if first {
		w.mu.data = stream
	}
	w.mu.Unlock()
	if !first {
		return status.Errorf(codes.AlreadyExists, "fnapi: worker %s already has a data stream", w.id)
	}
	close(w.dataReady)
	recvErr := make(chan error, 1)
	go func() {
		for {
			e, err := stream.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			w.received(e)
		}
	}()
	select {
	case <-recvErr:
		return nil
	case <-w.gone:
		return nil
	}
}

func (w *Worker) received(e *fnpb.Elements) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range e.GetData() {
		col := w.mu.collectors[d.GetInstructionId()]
		if col == nil {
			w.log.Warn("data for an unknown bundle", "instruction", d.GetInstructionId(), "transform", d.GetTransformId())
			continue
		}
		col.data[d.GetTransformId()] = append(col.data[d.GetTransformId()], d.GetData()...)
		if d.GetIsLast() && col.open[d.GetTransformId()] {
			delete(col.open, d.GetTransformId())
			if len(col.open) == 0 {
				close(col.done)
			}
		}
	}
	for _, t := range e.GetTimers() {
		col := w.mu.collectors[t.GetInstructionId()]
		if col == nil {
			w.log.Warn("timers for an unknown bundle", "instruction", t.GetInstructionId(), "transform", t.GetTransformId())
			continue
		}
		tf := [2]string{t.GetTransformId(), t.GetTimerFamilyId()}
		col.timers[tf] = append(col.timers[tf], t.GetTimers()...)
		if k := timerStream(tf); t.GetIsLast() && col.open[k] {
			delete(col.open, k)
			if len(col.open) == 0 {
				close(col.done)
			}
		}
	}
}

type state struct {
	fnpb.UnimplementedBeamFnStateServer
	s *Server
}

func (st state) State(stream fnpb.BeamFnState_StateServer) error {
	for {
		r, err := stream.Recv()
		if err != nil {
			return nil
		}
		st.s.mu.Lock()
		fn := st.s.mu.states[r.GetInstructionId()]
		st.s.mu.Unlock()
		resp := &fnpb.StateResponse{Id: r.GetId(), Error: fmt.Sprintf("fnapi: no bundle %q in flight serves state", r.GetInstructionId())}
		if fn != nil {
			resp = fn(r)
			resp.Id = r.GetId()
		}
		if err := stream.Send(resp); err != nil {
			return nil
		}
	}
}

type logging struct {
	fnpb.UnimplementedBeamFnLoggingServer
	s *Server
}

func (l logging) Logging(stream fnpb.BeamFnLogging_LoggingServer) error {
	log := l.s.log
	if w, err := l.s.worker(stream.Context()); err == nil {
		log = w.log
	}
	for {
		list, err := stream.Recv()
		if err != nil {
			return nil
		}
		for _, e := range list.GetLogEntries() {
			level := slog.LevelInfo
			switch {
			case e.GetSeverity() >= fnpb.LogEntry_Severity_ERROR:
				level = slog.LevelError
			case e.GetSeverity() >= fnpb.LogEntry_Severity_WARN:
				level = slog.LevelWarn
			case e.GetSeverity() <= fnpb.LogEntry_Severity_DEBUG:
				level = slog.LevelDebug
			}
			log.Log(context.Background(), level, e.GetMessage(), "sdk", true, "transform", e.GetTransformId(), "instruction", e.GetInstructionId(), "trace", e.GetTrace())
		}
	}
}

type provision struct {
	fnpb.UnimplementedProvisionServiceServer
	s *Server
}

func (p provision) GetProvisionInfo(ctx context.Context, _ *fnpb.GetProvisionInfoRequest) (*fnpb.GetProvisionInfoResponse, error) {
	w, err := p.s.worker(ctx)
	if err != nil {
		return nil, err
	}
	return &fnpb.GetProvisionInfoResponse{Info: w.info}, nil
}

// StartWorker asks the external worker pool at pool to start a harness
// that connects to s as w.
func (s *Server) StartWorker(ctx context.Context, pool string, w *Worker, params map[string]string) error {
	cc, err := grpc.NewClient(pool, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("fnapi: worker pool %s: %w", pool, err)
	}
	defer cc.Close()
	ep := s.Descriptor()
	resp, err := fnpb.NewBeamFnExternalWorkerPoolClient(cc).StartWorker(ctx, &fnpb.StartWorkerRequest{
		WorkerId: w.id, ControlEndpoint: ep, LoggingEndpoint: ep, ProvisionEndpoint: ep, ArtifactEndpoint: ep, Params: params,
	})
	if err != nil {
		return fmt.Errorf("fnapi: starting a worker at pool %s (a LOOPBACK environment's pool runs in the submitting process, so the runner must run on the client's host): %w", pool, err)
	}
	if resp.GetError() != "" {
		return fmt.Errorf("fnapi: worker pool %s could not start worker %s: %s", pool, w.id, resp.GetError())
	}
	return nil
}

// StopWorker asks the pool to stop the harness (best effort: the harness
// also ends when its control stream does).
func StopWorker(ctx context.Context, pool, id string) error {
	cc, err := grpc.NewClient(pool, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("fnapi: worker pool %s: %w", pool, err)
	}
	defer cc.Close()
	resp, err := fnpb.NewBeamFnExternalWorkerPoolClient(cc).StopWorker(ctx, &fnpb.StopWorkerRequest{WorkerId: id})
	if err != nil {
		return fmt.Errorf("fnapi: stopping worker %s at pool %s: %w", id, pool, err)
	}
	if resp.GetError() != "" {
		return fmt.Errorf("fnapi: worker pool %s could not stop worker %s: %s", pool, id, resp.GetError())
	}
	return nil
}
