package rest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/runtime/graph"
)

// Flink's "jars" are Sluice's job binaries: uploaded once, listed, run as
// jobs and deleted, as Flink's web submission does:
//
//	POST   /jars/upload          multipart, the binary in part "jarfile" → {"filename", "status": "success"}
//	GET    /jars                 {"address", "files": [{id, name, uploaded, entry}]}
//	DELETE /jars/:jarid          delete one
//	GET    /jars/:jarid/plan     (or POST) the plan of the job the binary builds with ?programArg= or the body's programArgsList
//	POST   /jars/:jarid/run      run it: {"programArgsList", "parallelism", "savepointPath", "allowNonRestoredState", "flinkConfiguration"} → {"jobid"}
//
// To learn its job the JobManager runs the binary in plan mode
// (SLUICE_EXECUTION_TARGET=plan, as sluice info does) with the program's
// arguments and configuration, for at most jarPlanTimeout, and submits the
// job graph it writes with the binary, as POST /jobs does. A Go binary has
// no entry classes: entry is empty, and an entryClass is refused.
// The binaries are kept in a directory under Config.UploadDir while the
// server runs, and deleted when it closes.

// jarPlanTimeout bounds a job binary's run in plan mode.
const jarPlanTimeout = 2 * time.Minute

type jarFile struct {
	restapi.JarFile
	path string
}

// jars is the store of uploaded job binaries.
type jars struct {
	dir string // created on the first upload
	mu  struct {
		sync.Mutex
		files map[string]*jarFile
	}
}

func (j *jars) init(parent string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.dir != "" {
		return nil
	}
	dir, err := os.MkdirTemp(parent, "sluice-jars-")
	if err != nil {
		return fmt.Errorf("rest: making the directory of uploaded job binaries: %w", err)
	}
	j.dir = dir
	return nil
}

func (j *jars) close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.dir != "" {
		os.RemoveAll(j.dir)
	}
}

func (j *jars) get(id string) (*jarFile, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	f, ok := j.mu.files[id]
	return f, ok
}

func (s *Server) postJarUpload(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxContentLength)
	mr, err := r.MultipartReader()
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("POST /jars/upload expects a multipart/form-data body with the job binary in part \"jarfile\": %v", err))
		return
	}
	if err := s.jars.init(s.cfg.UploadDir); err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			writeError(w, http.StatusBadRequest, "the upload has no part \"jarfile\" holding the job binary")
			return
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("the multipart body is malformed: %v", err))
			return
		}
		if part.FormName() != "jarfile" {
			part.Close()
			continue
		}
		name := filepath.Base(part.FileName())
		if err := checkFileName(name); err != nil || name == "" || name == "." {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("the job binary's file name %q is not a plain file name", part.FileName()))
			return
		}
		id := restapi.NewID() + "_" + name
		path := filepath.Join(s.jars.dir, id)
		if _, err := store(part, path); err != nil {
			os.Remove(path)
			var tooLarge *http.MaxBytesError
			var re *requestError
			switch {
			case errors.As(err, &tooLarge):
				writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the job binary is larger than %d bytes (rest.server.max-content-length)", tooLarge.Limit))
			case errors.As(err, &re):
				writeError(w, re.status, re.msg)
			default:
				s.writeBackendError(w, r, err)
			}
			return
		}
		s.jars.mu.Lock()
		if s.jars.mu.files == nil {
			s.jars.mu.files = map[string]*jarFile{}
		}
		s.jars.mu.files[id] = &jarFile{JarFile: restapi.JarFile{ID: id, Name: name, Uploaded: s.cfg.Clock.NowMillis(), Entry: []restapi.JarEntry{}}, path: path}
		s.jars.mu.Unlock()
		writeJSON(w, http.StatusOK, restapi.JarUploadResponse{Filename: path, Status: "success"})
		return
	}
}

