package jobmanager

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/fs"
)

// blob is a stored job binary.
type blob struct {
	sha256 string
	size   int64
}

// blobStore keeps job binaries by their SHA-256 in a directory of a
// filesystem (the HA storage directory, so a new JobManager finds them),
// private to the JobManager's user (0700, the binaries 0600).
type blobStore struct {
	fs  fs.FileSystem
	dir string
}

var shaRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ErrNoBlob is returned for an unknown blob (one the store does not
// have; not one it cannot read now).
var ErrNoBlob = errors.New("jobmanager: no such job binary")

func (b *blobStore) path(sha string) string { return b.dir + "/" + sha }

// put stores the file at local path src and returns its blob.
func (b *blobStore) put(src string) (blob, error) {
	f, err := os.Open(src)
	if err != nil {
		return blob{}, fmt.Errorf("jobmanager: reading the job binary: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return blob{}, fmt.Errorf("jobmanager: reading the job binary: %w", err)
	}
	bl := blob{sha256: hex.EncodeToString(h.Sum(nil)), size: n}
	if st, err := b.fs.Stat(b.path(bl.sha256)); err == nil && st.Size() == n {
		return bl, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return blob{}, err
	}
	if err := b.fs.MkdirAllPrivate(b.dir); err != nil {
		return blob{}, fmt.Errorf("jobmanager: blob directory %s: %w", b.dir, err)
	}
	tmp := b.path(bl.sha256) + ".tmp"
	w, err := b.fs.CreatePrivate(tmp)
	if err != nil && errors.Is(err, os.ErrExist) {
		b.fs.Remove(tmp)
		w, err = b.fs.CreatePrivate(tmp)
	}
	if err != nil {
		return blob{}, fmt.Errorf("jobmanager: storing the job binary: %w", err)
	}
	if _, err := io.Copy(w, f); err != nil {
		w.Close()
		return blob{}, fmt.Errorf("jobmanager: storing the job binary: %w", err)
	}
	if err := w.Close(); err != nil {
		return blob{}, fmt.Errorf("jobmanager: storing the job binary: %w", err)
	}
	if err := b.fs.Rename(tmp, b.path(bl.sha256)); err != nil {
		return blob{}, fmt.Errorf("jobmanager: storing the job binary: %w", err)
	}
	return bl, nil
}

// serve streams blob sha to a TaskManager.
func (b *blobStore) serve(sha string, stream clusterpb.Blobs_GetServer) error {
	if !shaRE.MatchString(sha) {
		return fmt.Errorf("jobmanager: %q is not a SHA-256 in hex", sha)
	}
	f, err := b.fs.Open(b.path(sha))
	if errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("%w: %s: %w", ErrNoBlob, sha, err)
	}
	if err != nil {
		return fmt.Errorf("jobmanager: job binary %s: %w", sha, err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if serr := stream.Send(&clusterpb.BlobChunk{Data: buf[:n]}); serr != nil {
				return serr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func localBlobDir(workDir string) string { return filepath.Join(workDir, "blobs") }
