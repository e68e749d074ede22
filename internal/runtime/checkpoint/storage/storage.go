// Package storage keeps checkpoints and savepoints on a filesystem (local or
// HDFS, through package fs), in Flink's layout:
//
//	<checkpoints dir>/<job ID>/chk-<n>/            exclusive files of checkpoint n
//	<checkpoints dir>/<job ID>/chk-<n>/_metadata   written last: checkpoint n is complete
//	<checkpoints dir>/<job ID>/shared/             files shared by incremental checkpoints
//	<checkpoints dir>/<job ID>/taskowned/          files owned by the TaskManagers
//	<savepoints dir>/savepoint-<job ID prefix>-<random>/   a self-contained savepoint
//
// A checkpoint or savepoint is complete exactly when its _metadata file
// exists: the file is written to a temporary name and then renamed (the
// rename never replaces a file), so a crash leaves either no _metadata or a
// whole one. The metadata is framed (magic "SLUICECK", version, length,
// CRC-32C) so that a truncated or damaged file is recognised and reported
// with its path; LatestCompleted then falls back to the previous
// checkpoint. The payload inside the frame belongs to the caller.
//
// Files are referred to by handles: paths relative to the directory that
// holds the metadata ("state-1" for an exclusive file, "../shared/sst-7"
// for a shared one), so that a savepoint, and a checkpoint together with
// its job directory, can be moved and still resolve (ResolveHandle).
//
// A Storage serves one job. It is safe for concurrent use. Several
// processes may write files of the same checkpoint (each TaskManager
// through its own Storage or Location); one of them, the checkpoint
// coordinator, writes the metadata and applies retention.
package storage

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	iofs "io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sluice/sluice/fs"
)

// Directory names of the layout.
const (
	checkpointDirPrefix = "chk-"
	SharedDirName       = "shared"
	TaskOwnedDirName    = "taskowned"
	metadataTempPrefix  = MetadataFileName + ".inprogress."
)

// Storage is the checkpoint storage of one job.
type Storage struct {
	fs     fs.FileSystem
	jobID  string
	jobDir string

	mu struct {
		sync.Mutex
		dirsMade bool
		// registry holds the shared-file references of every completed,
		// readable checkpoint; nil until first needed.
		registry *SharedRegistry
		// corrupt holds the completed checkpoints whose metadata could not
		// be used, with the reason.
		corrupt map[int64]error
	}
}

// Checkpoint is a completed checkpoint.
type Checkpoint struct {
	ID           int64
	Dir          string // chk-<n>
	MetadataPath string
	Metadata     *Metadata
}

// New returns the storage of job jobID under checkpointsDir (an absolute
// path of fsys, e.g. from fs.Resolver.For). It does no I/O; directories
// are made when the first checkpoint is started.
func New(fsys fs.FileSystem, checkpointsDir, jobID string) (*Storage, error) {
	if fsys == nil {
		return nil, errors.New("checkpoint storage: nil filesystem")
	}
	if !path.IsAbs(checkpointsDir) {
		return nil, fmt.Errorf("%w: the checkpoints directory %q is not an absolute path", ErrBadName, checkpointsDir)
	}
	if err := checkName("job ID", jobID); err != nil {
		return nil, err
	}
	s := &Storage{fs: fsys, jobID: jobID, jobDir: path.Join(checkpointsDir, jobID)}
	s.mu.corrupt = make(map[int64]error)
	return s, nil
}

// checkName accepts a single path element that does not collide with the
// metadata file or its temporary files.
func checkName(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty %s", ErrBadName, what)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %s %q", ErrBadName, what, name)
	case strings.ContainsAny(name, "/\\\x00"):
		return fmt.Errorf("%w: %s %q contains a path separator or NUL", ErrBadName, what, name)
	case strings.HasPrefix(name, MetadataFileName):
		return fmt.Errorf("%w: %s %q: names starting with %s are reserved", ErrBadName, what, name, MetadataFileName)
	}
	return nil
}

func checkID(id int64) error {
	if id < 1 {
		return fmt.Errorf("%w: checkpoint ID %d; IDs start at 1", ErrBadName, id)
	}
	return nil
}

// JobDir is <checkpoints dir>/<job ID>.
func (s *Storage) JobDir() string { return s.jobDir }

