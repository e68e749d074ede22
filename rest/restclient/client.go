// Package restclient is a typed client of a JobManager's REST API (package
// rest): the sluice CLI and a job binary's remote mode use it to submit
// jobs, follow them and trigger savepoints, stops and checkpoints.
//
// Every call takes a context; operations that wait (WaitForResult,
// Savepoint, StopWithSavepoint, Checkpoint) poll until done or until the
// context ends, so callers bound them with context.WithTimeout.
//
// Errors answered by the server are *Error, carrying the URL, the status
// and the server's {"errors"} text; errors.Is matches them against
// restapi.ErrNotFound, restapi.ErrBadRequest, restapi.ErrConflict and
// restapi.ErrUnavailable by status. A failed asynchronous operation is an
// *OperationError.
package restclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sluice/sluice/rest/restapi"
)

// Client talks to one JobManager's REST endpoint. It is safe for
// concurrent use.
type Client struct {
	base *url.URL
	http *http.Client
	poll time.Duration
	tls  *tls.Config
	// token is sent with every request (WithToken).
	token string
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client (default: a client of its own with
// no overall timeout; bound calls with their context).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithTLS makes the client speak HTTPS with cfg (security.ssl.rest.*, built
// by security/tlsconf.RESTClient): an address without a scheme is then
// https, and the HTTP client's transport uses cfg. A nil cfg changes
// nothing.
func WithTLS(cfg *tls.Config) Option { return func(c *Client) { c.tls = cfg } }

// WithToken makes the client send token (Authorization: Bearer) with
// every request: a JobManager with security.rest.token-file refuses
// requests that change state without it. Empty sends none.
func WithToken(token []byte) Option { return func(c *Client) { c.token = string(token) } }

// WithPollInterval sets how often waiting calls ask for progress (default
// 200 ms).
func WithPollInterval(d time.Duration) Option { return func(c *Client) { c.poll = d } }

// New returns a client of the REST endpoint at address: "host:port" or a
// URL "http://host:port[/prefix]".
func New(address string, opts ...Option) (*Client, error) {
	raw := strings.TrimSpace(address)
	if raw == "" {
		return nil, errors.New("restclient: no JobManager address: give host:port (rest.address and rest.port)")
	}
	c := &Client{http: &http.Client{}, poll: 200 * time.Millisecond}
	for _, o := range opts {
		o(c)
	}
	if !strings.Contains(raw, "://") {
		if c.tls != nil {
			raw = "https://" + raw
		} else {
			raw = "http://" + raw
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("restclient: JobManager address %q is not host:port or a URL: %w", address, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("restclient: JobManager address %q: the scheme must be http or https", address)
	}
	if u.Host == "" || u.Port() == "" {
		return nil, fmt.Errorf("restclient: JobManager address %q has no port: give host:port, e.g. localhost:8081", address)
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return nil, fmt.Errorf("restclient: JobManager address %q: %w", address, err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	c.base = u
	if c.tls != nil {
		if u.Scheme != "https" {
			return nil, fmt.Errorf("restclient: JobManager address %q is http, but TLS is on (security.ssl.rest.enabled): use https", address)
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = c.tls
		h := *c.http
		h.Transport = tr
		c.http = &h
	}
	return c, nil
}

// URL is the base URL of the endpoint.
func (c *Client) URL() string { return c.base.String() }

// Error is an error answer of the server, or a failure to reach it.
type Error struct {
	Method string
	URL    string
	// StatusCode is the HTTP status; 0 when the server was not reached.
	StatusCode int
	// Errors are the server's {"errors"} messages (or the body's text).
	Errors []string
	// Err is the transport error when the server was not reached.
	Err error
}

func (e *Error) Error() string {
	if e.StatusCode == 0 {
		return fmt.Sprintf("restclient: %s %s: %v (is the JobManager running there?)", e.Method, e.URL, e.Err)
	}
	msg := strings.Join(e.Errors, "; ")
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	return fmt.Sprintf("restclient: %s %s: %d %s", e.Method, e.URL, e.StatusCode, msg)
}

// Unwrap returns the transport error, if any.
func (e *Error) Unwrap() error { return e.Err }

// Is matches the rest package's sentinels by status.
func (e *Error) Is(target error) bool {
	switch target {
	case restapi.ErrNotFound:
		return e.StatusCode == http.StatusNotFound
	case restapi.ErrBadRequest:
		return e.StatusCode == http.StatusBadRequest || e.StatusCode == http.StatusRequestEntityTooLarge
	case restapi.ErrConflict:
		return e.StatusCode == http.StatusConflict
	case restapi.ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized
	case restapi.ErrUnavailable:
		return e.StatusCode == http.StatusServiceUnavailable || e.StatusCode == 0
	}
	return false
}

// OperationError is an asynchronous operation (savepoint, stop,
// checkpoint) that the cluster reports as failed.
type OperationError struct {
	Operation string // "savepoint", "stop-with-savepoint", "checkpoint"
	JobID     string
	TriggerID string
	Cause     restapi.SerializedThrowable
}

func (e *OperationError) Error() string {
	return fmt.Sprintf("restclient: %s of job %s failed: %s", e.Operation, e.JobID, e.Cause.String())
}

// do sends a request and decodes a 2xx answer's JSON into out (nil: ignore
// the body).
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("restclient: encoding the request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, body)
	if err != nil {
		return fmt.Errorf("restclient: %s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return c.send(req, out)
}

// send sends req and decodes a 2xx answer into out.
func (c *Client) send(req *http.Request, out any) error {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.http.Do(req)
	if err != nil {
		if ctxErr := req.Context().Err(); ctxErr != nil {
			return fmt.Errorf("restclient: %s %s: %w", req.Method, req.URL, ctxErr)
		}
		return &Error{Method: req.Method, URL: req.URL.String(), Err: err}
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return &Error{Method: req.Method, URL: req.URL.String(), Err: fmt.Errorf("reading the answer: %w", err)}
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		e := &Error{Method: req.Method, URL: req.URL.String(), StatusCode: res.StatusCode}
		var er restapi.ErrorResponse
		if json.Unmarshal(data, &er) == nil && len(er.Errors) > 0 {
			e.Errors = er.Errors
		} else if t := strings.TrimSpace(string(data)); t != "" {
			e.Errors = []string{t}
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("restclient: %s %s: the answer is not what a Sluice or Flink JobManager sends: %w", req.Method, req.URL, err)
	}
	return nil
}

// checkID rejects a malformed job or trigger ID before asking the server,
// with advice, and returns its canonical form.
func checkID(what, id string) (string, error) {
	canon, ok := restapi.ParseID(id)
	if !ok {
		return "", fmt.Errorf("restclient: %s %q is not 32 hexadecimal characters; list jobs with `sluice list`: %w", what, id, restapi.ErrBadRequest)
	}
	return canon, nil
}

// Config returns the endpoint's dashboard configuration (GET /config).
func (c *Client) Config(ctx context.Context) (*restapi.DashboardConfiguration, error) {
	var out restapi.DashboardConfiguration
	return &out, c.do(ctx, http.MethodGet, "/config", nil, &out)
}

// Overview returns the cluster overview (GET /overview).
func (c *Client) Overview(ctx context.Context) (*restapi.ClusterOverview, error) {
	var out restapi.ClusterOverview
	return &out, c.do(ctx, http.MethodGet, "/overview", nil, &out)
}

// Jobs lists the jobs' IDs and states (GET /jobs).
func (c *Client) Jobs(ctx context.Context) ([]restapi.JobIDWithStatus, error) {
	var out restapi.JobIDsWithStatus
	if err := c.do(ctx, http.MethodGet, "/jobs", nil, &out); err != nil {
		return nil, err
	}
	return out.Jobs, nil
}

// JobsOverview lists the jobs with names, times and task counts (GET
// /jobs/overview).
func (c *Client) JobsOverview(ctx context.Context) ([]restapi.JobOverview, error) {
	var out restapi.MultipleJobsDetails
	if err := c.do(ctx, http.MethodGet, "/jobs/overview", nil, &out); err != nil {
		return nil, err
	}
	return out.Jobs, nil
}

// Job returns a job's details (GET /jobs/:jobid).
func (c *Client) Job(ctx context.Context, jobID string) (*restapi.JobDetails, error) {
	jobID, err := checkID("job ID", jobID)
	if err != nil {
		return nil, err
	}
	var out restapi.JobDetails
	return &out, c.do(ctx, http.MethodGet, "/jobs/"+jobID, nil, &out)
}

// JobExceptions returns a job's failure history, at most maxExceptions
// entries (< 0: all the server keeps).
func (c *Client) JobExceptions(ctx context.Context, jobID string, maxExceptions int) (*restapi.JobExceptions, error) {
	jobID, err := checkID("job ID", jobID)
	if err != nil {
		return nil, err
	}
	path := "/jobs/" + jobID + "/exceptions"
	if maxExceptions >= 0 {
		path += fmt.Sprintf("?maxExceptions=%d", maxExceptions)
	}
	var out restapi.JobExceptions
	return &out, c.do(ctx, http.MethodGet, path, nil, &out)
}

// JobCheckpoints returns a job's checkpoint statistics.
func (c *Client) JobCheckpoints(ctx context.Context, jobID string) (*restapi.CheckpointingStatistics, error) {
	jobID, err := checkID("job ID", jobID)
	if err != nil {
		return nil, err
	}
	var out restapi.CheckpointingStatistics
	return &out, c.do(ctx, http.MethodGet, "/jobs/"+jobID+"/checkpoints", nil, &out)
}

// TaskManagers lists the registered TaskManagers.
func (c *Client) TaskManagers(ctx context.Context) ([]restapi.TaskManagerInfo, error) {
	var out restapi.TaskManagersInfo
	if err := c.do(ctx, http.MethodGet, "/taskmanagers", nil, &out); err != nil {
		return nil, err
	}
	return out.TaskManagers, nil
}

// Cancel asks the cluster to cancel a job (PATCH /jobs/:jobid?mode=cancel)
// and returns once it accepted; the job is CANCELED shortly after.
func (c *Client) Cancel(ctx context.Context, jobID string) error {
	jobID, err := checkID("job ID", jobID)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPatch, "/jobs/"+jobID+"?mode=cancel", nil, nil)
}

// ShutDownCluster asks the cluster to shut down (DELETE /cluster): its
// jobs are cancelled and the JobManager ends.
func (c *Client) ShutDownCluster(ctx context.Context) error {
	return c.do(ctx, http.MethodDelete, "/cluster", nil, nil)
}

// JobResult asks once for a job's result: nil while the job has not ended.
func (c *Client) JobResult(ctx context.Context, jobID string) (*restapi.JobResult, error) {
	jobID, err := checkID("job ID", jobID)
	if err != nil {
		return nil, err
	}
	var out restapi.JobExecutionResult
	if err := c.do(ctx, http.MethodGet, "/jobs/"+jobID+"/execution-result", nil, &out); err != nil {
		return nil, err
	}
	if out.Status.ID != restapi.StatusCompleted {
		return nil, nil
	}
	if out.Result == nil {
		return nil, fmt.Errorf("restclient: the execution result of job %s is COMPLETED without a result", jobID)
	}
	return out.Result, nil
}

// WaitForResult polls the job's result until it has ended or ctx ends. The
// result says how it ended; its Err tells a failure. While the JobManager
// cannot be reached (e.g. it is restarting) polling goes on.
func (c *Client) WaitForResult(ctx context.Context, jobID string) (*restapi.JobResult, error) {
	for {
		res, err := c.JobResult(ctx, jobID)
		if err != nil && !transient(err) {
			return nil, err
		}
		if res != nil {
			return res, nil
		}
		if err := c.sleep(ctx); err != nil {
			return nil, fmt.Errorf("restclient: waiting for job %s to end: %w", jobID, err)
		}
	}
}

// transient reports whether polling may go on after err.
func transient(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.StatusCode == 0 || e.StatusCode == http.StatusServiceUnavailable ||
		e.StatusCode == http.StatusBadGateway || e.StatusCode == http.StatusGatewayTimeout)
}

func (c *Client) sleep(ctx context.Context) error {
	t := time.NewTimer(c.poll)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// TriggerSavepoint starts a savepoint and returns its trigger ID without
// waiting (POST /jobs/:jobid/savepoints). Poll it with SavepointStatus.
func (c *Client) TriggerSavepoint(ctx context.Context, jobID string, req restapi.SavepointTriggerRequest) (string, error) {
	return c.trigger(ctx, jobID, "/savepoints", req)
}

// TriggerStop starts stop-with-savepoint and returns its trigger ID
// without waiting (POST /jobs/:jobid/stop). Poll it with SavepointStatus.
func (c *Client) TriggerStop(ctx context.Context, jobID string, req restapi.StopRequest) (string, error) {
	return c.trigger(ctx, jobID, "/stop", req)
}

// TriggerCheckpoint starts a checkpoint and returns its trigger ID without
// waiting (POST /jobs/:jobid/checkpoints). Poll it with CheckpointStatus.
func (c *Client) TriggerCheckpoint(ctx context.Context, jobID string, req restapi.CheckpointTriggerRequest) (string, error) {
	return c.trigger(ctx, jobID, "/checkpoints", req)
}

func (c *Client) trigger(ctx context.Context, jobID, path string, req any) (string, error) {
	jobID, err := checkID("job ID", jobID)
	if err != nil {
		return "", err
	}
	var out restapi.TriggerResponse
	if err := c.do(ctx, http.MethodPost, "/jobs/"+jobID+path, req, &out); err != nil {
		return "", err
	}
	if !restapi.ValidID(out.RequestID) {
		return "", fmt.Errorf("restclient: the trigger answered request-id %q, not a trigger ID", out.RequestID)
	}
	return out.RequestID, nil
}

// SavepointStatus asks once for a savepoint's or stop's status.
func (c *Client) SavepointStatus(ctx context.Context, jobID, triggerID string) (*restapi.SavepointStatus, error) {
	jobID, err := checkID("job ID", jobID)
	if err != nil {
		return nil, err
	}
	triggerID, err = checkID("trigger ID", triggerID)
	if err != nil {
		return nil, err
	}
	var out restapi.SavepointStatus
	return &out, c.do(ctx, http.MethodGet, "/jobs/"+jobID+"/savepoints/"+triggerID, nil, &out)
}

// CheckpointStatus asks once for a checkpoint's status.
func (c *Client) CheckpointStatus(ctx context.Context, jobID, triggerID string) (*restapi.CheckpointStatus, error) {
	jobID, err := checkID("job ID", jobID)
	if err != nil {
		return nil, err
	}
	triggerID, err = checkID("trigger ID", triggerID)
	if err != nil {
		return nil, err
	}
	var out restapi.CheckpointStatus
	return &out, c.do(ctx, http.MethodGet, "/jobs/"+jobID+"/checkpoints/"+triggerID, nil, &out)
}

// WaitForSavepoint polls a savepoint or stop until it completes and
// returns the savepoint's location, or an *OperationError if it failed.
// operation names it in errors ("savepoint", "stop-with-savepoint").
func (c *Client) WaitForSavepoint(ctx context.Context, operation, jobID, triggerID string) (string, error) {
	for {
		st, err := c.SavepointStatus(ctx, jobID, triggerID)
		if err != nil && !transient(err) {
			return "", err
		}
		if err == nil && st.Status.ID == restapi.StatusCompleted {
			if st.Operation == nil {
				return "", fmt.Errorf("restclient: %s %s of job %s completed without an outcome", operation, triggerID, jobID)
			}
			if st.Operation.FailureCause != nil {
				return "", &OperationError{Operation: operation, JobID: jobID, TriggerID: triggerID, Cause: *st.Operation.FailureCause}
			}
			return st.Operation.Location, nil
		}
		if err := c.sleep(ctx); err != nil {
			return "", fmt.Errorf("restclient: waiting for %s %s of job %s: %w", operation, triggerID, jobID, err)
		}
	}
}

// WaitForCheckpoint polls a checkpoint until it completes and returns its
// ID, or an *OperationError if it failed.
func (c *Client) WaitForCheckpoint(ctx context.Context, jobID, triggerID string) (int64, error) {
	for {
		st, err := c.CheckpointStatus(ctx, jobID, triggerID)
		if err != nil && !transient(err) {
			return 0, err
		}
		if err == nil && st.Status.ID == restapi.StatusCompleted {
			if st.Operation == nil {
				return 0, fmt.Errorf("restclient: checkpoint %s of job %s completed without an outcome", triggerID, jobID)
			}
			if st.Operation.FailureCause != nil {
				return 0, &OperationError{Operation: "checkpoint", JobID: jobID, TriggerID: triggerID, Cause: *st.Operation.FailureCause}
			}
			return st.Operation.CheckpointID, nil
		}
		if err := c.sleep(ctx); err != nil {
			return 0, fmt.Errorf("restclient: waiting for checkpoint %s of job %s: %w", triggerID, jobID, err)
		}
	}
}

// Savepoint takes a savepoint and waits for it, returning its location.
// The trigger carries an ID of the client's choosing, so it is retried
// safely when the JobManager cannot be reached.
func (c *Client) Savepoint(ctx context.Context, jobID string, req restapi.SavepointTriggerRequest) (string, error) {
	if req.TriggerID == "" {
		req.TriggerID = restapi.NewID()
	}
	id, err := retryTrigger(ctx, c, func() (string, error) { return c.TriggerSavepoint(ctx, jobID, req) })
	if err != nil {
		return "", err
	}
	return c.WaitForSavepoint(ctx, "savepoint", jobID, id)
}

// StopWithSavepoint stops a job with a savepoint and waits, returning the
// savepoint's location.
func (c *Client) StopWithSavepoint(ctx context.Context, jobID string, req restapi.StopRequest) (string, error) {
	if req.TriggerID == "" {
		req.TriggerID = restapi.NewID()
	}
	id, err := retryTrigger(ctx, c, func() (string, error) { return c.TriggerStop(ctx, jobID, req) })
	if err != nil {
		return "", err
	}
	return c.WaitForSavepoint(ctx, "stop-with-savepoint", jobID, id)
}

// Checkpoint takes a checkpoint and waits, returning its ID.
func (c *Client) Checkpoint(ctx context.Context, jobID string, req restapi.CheckpointTriggerRequest) (int64, error) {
	if req.TriggerID == "" {
		req.TriggerID = restapi.NewID()
	}
	id, err := retryTrigger(ctx, c, func() (string, error) { return c.TriggerCheckpoint(ctx, jobID, req) })
	if err != nil {
		return 0, err
	}
	return c.WaitForCheckpoint(ctx, jobID, id)
}

// retryTrigger retries an idempotent trigger while the server is
// unavailable (503) — not when it cannot be reached at all, which is more
// likely a wrong address than a restart.
func retryTrigger(ctx context.Context, c *Client, trigger func() (string, error)) (string, error) {
	for {
		id, err := trigger()
		var e *Error
		if err == nil || !errors.As(err, &e) || e.StatusCode != http.StatusServiceUnavailable {
			return id, err
		}
		if serr := c.sleep(ctx); serr != nil {
			return "", errors.Join(err, serr)
		}
	}
}
