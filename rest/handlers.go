package rest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice/sluice/rest/restapi"
)

// maxJSONBody bounds the JSON body of requests other than submissions.
const maxJSONBody = 1 << 20

// backendCtx bounds a synchronous Backend call.
func (s *Server) backendCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.cfg.BackendTimeout)
}

// jobID reads and checks the {jobid} path parameter; on failure it has
// answered 400.
func jobID(w http.ResponseWriter, r *http.Request) (string, bool) {
	raw := r.PathValue("jobid")
	id, ok := restapi.ParseID(raw)
	if !ok {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("job ID %q is malformed: a job ID is 32 hexadecimal characters (see GET /jobs)", raw))
		return "", false
	}
	return id, true
}

func triggerID(w http.ResponseWriter, r *http.Request) (string, bool) {
	raw := r.PathValue("triggerid")
	id, ok := restapi.ParseID(raw)
	if !ok {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("trigger ID %q is malformed: a trigger ID is the 32 hexadecimal characters of the \"request-id\" the trigger answered", raw))
		return "", false
	}
	return id, true
}

// decodeBody decodes an optional JSON body into v, strictly: unknown
// members and trailing data are errors. An empty body leaves v as is. On
// failure it has answered 400 (or 413).
func decodeBody(w http.ResponseWriter, r *http.Request, v any, what string) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the %s is larger than %d bytes", what, maxJSONBody))
		} else {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("reading the %s: %v", what, err))
		}
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return true
	}
	if err := decodeStrict(body, v); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("the %s is not valid: %v", what, err))
		return false
	}
	return true
}

// decodeStrict decodes one JSON value into v, rejecting unknown members
// and anything after the value.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		err = jsonProblem(err)
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			err = fmt.Errorf("%w; the members are %s", err, memberNames(v))
		}
		return err
	}
	if dec.More() {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

// jsonProblem says what is wrong with a JSON body in the user's terms.
func jsonProblem(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("malformed JSON at byte %d: %v", syntax.Offset, syntax)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Errorf("member %q must be a JSON %s, not %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
		}
		return fmt.Errorf("expected a JSON %s, not %s", jsonKind(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("the JSON value is incomplete")
	default:
		return err // e.g. `json: unknown field "x"`
	}
}

// memberNames lists the JSON members of the struct v points to.
func memberNames(v any) string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return "none"
	}
	var names []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, strconv.Quote(name))
		}
	}
	return strings.Join(names, ", ")
}

func jsonKind(goKind string) string {
	switch goKind {
	case "struct", "map":
		return "object"
	case "slice", "array":
		return "array"
	case "bool":
		return "boolean"
	case "string":
		return "string"
	default:
		return "number"
	}
}

// ---------------------------------------------------------------------------
// Cluster

func (s *Server) getConfig(w http.ResponseWriter, r *http.Request) {
	now := time.UnixMilli(s.cfg.Clock.NowMillis())
	zone, offset := now.Zone()
	writeJSON(w, http.StatusOK, restapi.DashboardConfiguration{
		RefreshInterval: 3000,
		TimezoneName:    zone,
		TimezoneOffset:  offset * 1000,
		FlinkVersion:    s.cfg.Version,
		FlinkRevision:   s.cfg.Revision,
		Features:        restapi.DashboardFeatures{WebCancel: true, WebSubmit: true},
	})
}

func (s *Server) getOverview(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.backendCtx(r)
	defer cancel()
	tms, err := s.backend.TaskManagers(ctx)
	if err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	jobs, err := s.backend.Jobs(ctx)
	if err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	o := restapi.ClusterOverview{TaskManagers: len(tms), FlinkVersion: s.cfg.Version, FlinkCommit: s.cfg.Revision}
	for _, tm := range tms {
		o.SlotsTotal += tm.SlotsNumber
		o.SlotsAvailable += tm.FreeSlots
	}
	for _, j := range jobs {
		switch j.State {
		case restapi.JobFinished:
			o.JobsFinished++
		case restapi.JobCanceled:
			o.JobsCancelled++
		case restapi.JobFailed:
			o.JobsFailed++
		default:
			o.JobsRunning++
		}
	}
	writeJSON(w, http.StatusOK, o)
}

