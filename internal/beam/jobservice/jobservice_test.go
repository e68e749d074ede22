package jobservice_test

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/sluice/sluice/internal/beam/jobservice"
)

// enginePipeline is Impulse → Flatten: a pipeline the engine runs without
// any SDK harness. urn replaces the Flatten's URN.
func enginePipeline(urn string) *pipepb.Pipeline {
	return &pipepb.Pipeline{
		RootTransformIds: []string{"impulse", "flatten"},
		Components: &pipepb.Components{
			Transforms: map[string]*pipepb.PTransform{
				"impulse": {UniqueName: "Impulse", Spec: &pipepb.FunctionSpec{Urn: "beam:transform:impulse:v1"}, Outputs: map[string]string{"out": "pc1"}},
				"flatten": {UniqueName: "Flatten", Spec: &pipepb.FunctionSpec{Urn: urn}, Inputs: map[string]string{"0": "pc1"}, Outputs: map[string]string{"out": "pc2"}},
			},
			Pcollections: map[string]*pipepb.PCollection{
				"pc1": {UniqueName: "pc1", CoderId: "bytes", WindowingStrategyId: "global", IsBounded: pipepb.IsBounded_BOUNDED},
				"pc2": {UniqueName: "pc2", CoderId: "bytes", WindowingStrategyId: "global", IsBounded: pipepb.IsBounded_BOUNDED},
			},
			Coders: map[string]*pipepb.Coder{
				"bytes":  {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:bytes:v1"}},
				"global": {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:global_window:v1"}},
			},
			WindowingStrategies: map[string]*pipepb.WindowingStrategy{
				"global": {WindowFn: &pipepb.FunctionSpec{Urn: "beam:window_fn:global_windows:v1"}, WindowCoderId: "global", MergeStatus: pipepb.MergeStatus_NON_MERGING},
			},
		},
	}
}

func client(t *testing.T) jobpb.JobServiceClient {
	t.Helper()
	svc, err := jobservice.Listen("localhost:0", jobservice.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(svc.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cc.Close()
		if err := svc.Close(); err != nil {
			t.Error(err)
		}
	})
	return jobpb.NewJobServiceClient(cc)
}

func TestJobLifecycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := client(t)
	opts, err := c.DescribePipelineOptions(ctx, &jobpb.DescribePipelineOptionsRequest{})
	if err != nil || len(opts.GetOptions()) == 0 {
		t.Fatalf("DescribePipelineOptions: %v %v", opts, err)
	}
	p := enginePipeline("beam:transform:flatten:v1")
	po, _ := structpb.NewStruct(map[string]any{"beam:option:sluice_parallelism:v1": 2})
	prep, err := c.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: p, JobName: "life cycle", PipelineOptions: po})
	if err != nil {
		t.Fatal(err)
	}
	id := prep.GetPreparationId()
	if prep.GetArtifactStagingEndpoint().GetUrl() == "" || prep.GetStagingSessionToken() == "" {
		t.Errorf("Prepare: no staging endpoint or token: %v", prep)
	}
	// The message stream opened before Run with the preparation ID gets
	// the current state at once.
	msgs, err := c.GetMessageStream(ctx, &jobpb.JobMessagesRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	first, err := msgs.Recv()
	if err != nil || first.GetStateResponse().GetState() != jobpb.JobState_STOPPED {
		t.Fatalf("first message %v (%v), want state STOPPED", first, err)
	}
	run, err := c.Run(ctx, &jobpb.RunJobRequest{PreparationId: id})
	if err != nil || run.GetJobId() != id {
		t.Fatalf("Run: %v %v", run, err)
	}
	var states []jobpb.JobState_Enum
	for {
		m, err := msgs.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if s := m.GetStateResponse(); s != nil {
			states = append(states, s.GetState())
		}
	}
	want := []jobpb.JobState_Enum{jobpb.JobState_STARTING, jobpb.JobState_RUNNING, jobpb.JobState_DONE}
	if !slices.Equal(states, want) {
		t.Errorf("states %v, want %v", states, want)
	}
	st, err := c.GetState(ctx, &jobpb.GetJobStateRequest{JobId: id})
	if err != nil || st.GetState() != jobpb.JobState_DONE {
		t.Errorf("GetState: %v %v", st, err)
	}
	jobs, err := c.GetJobs(ctx, &jobpb.GetJobsRequest{})
	if err != nil || len(jobs.GetJobInfo()) != 1 || jobs.GetJobInfo()[0].GetJobName() != "life cycle" || jobs.GetJobInfo()[0].GetState() != jobpb.JobState_DONE {
		t.Errorf("GetJobs: %v %v", jobs, err)
	}
	got, err := c.GetPipeline(ctx, &jobpb.GetJobPipelineRequest{JobId: id})
	if err != nil || !proto.Equal(got.GetPipeline(), p) {
		t.Errorf("GetPipeline: %v", err)
	}
	if _, err := c.Cancel(ctx, &jobpb.CancelJobRequest{JobId: id}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("Cancel of a finished job: %v, want FailedPrecondition", err)
	}
	if _, err := c.GetState(ctx, &jobpb.GetJobStateRequest{JobId: "nope"}); status.Code(err) != codes.NotFound {
		t.Errorf("GetState of an unknown job: %v, want NotFound", err)
	}
}

func TestCancelPrepared(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := client(t)
	prep, err := c.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: enginePipeline("beam:transform:flatten:v1"), JobName: "j"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Cancel(ctx, &jobpb.CancelJobRequest{JobId: prep.GetPreparationId()})
	if err != nil || resp.GetState() != jobpb.JobState_CANCELLED {
		t.Fatalf("Cancel: %v %v", resp, err)
	}
	if _, err := c.Run(ctx, &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("Run of a cancelled job: %v, want FailedPrecondition", err)
	}
}

func TestPrepareRefusesUnknownURN(t *testing.T) {
	c := client(t)
	_, err := c.Prepare(context.Background(), &jobpb.PrepareJobRequest{Pipeline: enginePipeline("beam:transform:teleport:v1"), JobName: "j"})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("Prepare: %v, want InvalidArgument", err)
	}
	if want := `transform "Flatten" (URN beam:transform:teleport:v1)`; !strings.Contains(status.Convert(err).Message(), want) {
		t.Errorf("Prepare: %q does not name %s", status.Convert(err).Message(), want)
	}
}
