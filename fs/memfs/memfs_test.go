package memfs_test

import (
	"errors"
	iofs "io/fs"
	"strings"
	"testing"

	"github.com/sluice/sluice/fs/fstest"
	"github.com/sluice/sluice/fs/memfs"
)

func TestConformance(t *testing.T) {
	m := memfs.New()
	if err := m.MkdirAll("/root"); err != nil {
		t.Fatal(err)
	}
	fstest.Run(t, m, "/root")
}

func TestFaults(t *testing.T) {
	tests := []struct {
		name  string
		fault memfs.Fault
		do    func(m *memfs.FS) error
		want  []string // paths afterwards
	}{
		{
			name:  "second write fails, first stays",
			fault: memfs.FailNth(memfs.OpWrite, 2, memfs.ErrInjected),
			do: func(m *memfs.FS) error {
				f, err := m.Create("/d/f")
				if err != nil {
					return err
				}
				if _, err := f.Write([]byte("ab")); err != nil {
					return err
				}
				_, err = f.Write([]byte("cd"))
				return err
			},
			want: []string{"/", "/d/", "/d/f"},
		},
		{
			name:  "rename fails: nothing moves",
			fault: memfs.FailNth(memfs.OpRename, 1, memfs.ErrInjected),
			do:    func(m *memfs.FS) error { return m.Rename("/d/f", "/d/g") },
			want:  []string{"/", "/d/", "/d/f"},
		},
		{
			name:  "create under a matching path fails",
			fault: memfs.FailMatching(memfs.OpCreate, func(p string) bool { return strings.HasSuffix(p, "/f") }, memfs.ErrInjected),
			do: func(m *memfs.FS) error {
				_, err := m.Create("/d/f")
				return err
			},
			want: []string{"/", "/d/"},
		},
		{
			name:  "mkdirall fails: no directory appears",
			fault: memfs.FailNth(memfs.OpMkdirAll, 2, memfs.ErrInjected), // the first call is the setup's
			do:    func(m *memfs.FS) error { return m.MkdirAll("/d/x/y") },
			want:  []string{"/", "/d/"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := memfs.New()
			m.SetFault(tt.fault)
			if err := m.MkdirAll("/d"); err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(tt.name, "rename") {
				if err := fstest.WriteFile(m, "/d/f", []byte("x")); err != nil {
					t.Fatal(err)
				}
			}
			err := tt.do(m)
			if !errors.Is(err, memfs.ErrInjected) {
				t.Fatalf("got %v, want the injected fault", err)
			}
			if got := strings.Join(m.Paths("/"), " "); got != strings.Join(tt.want, " ") {
				t.Errorf("paths %s, want %s", got, strings.Join(tt.want, " "))
			}
		})
	}
}

func TestWrittenBytesVisibleBeforeClose(t *testing.T) {
	m := memfs.New()
	f, err := m.Create("/f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("partial")); err != nil {
		t.Fatal(err)
	}
	b, err := fstest.ReadFile(m, "/f")
	if err != nil || string(b) != "partial" {
		t.Fatalf("read %q, %v", b, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("x")); !errors.Is(err, iofs.ErrClosed) {
		t.Errorf("write after close: %v", err)
	}
	if m.Calls(memfs.OpWrite) != 1 || m.Calls(memfs.OpCreate) != 1 { // a write after Close is refused before it counts
		t.Errorf("calls: %d writes, %d creates", m.Calls(memfs.OpWrite), m.Calls(memfs.OpCreate))
	}
}
