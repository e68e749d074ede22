package jobmaster

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/task"
)

type syncMutex = sync.Mutex

// ErrUnmatchedState is wrapped by the error of a restore that would drop
// the state of operators the job no longer has.
var ErrUnmatchedState = errors.New("jobmaster: the snapshot has state for operators the job does not have")

// Restore is a checkpoint or savepoint read back and merged per operator:
// what every task of a job restores from. A JobMaster reads it to check it
// against the job; each process that runs tasks reads it again for its
// tasks' share (ReadRestore, ForTask).
type Restore struct {
	path string
	id   int64
	kind checkpoint.Kind
	// dir is the snapshot's directory; a job's restores qualify it with
	// the scheme and authority of the URI they found it under.
	dir          string
	coordinators map[string][]byte
	keyGroups    map[string]map[int][]byte
	opState      map[string][]operatorFile
	maxPar       map[string]int
	// Incremental keyed state: manifests per operator, and the files they
	// name (name → handle) with their local copies once downloaded.
	manifests map[string][][]byte
	files     map[string]map[string]string
	fsys      fs.FileSystem
	local     map[string]string
	localDir  string
	err       error
}

// download fetches the shared files of op's incremental snapshots.
func (r *Restore) download(op string) (map[string]string, error) {
	out := map[string]string{}
	for name, handle := range r.files[op] {
		if p, ok := r.local[name]; ok {
			out[name] = p
			continue
		}
		if r.localDir == "" {
			d, err := os.MkdirTemp("", "sluice-restore-")
			if err != nil {
				return nil, err
			}
			r.localDir = d
		}
		src, err := storage.ResolveHandle(r.path, handle)
		if err != nil {
			return nil, err
		}
		data, err := readAll(r.fsys, src)
		if err != nil {
			return nil, &storage.MissingFileError{Metadata: r.path, Handle: handle, Path: src, Err: err}
		}
		dst := filepath.Join(r.localDir, name)
		if err := os.WriteFile(dst, data, 0o600); err != nil {
			return nil, err
		}
		r.local[name] = dst
		out[name] = dst
	}
	return out, nil
}

// Path is the metadata file the state was read from.
func (r *Restore) Path() string { return r.path }

// FileSystem is the filesystem Path is on.
func (r *Restore) FileSystem() fs.FileSystem { return r.fsys }

// ID is the restored checkpoint's ID.
func (r *Restore) ID() int64 { return r.id }

// CoordinatorState is the checkpointed state of the coordinator of the
// operator with the given ID (nil if none).
func (r *Restore) CoordinatorState(operatorID string) []byte { return r.coordinators[operatorID] }

// Close removes the local copies of downloaded state files (once the tasks
// restored from them).
func (r *Restore) Close() {
	if r != nil && r.localDir != "" {
		os.RemoveAll(r.localDir)
		r.localDir = ""
		r.local = map[string]string{}
	}
}

// ForTask is the share of task (chain c, subtask s) of plan.
func (r *Restore) ForTask(plan *graph.Plan, c *graph.Chain, s int) (*task.Restore, error) {
	tr := r.forTask(plan, plan.Graph.OperatorIDs(), c, s)
	return tr, r.err
}

// forTask is the share of task (chain c, subtask s).
func (r *Restore) forTask(plan *graph.Plan, opIDs map[graph.NodeID]string, c *graph.Chain, s int) *task.Restore {
	out := &task.Restore{Operators: map[graph.NodeID]*task.OperatorRestore{}}
	for _, id := range c.Nodes {
		op := opIDs[id]
		n := plan.Graph.Node(id)
		or := &task.OperatorRestore{KeyGroups: r.keyGroups[op]}
		if ms := r.manifests[op]; len(ms) > 0 {
			files, err := r.download(op)
			if err != nil && r.err == nil {
				r.err = fmt.Errorf("jobmaster: restoring incremental state of %s: %w", n.Label(), err)
			}
			or.Manifests, or.Files = ms, files
		}
		// Operator state: union state goes to every subtask; list state
		// entries are spread round-robin in subtask order.
		var entries [][]byte
		union := false
		for _, f := range r.opState[op] {
			union = union || f.Union
			entries = append(entries, f.State...)
		}
		if union {
			or.State = entries
		} else {
			for i, e := range entries {
				if i%n.Parallelism == s {
					or.State = append(or.State, e)
				}
			}
		}
		if or.KeyGroups != nil || or.State != nil || or.Manifests != nil {
			out.Operators[id] = or
		}
	}
	return out
}

