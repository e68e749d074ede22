package local

import (
	"fmt"
	"io"
	"os"
	"sort"
	"sync"

	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
	"github.com/sluice/sluice/internal/runtime/codec"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/task"
)

// metadata is the payload of a checkpoint's _metadata file.
type metadata struct {
	JobID     string
	ID        int64
	Kind      int
	Timestamp int64
	Operators []operatorMeta
	// Tasks are the task snapshot files (handles relative to the metadata).
	Tasks []string
}

type operatorMeta struct {
	ID             string
	Name           string
	Parallelism    int
	MaxParallelism int
	Coordinator    []byte
}

// taskFile is the content of one task snapshot file.
type taskFile struct {
	Operators map[string]operatorFile
}

type operatorFile struct {
	Subtask   int
	KeyGroups map[int][]byte
	State     [][]byte
	Union     bool
	// Manifests and Files (name → handle of a shared file) of incremental
	// keyed-state snapshots.
	Manifests [][]byte
	Files     map[string]string
}

var (
	metaCodec = codec.MustFor[metadata]()
	taskCodec = codec.MustFor[taskFile]()
)

// SnapshotWriter writes task snapshots into checkpoint and savepoint
// locations: the asynchronous part of a checkpoint, done by the process
// that runs the tasks. It uploads each shared (incremental) file once and
// references it afterwards. It is safe for concurrent use.
type SnapshotWriter struct {
	opIDs map[graph.NodeID]string
	mu    sync.Mutex
	// shared maps the names of shared files already uploaded (or restored)
	// to their paths. A checkpoint references such a file only if it is
	// in the checkpoint's own job's shared directory: the files of a
	// checkpoint of another job (sluice run -s) or of a savepoint are not
	// ours to reference (their owner may delete them), so they are
	// uploaded again.
	shared map[string]string
}

// NewSnapshotWriter returns a writer for the tasks of g.
func NewSnapshotWriter(g *graph.JobGraph) *SnapshotWriter {
	return &SnapshotWriter{opIDs: g.OperatorIDs(), shared: map[string]string{}}
}

// Seed records the shared files of a restored checkpoint: later
// checkpoints reference those in the job's own storage (a recovery)
// instead of uploading them again.
func (w *SnapshotWriter) Seed(r *Restore) {
	if r == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, files := range r.files {
		for name, h := range files {
			if p, err := storage.ResolveHandle(r.path, h); err == nil {
				w.shared[name] = p
			}
		}
	}
}

// Ack is what a task's snapshot wrote: the handle of its file, the
// handles of every shared file it references, and the bytes written.
type Ack struct {
	Handle string
	Shared []string
	Bytes  int64
}

// Write encodes snap (resolving the keyed state frozen at the barrier),
// uploads its new shared files and writes the task's snapshot file into
// loc. The snapshot is discarded on failure.
func (w *SnapshotWriter) Write(loc *storage.Location, id checkpoint.TaskID, snap *task.Snapshot) (ack Ack, err error) {
	defer func() {
		if err != nil {
			snap.Discard()
		}
	}()
	tf := taskFile{Operators: map[string]operatorFile{}}
	for node, os := range snap.Operators {
		if err := os.ResolveKeyGroups(); err != nil {
			return Ack{}, err
		}
		of := operatorFile{Subtask: id.Subtask, KeyGroups: os.KeyGroups, State: os.State, Union: os.Union, Manifests: os.Manifests}
		if len(os.Files) > 0 {
			files, n, err := w.uploadShared(loc, snap.Kind, snap.ID, os.Files)
			if os.ReleaseFiles != nil {
				os.ReleaseFiles()
			}
			if err != nil {
				return Ack{}, err
			}
			of.Files = files
			ack.Bytes += n
			for _, h := range files {
				ack.Shared = append(ack.Shared, h)
			}
		}
		tf.Operators[w.opIDs[node]] = of
	}
	sort.Strings(ack.Shared)
	f, handle, err := loc.CreateFile(fmt.Sprintf("task-%d-%d", id.Vertex, id.Subtask))
	if err != nil {
		return Ack{}, err
	}
	data := taskCodec.Append(nil, tf)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return Ack{}, err
	}
	ack.Handle, ack.Bytes = handle, ack.Bytes+int64(len(data))
	return ack, f.Close()
}

// uploadShared uploads the files of an incremental snapshot that are not
// in shared storage yet, and returns every file's handle.
//
// A full checkpoint (checkpoint.FullCheckpoint) uploads every file again,
// under a name of its own ("full-<checkpoint ID>-<name>"), so that it
// references no file of the checkpoints before it; the checkpoints after
// it reference its copies (Flink's forward sharing). Once the checkpoints
// before it are discarded, the files only they used are deleted.
// Snapshots of one task reach the writer in checkpoint order, so no
// checkpoint after the full one references an older copy.
func (w *SnapshotWriter) uploadShared(loc *storage.Location, kind checkpoint.Kind, id int64, files []task.LocalFile) (map[string]string, int64, error) {
	out := make(map[string]string, len(files))
	var written int64
	full := kind == checkpoint.FullCheckpoint
	for _, f := range files {
		w.mu.Lock()
		p, ok := w.shared[f.Name]
		w.mu.Unlock()
		if ok && !full {
			if h, ours := loc.SharedHandle(p); ours {
				out[f.Name] = h
				continue
			}
		}
		name := f.Name
		if full && loc.Kind() != storage.KindSavepoint {
			name = fmt.Sprintf("full-%d-%s", id, f.Name)
		}
		src, err := os.Open(f.Path)
		if err != nil {
			return nil, 0, fmt.Errorf("uploading %s: %w", f.Path, err)
		}
		dst, handle, err := loc.CreateSharedFile(name)
		if err == nil {
			var n int64
			n, err = io.Copy(dst, src)
			written += n
			if cerr := dst.Close(); err == nil {
				err = cerr
			}
		}
		src.Close()
		if err != nil {
			return nil, 0, fmt.Errorf("uploading %s: %w", name, err)
		}
		out[f.Name] = handle
		if loc.Kind() != storage.KindSavepoint {
			if p, err := storage.ResolveHandle(loc.MetadataPath(), handle); err == nil {
				w.mu.Lock()
				w.shared[f.Name] = p
				w.mu.Unlock()
			}
		}
	}
	return out, written, nil
}
