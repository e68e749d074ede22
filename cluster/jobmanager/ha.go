package jobmanager

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"log/slog"
	"path"
	"sync"

	"github.com/sluice/sluice/fs"
)

// jobRecord is what the HA store keeps of a submitted job: enough for a new
// JobManager to run it again from its latest checkpoint.
type jobRecord struct {
	ID            string            `json:"id"`
	Name          string            `json:"name"`
	BinarySHA256  string            `json:"binary_sha256"`
	BinarySize    int64             `json:"binary_size"`
	Args          []string          `json:"args,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	Dynamic       map[string]string `json:"dynamic,omitempty"`
	SubmittedAtMS int64             `json:"submitted_at_ms"`
	// LatestCheckpoint is the pointer to the job's latest completed
	// checkpoint, kept in checkpointFile beside job.json (informational:
	// recovery lists the checkpoint storage, which also holds checkpoints
	// completed after the pointer was written).
	LatestCheckpoint string `json:"-"`
}

// haStore keeps job graphs, records and binaries under
// high-availability.storageDir/<cluster-id>/ (FILESYSTEM HA); with HA off
// it keeps nothing but the binaries, in the JobManager's working
// directory. A record holds the job's -D values and program arguments,
// which may be credentials: the cluster's directory and everything below
// it are private to the JobManager's user (directories 0700, files 0600).
type haStore struct {
	fs      fs.FileSystem
	dir     string // "" when HA is off
	log     *slog.Logger
	mu      sync.Mutex
	records map[string]*jobRecord
}

func (h *haStore) enabled() bool { return h.dir != "" }

func (h *haStore) jobDir(id string) string { return path.Join(h.dir, "jobs", id) }

func (h *haStore) writeFile(p string, data []byte) error {
	tmp := p + ".tmp"
	h.fs.Remove(tmp)
	w, err := h.fs.CreatePrivate(tmp)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := h.fs.Remove(p); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return err
	}
	return h.fs.Rename(tmp, p)
}

// put stores a job before it runs.
func (h *haStore) put(rec *jobRecord, graphJSON []byte) error {
	if !h.enabled() {
		return nil
	}
	d := h.jobDir(rec.ID)
	// The cluster's directory and jobs/ are narrowed too, should an
	// earlier version have made them wider.
	for _, p := range []string{h.dir, path.Dir(d), d} {
		if err := h.fs.MkdirAllPrivate(p); err != nil {
			return fmt.Errorf("jobmanager: HA store %s: %w", p, err)
		}
	}
	if err := h.writeFile(path.Join(d, "graph.json"), graphJSON); err != nil {
		return fmt.Errorf("jobmanager: HA store: writing the job graph of %s: %w", rec.ID, err)
	}
	if err := h.writeRecord(rec); err != nil {
		return err
	}
	h.mu.Lock()
	h.records[rec.ID] = rec
	h.mu.Unlock()
	return nil
}

// writeRecord writes the job's record, once, when it is stored.
func (h *haStore) writeRecord(rec *jobRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := h.writeFile(path.Join(h.jobDir(rec.ID), "job.json"), b); err != nil {
		return fmt.Errorf("jobmanager: HA store: writing the record of job %s: %w", rec.ID, err)
	}
	return nil
}

// checkpointFile holds the path of a job's latest completed checkpoint, in
// a file of its own: job.json is written once, when the job is stored, so
// that a JobManager dying at any moment leaves it whole (rewriting it
// means removing it first on HDFS, whose rename does not replace).
const checkpointFile = "latest-checkpoint"

// checkpointCompleted moves the job's checkpoint pointer.
func (h *haStore) checkpointCompleted(id, p string) {
	if !h.enabled() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	rec, ok := h.records[id]
	if !ok {
		return
	}
	r := *rec
	r.LatestCheckpoint = p
	h.records[id] = &r
	if err := h.writeFile(path.Join(h.jobDir(id), checkpointFile), []byte(p)); err != nil {
		h.log.Warn("updating the HA checkpoint pointer failed", "job", id, "err", err)
	}
}

// remove forgets a job that reached a terminal status.
func (h *haStore) remove(id string) {
	if !h.enabled() {
		return
	}
	h.mu.Lock()
	delete(h.records, id)
	h.mu.Unlock()
	if err := h.fs.RemoveAll(h.jobDir(id)); err != nil {
		h.log.Warn("removing a finished job from the HA store failed", "job", id, "err", err)
	}
}

// load reads the jobs a previous JobManager left running.
func (h *haStore) load() ([]*jobRecord, map[string][]byte, error) {
	if !h.enabled() {
		return nil, nil, nil
	}
	entries, err := h.fs.ReadDir(path.Join(h.dir, "jobs"))
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("jobmanager: HA store %s: %w", h.dir, err)
	}
	var recs []*jobRecord
	graphs := map[string][]byte{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		d := h.jobDir(e.Name())
		rb, err := readFile(h.fs, path.Join(d, "job.json"))
		if err != nil {
			h.log.Warn("skipping an unreadable job in the HA store", "dir", d, "err", err)
			continue
		}
		var rec jobRecord
		if err := json.Unmarshal(rb, &rec); err != nil || rec.ID != e.Name() {
			h.log.Warn("skipping a corrupt job record in the HA store", "dir", d, "err", err)
			continue
		}
		gb, err := readFile(h.fs, path.Join(d, "graph.json"))
		if err != nil {
			h.log.Warn("skipping a job without its graph in the HA store", "dir", d, "err", err)
			continue
		}
		// The pointer is informational (recovery lists the checkpoint
		// storage): one lost with its JobManager is no loss.
		if cp, err := readFile(h.fs, path.Join(d, checkpointFile)); err == nil {
			rec.LatestCheckpoint = string(cp)
		}
		recs = append(recs, &rec)
		graphs[rec.ID] = gb
		h.mu.Lock()
		h.records[rec.ID] = &rec
		h.mu.Unlock()
	}
	return recs, graphs, nil
}

func readFile(fsys fs.FileSystem, p string) ([]byte, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
