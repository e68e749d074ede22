package restclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path"
	"path/filepath"

	"github.com/sluice/sluice/rest/restapi"
)

// Submission is a job to submit.
type Submission struct {
	// Graph is the job graph (internal/runtime/graph JSON).
	Graph []byte
	// BinaryPath is the job binary; it is streamed, not read into memory.
	BinaryPath string
	// Args are the job program's arguments, passed to its workers.
	Args []string
	// SavepointPath and AllowNonRestoredState restore the job from a
	// savepoint or retained checkpoint.
	SavepointPath         string
	AllowNonRestoredState bool
	// Configuration overrides the graph's configuration, key to value.
	Configuration map[string]string
}

// graphFileName names the job graph part of a submission.
const graphFileName = "job-graph.json"

// Submit uploads the job graph and binary (POST /jobs, multipart) and
// returns the job's ID once the cluster accepted the job.
func (c *Client) Submit(ctx context.Context, s Submission) (string, error) {
	bin, err := os.Open(s.BinaryPath)
	if err != nil {
		return "", fmt.Errorf("restclient: opening the job binary: %w", err)
	}
	defer bin.Close()
	if fi, err := bin.Stat(); err != nil {
		return "", fmt.Errorf("restclient: opening the job binary: %w", err)
	} else if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("restclient: the job binary %s is not a regular file", s.BinaryPath)
	}
	binName := filepath.Base(s.BinaryPath)
	if binName == graphFileName {
		binName = "job-binary"
	}
	reqJSON, err := json.Marshal(restapi.SubmitRequest{
		JobGraphFileName: graphFileName, JobJarFileNames: []string{binName},
		Args: s.Args, SavepointPath: s.SavepointPath, AllowNonRestoredState: s.AllowNonRestoredState,
		Configuration: s.Configuration,
	})
	if err != nil {
		return "", fmt.Errorf("restclient: encoding the submission: %w", err)
	}

	// Stream the body: a Go job binary is tens of megabytes.
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	written := make(chan error, 1)
	go func() {
		err := writeSubmission(mw, reqJSON, s.Graph, binName, bin)
		pw.CloseWithError(err) // nil: EOF to the reader
		written <- err
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base.String()+"/jobs", pr)
	if err != nil {
		pr.CloseWithError(err)
		<-written
		return "", fmt.Errorf("restclient: POST /jobs: %w", err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	var out restapi.SubmitResponse
	err = c.send(req, &out)
	pr.CloseWithError(errors.New("restclient: submission ended")) // unblocks the writer if the server stopped reading
	werr := <-written
	if err != nil {
		return "", err
	}
	if werr != nil {
		return "", fmt.Errorf("restclient: sending the submission: %w", werr)
	}
	id := path.Base(out.JobURL)
	if !restapi.ValidID(id) {
		return "", fmt.Errorf("restclient: the submission answered jobUrl %q, which names no job ID", out.JobURL)
	}
	return id, nil
}

func writeSubmission(mw *multipart.Writer, reqJSON, graphJSON []byte, binName string, bin io.Reader) error {
	w, err := mw.CreateFormField("request")
	if err != nil {
		return err
	}
	if _, err := w.Write(reqJSON); err != nil {
		return err
	}
	if w, err = mw.CreateFormFile("file_0", graphFileName); err != nil {
		return err
	}
	if _, err := w.Write(graphJSON); err != nil {
		return err
	}
	if w, err = mw.CreateFormFile("file_1", binName); err != nil {
		return err
	}
	if _, err := io.Copy(w, bin); err != nil {
		return err
	}
	return mw.Close()
}