// CheckpointDir is the directory of checkpoint id.
func (s *Storage) CheckpointDir(id int64) string {
	return path.Join(s.jobDir, checkpointDirPrefix+strconv.FormatInt(id, 10))
}

// SharedDir is the directory of files shared between checkpoints.
func (s *Storage) SharedDir() string { return path.Join(s.jobDir, SharedDirName) }

// TaskOwnedDir is the directory of files owned by the TaskManagers.
func (s *Storage) TaskOwnedDir() string { return path.Join(s.jobDir, TaskOwnedDirName) }

func (s *Storage) metadataPath(id int64) string {
	return path.Join(s.CheckpointDir(id), MetadataFileName)
}

// parseCheckpointDir returns n for a directory named chk-<n> (n ≥ 1 in
// canonical decimal form).
func parseCheckpointDir(name string) (int64, bool) {
	digits, ok := strings.CutPrefix(name, checkpointDirPrefix)
	if !ok || digits == "" || digits[0] == '0' {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	id, err := strconv.ParseInt(digits, 10, 64)
	return id, err == nil
}

// NewCheckpointWriter starts checkpoint id: it makes the job's directories
// and chk-<id>/, and returns the location to write the checkpoint's files
// and finally its metadata. It fails with ErrAlreadyCompleted if the
// checkpoint's metadata exists.
func (s *Storage) NewCheckpointWriter(id int64) (*Location, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	if err := s.makeDirs(); err != nil {
		return nil, err
	}
	meta := s.metadataPath(id)
	if _, err := s.fs.Stat(meta); err == nil {
		return nil, fmt.Errorf("%w: checkpoint %d: %s exists", ErrAlreadyCompleted, id, meta)
	} else if !errors.Is(err, iofs.ErrNotExist) {
		return nil, fmt.Errorf("checkpoint storage: starting checkpoint %d: %w", id, err)
	}
	if err := s.fs.MkdirAll(s.CheckpointDir(id)); err != nil {
		return nil, fmt.Errorf("checkpoint storage: starting checkpoint %d: %w", id, err)
	}
	return s.location(id), nil
}

// CheckpointLocation returns the location of checkpoint id without any
// I/O, for a process that writes files into a checkpoint another process
// (the coordinator) started with NewCheckpointWriter.
func (s *Storage) CheckpointLocation(id int64) (*Location, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	return s.location(id), nil
}

func (s *Storage) location(id int64) *Location {
	return &Location{
		fs: s.fs, kind: KindCheckpoint, id: id, dir: s.CheckpointDir(id),
		sharedDir: s.SharedDir(), taskOwnedDir: s.TaskOwnedDir(), storage: s,
	}
}

func (s *Storage) makeDirs() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.dirsMade {
		return nil
	}
	for _, d := range []string{s.SharedDir(), s.TaskOwnedDir()} {
		if err := s.fs.MkdirAll(d); err != nil {
			return fmt.Errorf("checkpoint storage: making the directories of job %s: %w", s.jobID, err)
		}
	}
	s.mu.dirsMade = true
	return nil
}

// completed is called once a checkpoint's metadata was published.
func (s *Storage) completed(id int64, shared []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.registry != nil {
		s.mu.registry.Register(id, shared...)
	}
}