// sensitiveKeyParts mark configuration keys whose values are masked, as
// Flink masks them.
var sensitiveKeyParts = []string{"password", "secret", "token", "fs.azure.account.key", "apikey", "api-key", "auth-params"}

// maskedValue replaces a sensitive value (Flink's).
const maskedValue = "******"

func (s *Server) getClusterConfig(w http.ResponseWriter, r *http.Request) {
	entries := []restapi.ConfigEntry{}
	for _, e := range s.cfg.Cluster.Entries() {
		entries = append(entries, restapi.ConfigEntry{Key: e.Key, Value: maskValue(e.Key, e.Value)})
	}
	writeJSON(w, http.StatusOK, entries)
}

func (s *Server) getTaskManagers(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.backendCtx(r)
	defer cancel()
	tms, err := s.backend.TaskManagers(ctx)
	if err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	out := make([]restapi.TaskManagerInfo, len(tms))
	for i, tm := range tms {
		for _, r := range []*restapi.ResourceProfile{&tm.TotalResource, &tm.FreeResource} {
			if r.ExtendedResources == nil {
				r.ExtendedResources = map[string]float64{}
			}
		}
		out[i] = tm
	}
	writeJSON(w, http.StatusOK, restapi.TaskManagersInfo{TaskManagers: out})
}

// ---------------------------------------------------------------------------
// Jobs

