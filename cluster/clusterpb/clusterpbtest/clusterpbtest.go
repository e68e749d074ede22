// Package clusterpbtest is a peer of the cluster's internal RPCs for tests
// of their authentication: it does what an impostor would try with a
// client built from clusterpb.
package clusterpbtest

import (
	"bytes"
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"

	"github.com/sluice/sluice/cluster/clusterpb"
)

// RegisterTaskManager registers a TaskManager id (4 slots, at an address
// that serves nothing) at the ResourceManager behind cc and returns the
// error of the first answer: nil once the registration was taken.
func RegisterTaskManager(ctx context.Context, cc *grpc.ClientConn, id string) error {
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

// FetchBlob downloads the blob (a job binary) of the sha256 digest from the
// Blobs service behind cc; on an error it returns what arrived before it.
func FetchBlob(ctx context.Context, cc *grpc.ClientConn, digest string) ([]byte, error) {
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