// checkpointIDs lists the chk-<n> directories, ascending.
func (s *Storage) checkpointIDs() ([]int64, error) {
	infos, err := s.fs.ReadDir(s.jobDir)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint storage: listing checkpoints: %w", err)
	}
	var ids []int64
	for _, fi := range infos {
		if id, ok := parseCheckpointDir(fi.Name()); ok && fi.IsDir() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// HighestID returns the highest checkpoint ID that has a directory,
// complete or not (0 without any): a JobMaster taking over a job continues
// after it, so that it never writes into a directory an earlier
// JobMaster started.
func (s *Storage) HighestID() (int64, error) {
	ids, err := s.checkpointIDs()
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	return ids[len(ids)-1], nil
}

// Completed returns, ascending, the IDs of the checkpoints whose metadata
// file exists (whether or not it is intact; see Verify).
func (s *Storage) Completed() ([]int64, error) {
	ids, err := s.checkpointIDs()
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, id := range ids {
		fi, err := s.fs.Stat(s.metadataPath(id))
		switch {
		case err == nil && !fi.IsDir():
			out = append(out, id)
		case err == nil, errors.Is(err, iofs.ErrNotExist):
		default:
			return nil, fmt.Errorf("checkpoint storage: listing checkpoints: %w", err)
		}
	}
	return out, nil
}

// Checkpoint reads and checks the metadata of checkpoint id. It fails with
// ErrIncomplete if there is none, a *CorruptError if it is damaged or
// describes another checkpoint.
func (s *Storage) Checkpoint(id int64) (Checkpoint, error) {
	if err := checkID(id); err != nil {
		return Checkpoint{}, err
	}
	p := s.metadataPath(id)
	m, err := ReadMetadata(s.fs, p)
	if err != nil {
		return Checkpoint{}, err
	}
	if m.Kind != KindCheckpoint {
		return Checkpoint{}, corrupt(p, "holds the metadata of a %s, not of a checkpoint", m.Kind)
	}
	if m.CheckpointID != id {
		return Checkpoint{}, corrupt(p, "holds the metadata of checkpoint %d, not %d", m.CheckpointID, id)
	}
	return Checkpoint{ID: id, Dir: s.CheckpointDir(id), MetadataPath: p, Metadata: m}, nil
}

// Verify checks the metadata frame of checkpoint id: nil if it is complete
// and intact, an error wrapping ErrIncomplete, a *CorruptError naming the
// file, or an I/O error. It does not look at the files the checkpoint
// references (CheckFiles does).
func (s *Storage) Verify(id int64) error {
	_, err := s.Checkpoint(id)
	return err
}

// usable reports whether err only says that a checkpoint cannot be used
// (as opposed to an I/O failure that says nothing about it).
func unusable(err error) bool {
	return errors.Is(err, ErrCorrupt) || errors.Is(err, ErrIncomplete)
}

// LatestCompleted returns the newest completed checkpoint whose metadata
// is intact and that accept (if not nil) accepts; accept typically checks
// that the files the checkpoint references exist (CheckFiles). Newer
// checkpoints passed over are reported in skipped, newest first, each
// error naming its file: a *CorruptError, an ErrIncomplete (metadata gone
// since the listing) or a *RejectedError. An I/O error stops the search
// and is returned: falling back past a checkpoint that cannot be read now
// but may be intact would lose its progress. With no usable checkpoint the
// error wraps ErrNoCheckpoint and the reasons.
func (s *Storage) LatestCompleted(accept func(Checkpoint) error) (c Checkpoint, skipped []error, err error) {
	ids, err := s.Completed()
	if err != nil {
		return Checkpoint{}, nil, err
	}
	for i := len(ids) - 1; i >= 0; i-- {
		c, err := s.Checkpoint(ids[i])
		if err != nil {
			if !unusable(err) {
				return Checkpoint{}, skipped, err
			}
			skipped = append(skipped, err)
			continue
		}
		if accept != nil {
			if err := accept(c); err != nil {
				skipped = append(skipped, &RejectedError{ID: c.ID, Metadata: c.MetadataPath, Err: err})
				continue
			}
		}
		return c, skipped, nil
	}
	return Checkpoint{}, skipped, errors.Join(append([]error{fmt.Errorf("%w in %s", ErrNoCheckpoint, s.jobDir)}, skipped...)...)
}

// CheckFiles checks that the files c references exist: its shared files
// (c.Metadata.Shared) and handles (from the caller's payload). The error
// joins a *MissingFileError per file that is missing or cannot be
// examined.
func (s *Storage) CheckFiles(c Checkpoint, handles ...string) error {
	return CheckFiles(s.fs, c.MetadataPath, append(slices.Clone(c.Metadata.Shared), handles...))
}

// CheckFiles checks that the files that the metadata file metaPath
// references through handles exist.
func CheckFiles(fsys fs.FileSystem, metaPath string, handles []string) error {
	var errs []error
	for _, h := range handles {
		p, err := ResolveHandle(metaPath, h)
		if err == nil {
			_, err = fsys.Stat(p)
		}
		if err != nil {
			errs = append(errs, &MissingFileError{Metadata: metaPath, Handle: h, Path: p, Err: err})
		}
	}
	return errors.Join(errs...)
}

// ResolveHandle returns the path of the file that handle, as held by the
// metadata file metaPath, refers to: handle resolved against metaPath's
// directory (an absolute handle is returned cleaned).
func ResolveHandle(metaPath, handle string) (string, error) {
	if handle == "" {
		return "", fmt.Errorf("%w: empty handle in %s", ErrBadName, metaPath)
	}
	if path.IsAbs(handle) {
		return path.Clean(handle), nil
	}
	return path.Join(path.Dir(metaPath), handle), nil
}

// Discard deletes checkpoint id: first its metadata (so it is no longer
// complete), then its directory. If it was a completed checkpoint, the
// shared files that no other completed checkpoint references are deleted
// too, as retention does. Discarding a checkpoint that does not exist is
// not an error.
func (s *Storage) Discard(id int64) error {
	if err := checkID(id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ids, err := s.Completed()
	if err != nil {
		return err
	}
	if !slices.Contains(ids, id) {
		return s.removeCheckpointLocked(id)
	}
	if err := s.syncLocked(ids); err != nil {
		return err
	}
	_, err = s.discardLocked(id)
	return err
}

// removeCheckpointLocked deletes the metadata, then the directory of id.
// REQUIRES: s.mu held.
func (s *Storage) removeCheckpointLocked(id int64) error {
	if err := s.fs.Remove(s.metadataPath(id)); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("checkpoint storage: discarding checkpoint %d: %w", id, err)
	}
	delete(s.mu.corrupt, id)
	if err := s.fs.RemoveAll(s.CheckpointDir(id)); err != nil {
		return fmt.Errorf("checkpoint storage: discarding checkpoint %d: %w", id, err)
	}
	return nil
}

// discardLocked removes a completed checkpoint and the shared files only
// it used, returning the handles of the shared files deleted.
// REQUIRES: s.mu held, registry synced.
func (s *Storage) discardLocked(id int64) ([]string, error) {
	if err := s.fs.Remove(s.metadataPath(id)); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return nil, fmt.Errorf("checkpoint storage: discarding checkpoint %d: %w", id, err)
	}
	// No longer complete: from here on a crash leaks files but never
	// leaves a complete checkpoint missing a file.
	free := s.mu.registry.Release(id)
	delete(s.mu.corrupt, id)
	var errs []error
	if err := s.fs.RemoveAll(s.CheckpointDir(id)); err != nil {
		errs = append(errs, fmt.Errorf("checkpoint storage: discarding checkpoint %d: %w", id, err))
	}
	meta := s.metadataPath(id)
	var deleted []string
	for _, h := range free {
		p, err := ResolveHandle(meta, h)
		if err != nil || path.Dir(p) != s.SharedDir() {
			continue // not a file of this job's shared directory: not ours to delete
		}
		if err := s.fs.Remove(p); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("checkpoint storage: deleting shared file %s of discarded checkpoint %d: %w", p, id, err))
			continue
		}
		deleted = append(deleted, h)
	}
	return deleted, errors.Join(errs...)
}

