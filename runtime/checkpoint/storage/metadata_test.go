package storage_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice/sluice/fs/fstest"
	"github.com/sluice/sluice/fs/memfs"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
)

func TestMetadataRoundTrip(t *testing.T) {
	tests := []storage.Metadata{
		{Kind: storage.KindCheckpoint, CheckpointID: 1},
		{Kind: storage.KindCheckpoint, CheckpointID: 1<<62 + 5, Shared: []string{"../shared/a", "../shared/" + strings.Repeat("b", 300)}, Payload: []byte("payload")},
		{Kind: storage.KindSavepoint, CheckpointID: 9, Payload: bytes.Repeat([]byte{0, 1, 2}, 100000)},
	}
	for _, m := range tests {
		data, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if string(data[:8]) != "SLUICECK" {
			t.Fatalf("magic %q", data[:8])
		}
		got, err := storage.DecodeMetadata("f", data)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Payload) == 0 {
			got.Payload = nil
		}
		if !reflect.DeepEqual(*got, m) {
			t.Errorf("decoded %+v, want %+v", *got, m)
		}
		// Read through a filesystem too.
		fsys := memfs.New()
		if err := fstest.WriteFile(fsys, "/_metadata", data); err != nil {
			t.Fatal(err)
		}
		got, err = storage.ReadMetadata(fsys, "/_metadata")
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Payload) == 0 {
			got.Payload = nil
		}
		if !reflect.DeepEqual(*got, m) {
			t.Errorf("read %+v, want %+v", *got, m)
		}
	}
	if _, err := (&storage.Metadata{Kind: 7}).MarshalBinary(); err == nil {
		t.Error("encoding an unknown kind succeeded")
	}
	if _, err := (&storage.Metadata{Kind: storage.KindCheckpoint, Shared: []string{""}}).MarshalBinary(); !errors.Is(err, storage.ErrBadName) {
		t.Errorf("encoding an empty handle: %v", err)
	}
}

// TestMetadataDamage damages a valid file in every way and expects a
// *CorruptError naming the file, from both DecodeMetadata and ReadMetadata.
func TestMetadataDamage(t *testing.T) {
	valid, err := (&storage.Metadata{Kind: storage.KindCheckpoint, CheckpointID: 3, Shared: []string{"../shared/x"}, Payload: []byte("the payload")}).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(valid)) }
	// resum recomputes the checksum, for damage the CRC alone would catch.
	resum := func(b []byte) []byte {
		crc := crc32.Update(crc32.Checksum(b[8:20], crc32.MakeTable(crc32.Castagnoli)), crc32.MakeTable(crc32.Castagnoli), b[24:])
		binary.BigEndian.PutUint32(b[20:], crc)
		return b
	}
	tests := []struct {
		name   string
		data   []byte
		reason string
	}{
		{"empty", nil, "truncated: 0 bytes"},
		{"header cut", valid[:20], "truncated: 20 bytes"},
		{"body cut", valid[:len(valid)-1], "truncated: the header announces"},
		{"trailing bytes", append(bytes.Clone(valid), 0), "trailing garbage"},
		{"bad magic", edit(func(b []byte) []byte { b[0] = 'X'; return b }), "not a Sluice metadata file"},
		{"future version", edit(func(b []byte) []byte { b[9] = 2; return b }), "format version 2"},
		{"unknown kind", edit(func(b []byte) []byte { b[10] = 9; return b }), "unknown kind 9"},
		{"reserved byte", edit(func(b []byte) []byte { b[11] = 1; return b }), "reserved header byte"},
		{"huge length", edit(func(b []byte) []byte { binary.BigEndian.PutUint64(b[12:], 1<<40); return b }), "more than the limit"},
		{"flipped payload bit", edit(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), "checksum mismatch"},
		{"flipped ID bit", edit(func(b []byte) []byte { b[24] ^= 0x80; return b }), "checksum mismatch"},
		{"flipped checksum", edit(func(b []byte) []byte { b[20] ^= 1; return b }), "checksum mismatch"},
		{"flipped kind", edit(func(b []byte) []byte { b[10] = 2; return b }), "checksum mismatch"},
		{"shared count overruns", edit(func(b []byte) []byte { b[32] = 0x7f; return resum(b) }), "shared handles announced"},
		{"handle overruns", edit(func(b []byte) []byte { b[33] = 0x7f; return resum(b) }), "overruns the body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const file = "/ckp/job/chk-3/_metadata"
			_, err := storage.DecodeMetadata(file, tt.data)
			checkCorrupt(t, "DecodeMetadata", err, file, tt.reason)
			fsys := memfs.New()
			fsys.MkdirAll("/ckp/job/chk-3")
			if err := fstest.WriteFile(fsys, file, tt.data); err != nil {
				t.Fatal(err)
			}
			_, err = storage.ReadMetadata(fsys, file)
			checkCorrupt(t, "ReadMetadata", err, file, tt.reason)
		})
	}
}

func checkCorrupt(t *testing.T, what string, err error, file, reason string) {
	t.Helper()
	var ce *storage.CorruptError
	switch {
	case !errors.As(err, &ce):
		t.Errorf("%s: %v, want a *CorruptError", what, err)
	case !errors.Is(err, storage.ErrCorrupt):
		t.Errorf("%s: errors.Is(err, ErrCorrupt) is false", what)
	case ce.Path != file || !strings.Contains(err.Error(), file):
		t.Errorf("%s: %q does not name %s", what, err, file)
	case !strings.Contains(ce.Reason, reason):
		t.Errorf("%s: reason %q, want %q", what, ce.Reason, reason)
	}
}

// FuzzDecodeMetadata: any bytes decode to an error or to metadata that
// encodes back to the same bytes.
func FuzzDecodeMetadata(f *testing.F) {
	for _, m := range []storage.Metadata{
		{Kind: storage.KindCheckpoint, CheckpointID: 1},
		{Kind: storage.KindCheckpoint, CheckpointID: 2, Shared: []string{"../shared/a", "../shared/b"}, Payload: []byte("p")},
		{Kind: storage.KindSavepoint, CheckpointID: 3, Payload: []byte("savepoint")},
	} {
		b, err := m.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("SLUICECK"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := storage.DecodeMetadata("f", data)
		if err != nil {
			if !errors.Is(err, storage.ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		again, err := m.MarshalBinary()
		if err != nil {
			t.Fatalf("re-encoding decoded metadata: %v", err)
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("re-encoding gives %x, decoded from %x", again, data)
		}
	})
}
