package pebblestore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/sluice/sluice/internal/runtime/keygroup"
)

func open(t *testing.T) *Store {
	t.Helper()
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func key(kg int, k string) []byte { return append(AppendKeyGroup(nil, kg), k...) }

func TestRestoreKeepsExactlyTheOwnedKeyGroups(t *testing.T) {
	// Entries at the edges of the key-group space and of the ranges.
	src := open(t)
	groups := []int{0, 1, 99, 100, 101, keygroup.UpperBound - 2, keygroup.UpperBound - 1}
	for _, kg := range groups {
		for _, k := range []string{"", "a", "\xff\xff"} {
			if err := src.Set(key(kg, k), []byte(fmt.Sprint(kg))); err != nil {
				t.Fatal(err)
			}
		}
	}
	files, err := src.Checkpoint(1)
	if err != nil {
		t.Fatal(err)
	}
	all := Source{Groups: keygroup.Range{Start: 0, End: keygroup.UpperBound - 1}, Files: files}
	for _, r := range []keygroup.Range{{Start: 0, End: 99}, {Start: 100, End: 100}, {Start: 101, End: keygroup.UpperBound - 1}, {Start: 1, End: keygroup.UpperBound - 2}} {
		t.Run(r.String(), func(t *testing.T) {
			dst := open(t)
			if err := dst.Restore(r, []Source{all}); err != nil {
				t.Fatal(err)
			}
			var got []string
			it, err := dst.NewIter(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			for ok := it.First(); ok; ok = it.Next() {
				kg := KeyGroupOf(it.Key())
				if !r.Contains(kg) {
					t.Errorf("key of key group %d kept", kg)
				}
				got = append(got, fmt.Sprintf("%d/%q", kg, it.Key()[2:]))
			}
			it.Close()
			want := 0
			for _, kg := range groups {
				if r.Contains(kg) {
					want += 3
				}
			}
			if len(got) != want {
				t.Errorf("kept %d entries, want %d: %v", len(got), want, got)
			}
		})
	}
}

func TestRestoreRejectsBadFiles(t *testing.T) {
	src := open(t)
	if err := src.Set(key(1, "k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	files, err := src.Checkpoint(1)
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(fs []File) []File) []File {
		return f(append([]File(nil), files...))
	}
	r := keygroup.Range{Start: 0, End: 127}
	cases := []struct {
		name  string
		files []File
	}{
		{"path in a local name", mutate(func(fs []File) []File { fs[0].Local = "../escape.sst"; return fs })},
		{"dot-dot", mutate(func(fs []File) []File { fs[0].Local = ".."; return fs })},
		{"empty name", mutate(func(fs []File) []File { fs[0].Local = ""; return fs })},
		{"duplicate", mutate(func(fs []File) []File { return append(fs, fs[0]) })},
		{"no copy", mutate(func(fs []File) []File {
			for i := range fs {
				if fs[i].IsSST() {
					fs[i].Path = ""
				}
			}
			return fs
		})},
		{"missing MANIFEST", mutate(func(fs []File) []File {
			var out []File
			for _, f := range fs {
				if !bytes.HasPrefix([]byte(f.Local), []byte("MANIFEST")) {
					out = append(out, f)
				}
			}
			return out
		})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dst := open(t)
			err := dst.Restore(r, []Source{{Groups: r, Files: c.files}})
			if !errors.Is(err, ErrBadCheckpoint) {
				t.Fatalf("got %v, want ErrBadCheckpoint", err)
			}
		})
	}
}

func TestCheckpointFilesOutliveCompactionsUntilReleased(t *testing.T) {
	s := open(t)
	for i := 0; i < 1000; i++ {
		if err := s.Set(key(i%128, fmt.Sprint(i)), bytes.Repeat([]byte{byte(i)}, 100)); err != nil {
			t.Fatal(err)
		}
	}
	files, err := s.Checkpoint(5)
	if err != nil {
		t.Fatal(err)
	}
	// Rewriting everything and compacting removes the database's own links
	// to the checkpoint's SSTs; the checkpoint's stay.
	for i := 0; i < 1000; i++ {
		if err := s.Delete(key(i%128, fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DB().Compact(AppendKeyGroup(nil, 0), AppendKeyGroup(nil, keygroup.UpperBound), true); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Inline {
			continue
		}
		if _, err := os.Stat(f.Path); err != nil {
			t.Fatalf("checkpoint file gone before release: %v", err)
		}
	}
	if err := s.Release(5); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, err := os.Stat(f.Path); !f.Inline && !os.IsNotExist(err) {
			t.Fatalf("released file %s: %v", f.Path, err)
		}
	}
}