// CheckRestorePath reports whether from (execution.state-recovery.path)
// names a savepoint or retained checkpoint that can be read through
// filesystems: its _metadata file exists. A cluster checks it when a job
// is submitted, so that a wrong path is refused at once instead of
// failing the job after it was accepted.
func CheckRestorePath(filesystems *fs.Resolver, from string) error {
	if filesystems == nil {
		filesystems = fs.NewResolver()
	}
	_, _, err := resolveRestore(filesystems, from)
	return err
}

// resolveRestore finds the metadata file of the savepoint or checkpoint
// at from.
func resolveRestore(filesystems *fs.Resolver, from string) (fs.FileSystem, string, error) {
	fsys, p, err := filesystems.For(from)
	if err != nil {
		return nil, "", fmt.Errorf("jobmaster: restoring from %q (%s): %w", from, conf.StateRecoveryPath.Key(), err)
	}
	meta, err := storage.Resolve(fsys, p)
	if err != nil {
		return nil, "", fmt.Errorf("jobmaster: restoring from %q (%s): %w", from, conf.StateRecoveryPath.Key(), err)
	}
	return fsys, meta, nil
}

// initialRestore reads the savepoint or checkpoint the job starts from.
func (j *Job) initialRestore() (*Restore, error) {
	if j.opts.RestoreFrom == "" {
		return nil, nil
	}
	fsys, meta, err := resolveRestore(j.opts.FileSystems, j.opts.RestoreFrom)
	if err != nil {
		return nil, err
	}
	r, err := ReadRestore(j.plan, fsys, meta, j.opts.AllowNonRestoredState, j.opts.Log)
	if err != nil {
		return nil, err
	}
	r.dir = qualify(j.opts.RestoreFrom, filepath.Dir(meta))
	j.opts.Log.Info("restoring job", "from", meta)
	if j.ckpt != nil && r.id >= int64(j.ckpt.nextID) {
		// Checkpoint IDs keep growing across a restore: sinks and
		// transactions may have seen the restored ones.
		j.ckpt.nextID = checkpoint.ID(r.id + 1)
	}
	return r, nil
}

// recoveryRestore finds the latest usable completed checkpoint of this
// job, falling back past corrupt ones; without any, the job restarts from
// its initial savepoint (or empty).
func (j *Job) recoveryRestore() (*Restore, error) {
	if j.ckpt == nil {
		return j.initialRestore()
	}
	// Checkpoint IDs keep growing past every checkpoint a previous
	// JobMaster of the job started (sinks and transactions saw them).
	high, err := j.ckpt.store.HighestID()
	if err != nil {
		return nil, err
	}
	if checkpoint.ID(high) >= j.ckpt.nextID {
		j.ckpt.nextID = checkpoint.ID(high + 1)
	}
	var got *Restore
	cp, skipped, err := j.ckpt.store.LatestCompleted(func(c storage.Checkpoint) error {
		r, err := readRestore(j.ckpt.fs, c.MetadataPath)
		if err != nil {
			return err
		}
		got = r
		return nil
	})
	for _, s := range skipped {
		j.opts.Log.Warn("skipping an unusable checkpoint", "err", s)
	}
	if err != nil {
		if errors.Is(err, storage.ErrNoCheckpoint) {
			return j.initialRestore()
		}
		return nil, err
	}
	got.dir = qualify(j.ckpt.opts.Dir, filepath.Dir(got.path))
	j.opts.Log.Info("recovering from checkpoint", "checkpoint", cp.ID)
	return got, nil
}

// ReadRestore reads the checkpoint or savepoint whose metadata is at
// metaPath and checks it against plan: every piece of state must find its
// operator (unless allowNonRestored, when the rest is dropped with a
// warning), and keyed state needs the same max parallelism.
func ReadRestore(plan *graph.Plan, fsys fs.FileSystem, metaPath string, allowNonRestored bool, log *slog.Logger) (*Restore, error) {
	r, err := readRestore(fsys, metaPath)
	if err != nil {
		return nil, err
	}
	if err := match(plan, r, allowNonRestored, log); err != nil {
		return nil, err
	}
	return r, nil
}