func (s *Server) getJars(w http.ResponseWriter, r *http.Request) {
	s.jars.mu.Lock()
	out := restapi.JarList{Address: "http://" + r.Host, Files: []restapi.JarFile{}}
	for _, f := range s.jars.mu.files {
		out.Files = append(out.Files, f.JarFile)
	}
	s.jars.mu.Unlock()
	slices.SortFunc(out.Files, func(a, b restapi.JarFile) int {
		if a.Uploaded != b.Uploaded {
			return int(b.Uploaded - a.Uploaded) // newest first, as Flink lists them
		}
		return strings.Compare(a.ID, b.ID)
	})
	writeJSON(w, http.StatusOK, out)
}

// jar reads {jarid}; on failure it has answered 404.
func (s *Server) jar(w http.ResponseWriter, r *http.Request) (*jarFile, bool) {
	id := r.PathValue("jarid")
	f, ok := s.jars.get(id)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("there is no uploaded job binary %q (see GET /jars)", id))
	}
	return f, ok
}

func (s *Server) deleteJar(w http.ResponseWriter, r *http.Request) {
	f, ok := s.jar(w, r)
	if !ok {
		return
	}
	s.jars.mu.Lock()
	delete(s.jars.mu.files, f.ID)
	s.jars.mu.Unlock()
	if err := os.Remove(f.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.writeBackendError(w, r, fmt.Errorf("rest: deleting job binary %s: %w", f.ID, err))
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

// jarRequest reads a run or plan request: the body, and Flink's query
// parameters (programArg, parallelism, savepointPath,
// allowNonRestoredState), which override it. On failure it has answered.
func jarRequest(w http.ResponseWriter, r *http.Request) (restapi.JarRunRequest, bool) {
	var req restapi.JarRunRequest
	if r.Method == http.MethodPost && !decodeBody(w, r, &req, "jar request") {
		return req, false
	}
	q := r.URL.Query()
	if args := listParam(r, "programArg"); len(args) > 0 {
		req.ProgramArgsList = args
	}
	if v := q.Get("parallelism"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("parallelism %q is not a number", v))
			return req, false
		}
		req.Parallelism = &n
	}
	if v := q.Get("savepointPath"); v != "" {
		req.SavepointPath = v
	}
	if v := q.Get("allowNonRestoredState"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("allowNonRestoredState %q is not true or false", v))
			return req, false
		}
		req.AllowNonRestoredState = &b
	}
	if len(req.ProgramArgsList) == 0 && strings.TrimSpace(req.ProgramArgs) != "" {
		req.ProgramArgsList = strings.Fields(req.ProgramArgs)
	}
	switch {
	case req.EntryClass != "" || q.Get("entry-class") != "":
		writeError(w, http.StatusBadRequest, "a Sluice job binary has no entry classes: leave entryClass out")
		return req, false
	case req.JobID != "":
		writeError(w, http.StatusBadRequest, "jobId cannot be chosen: the JobManager gives each job its ID")
		return req, false
	case req.Parallelism != nil && *req.Parallelism <= 0 && *req.Parallelism != -1:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("parallelism %d is not a parallelism (1 or more)", *req.Parallelism))
		return req, false
	}
	return req, true
}