// syncLocked brings the registry in line with the completed checkpoints
// ids: it reads the metadata of those it does not know, and forgets those
// no longer completed. Checkpoints whose metadata cannot be used are noted
// in s.mu.corrupt. An I/O error leaves the registry as it was.
// REQUIRES: s.mu held.
func (s *Storage) syncLocked(ids []int64) error {
	reg := s.mu.registry
	if reg == nil {
		reg = NewSharedRegistry()
	}
	type loaded struct {
		id     int64
		shared []string
	}
	var add []loaded
	bad := make(map[int64]error)
	for _, id := range ids {
		if reg.Has(id) {
			continue
		}
		if err, ok := s.mu.corrupt[id]; ok {
			bad[id] = err
			continue
		}
		c, err := s.Checkpoint(id)
		if err != nil {
			if !unusable(err) {
				return err
			}
			bad[id] = err
			continue
		}
		add = append(add, loaded{id, c.Metadata.Shared})
	}
	for _, l := range add {
		reg.Register(l.id, l.shared...)
	}
	for _, id := range reg.Checkpoints() {
		if !slices.Contains(ids, id) {
			reg.Release(id) // deleted by someone else; its files are left alone
		}
	}
	s.mu.registry = reg
	s.mu.corrupt = bad
	return nil
}

