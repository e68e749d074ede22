package jobmanager

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluice/sluice/rest/restapi"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice/sluice/rest"
)

// A TaskManager's refusals become the REST API's statuses, naming the
// TaskManager and keeping its message.
func TestTaskManagerErrorsInRESTTerms(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want error // nil: none of rest's
	}{
		{status.Error(codes.NotFound, "taskmanager: no such log file: x.log is not in the log directory /l"), restapi.ErrNotFound},
		{status.Error(codes.InvalidArgument, `taskmanager: invalid request: "../x" is not the name of a file`), restapi.ErrBadRequest},
		{status.Error(codes.Unavailable, "connection refused"), restapi.ErrUnavailable},
		{status.Error(codes.Unimplemented, "unknown method ListLogs"), restapi.ErrUnavailable},
		{status.Error(codes.DeadlineExceeded, "too slow"), context.DeadlineExceeded},
		{status.Error(codes.Internal, "disk on fire"), nil},
	} {
		got := tmErr("tm-7", tc.err)
		msg := status.Convert(tc.err).Message()
		if !strings.Contains(got.Error(), "tm-7") || !strings.Contains(got.Error(), msg) {
			t.Errorf("%v: %q does not name the TaskManager and keep %q", tc.err, got, msg)
		}
		for _, e := range []error{restapi.ErrNotFound, restapi.ErrBadRequest, restapi.ErrUnavailable, context.DeadlineExceeded} {
			if is := errors.Is(got, e); is != (e == tc.want) {
				t.Errorf("%v: errors.Is(%q, %v) = %v", tc.err, got, e, is)
			}
		}
	}
	if plain := errors.New("not an RPC error"); tmErr("tm-7", plain) != plain {
		t.Errorf("a non-RPC error is changed")
	}
}

// An unknown TaskManager is ErrNotFound, naming it, for every question.
func TestUnknownTaskManager(t *testing.T) {
	b := Backend{TMs: listedTMs{{ID: "tm-1", Path: "127.0.0.1:1"}}}
	ctx := context.Background()
	_, err1 := b.TaskManagerLogs(ctx, "tm-2")
	_, err2 := b.TaskManagerLogFile(ctx, "tm-2", rest.TaskManagerFile{Kind: rest.TaskManagerMainLog})
	_, err3 := b.TaskManagerThreadDump(ctx, "tm-2")
	_, err4 := b.TaskManagerMetrics(ctx, "tm-2")
	_, err5 := Backend{}.TaskManagerLogs(ctx, "tm-2")
	for i, err := range []error{err1, err2, err3, err4, err5} {
		if !errors.Is(err, restapi.ErrNotFound) || !strings.Contains(err.Error(), "tm-2") {
			t.Errorf("question %d: %v, want ErrNotFound naming tm-2", i+1, err)
		}
	}
}

type listedTMs []restapi.TaskManagerInfo

func (l listedTMs) TaskManagerInfos(context.Context) ([]restapi.TaskManagerInfo, error) {
	return l, nil
}
func (l listedTMs) TaskManagerLogins(context.Context) ([]rest.KerberosLoginMetrics, error) {
	return nil, nil
}
