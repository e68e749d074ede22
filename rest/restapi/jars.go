package restapi

import (
	"strconv"

	"github.com/sluice/sluice/conf"
)

// JarEntry is an entry point of a jar (Flink's JarEntryInfo).
type JarEntry struct {
	Name        string  `json:"name"`
	Description *string `json:"description"`
}

// JarFile is one uploaded job binary of GET /jars.
type JarFile struct {
	ID       string     `json:"id"`
	Name     string     `json:"name"`
	Uploaded int64      `json:"uploaded"` // epoch ms
	Entry    []JarEntry `json:"entry"`
}

// JarList is the body of GET /jars.
type JarList struct {
	Address string    `json:"address"`
	Files   []JarFile `json:"files"`
}

// JarUploadResponse is the body answering POST /jars/upload.
type JarUploadResponse struct {
	Filename string `json:"filename"`
	Status   string `json:"status"`
}

// JarRunRequest is the body of POST /jars/:jarid/run and /plan (Flink's
// JarRunRequestBody); members Sluice has no use for are accepted when
// empty.
type JarRunRequest struct {
	EntryClass            string            `json:"entryClass,omitempty"`
	ProgramArgs           string            `json:"programArgs,omitempty"` // deprecated in Flink: space-separated
	ProgramArgsList       []string          `json:"programArgsList,omitempty"`
	Parallelism           *int              `json:"parallelism,omitempty"`
	JobID                 string            `json:"jobId,omitempty"`
	AllowNonRestoredState *bool             `json:"allowNonRestoredState,omitempty"`
	SavepointPath         string            `json:"savepointPath,omitempty"`
	RestoreMode           string            `json:"restoreMode,omitempty"`
	ClaimMode             string            `json:"claimMode,omitempty"`
	FlinkConfiguration    map[string]string `json:"flinkConfiguration,omitempty"`
}

// JarRunResponse is the body answering POST /jars/:jarid/run.
type JarRunResponse struct {
	JobID string `json:"jobid"`
}

// Configuration is the job's configuration the request asks for: its
// flinkConfiguration with parallelism.default from its parallelism.
func (req JarRunRequest) Configuration() map[string]string {
	c := map[string]string{}
	for k, v := range req.FlinkConfiguration {
		c[k] = v
	}
	if req.Parallelism != nil && *req.Parallelism > 0 {
		c[conf.ParallelismDefault.Key()] = strconv.Itoa(*req.Parallelism)
	}
	return c
}
