// Package jobservice is the Beam job API of the Sluice runner: a gRPC
// JobService (Prepare, Run, GetState and its stream, GetMessageStream,
// Cancel, GetJobs, GetPipeline, DescribePipelineOptions) and the
// artifact staging service (v2, the reverse stream the Python SDK
// stages through) on one endpoint. A prepared pipeline is translated at
// once, so what the runner cannot run fails Prepare naming the transform;
// Run runs it on the embedded engine through package runner. A job's
// lifecycle is the pure state machine Next.
package jobservice

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluice/sluice/internal/beam/fnapi"
	"github.com/sluice/sluice/internal/beam/runner"
	"github.com/sluice/sluice/internal/beam/translate"
)

// Options configure the service.
type Options struct {
	// Parallelism of a job's nodes unless its pipeline options set
	// sluice_parallelism (default 1).
	Parallelism int
	// BundleSize is the most elements per bundle unless the pipeline
	// options set sluice_bundle_size (default 1000).
	BundleSize int
	// Log receives the service's and its jobs' logs (default: discarded).
	Log *slog.Logger
}

// Service is a running job service.
type Service struct {
	opts   Options
	log    *slog.Logger
	lis    net.Listener
	srv    *grpc.Server
	fn     *fnapi.Server
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	served chan struct{}
	mu     struct {
		sync.Mutex
		jobs  map[string]*job
		order []string
		seq   int
	}
}

// Listen starts the job and artifact services on addr and the Fn API
// services harnesses connect to on the same host, any port.
func Listen(addr string, opts Options) (*Service, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("jobservice: listening on %s: %w", addr, err)
	}
	host, _, _ := net.SplitHostPort(lis.Addr().String())
	fn, err := fnapi.Listen(net.JoinHostPort(host, "0"), opts.Log.With("component", "fnapi"))
	if err != nil {
		lis.Close()
		return nil, err
	}
	s := &Service{opts: opts, log: opts.Log, lis: lis, fn: fn, served: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mu.jobs = map[string]*job{}
	s.srv = grpc.NewServer(grpc.MaxRecvMsgSize(256<<20), fnapi.SDKKeepalive())
	jobpb.RegisterJobServiceServer(s.srv, jobs{s: s})
	jobpb.RegisterArtifactStagingServiceServer(s.srv, staging{s: s})
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(lis)
	}()
	return s, nil
}

// Endpoint is the job service's address (--job_endpoint).
func (s *Service) Endpoint() string { return s.lis.Addr().String() }

// Close cancels the running jobs, waits for them and stops the services.
func (s *Service) Close() error {
	s.cancel()
	s.wg.Wait()
	s.srv.Stop()
	<-s.served
	return s.fn.Close()
}

type job struct {
	id, name string
	pipeline *pipepb.Pipeline
	plan     *translate.Plan
	metrics  *runner.Metrics
	options  *structpb.Struct
	mu       struct {
		sync.Mutex
		state     State
		events    []*jobpb.JobStateEvent
		messages  []*jobpb.JobMessage
		artifacts map[string]int // staged artifact -> bytes
		changed   chan struct{}  // closed and replaced on every change
		cancel    context.CancelFunc
	}
}

// applyLocked moves the job on by e and records the new state.
// REQUIRES: j.mu held.
func (j *job) applyLocked(e Event) error {
	next, err := Next(j.mu.state, e)
	if err != nil {
		return err
	}
	if next != j.mu.state {
		j.mu.state = next
		j.mu.events = append(j.mu.events, &jobpb.JobStateEvent{State: next, Timestamp: timestamppb.Now()})
		j.notifyLocked()
	}
	return nil
}

// REQUIRES: j.mu held.
func (j *job) notifyLocked() {
	close(j.mu.changed)
	j.mu.changed = make(chan struct{})
}

func (j *job) message(imp jobpb.JobMessage_MessageImportance, text string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.messageLocked(imp, text)
}

// REQUIRES: j.mu held.
func (j *job) messageLocked(imp jobpb.JobMessage_MessageImportance, text string) {
	j.mu.messages = append(j.mu.messages, &jobpb.JobMessage{
		MessageId: strconv.Itoa(len(j.mu.messages) + 1), Time: time.Now().UTC().Format(time.RFC3339Nano),
		Importance: imp, MessageText: text,
	})
	j.notifyLocked()
}

