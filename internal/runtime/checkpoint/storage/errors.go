package storage

import (
	"errors"
	"fmt"
)

// Errors of this package. Returned errors wrap one of these (or are a
// *CorruptError or *MissingFileError) and name the file or directory
// concerned.
var (
	// ErrCorrupt matches every *CorruptError.
	ErrCorrupt = errors.New("checkpoint storage: corrupt metadata")
	// ErrIncomplete: the checkpoint or savepoint has no _metadata file: it
	// was never completed (or its writer crashed before publishing it).
	ErrIncomplete = errors.New("checkpoint storage: no metadata (incomplete)")
	// ErrNoCheckpoint: no completed checkpoint could be used.
	ErrNoCheckpoint = errors.New("checkpoint storage: no usable completed checkpoint")
	// ErrAlreadyCompleted: the checkpoint's metadata exists already.
	ErrAlreadyCompleted = errors.New("checkpoint storage: already completed")
	// ErrBadName: a file name, job ID, checkpoint ID or handle cannot be used.
	ErrBadName = errors.New("checkpoint storage: bad name")
	// ErrNotSavepoint: the path is not a savepoint (DisposeSavepoint refuses
	// to delete it).
	ErrNotSavepoint = errors.New("checkpoint storage: not a savepoint")
)

// CorruptError reports a metadata file that cannot be used: truncated,
// damaged, of another format or version, or describing another checkpoint.
// errors.Is(err, ErrCorrupt) holds.
type CorruptError struct {
	Path   string // the metadata file
	Reason string
}

func (e *CorruptError) Error() string {
	return "checkpoint storage: corrupt metadata file " + e.Path + ": " + e.Reason
}

// Is makes errors.Is(err, ErrCorrupt) hold.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// MissingFileError reports a file a checkpoint or savepoint references that
// does not exist (or cannot be examined). errors.Is(err, fs.ErrNotExist)
// holds when it is missing.
type MissingFileError struct {
	Metadata string // the metadata file that references it
	Handle   string // the reference as the metadata holds it
	Path     string // the file it resolves to
	Err      error
}

func (e *MissingFileError) Error() string {
	return fmt.Sprintf("checkpoint storage: %s references %s (%s): %v", e.Metadata, e.Handle, e.Path, e.Err)
}

func (e *MissingFileError) Unwrap() error { return e.Err }

// RejectedError reports a completed checkpoint that the caller's accept
// function of LatestCompleted turned down.
type RejectedError struct {
	ID       int64
	Metadata string
	Err      error
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("checkpoint storage: checkpoint %d (%s) rejected: %v", e.ID, e.Metadata, e.Err)
}

func (e *RejectedError) Unwrap() error { return e.Err }
