package jobmanager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/sluice/sluice/rest/restapi"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/rest"
)

// The REST API's questions to one TaskManager (its log files, goroutines
// and process metrics), asked over the Dispatcher's connection to it, as
// it submits tasks, with the cluster's internal authentication.

// tmCallTimeout bounds a question to a TaskManager but the streaming of a
// log file, which the REST request's own context bounds.
const tmCallTimeout = 30 * time.Second

// taskManagerClient is a client of the registered TaskManager id.
func (b Backend) taskManagerClient(ctx context.Context, id string) (clusterpb.TaskManagerClient, error) {
	if b.TMs == nil {
		return nil, fmt.Errorf("%w: TaskManager %s is not registered: this JobManager has no ResourceManager", restapi.ErrNotFound, id)
	}
	tms, err := b.TMs.TaskManagerInfos(ctx)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(tms, func(tm restapi.TaskManagerInfo) bool { return tm.ID == id })
	if i < 0 {
		return nil, fmt.Errorf("%w: TaskManager %s is not registered (see GET /taskmanagers)", restapi.ErrNotFound, id)
	}
	c, err := b.D.taskManager(tms[i].Path)
	if err != nil {
		return nil, fmt.Errorf("%w: TaskManager %s at %s: %w", restapi.ErrUnavailable, id, tms[i].Path, err)
	}
	return c, nil
}

// tmErr translates a TaskManager's RPC failure into the REST API's terms.
func tmErr(id string, err error) error {
	var st interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &st) {
		return err
	}
	s := st.GRPCStatus()
	msg := fmt.Sprintf("TaskManager %s: %s", id, s.Message())
	switch s.Code() {
	case codes.NotFound:
		return fmt.Errorf("%w: %s", restapi.ErrNotFound, msg)
	case codes.InvalidArgument:
		return fmt.Errorf("%w: %s", restapi.ErrBadRequest, msg)
	case codes.Unavailable, codes.Unimplemented:
		return fmt.Errorf("%w: %s", restapi.ErrUnavailable, msg)
	case codes.DeadlineExceeded:
		return fmt.Errorf("%s: %w", msg, context.DeadlineExceeded)
	}
	return fmt.Errorf("jobmanager: %s (%s)", msg, s.Code())
}

// TaskManagerLogs implements rest.Backend.
func (b Backend) TaskManagerLogs(ctx context.Context, id string) ([]restapi.LogInfo, error) {
	c, err := b.taskManagerClient(ctx, id)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, tmCallTimeout)
	defer cancel()
	resp, err := c.ListLogs(ctx, &clusterpb.ListLogsRequest{})
	if err != nil {
		return nil, tmErr(id, err)
	}
	out := make([]restapi.LogInfo, 0, len(resp.GetFiles()))
	for _, f := range resp.GetFiles() {
		out = append(out, restapi.LogInfo{Name: f.GetName(), Size: f.GetSize(), MTime: f.GetMtimeMs()})
	}
	return out, nil
}

// TaskManagerLogFile implements rest.Backend: the file streams from the
// TaskManager as the REST answer is written.
func (b Backend) TaskManagerLogFile(ctx context.Context, id string, f rest.TaskManagerFile) (*rest.LogFile, error) {
	c, err := b.taskManagerClient(ctx, id)
	if err != nil {
		return nil, err
	}
	req := &clusterpb.ReadLogRequest{Name: f.Name}
	switch f.Kind {
	case rest.TaskManagerMainLog:
		req.Kind = clusterpb.LogFileKind_LOG_FILE_MAIN
	case rest.TaskManagerStdout:
		req.Kind = clusterpb.LogFileKind_LOG_FILE_STDOUT
	}
	ctx, cancel := context.WithCancel(ctx)
	stream, err := c.ReadLog(ctx, req)
	if err != nil {
		cancel()
		return nil, tmErr(id, err)
	}
	// The header arrives first, or the TaskManager's refusal, within
	// tmCallTimeout; the data then take as long as the REST request lasts.
	timer := time.AfterFunc(tmCallTimeout, cancel)
	first, err := stream.Recv()
	if !timer.Stop() {
		cancel()
		return nil, fmt.Errorf("TaskManager %s sent no log file within %v: %w", id, tmCallTimeout, context.DeadlineExceeded)
	}
	if err != nil {
		cancel()
		return nil, tmErr(id, err)
	}
	h := first.GetHeader()
	if h == nil {
		cancel()
		return nil, fmt.Errorf("jobmanager: TaskManager %s sent a log file without its header", id)
	}
	return &rest.LogFile{Name: h.GetName(), Size: h.GetSize(), Offset: h.GetOffset(), ModTime: time.UnixMilli(h.GetMtimeMs()),
		Body: &logStream{id: id, recv: stream.Recv, cancel: cancel}}, nil
}

// logStream reads the data chunks of a ReadLog stream.
type logStream struct {
	id     string
	recv   func() (*clusterpb.LogChunk, error)
	cancel context.CancelFunc
	buf    []byte
	err    error
}

func (s *logStream) Read(p []byte) (int, error) {
	for len(s.buf) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		c, err := s.recv()
		switch {
		case errors.Is(err, io.EOF):
			s.err = io.EOF
		case err != nil:
			s.err = tmErr(s.id, err)
		default:
			s.buf = c.GetData()
		}
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

// Close ends the stream (the TaskManager stops sending).
func (s *logStream) Close() error {
	s.cancel()
	return nil
}

// TaskManagerThreadDump implements rest.Backend.
func (b Backend) TaskManagerThreadDump(ctx context.Context, id string) ([]restapi.ThreadInfo, error) {
	c, err := b.taskManagerClient(ctx, id)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, tmCallTimeout)
	defer cancel()
	resp, err := c.ThreadDump(ctx, &clusterpb.ThreadDumpRequest{})
	if err != nil {
		return nil, tmErr(id, err)
	}
	out := rest.ParseGoroutineDump(resp.GetDump())
	if resp.GetTruncated() {
		out = append(out, restapi.ThreadInfo{ThreadName: "(dump truncated)",
			StringifiedThreadInfo: "The TaskManager cut its goroutine dump at its size limit; the goroutines after this point are not shown.\n"})
	}
	return out, nil
}

// TaskManagerMetrics implements rest.Backend.
func (b Backend) TaskManagerMetrics(ctx context.Context, id string) ([]rest.ProcessMetric, error) {
	c, err := b.taskManagerClient(ctx, id)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, tmCallTimeout)
	defer cancel()
	resp, err := c.ProcessMetrics(ctx, &clusterpb.ProcessMetricsRequest{})
	if err != nil {
		return nil, tmErr(id, err)
	}
	out := make([]rest.ProcessMetric, 0, len(resp.GetMetrics()))
	for _, m := range resp.GetMetrics() {
		out = append(out, rest.ProcessMetric{Name: m.GetName(), Value: m.GetValue()})
	}
	return out, nil
}