func (s *Server) getJobs(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.backendCtx(r)
	defer cancel()
	jobs, err := s.backend.Jobs(ctx)
	if err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	out := restapi.JobIDsWithStatus{Jobs: make([]restapi.JobIDWithStatus, len(jobs))}
	for i, j := range jobs {
		out.Jobs[i] = restapi.JobIDWithStatus{ID: j.ID, Status: j.State}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getJobsOverview(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.backendCtx(r)
	defer cancel()
	jobs, err := s.backend.Jobs(ctx)
	if err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	out := make([]restapi.JobOverview, len(jobs))
	for i, j := range jobs {
		j.SchedulerType = restapi.SchedulerDefault
		out[i] = j
	}
	writeJSON(w, http.StatusOK, restapi.MultipleJobsDetails{Jobs: out})
}

// jobDetails reads a job's details for GET /jobs/:jobid and its plan.
func (s *Server) jobDetails(w http.ResponseWriter, r *http.Request) (*restapi.JobDetails, bool) {
	id, ok := jobID(w, r)
	if !ok {
		return nil, false
	}
	ctx, cancel := s.backendCtx(r)
	defer cancel()
	d, err := s.backend.Job(ctx, id)
	if err == nil && d == nil {
		err = fmt.Errorf("%w: job %s", restapi.ErrNotFound, id)
	}
	if err != nil {
		s.writeBackendError(w, r, err)
		return nil, false
	}
	out := *d
	if out.Plan.JobID == "" {
		out.Plan.JobID = out.ID
	}
	if out.Plan.Name == "" {
		out.Plan.Name = out.Name
	}
	if out.Plan.Type == "" {
		out.Plan.Type = out.JobType
	}
	if out.Plan.Nodes == nil {
		out.Plan.Nodes = []restapi.PlanNode{}
	}
	return &out, true
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	d, ok := s.jobDetails(w, r)
	if !ok {
		return
	}
	out := *d
	out.Now = s.cfg.Clock.NowMillis()
	out.SchedulerType = restapi.SchedulerDefault
	if out.Vertices == nil {
		out.Vertices = []restapi.Vertex{}
	}
	ts := make(map[restapi.JobState]int64, len(allJobStates))
	for _, st := range allJobStates {
		ts[st] = d.Timestamps[st]
	}
	out.Timestamps = ts
	if len(out.Vertices) > 0 {
		vs := make([]restapi.Vertex, len(out.Vertices))
		group := defaultSlotSharingGroup(out.ID)
		for i, v := range out.Vertices {
			if v.SlotSharingGroupID == "" {
				v.SlotSharingGroupID = group
			}
			vs[i] = v
		}
		out.Vertices = vs
	}
	writeJSON(w, http.StatusOK, out)
}

// defaultSlotSharingGroup is the id of the one slot sharing group every
// vertex of job jobID is in: 32 hex digits, stable for the job.
func defaultSlotSharingGroup(jobID string) string {
	sum := sha256.Sum256([]byte("slot-sharing-group/default/" + jobID))
	return hex.EncodeToString(sum[:16])
}

var allJobStates = []restapi.JobState{restapi.JobInitializing, restapi.JobCreated, restapi.JobRunning, restapi.JobFailing, restapi.JobFailed, restapi.JobCancelling,
	restapi.JobCanceled, restapi.JobFinished, restapi.JobRestarting, restapi.JobSuspended, restapi.JobReconciling}

func (s *Server) getJobPlan(w http.ResponseWriter, r *http.Request) {
	d, ok := s.jobDetails(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, restapi.JobPlanInfo{Plan: d.Plan})
}

// deleteCluster shuts the cluster down: DELETE /cluster (Flink's shutdown
// handler; 200 with an empty body once the shutdown has begun).
func (s *Server) deleteCluster(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.backendCtx(r)
	defer cancel()
	if err := s.backend.ShutDownCluster(ctx); err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

// patchJob terminates a job: PATCH /jobs/:jobid?mode=cancel.
func (s *Server) patchJob(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	switch mode := r.URL.Query().Get("mode"); strings.ToLower(mode) {
	case "", "cancel":
	case "stop":
		writeError(w, http.StatusBadRequest, "mode=stop is not supported: stop a job with a savepoint with POST /jobs/:jobid/stop")
		return
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("mode %q is not supported: the termination mode is \"cancel\"", mode))
		return
	}
	ctx, cancel := s.backendCtx(r)
	defer cancel()
	if err := s.backend.CancelJob(ctx, id); err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, struct{}{})
}

// getYarnCancel cancels a job on GET /jobs/:jobid/yarn-cancel, Flink 1.x's
// path for clients behind YARN's web proxy, which forwards GET only (it
// answers PATCH 501): the dashboard falls back to it there.
func (s *Server) getYarnCancel(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	ctx, cancel := s.backendCtx(r)
	defer cancel()
	if err := s.backend.CancelJob(ctx, id); err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, struct{}{})
}

func (s *Server) getJobExceptions(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	maxEntries := -1
	if v := r.URL.Query().Get("maxExceptions"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("maxExceptions %q is not a number of exceptions (a whole number, 0 or more)", v))
			return
		}
		maxEntries = n
	}
	ctx, cancel := s.backendCtx(r)
	defer cancel()
	history, err := s.backend.JobExceptions(ctx, id)
	if err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, exceptionsAnswer(history, maxEntries))
}

// exceptionsAnswer builds GET /jobs/:jobid/exceptions from the history,
// newest first, keeping at most maxEntries entries (-1: all).
func exceptionsAnswer(history []restapi.RootExceptionInfo, maxEntries int) restapi.JobExceptions {
	var out restapi.JobExceptions
	entries := make([]restapi.RootExceptionInfo, 0, len(history))
	for _, h := range history {
		h.FailureLabels = nonNilLabels(h.FailureLabels)
		if h.ConcurrentExceptions == nil {
			h.ConcurrentExceptions = []restapi.ExceptionInfo{}
		}
		for i := range h.ConcurrentExceptions {
			h.ConcurrentExceptions[i].FailureLabels = nonNilLabels(h.ConcurrentExceptions[i].FailureLabels)
		}
		entries = append(entries, h)
	}
	if maxEntries >= 0 && len(entries) > maxEntries {
		entries = entries[:maxEntries]
		out.ExceptionHistory.Truncated = true
	}
	out.ExceptionHistory.Entries = entries
	return out
}

