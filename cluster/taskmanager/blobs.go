package taskmanager

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sync"

	"google.golang.org/grpc"

	"github.com/sluice/sluice/cluster/clusterpb"
)

// ErrBinaryMismatch: the job binary fetched does not have the size or
// SHA-256 digest the SubmitTasksRequest gives.
var ErrBinaryMismatch = errors.New("taskmanager: job binary does not match its digest")

// blobCache keeps job binaries in a directory, named by their SHA-256
// digest, fetched from a JobMaster's Blobs service on first use.
type blobCache struct {
	dir  string
	dial func(addr string) (*grpc.ClientConn, error)

	mu struct {
		sync.Mutex
		locks    map[string]*sync.Mutex // per digest: one fetch at a time
		verified map[string]int64       // size of the files checked in this process
	}
}

func newBlobCache(dir string, dial func(string) (*grpc.ClientConn, error)) (*blobCache, error) {
	if err := privateDir(dir); err != nil {
		return nil, fmt.Errorf("taskmanager: blob cache: %w", err)
	}
	b := &blobCache{dir: dir, dial: dial}
	b.mu.locks = make(map[string]*sync.Mutex)
	b.mu.verified = make(map[string]int64)
	return b, nil
}

func (b *blobCache) lock(digest string) *sync.Mutex {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.mu.locks[digest]
	if l == nil {
		l = &sync.Mutex{}
		b.mu.locks[digest] = l
	}
	return l
}

// get returns the path of the executable binary with this digest and size,
// fetching it from the Blobs service at addr unless it is cached. A cached
// file is verified once per process; one that does not match is fetched
// again.
func (b *blobCache) get(ctx context.Context, addr, digest string, size int64) (string, error) {
	l := b.lock(digest)
	l.Lock()
	defer l.Unlock()
	path := filepath.Join(b.dir, digest)
	b.mu.Lock()
	verifiedSize, ok := b.mu.verified[digest]
	b.mu.Unlock()
	if ok {
		if verifiedSize != size {
			return "", fmt.Errorf("%w: %s is %d bytes, expected %d", ErrBinaryMismatch, digest, verifiedSize, size)
		}
		return path, nil
	}
	if err := verifyFile(path, digest, size); err == nil {
		if err := os.Chmod(path, 0o755); err != nil {
			return "", fmt.Errorf("taskmanager: job binary: %w", err)
		}
		b.markVerified(digest, size)
		return path, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		os.Remove(path) // corrupt or truncated: fetch it again
	}
	if err := b.fetch(ctx, addr, digest, size, path); err != nil {
		return "", err
	}
	b.markVerified(digest, size)
	return path, nil
}

func (b *blobCache) markVerified(digest string, size int64) {
	b.mu.Lock()
	b.mu.verified[digest] = size
	b.mu.Unlock()
}

func verifyFile(path, digest string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return err
	}
	return checkDigest(h, n, digest, size)
}

func checkDigest(h hash.Hash, n int64, digest string, size int64) error {
	if n != size {
		return fmt.Errorf("%w: %s is %d bytes, expected %d", ErrBinaryMismatch, digest, n, size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != digest {
		return fmt.Errorf("%w: expected %s, got %s", ErrBinaryMismatch, digest, got)
	}
	return nil
}

// fetch downloads the blob into path (through a temporary file, made
// executable and renamed into place once verified).
func (b *blobCache) fetch(ctx context.Context, addr, digest string, size int64, path string) error {
	conn, err := b.dial(addr)
	if err != nil {
		return fmt.Errorf("taskmanager: fetch job binary from %s: %w", addr, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := clusterpb.NewBlobsClient(conn).Get(ctx, &clusterpb.BlobRequest{Sha256: digest})
	if err != nil {
		return fmt.Errorf("taskmanager: fetch job binary %s from %s: %w", digest, addr, err)
	}
	tmp, err := os.CreateTemp(b.dir, ".fetch-"+digest+"-*")
	if err != nil {
		return fmt.Errorf("taskmanager: fetch job binary: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	h := sha256.New()
	var n int64
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			tmp.Close()
			return fmt.Errorf("taskmanager: fetch job binary %s from %s: %w", digest, addr, err)
		}
		n += int64(len(chunk.GetData()))
		if n > size {
			tmp.Close()
			return fmt.Errorf("%w: %s from %s has more than the %d bytes expected", ErrBinaryMismatch, digest, addr, size)
		}
		h.Write(chunk.GetData())
		if _, err := tmp.Write(chunk.GetData()); err != nil {
			tmp.Close()
			return fmt.Errorf("taskmanager: fetch job binary: %w", err)
		}
	}
	if err := checkDigest(h, n, digest, size); err != nil {
		tmp.Close()
		return fmt.Errorf("%w (from %s)", err, addr)
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return fmt.Errorf("taskmanager: fetch job binary: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("taskmanager: fetch job binary: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("taskmanager: fetch job binary: %w", err)
	}
	return nil
}