func (s *Service) job(id string) (*job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.mu.jobs[id]
	if j == nil {
		return nil, status.Errorf(codes.NotFound, "jobservice: no job %q", id)
	}
	return j, nil
}

type jobs struct {
	jobpb.UnimplementedJobServiceServer
	s *Service
}

var unsafeID = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

func (js jobs) Prepare(_ context.Context, r *jobpb.PrepareJobRequest) (*jobpb.PrepareJobResponse, error) {
	s := js.s
	plan, err := translate.Translate(r.GetPipeline())
	if err == nil {
		err = runner.CheckEnvironments(plan)
	}
	if err != nil {
		s.log.Warn("refused a pipeline", "job", r.GetJobName(), "err", err)
		return nil, status.Errorf(codes.InvalidArgument, "sluice: cannot run pipeline %q: %v", r.GetJobName(), err)
	}
	s.mu.Lock()
	s.mu.seq++
	name := unsafeID.ReplaceAllString(r.GetJobName(), "_")
	if name == "" {
		name = "job"
	}
	j := &job{id: fmt.Sprintf("%s-%d", name, s.mu.seq), name: r.GetJobName(), pipeline: r.GetPipeline(), plan: plan, options: r.GetPipelineOptions(), metrics: runner.NewMetrics()}
	j.mu.state = jobpb.JobState_STOPPED
	j.mu.events = []*jobpb.JobStateEvent{{State: jobpb.JobState_STOPPED, Timestamp: timestamppb.Now()}}
	j.mu.changed = make(chan struct{})
	j.mu.artifacts = map[string]int{}
	s.mu.jobs[j.id] = j
	s.mu.order = append(s.mu.order, j.id)
	s.mu.Unlock()
	stages := 0
	for _, n := range plan.Nodes {
		if n.Kind == translate.Stage {
			stages++
		}
	}
	s.log.Info("prepared a job", "job", j.id, "nodes", len(plan.Nodes), "stages", stages)
	return &jobpb.PrepareJobResponse{
		PreparationId:           j.id,
		ArtifactStagingEndpoint: &pipepb.ApiServiceDescriptor{Url: s.Endpoint()},
		StagingSessionToken:     j.id,
	}, nil
}

// intOption reads a positive integer pipeline option: under its plain
// name, the beam:option:NAME:v1 key the Python SDK sends, or among the Go
// SDK's flags (beam:option:go_options:v1, {"options": {NAME: "2"}}).
// Otherwise, or when the value is not positive (the SDKs' -1 for unset),
// it is def.
func intOption(opts *structpb.Struct, name string, def int) int {
	fields := opts.GetFields()
	values := []*structpb.Value{fields[name], fields["beam:option:"+name+":v1"]}
	if goOpts := fields["beam:option:go_options:v1"].GetStructValue().GetFields()["options"]; goOpts != nil {
		values = append(values, goOpts.GetStructValue().GetFields()[name])
	}
	for _, v := range values {
		n := 0
		switch x := v.GetKind().(type) {
		case *structpb.Value_NumberValue:
			n = int(x.NumberValue)
		case *structpb.Value_StringValue:
			n, _ = strconv.Atoi(x.StringValue)
		}
		if n > 0 {
			return n
		}
	}
	return def
}

// boolOption reads a boolean pipeline option as intOption reads an
// integer one (false when absent).
func boolOption(opts *structpb.Struct, name string) bool {
	fields := opts.GetFields()
	values := []*structpb.Value{fields[name], fields["beam:option:"+name+":v1"]}
	if goOpts := fields["beam:option:go_options:v1"].GetStructValue().GetFields()["options"]; goOpts != nil {
		values = append(values, goOpts.GetStructValue().GetFields()[name])
	}
	for _, v := range values {
		switch x := v.GetKind().(type) {
		case *structpb.Value_BoolValue:
			if x.BoolValue {
				return true
			}
		case *structpb.Value_StringValue:
			if b, _ := strconv.ParseBool(x.StringValue); b {
				return true
			}
		}
	}
	return false
}

// parallelism is the job's: sluice_parallelism, else the SDK's standard
// parallelism option (Go's --parallelism, which the Flink runner reads
// too), else the service's default.
func parallelism(opts *structpb.Struct, def int) int {
	return intOption(opts, "sluice_parallelism", intOption(opts, "parallelism", def))
}