func nonNilLabels(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func (s *Server) getJobResult(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	ctx, cancel := s.backendCtx(r)
	defer cancel()
	res, err := s.backend.JobResult(ctx, id)
	if err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	if res == nil {
		writeJSON(w, http.StatusOK, restapi.JobExecutionResult{Status: restapi.QueueStatus{ID: restapi.StatusInProgress}})
		return
	}
	out := *res
	if out.AccumulatorResults == nil {
		out.AccumulatorResults = restapi.Accumulators{}
	}
	writeJSON(w, http.StatusOK, restapi.JobExecutionResult{Status: restapi.QueueStatus{ID: restapi.StatusCompleted}, Result: &out})
}

func (s *Server) getJobCheckpoints(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	st, ok := s.checkpointStats(w, r, id)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) checkpointStats(w http.ResponseWriter, r *http.Request, id string) (*restapi.CheckpointingStatistics, bool) {
	ctx, cancel := s.backendCtx(r)
	defer cancel()
	st, err := s.backend.JobCheckpoints(ctx, id)
	if err == nil && st == nil {
		err = fmt.Errorf("%w: checkpointing is not enabled for job %s", restapi.ErrNotFound, id)
	}
	if err != nil {
		s.writeBackendError(w, r, err)
		return nil, false
	}
	if st.History == nil {
		st.History = []restapi.CheckpointStatistics{}
	}
	return st, true
}

func (s *Server) getCheckpointDetails(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	raw := r.PathValue("checkpointid")
	cp, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || cp < 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("checkpoint ID %q is not a checkpoint number", raw))
		return
	}
	st, ok := s.checkpointStats(w, r, id)
	if !ok {
		return
	}
	i := slices.IndexFunc(st.History, func(c restapi.CheckpointStatistics) bool { return c.ID == cp })
	if i < 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("checkpoint %d of job %s is not in the checkpoint history", cp, id))
		return
	}
	writeJSON(w, http.StatusOK, st.History[i])
}

// ---------------------------------------------------------------------------
// Asynchronous operations

// runningJob checks that the job exists and has not ended, answering 404
// or 409 otherwise.
func (s *Server) runningJob(w http.ResponseWriter, r *http.Request, id, what string) bool {
	ctx, cancel := s.backendCtx(r)
	defer cancel()
	jobs, err := s.backend.Jobs(ctx)
	if err != nil {
		s.writeBackendError(w, r, err)
		return false
	}
	i := slices.IndexFunc(jobs, func(j restapi.JobOverview) bool { return j.ID == id })
	if i < 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("job %s not found", id))
		return false
	}
	if st := jobs[i].State; st.IsGloballyTerminal() {
		writeError(w, http.StatusConflict, fmt.Sprintf("job %s is %s: %s needs a job that is running", id, st, what))
		return false
	}
	return true
}

func checkFormat(w http.ResponseWriter, f string) (string, bool) {
	switch strings.ToUpper(f) {
	case "", restapi.FormatCanonical:
		return restapi.FormatCanonical, true
	case restapi.FormatNative:
		writeError(w, http.StatusBadRequest, "formatType NATIVE is not supported: Sluice writes savepoints in the CANONICAL format only "+
			"(the same from either state backend, so they restore into both); use CANONICAL or leave formatType out")
		return "", false
	}
	writeError(w, http.StatusBadRequest, fmt.Sprintf("formatType %q is not a savepoint format: use CANONICAL", f))
	return "", false
}

