package deployment

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func validDeployment() *WorkerDeployment {
	return &WorkerDeployment{
		Format: DeploymentFormat, TaskManagerID: "tm", TaskManagerAddress: "h:1", JobID: "j", Attempt: 2, WorkerID: "w",
		BinarySHA256: strings.Repeat("a", 64), BinarySize: 10, JobMasterAddress: "jm:6123",
		AllocationIDs: []string{"a1", "a2"}, Args: []string{"x"}, Env: map[string]string{"K": "V"},
		Configuration: map[string]string{"parallelism.default": "2"}, DataHost: "h", DataPorts: "50100-50200,50300",
	}
}

func TestWorkerDeploymentRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deployment.json")
	want := validDeployment()
	if err := WriteWorkerDeployment(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadWorkerDeployment(path)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	data, _ := os.ReadFile(path)
	for _, key := range []string{`"task_manager_id"`, `"job_master_address"`, `"allocation_ids"`, `"configuration"`, `"data_host"`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("file lacks %s:\n%s", key, data)
		}
	}
}

func TestWorkerDeploymentErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []string
	}{
		{"not JSON", "{", []string{"unexpected EOF"}},
		{"unknown field", `{"format":2,"surprise":true}`, []string{`unknown field "surprise"`}},
		{"trailing data", `{"format":2} {}`, []string{"data after the JSON object"}},
		{"wrong types", `{"format":"1"}`, []string{"format"}},
		{"empty", `{}`, []string{"format 0", "task_manager_id is empty", "job_id is empty", "worker_id is empty",
			"job_master_address is empty", "data_host is empty", "allocation_ids is empty"}},
		{"bad numbers", `{"format":2,"task_manager_id":"t","job_id":"j","worker_id":"w","job_master_address":"a:1",
			"data_host":"h","allocation_ids":["a"],"attempt":-1}`, []string{"attempt -1"}},
		{"format 1", `{"format":1,"data_port":0}`, []string{"format 1: this program reads format 2", "different Sluice versions"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseWorkerDeployment([]byte(tt.data))
			if !errors.Is(err, ErrBadDeployment) {
				t.Fatalf("got %v, want ErrBadDeployment", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
	if _, err := ReadWorkerDeployment(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func FuzzParseWorkerDeployment(f *testing.F) {
	f.Add([]byte(`{"format":2,"task_manager_id":"t","job_id":"j","worker_id":"w","job_master_address":"a:1","data_host":"h","allocation_ids":["a"]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseWorkerDeployment(data)
		if err != nil {
			if !errors.Is(err, ErrBadDeployment) {
				t.Fatalf("error %v does not match ErrBadDeployment", err)
			}
			return
		}
		if err := d.Validate(); err != nil {
			t.Fatalf("parsed a deployment that does not validate: %v", err)
		}
	})
}