func readRestore(fsys fs.FileSystem, metaPath string) (*Restore, error) {
	md, err := storage.ReadMetadata(fsys, metaPath)
	if err != nil {
		return nil, err
	}
	m, _, err := metaCodec.Decode(md.Payload)
	if err != nil {
		return nil, fmt.Errorf("jobmaster: %s: %w", metaPath, err)
	}
	r := &Restore{path: metaPath, id: m.ID, kind: checkpoint.Kind(m.Kind), dir: filepath.Dir(metaPath), coordinators: map[string][]byte{}, keyGroups: map[string]map[int][]byte{},
		opState: map[string][]operatorFile{}, maxPar: map[string]int{},
		manifests: map[string][][]byte{}, files: map[string]map[string]string{}, fsys: fsys, local: map[string]string{}}
	for _, op := range m.Operators {
		r.maxPar[op.ID] = op.MaxParallelism
		if op.Coordinator != nil {
			r.coordinators[op.ID] = op.Coordinator
		}
	}
	for _, h := range m.Tasks {
		p, err := storage.ResolveHandle(metaPath, h)
		if err != nil {
			return nil, err
		}
		data, err := readAll(fsys, p)
		if err != nil {
			return nil, &storage.MissingFileError{Metadata: metaPath, Handle: h, Path: p, Err: err}
		}
		tf, rest, err := taskCodec.Decode(data)
		if err == nil && len(rest) != 0 {
			err = fmt.Errorf("%d trailing bytes", len(rest))
		}
		if err != nil {
			return nil, &storage.CorruptError{Path: p, Reason: err.Error()}
		}
		for op, f := range tf.Operators {
			if f.KeyGroups != nil {
				kgs := r.keyGroups[op]
				if kgs == nil {
					kgs = map[int][]byte{}
					r.keyGroups[op] = kgs
				}
				for kg, b := range f.KeyGroups {
					kgs[kg] = b
				}
			}
			if f.State != nil {
				r.opState[op] = append(r.opState[op], f)
			}
			if len(f.Manifests) > 0 {
				r.manifests[op] = append(r.manifests[op], f.Manifests...)
				if r.files[op] == nil {
					r.files[op] = map[string]string{}
				}
				for name, h := range f.Files {
					r.files[op][name] = h
				}
			}
		}
	}
	for op, fs := range r.opState {
		sort.Slice(fs, func(a, b int) bool { return fs[a].Subtask < fs[b].Subtask })
		r.opState[op] = fs
	}
	return r, nil
}

// match checks the snapshot against the job: every piece of state must
// find its operator (unless allowed to be dropped), and keyed state needs
// the same max parallelism.
func match(plan *graph.Plan, r *Restore, allowNonRestored bool, log *slog.Logger) error {
	have := map[string]*graph.Node{}
	opIDs := plan.Graph.OperatorIDs()
	for _, n := range plan.Graph.Nodes {
		have[opIDs[n.ID]] = n
	}
	var unmatched []string
	seen := map[string]bool{}
	for _, set := range []map[string]bool{keys(r.keyGroups), keysF(r.opState), keys(r.coordinators), keys(r.manifests)} {
		for op := range set {
			if seen[op] {
				continue
			}
			seen[op] = true
			n, ok := have[op]
			if !ok {
				unmatched = append(unmatched, op)
				continue
			}
			_, keyed := r.keyGroups[op]
			_, inc := r.manifests[op]
			if (keyed || inc) && r.maxPar[op] != n.EffectiveMaxParallelism() {
				return fmt.Errorf("jobmaster: restoring %s: operator %s had max parallelism %d, now %d; keyed state can only be redistributed within the same max parallelism (set it explicitly to keep it)",
					r.path, n.Label(), r.maxPar[op], n.EffectiveMaxParallelism())
			}
		}
	}
	if len(unmatched) > 0 && !allowNonRestored {
		sort.Strings(unmatched)
		return fmt.Errorf("%w: restoring %s: no operator has the ID of %s; set UIDs on stateful operators, or allow non-restored state (execution.state-recovery.ignore-unclaimed-state) to drop it",
			ErrUnmatchedState, r.path, strings.Join(unmatched, ", "))
	}
	for _, op := range unmatched {
		log.Warn("dropping state of an operator the job no longer has", "operator", op)
		delete(r.manifests, op)
		delete(r.files, op)
		delete(r.keyGroups, op)
		delete(r.opState, op)
		delete(r.coordinators, op)
	}
	return nil
}

func keys[V any](m map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

func keysF(m map[string][]operatorFile) map[string]bool { return keys(m) }
