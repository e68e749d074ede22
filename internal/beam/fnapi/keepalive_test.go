package fnapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
)

// An SDK keeps its connections alive with pings while they are idle (the
// Python SDK every 20 s); the runner's services must allow that, or gRPC's
// default policy (a ping at most every 5 minutes) ends the connection
// with "too_many_pings" after the third early ping, and every stream on it.
func TestIdleSDKConnectionsSurviveKeepalivePings(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 45 s of idleness")
	}
	s, err := Listen("localhost:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// gRPC-Go's clients ping at most every 10 s; the server's default policy
	// strikes a connection out at its fourth ping (the third early one).
	cc, err := grpc.NewClient(s.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 5 * time.Second, PermitWithoutStream: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stream, err := fnpb.NewBeamFnLoggingClient(cc).Logging(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(45 * time.Second) // the idleness under test, not a wait for another goroutine
	if err := stream.Send(&fnpb.LogEntry_List{LogEntries: []*fnpb.LogEntry{{Message: "still here"}}}); err != nil {
		t.Fatalf("sending on the logging stream after 45 s idle: %v", err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("the logging stream after 45 s of keepalive pings ended with %v, want io.EOF (the connection was closed under it)", err)
	}
}
