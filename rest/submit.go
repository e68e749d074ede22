package rest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/internal/runtime/graph"
)

// Job submission: POST /jobs with a multipart/form-data body, as Flink's
// client sends it: a form field "request" holding a SubmitRequest, and one
// file part per file it names (the job graph and the job binary), matched
// by file name. The form names of the file parts do not matter.
//
//	curl -X POST http://localhost:8081/jobs \
//	  -F 'request={"jobGraphFileName":"job.json","jobJarFileNames":["wordcount"]};type=application/json' \
//	  -F 'file_0=@job.json' -F 'file_1=@wordcount'

const (
	// maxParts bounds the parts of a submission.
	maxParts = 16
	// maxRequestPart bounds the "request" part.
	maxRequestPart = 1 << 20
)

// requestError is a problem with a request, answered with its status.
type requestError struct {
	status int
	msg    string
}

func (e *requestError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &requestError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

func (s *Server) postJob(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxContentLength)
	mr, err := r.MultipartReader()
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("POST /jobs expects a multipart/form-data body with a \"request\" part naming the job graph and binary parts (Content-Type was %q): %v", r.Header.Get("Content-Type"), err))
		return
	}
	dir, err := os.MkdirTemp(s.cfg.UploadDir, "sluice-upload-")
	if err != nil {
		s.writeBackendError(w, r, fmt.Errorf("rest: staging the upload: %w", err))
		return
	}
	defer os.RemoveAll(dir)
	sub, err := parseSubmission(mr, dir)
	if err != nil {
		var tooLarge *http.MaxBytesError
		var re *requestError
		switch {
		case errors.As(err, &tooLarge):
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the submission is larger than %d bytes (rest.server.max-content-length)", tooLarge.Limit))
		case errors.As(err, &re):
			writeError(w, re.status, re.msg)
		default:
			s.writeBackendError(w, r, err)
		}
		return
	}
	ctx, cancel := s.backendCtx(r)
	defer cancel()
	id, err := s.backend.SubmitJob(ctx, sub)
	if err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, restapi.SubmitResponse{JobURL: "/jobs/" + id})
}

// uploaded is a file part stored in the staging directory.
type uploaded struct {
	path   string
	sha256 string
}

// parseSubmission reads a submission's parts, storing file parts in dir,
// and checks it. Problems with the request are *requestError.
func parseSubmission(mr *multipart.Reader, dir string) (*Submission, error) {
	var reqJSON []byte
	files := map[string]uploaded{}
	for n := 0; ; n++ {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, multipartProblem(err)
		}
		if n == maxParts {
			part.Close()
			return nil, badRequest("the submission has more than %d parts; send the \"request\" part, the job graph and the job binary", maxParts)
		}
		name, fileName := part.FormName(), part.FileName()
		switch {
		case fileName == "" && name == "request":
			if reqJSON != nil {
				return nil, badRequest("the submission has two \"request\" parts")
			}
			reqJSON, err = io.ReadAll(io.LimitReader(part, maxRequestPart+1))
			if err != nil {
				return nil, multipartProblem(err)
			}
			if len(reqJSON) > maxRequestPart {
				return nil, badRequest("the \"request\" part is larger than %d bytes", maxRequestPart)
			}
		case fileName == "":
			return nil, badRequest("unexpected form field %q: a submission has a \"request\" field and file parts", name)
		default:
			if err := checkFileName(fileName); err != nil {
				return nil, err
			}
			if _, dup := files[fileName]; dup {
				return nil, badRequest("two file parts are named %q", fileName)
			}
			u, err := store(part, filepath.Join(dir, fmt.Sprintf("part-%d", n)))
			if err != nil {
				return nil, err
			}
			files[fileName] = u
		}
		part.Close()
	}
	if reqJSON == nil {
		return nil, badRequest("the submission has no \"request\" part: send a form field \"request\" holding {\"jobGraphFileName\": ..., \"jobJarFileNames\": [...]}")
	}
	var req restapi.SubmitRequest
	if err := decodeStrict(reqJSON, &req); err != nil {
		return nil, badRequest("the \"request\" part is not valid: %v", err)
	}
	if req.JobGraphFileName == "" {
		return nil, badRequest("the request has no jobGraphFileName: name the file part holding the job graph")
	}
	if len(req.JobJarFileNames) != 1 {
		return nil, badRequest("jobJarFileNames names %d files: name exactly one, the job binary", len(req.JobJarFileNames))
	}
	graphFile, ok := files[req.JobGraphFileName]
	if !ok {
		return nil, badRequest("jobGraphFileName %q names no file part of the submission", req.JobGraphFileName)
	}
	binName := req.JobJarFileNames[0]
	bin, ok := files[binName]
	if !ok {
		return nil, badRequest("jobJarFileNames names %q, which is no file part of the submission", binName)
	}
	if binName == req.JobGraphFileName {
		return nil, badRequest("the job graph and the job binary are the same file part %q", binName)
	}
	if len(files) > 2 {
		for f := range files {
			if f != binName && f != req.JobGraphFileName {
				return nil, badRequest("file part %q is named neither by jobGraphFileName nor by jobJarFileNames", f)
			}
		}
	}
	for k := range req.Configuration {
		if strings.TrimSpace(k) == "" {
			return nil, badRequest("the request's configuration has an empty key")
		}
	}
	graphJSON, err := os.ReadFile(graphFile.path)
	if err != nil {
		return nil, fmt.Errorf("rest: reading the staged job graph: %w", err)
	}
	g, err := graph.Unmarshal(graphJSON)
	if err != nil {
		return nil, badRequest("the job graph %q is not a Sluice job graph: %v", req.JobGraphFileName, err)
	}
	if err := g.Validate(); err != nil {
		return nil, badRequest("the job graph %q is invalid: %v", req.JobGraphFileName, err)
	}
	return &Submission{
		Graph: g, GraphJSON: graphJSON,
		BinaryPath: bin.path, BinarySHA256: bin.sha256, BinaryName: binName,
		Args: req.Args, SavepointPath: req.SavepointPath, AllowNonRestoredState: req.AllowNonRestoredState,
		Configuration: req.Configuration,
	}, nil
}

// checkFileName rejects file names that are paths or empty.
func checkFileName(name string) error {
	if name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") || len(name) > 255 {
		return badRequest("file part name %q is not a plain file name", name)
	}
	return nil
}

// store copies a file part to path, hashing it.
func store(r io.Reader, path string) (uploaded, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o700)
	if err != nil {
		return uploaded{}, fmt.Errorf("rest: staging an uploaded file: %w", err)
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(f, h), r)
	if cerr := f.Close(); err == nil && cerr != nil {
		return uploaded{}, fmt.Errorf("rest: staging an uploaded file: %w", cerr)
	}
	if err != nil {
		return uploaded{}, multipartProblem(err)
	}
	return uploaded{path: path, sha256: hex.EncodeToString(h.Sum(nil))}, nil
}

// multipartProblem classifies an error reading the body: too large stays
// as is, a broken body is the client's problem.
func multipartProblem(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return err
	}
	var pathErr *os.PathError
	if errors.As(err, &pathErr) {
		return fmt.Errorf("rest: staging an uploaded file: %w", err)
	}
	return badRequest("the multipart body is malformed: %v", err)
}