// planOf runs the binary in plan mode and reads the job graph it writes.
func (s *Server) planOf(ctx context.Context, f *jarFile, req restapi.JarRunRequest) ([]byte, *graph.JobGraph, error) {
	dir, err := os.MkdirTemp(s.cfg.UploadDir, "sluice-plan-")
	if err != nil {
		return nil, nil, fmt.Errorf("rest: running job binary %s: %w", f.Name, err)
	}
	defer os.RemoveAll(dir)
	var props []string
	for k, v := range req.Configuration() {
		props = append(props, k+"="+v)
	}
	slices.Sort(props)
	dyn, err := conf.JoinDynamicProperties(props)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: flinkConfiguration: %v", restapi.ErrBadRequest, err)
	}
	ctx, cancel := context.WithTimeout(ctx, jarPlanTimeout)
	defer cancel()
	out := filepath.Join(dir, "plan.json")
	cmd := exec.CommandContext(ctx, f.path, req.ProgramArgsList...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), conf.EnvExecutionTarget+"="+conf.BinaryModePlan, conf.EnvPlanOut+"="+out,
		conf.EnvDynamicProperties+"="+dyn)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Run(); err != nil {
		tail := output.String()
		if len(tail) > 4000 {
			tail = "..." + tail[len(tail)-4000:]
		}
		return nil, nil, fmt.Errorf("%w: job binary %s failed building its job (%v): %s", restapi.ErrBadRequest, f.Name, err, strings.TrimSpace(tail))
	}
	data, err := os.ReadFile(out)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("%w: job binary %s exited without writing its job graph: it must be a Sluice job program (calling stream's Execute)", restapi.ErrBadRequest, f.Name)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("rest: reading the job graph of %s: %w", f.Name, err)
	}
	g, err := graph.Unmarshal(data)
	if err == nil {
		err = g.Validate()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: job binary %s wrote a job graph that is not valid: %v", restapi.ErrBadRequest, f.Name, err)
	}
	return data, g, nil
}

func (s *Server) jarPlan(w http.ResponseWriter, r *http.Request) {
	f, ok := s.jar(w, r)
	if !ok {
		return
	}
	req, ok := jarRequest(w, r)
	if !ok {
		return
	}
	_, g, err := s.planOf(r.Context(), f, req)
	if err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	p, err := graph.BuildPlan(g)
	if err != nil {
		s.writeBackendError(w, r, fmt.Errorf("%w: the job of %s cannot be planned: %v", restapi.ErrBadRequest, f.Name, err))
		return
	}
	id := restapi.DeriveID("jar-plan", f.ID)
	typ := "STREAMING"
	if strings.EqualFold(g.Config[conf.ExecutionRuntimeMode.Key()], conf.RuntimeModeBatch) {
		typ = "BATCH"
	}
	writeJSON(w, http.StatusOK, restapi.JobPlanInfo{Plan: NewJobPlan(id, typ, p, func(c *graph.Chain) string { return restapi.DeriveID(id, strconv.Itoa(c.ID)) })})
}

func (s *Server) postJarRun(w http.ResponseWriter, r *http.Request) {
	f, ok := s.jar(w, r)
	if !ok {
		return
	}
	req, ok := jarRequest(w, r)
	if !ok {
		return
	}
	data, g, err := s.planOf(r.Context(), f, req)
	if err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	// The Backend keeps a copy of the binary it is given, which it may
	// delete afterwards: hand it a copy, so the jar stays for further runs.
	dir, err := os.MkdirTemp(s.cfg.UploadDir, "sluice-upload-")
	if err != nil {
		s.writeBackendError(w, r, fmt.Errorf("rest: staging job binary %s: %w", f.Name, err))
		return
	}
	defer os.RemoveAll(dir)
	src, err := os.Open(f.path)
	if err != nil {
		s.writeBackendError(w, r, fmt.Errorf("rest: reading job binary %s: %w", f.Name, err))
		return
	}
	bin, err := store(src, filepath.Join(dir, "binary"))
	src.Close()
	if err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	sub := &Submission{Graph: g, GraphJSON: data, BinaryPath: bin.path, BinarySHA256: bin.sha256, BinaryName: f.Name,
		Args: req.ProgramArgsList, SavepointPath: req.SavepointPath, Configuration: req.Configuration()}
	if req.AllowNonRestoredState != nil {
		sub.AllowNonRestoredState = *req.AllowNonRestoredState
	}
	ctx, cancel := s.backendCtx(r)
	defer cancel()
	id, err := s.backend.SubmitJob(ctx, sub)
	if err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, restapi.JarRunResponse{JobID: id})
}
