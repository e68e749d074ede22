package jobmanager

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice/sluice/cluster/clusterpb"
)

// Register adds the JobMaster and Blobs services to s.
func (d *Dispatcher) Register(s *grpc.Server) {
	clusterpb.RegisterJobMasterServer(s, jobMasterService{d: d})
	clusterpb.RegisterBlobsServer(s, blobService{d: d})
}

type jobMasterService struct {
	clusterpb.UnimplementedJobMasterServer
	d *Dispatcher
}

// OfferSlots implements clusterpb.JobMasterServer.
func (s jobMasterService) OfferSlots(_ context.Context, o *clusterpb.SlotOffer) (*clusterpb.SlotOfferResponse, error) {
	if o.JobId == "" || o.TaskManagerId == "" || o.TaskManagerAddress == "" {
		return nil, status.Error(codes.InvalidArgument, "a slot offer needs job_id, task_manager_id and task_manager_address")
	}
	return &clusterpb.SlotOfferResponse{Accepted: s.d.offer(o)}, nil
}

// ConnectWorker implements clusterpb.JobMasterServer.
func (s jobMasterService) ConnectWorker(stream clusterpb.JobMaster_ConnectWorkerServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	h := first.GetHello()
	if h == nil {
		return status.Error(codes.InvalidArgument, "a worker's first message must be Hello")
	}
	jm, err := s.d.job(h.JobId)
	if err != nil {
		return status.Error(codes.NotFound, err.Error())
	}
	sess := newSession(h, stream, s.d.cfg.live)
	if err := jm.exec.attach(sess); err != nil {
		return status.Error(codes.FailedPrecondition, err.Error())
	}
	return sess.run()
}

type blobService struct {
	clusterpb.UnimplementedBlobsServer
	d *Dispatcher
}

// Get implements clusterpb.BlobsServer.
func (s blobService) Get(r *clusterpb.BlobRequest, stream clusterpb.Blobs_GetServer) error {
	err := s.d.blobs.serve(r.Sha256, stream)
	if errors.Is(err, ErrNoBlob) {
		return status.Error(codes.NotFound, err.Error())
	}
	return err
}
