// Package deployment is what a TaskManager hands the worker it starts:
// written by cluster/taskmanager, read by cluster/worker inside the job
// binary. SLUICE_WORKER_DEPLOYMENT names a file holding it, or is [Stdin]:
// the TaskManager writes it to the worker's standard input, so the job's
// -D values and environment (credentials, often) are never on disk.
package deployment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DeploymentFormat is the version of the deployment file format written by
// this package. Format 2 carries taskmanager.data.port as written (a port,
// range or list: data_ports) where format 1 had one port (data_port).
const DeploymentFormat = 2

// maxDeploymentSize bounds the deployment file ReadWorkerDeployment reads.
const maxDeploymentSize = 16 << 20

// ErrBadDeployment is matched by errors of ReadWorkerDeployment and
// ParseWorkerDeployment.
var ErrBadDeployment = errors.New("taskmanager: bad worker deployment file")

// WorkerDeployment is the content of the file a worker reads at start (named
// by conf.EnvWorkerDeployment): the TaskManager's SubmitTasksRequest and where
// the worker runs.
type WorkerDeployment struct {
	// Format is DeploymentFormat.
	Format int `json:"format"`
	// TaskManagerID and TaskManagerAddress (gRPC host:port) name the
	// TaskManager that started the worker.
	TaskManagerID      string `json:"task_manager_id"`
	TaskManagerAddress string `json:"task_manager_address"`
	JobID              string `json:"job_id"`
	Attempt            int32  `json:"attempt"`
	WorkerID           string `json:"worker_id"`
	// BinarySHA256 (hex) and BinarySize describe the job binary running.
	BinarySHA256 string `json:"binary_sha256"`
	BinarySize   int64  `json:"binary_size"`
	// JobMasterAddress is the JobMaster the worker connects to (host:port).
	JobMasterAddress string `json:"job_master_address"`
	// AllocationIDs are the slots the worker's tasks run in.
	AllocationIDs []string `json:"allocation_ids"`
	// Args are the program's arguments: not on the worker's command line,
	// the worker's start-up (internal/launch) puts them in os.Args. Env is
	// extra environment, also set in the process's environment.
	Args []string          `json:"args,omitempty"`
	Env  map[string]string `json:"env,omitempty"`
	// Configuration is the job's effective configuration (Flink keys).
	Configuration map[string]string `json:"configuration"`
	// DataHost is the address the worker's data endpoint binds to and
	// advertises (the TaskManager's host); DataPorts the ports it may take,
	// the first free one: taskmanager.data.port, a port, a range such as
	// 50100-50200 or a list of both ("0", or empty: any free port),
	// checked by the worker as it binds (this package links no conf).
	DataHost  string `json:"data_host"`
	DataPorts string `json:"data_ports,omitempty"`
}

// Validate reports every missing or malformed field at once.
func (d *WorkerDeployment) Validate() error {
	var problems []string
	if d.Format != DeploymentFormat {
		problems = append(problems, fmt.Sprintf("format %d: this program reads format %d", d.Format, DeploymentFormat))
	}
	for _, f := range []struct{ name, v string }{
		{"task_manager_id", d.TaskManagerID}, {"job_id", d.JobID}, {"worker_id", d.WorkerID},
		{"job_master_address", d.JobMasterAddress}, {"data_host", d.DataHost},
	} {
		if f.v == "" {
			problems = append(problems, f.name+" is empty")
		}
	}
	if d.Attempt < 0 {
		problems = append(problems, fmt.Sprintf("attempt %d is negative", d.Attempt))
	}
	if len(d.AllocationIDs) == 0 {
		problems = append(problems, "allocation_ids is empty")
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrBadDeployment, strings.Join(problems, "; "))
}

// Equal reports whether d and o say the same, nil and empty maps and lists
// alike.
func (d *WorkerDeployment) Equal(o *WorkerDeployment) bool {
	return d.Format == o.Format && d.TaskManagerID == o.TaskManagerID && d.TaskManagerAddress == o.TaskManagerAddress &&
		d.JobID == o.JobID && d.Attempt == o.Attempt && d.WorkerID == o.WorkerID && d.BinarySHA256 == o.BinarySHA256 &&
		d.BinarySize == o.BinarySize && d.JobMasterAddress == o.JobMasterAddress && d.DataHost == o.DataHost && d.DataPorts == o.DataPorts &&
		maps.Equal(d.Env, o.Env) && maps.Equal(d.Configuration, o.Configuration) &&
		slices.Equal(d.AllocationIDs, o.AllocationIDs) && slices.Equal(d.Args, o.Args)
}

// ParseWorkerDeployment decodes and validates a deployment file's content.
// Unknown fields are refused, so a file from a newer format is not
// half-read.
func ParseWorkerDeployment(data []byte) (*WorkerDeployment, error) {
	// Another format is named as such, not by the fields it has or lacks.
	var f struct {
		Format int `json:"format"`
	}
	if err := json.Unmarshal(data, &f); err == nil && f.Format != 0 && f.Format != DeploymentFormat {
		return nil, fmt.Errorf("%w: format %d: this program reads format %d (the TaskManager and the job binary are of different Sluice versions)",
			ErrBadDeployment, f.Format, DeploymentFormat)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var d WorkerDeployment
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadDeployment, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the JSON object", ErrBadDeployment)
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return &d, nil
}

// Stdin, as the deployment's path, is the process's standard input.
const Stdin = "-"

// ReadWorkerDeployment reads the deployment file at path, or standard
// input for [Stdin] (to its end).
func ReadWorkerDeployment(path string) (*WorkerDeployment, error) {
	var f io.ReadCloser = os.Stdin
	if path != Stdin {
		var err error
		if f, err = os.Open(path); err != nil {
			return nil, fmt.Errorf("taskmanager: worker deployment file: %w", err)
		}
		defer f.Close()
	} else {
		path = "standard input"
	}
	data, err := io.ReadAll(io.LimitReader(f, maxDeploymentSize+1))
	if err != nil {
		return nil, fmt.Errorf("taskmanager: worker deployment file %s: %w", path, err)
	}
	if len(data) > maxDeploymentSize {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrBadDeployment, path, maxDeploymentSize)
	}
	d, err := ParseWorkerDeployment(data)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return d, nil
}

// EncodeWorkerDeployment is d as ReadWorkerDeployment reads it.
func EncodeWorkerDeployment(d *WorkerDeployment) ([]byte, error) {
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("taskmanager: encode worker deployment: %w", err)
	}
	return append(data, '\n'), nil
}

// WriteWorkerDeployment writes d to path atomically (a temporary file
// renamed into place), readable by the owner only.
func WriteWorkerDeployment(path string, d *WorkerDeployment) error {
	data, err := EncodeWorkerDeployment(d)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".deployment-*")
	if err != nil {
		return fmt.Errorf("taskmanager: write worker deployment: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("taskmanager: write worker deployment: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("taskmanager: write worker deployment: %w", err)
	}
	return nil
}