func (js jobs) Run(_ context.Context, r *jobpb.RunJobRequest) (*jobpb.RunJobResponse, error) {
	s := js.s
	j, err := s.job(r.GetPreparationId())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(s.ctx)
	j.mu.Lock()
	if err := j.applyLocked(Run); err != nil {
		j.mu.Unlock()
		cancel()
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	j.mu.cancel = cancel
	j.mu.Unlock()
	opts := runner.Options{
		Parallelism:     parallelism(j.options, s.opts.Parallelism),
		BundleSize:      intOption(j.options, "sluice_bundle_size", s.opts.BundleSize),
		Streaming:       boolOption(j.options, "streaming"),
		Log:             s.log,
		PipelineOptions: j.options,
		Metrics:         j.metrics,
		OnStarted: func() {
			j.mu.Lock()
			defer j.mu.Unlock()
			_ = j.applyLocked(Started)
		},
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		err := runner.Run(ctx, s.fn, j.id, j.plan, opts)
		j.mu.Lock()
		defer j.mu.Unlock()
		switch {
		case err == nil:
			_ = j.applyLocked(Finished)
			s.log.Info("job finished", "job", j.id)
		case j.mu.state == jobpb.JobState_CANCELLING || errors.Is(err, context.Canceled):
			if j.mu.state != jobpb.JobState_CANCELLING {
				_ = j.applyLocked(Cancel)
			}
			_ = j.applyLocked(Stopped)
			s.log.Info("job cancelled", "job", j.id)
		default:
			j.messageLocked(jobpb.JobMessage_JOB_MESSAGE_ERROR, err.Error())
			_ = j.applyLocked(Failed)
			s.log.Warn("job failed", "job", j.id, "err", err)
		}
	}()
	return &jobpb.RunJobResponse{JobId: j.id}, nil
}

func (js jobs) Cancel(_ context.Context, r *jobpb.CancelJobRequest) (*jobpb.CancelJobResponse, error) {
	j, err := js.s.job(r.GetJobId())
	if err != nil {
		return nil, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.applyLocked(Cancel); err != nil {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	if j.mu.cancel != nil {
		j.mu.cancel()
	}
	return &jobpb.CancelJobResponse{State: j.mu.state}, nil
}

func (js jobs) GetState(_ context.Context, r *jobpb.GetJobStateRequest) (*jobpb.JobStateEvent, error) {
	j, err := js.s.job(r.GetJobId())
	if err != nil {
		return nil, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.mu.events[len(j.mu.events)-1], nil
}

func (js jobs) GetJobs(context.Context, *jobpb.GetJobsRequest) (*jobpb.GetJobsResponse, error) {
	s := js.s
	s.mu.Lock()
	ids := slices.Clone(s.mu.order)
	s.mu.Unlock()
	resp := &jobpb.GetJobsResponse{}
	for _, id := range ids {
		j, err := s.job(id)
		if err != nil {
			continue
		}
		j.mu.Lock()
		resp.JobInfo = append(resp.JobInfo, &jobpb.JobInfo{JobId: j.id, JobName: j.name, PipelineOptions: j.options, State: j.mu.state})
		j.mu.Unlock()
	}
	return resp, nil
}

func (js jobs) GetPipeline(_ context.Context, r *jobpb.GetJobPipelineRequest) (*jobpb.GetJobPipelineResponse, error) {
	j, err := js.s.job(r.GetJobId())
	if err != nil {
		return nil, err
	}
	return &jobpb.GetJobPipelineResponse{Pipeline: j.pipeline}, nil
}

// GetJobMetrics answers with the monitoring infos the harnesses reported,
// aggregated; a bundle's are committed once it succeeded, so attempted
// and committed are the same.
func (js jobs) GetJobMetrics(_ context.Context, r *jobpb.GetJobMetricsRequest) (*jobpb.GetJobMetricsResponse, error) {
	j, err := js.s.job(r.GetJobId())
	if err != nil {
		return nil, err
	}
	infos := j.metrics.Snapshot()
	return &jobpb.GetJobMetricsResponse{Metrics: &jobpb.MetricResults{Attempted: infos, Committed: infos}}, nil
}

func (js jobs) DescribePipelineOptions(context.Context, *jobpb.DescribePipelineOptionsRequest) (*jobpb.DescribePipelineOptionsResponse, error) {
	return &jobpb.DescribePipelineOptionsResponse{Options: []*jobpb.PipelineOptionDescriptor{
		{Name: "sluice_parallelism", Type: jobpb.PipelineOptionType_INTEGER, Group: "SluiceRunner",
			Description: "Parallelism of the job's operators (Impulse runs once).", DefaultValue: strconv.Itoa(max(js.s.opts.Parallelism, 1))},
		{Name: "sluice_bundle_size", Type: jobpb.PipelineOptionType_INTEGER, Group: "SluiceRunner",
			Description: "Most elements in one bundle sent to an SDK harness.", DefaultValue: strconv.Itoa(cmpOr(js.s.opts.BundleSize, 1000))},
	}}, nil
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// follow sends the job's state events (and, with messages, its messages)
// from the first, then each new one, until the job is terminal or ctx
// ends.
func (j *job) follow(ctx context.Context, messages bool, send func(*jobpb.JobMessagesResponse) error) error {
	sentEvents, sentMessages := 0, 0
	for {
		j.mu.Lock()
		events := j.mu.events[sentEvents:]
		var msgs []*jobpb.JobMessage
		if messages {
			msgs = j.mu.messages[sentMessages:]
		}
		changed := j.mu.changed
		terminal := Terminal(j.mu.state)
		j.mu.Unlock()
		for _, m := range msgs {
			if err := send(&jobpb.JobMessagesResponse{Response: &jobpb.JobMessagesResponse_MessageResponse{MessageResponse: m}}); err != nil {
				return err
			}
		}
		sentMessages += len(msgs)
		for _, e := range events {
			if err := send(&jobpb.JobMessagesResponse{Response: &jobpb.JobMessagesResponse_StateResponse{StateResponse: e}}); err != nil {
				return err
			}
		}
		sentEvents += len(events)
		if terminal {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil
		}
	}
}

func (js jobs) GetStateStream(r *jobpb.GetJobStateRequest, stream jobpb.JobService_GetStateStreamServer) error {
	j, err := js.s.job(r.GetJobId())
	if err != nil {
		return err
	}
	return j.follow(stream.Context(), false, func(m *jobpb.JobMessagesResponse) error {
		return stream.Send(m.GetStateResponse())
	})
}

func (js jobs) GetMessageStream(r *jobpb.JobMessagesRequest, stream jobpb.JobService_GetMessageStreamServer) error {
	j, err := js.s.job(r.GetJobId())
	if err != nil {
		return err
	}
	return j.follow(stream.Context(), true, stream.Send)
}

type staging struct {
	jobpb.UnimplementedArtifactStagingServiceServer
	s *Service
}

// ReverseArtifactRetrievalService asks the client for the artifacts of
// the job's environments: resolve them, then fetch each.
func (st staging) ReverseArtifactRetrievalService(stream jobpb.ArtifactStagingService_ReverseArtifactRetrievalServiceServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	j, err := st.s.job(first.GetStagingToken())
	if err != nil {
		return err
	}
	var deps []*pipepb.ArtifactInformation
	for _, env := range j.pipeline.GetComponents().GetEnvironments() {
		deps = append(deps, env.GetDependencies()...)
	}
	if len(deps) == 0 {
		return nil
	}
	if err := stream.Send(&jobpb.ArtifactRequestWrapper{Request: &jobpb.ArtifactRequestWrapper_ResolveArtifact{
		ResolveArtifact: &jobpb.ResolveArtifactsRequest{Artifacts: deps},
	}}); err != nil {
		return err
	}
	resp, err := stream.Recv()
	if err != nil {
		return fmt.Errorf("jobservice: resolving the artifacts of job %s: %w", j.id, err)
	}
	resolved := resp.GetResolveArtifactResponse().GetReplacements()
	for i, a := range resolved {
		if err := stream.Send(&jobpb.ArtifactRequestWrapper{Request: &jobpb.ArtifactRequestWrapper_GetArtifact{
			GetArtifact: &jobpb.GetArtifactRequest{Artifact: a},
		}}); err != nil {
			return err
		}
		size := 0
		for {
			chunk, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("jobservice: the client ended staging during artifact %d of job %s", i, j.id)
			}
			if err != nil {
				return err
			}
			size += len(chunk.GetGetArtifactResponse().GetData())
			if chunk.GetIsLast() {
				break
			}
		}
		name := a.GetRoleUrn() + ":" + string(a.GetRolePayload())
		j.mu.Lock()
		j.mu.artifacts[name] = size
		j.mu.Unlock()
	}
	j.message(jobpb.JobMessage_JOB_MESSAGE_BASIC, fmt.Sprintf("staged %d artifacts", len(resolved)))
	return nil
}
