package jobmanager

import (
	"errors"
	"testing"

	"github.com/sluice/sluice/fs/memfs"
)

// serve reports ErrNoBlob (NotFound over gRPC, which fails a job at once)
// only for a blob the store does not have, not for one it cannot read
// now (a restart may find it readable).
func TestServeTellsAMissingBlobFromAnUnreadableOne(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name     string
		fault    memfs.Fault
		wantNone bool
	}{
		{name: "missing", wantNone: true},
		{name: "unreadable", fault: memfs.FailNth(memfs.OpOpen, 1, memfs.ErrInjected)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := memfs.New()
			if tc.fault != nil {
				fsys.SetFault(tc.fault)
			}
			b := &blobStore{fs: fsys, dir: "/blobs"}
			err := b.serve(sha, nil)
			if err == nil || errors.Is(err, ErrNoBlob) != tc.wantNone {
				t.Fatalf("serve: %v; want ErrNoBlob: %v", err, tc.wantNone)
			}
		})
	}
}