// checkTriggerID checks a client-chosen trigger ID, or makes one.
func checkTriggerID(w http.ResponseWriter, id string) (string, bool) {
	if id == "" {
		return restapi.NewID(), true
	}
	canon, ok := restapi.ParseID(id)
	if !ok {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("triggerId %q is malformed: a trigger ID is 32 hexadecimal characters", id))
		return "", false
	}
	return canon, true
}

func (s *Server) postSavepoint(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	var req restapi.SavepointTriggerRequest
	if !decodeBody(w, r, &req, "savepoint request") {
		return
	}
	format, ok := checkFormat(w, req.FormatType)
	if !ok {
		return
	}
	trigger, ok := checkTriggerID(w, req.TriggerID)
	if !ok || !s.runningJob(w, r, id, "a savepoint") {
		return
	}
	sr := SavepointRequest{TargetDirectory: req.TargetDirectory, CancelJob: req.CancelJob, Format: format}
	s.startOp(w, opKey{kind: opSavepoint, job: id, trigger: trigger}, func(ctx context.Context) opResult {
		loc, err := s.backend.TriggerSavepoint(ctx, id, sr)
		return opResult{location: loc, err: err}
	})
}

func (s *Server) postStop(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	var req restapi.StopRequest
	if !decodeBody(w, r, &req, "stop request") {
		return
	}
	format, ok := checkFormat(w, req.FormatType)
	if !ok {
		return
	}
	trigger, ok := checkTriggerID(w, req.TriggerID)
	if !ok || !s.runningJob(w, r, id, "stop-with-savepoint") {
		return
	}
	sr := SavepointRequest{TargetDirectory: req.TargetDirectory, Drain: req.Drain, Format: format}
	// Stop is polled at /jobs/:jobid/savepoints/:triggerid, as in Flink.
	s.startOp(w, opKey{kind: opSavepoint, job: id, trigger: trigger}, func(ctx context.Context) opResult {
		loc, err := s.backend.StopWithSavepoint(ctx, id, sr)
		return opResult{location: loc, err: err}
	})
}

func (s *Server) postCheckpoint(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	var req restapi.CheckpointTriggerRequest
	if !decodeBody(w, r, &req, "checkpoint request") {
		return
	}
	cr := CheckpointRequest{Type: restapi.CheckpointConfigured}
	switch strings.ToUpper(req.CheckpointType) {
	case "", restapi.CheckpointConfigured:
	case restapi.CheckpointFull:
		cr.Type = restapi.CheckpointFull
	case "INCREMENTAL":
		writeError(w, http.StatusBadRequest, "checkpointType INCREMENTAL cannot be requested: use CONFIGURED, which is incremental when the job checkpoints incrementally, or FULL")
		return
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("checkpointType %q is not a checkpoint type: use CONFIGURED or FULL", req.CheckpointType))
		return
	}
	trigger, ok := checkTriggerID(w, req.TriggerID)
	if !ok || !s.runningJob(w, r, id, "a checkpoint") {
		return
	}
	s.startOp(w, opKey{kind: opCheckpoint, job: id, trigger: trigger}, func(ctx context.Context) opResult {
		cp, err := s.backend.TriggerCheckpoint(ctx, id, cr)
		return opResult{checkpointID: cp, err: err}
	})
}

// startOp registers the operation and runs it on a goroutine owned by the
// server, unless an operation with the same key exists (a repeated
// request), and answers the trigger ID.
func (s *Server) startOp(w http.ResponseWriter, key opKey, run func(context.Context) opResult) {
	if !s.ops.spawn(key, func() opResult { return s.runOp(key, run) }) {
		writeError(w, http.StatusServiceUnavailable, "the REST endpoint is shutting down")
		return
	}
	writeJSON(w, http.StatusAccepted, restapi.TriggerResponse{RequestID: key.trigger})
}

// runOp runs an operation, turning a panic in the Backend into its failure.
func (s *Server) runOp(key opKey, run func(context.Context) opResult) (res opResult) {
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("panic in asynchronous operation", "job", key.job, "trigger", key.trigger, "panic", v, "stack", string(debug.Stack()))
			res = opResult{err: fmt.Errorf("rest: internal error: %v", v)}
		}
	}()
	return run(s.ctx)
}