// Cleanup says what Retain deleted.
type Cleanup struct {
	Discarded []int64  // checkpoints deleted, ascending
	Shared    []string // handles of the shared files deleted (or found gone), sorted
}

// Retain applies execution.checkpointing.num-retained: it keeps the
// numRetained newest completed checkpoints with intact metadata, and those
// listed in keep (e.g. the checkpoint that in-flight incremental
// checkpoints build on), and discards the other completed checkpoints
// together with the shared files that no kept checkpoint references.
//
// A completed checkpoint whose metadata is damaged does not count towards
// numRetained; it is discarded once it is older than the oldest retained
// checkpoint (its shared references are unknown, so the shared files only
// it used are leaked rather than risk deleting one in use), and left in
// place while newer (LatestCompleted skips it). Incomplete checkpoints are
// not touched (see DiscardIncomplete). Deletion errors do not stop the
// others; they are returned joined.
func (s *Storage) Retain(numRetained int, keep ...int64) (Cleanup, error) {
	if numRetained < 1 {
		return Cleanup{}, fmt.Errorf("checkpoint storage: retaining %d checkpoints; at least 1 must be retained", numRetained)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ids, err := s.Completed()
	if err != nil {
		return Cleanup{}, err
	}
	if err := s.syncLocked(ids); err != nil {
		return Cleanup{}, err
	}
	var valid []int64
	for _, id := range ids {
		if s.mu.registry.Has(id) {
			valid = append(valid, id)
		}
	}
	retained := valid[max(0, len(valid)-numRetained):]
	kept := make(map[int64]bool)
	for _, id := range append(slices.Clone(retained), keep...) {
		kept[id] = true
	}
	var cl Cleanup
	var errs []error
	for _, id := range ids {
		switch {
		case kept[id]:
		case s.mu.registry.Has(id):
			deleted, err := s.discardLocked(id)
			if err != nil {
				errs = append(errs, err)
			}
			if !s.mu.registry.Has(id) {
				cl.Discarded = append(cl.Discarded, id)
			}
			cl.Shared = append(cl.Shared, deleted...)
		case len(retained) > 0 && id < retained[0]:
			if err := s.removeCheckpointLocked(id); err != nil {
				errs = append(errs, err)
			} else {
				cl.Discarded = append(cl.Discarded, id)
			}
		}
	}
	slices.Sort(cl.Shared)
	return cl, errors.Join(errs...)
}

// DiscardIncomplete deletes the directories of the checkpoints below
// before that have no metadata: checkpoints that failed or were aborted,
// or whose coordinator crashed. It returns their IDs. Call it only for IDs
// no writer still works on (typically: below the first ID a restarted
// coordinator will use, or below a checkpoint that just completed and so
// subsumed the older pending ones).
func (s *Storage) DiscardIncomplete(before int64) ([]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids, err := s.checkpointIDs()
	if err != nil {
		return nil, err
	}
	var out []int64
	var errs []error
	for _, id := range ids {
		if id >= before {
			break
		}
		_, err := s.fs.Stat(s.metadataPath(id))
		switch {
		case err == nil:
			continue
		case !errors.Is(err, iofs.ErrNotExist):
			errs = append(errs, fmt.Errorf("checkpoint storage: %w", err))
			continue
		}
		if err := s.fs.RemoveAll(s.CheckpointDir(id)); err != nil {
			errs = append(errs, fmt.Errorf("checkpoint storage: discarding incomplete checkpoint %d: %w", id, err))
			continue
		}
		out = append(out, id)
	}
	return out, errors.Join(errs...)
}

// DiscardJob deletes the job's whole checkpoint directory: every
// checkpoint, shared and task-owned file (at the end of a job whose
// checkpoints are not retained).
func (s *Storage) DiscardJob() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fs.RemoveAll(s.jobDir); err != nil {
		return fmt.Errorf("checkpoint storage: discarding the checkpoints of job %s: %w", s.jobID, err)
	}
	s.mu.registry, s.mu.dirsMade = nil, false
	clear(s.mu.corrupt)
	return nil
}

// randomHex returns n random bytes as hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}