func (s *Server) getSavepointStatus(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	trigger, ok := triggerID(w, r)
	if !ok {
		return
	}
	st, ok := s.ops.get(opKey{kind: opSavepoint, job: id, trigger: trigger})
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("there is no savepoint operation with trigger ID %s for job %s (outcomes are kept for rest.async.store-duration)", trigger, id))
		return
	}
	if !st.done {
		writeJSON(w, http.StatusOK, restapi.SavepointStatus{Status: restapi.QueueStatus{ID: restapi.StatusInProgress}})
		return
	}
	info := &restapi.SavepointInfo{Location: restapi.ExternalPath(st.location), FailureCause: restapi.ThrowableOf(st.err)}
	if st.err != nil {
		info.Location = ""
	}
	writeJSON(w, http.StatusOK, restapi.SavepointStatus{Status: restapi.QueueStatus{ID: restapi.StatusCompleted}, Operation: info})
}

func (s *Server) getCheckpointStatus(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	trigger, ok := triggerID(w, r)
	if !ok {
		return
	}
	st, ok := s.ops.get(opKey{kind: opCheckpoint, job: id, trigger: trigger})
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("there is no checkpoint operation with trigger ID %s for job %s (outcomes are kept for rest.async.store-duration)", trigger, id))
		return
	}
	if !st.done {
		writeJSON(w, http.StatusOK, restapi.CheckpointStatus{Status: restapi.QueueStatus{ID: restapi.StatusInProgress}})
		return
	}
	info := &restapi.CheckpointInfo{CheckpointID: st.checkpointID, FailureCause: restapi.ThrowableOf(st.err)}
	if st.err != nil {
		info.CheckpointID = 0
	}
	writeJSON(w, http.StatusOK, restapi.CheckpointStatus{Status: restapi.QueueStatus{ID: restapi.StatusCompleted}, Operation: info})
}

// postSavepointDisposal deletes a savepoint: POST /savepoint-disposal
// {"savepoint-path"} → 202 {"request-id"}, polled at
// /savepoint-disposal/:triggerid (Flink's savepoint -dispose).
func (s *Server) postSavepointDisposal(w http.ResponseWriter, r *http.Request) {
	var req restapi.SavepointDisposalRequest
	if !decodeBody(w, r, &req, "savepoint disposal request") {
		return
	}
	if strings.TrimSpace(req.SavepointPath) == "" {
		writeError(w, http.StatusBadRequest, "the savepoint disposal request names no savepoint: set \"savepoint-path\" to the savepoint's directory or its _metadata file")
		return
	}
	trigger, ok := checkTriggerID(w, req.TriggerID)
	if !ok {
		return
	}
	path := req.SavepointPath
	s.startOp(w, opKey{kind: opDisposal, trigger: trigger}, func(ctx context.Context) opResult {
		return opResult{err: s.backend.DisposeSavepoint(ctx, path)}
	})
}

func (s *Server) getSavepointDisposalStatus(w http.ResponseWriter, r *http.Request) {
	trigger, ok := triggerID(w, r)
	if !ok {
		return
	}
	st, ok := s.ops.get(opKey{kind: opDisposal, trigger: trigger})
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("there is no savepoint disposal with trigger ID %s (outcomes are kept for rest.async.store-duration)", trigger))
		return
	}
	if !st.done {
		writeJSON(w, http.StatusOK, restapi.DisposalStatus{Status: restapi.QueueStatus{ID: restapi.StatusInProgress}})
		return
	}
	writeJSON(w, http.StatusOK, restapi.DisposalStatus{Status: restapi.QueueStatus{ID: restapi.StatusCompleted}, Operation: &restapi.AsynchronousOperationInfo{FailureCause: restapi.ThrowableOf(st.err)}})
}
