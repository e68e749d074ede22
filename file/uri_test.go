package file_test

import (
	"fmt"
	"io"
	"net/url"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/sluice/sluice/file"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/fs/memfs"
	"github.com/sluice/sluice/stream"
)

// memResolver resolves mem:///... in one in-memory filesystem, standing
// in for hdfs:// (which the workers of a cluster register).
func memResolver(t *testing.T) (*fs.Resolver, *memfs.FS) {
	t.Helper()
	m := memfs.New()
	r := fs.NewResolver()
	if err := r.Register("mem", func(*url.URL) (fs.FileSystem, error) { return m, nil }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, m
}

func writeMem(t *testing.T, m *memfs.FS, name, content string) {
	t.Helper()
	if err := m.MkdirAll(path.Dir(name)); err != nil {
		t.Fatal(err)
	}
	f, err := m.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(f, content); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// readMemDir returns the contents of the files directly in dir, by name.
func readMemDir(t *testing.T, m *memfs.FS, dir string) map[string]string {
	t.Helper()
	infos, err := m.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, fi := range infos {
		if fi.IsDir() {
			continue
		}
		f, err := m.Open(path.Join(dir, fi.Name()))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[fi.Name()] = string(b)
	}
	return out
}

// A text source and a file sink given URIs read and write through the
// job's file systems (as hdfs:// does in a cluster's workers), not the
// local filesystem; what is committed is every line, exactly once.
func TestFileURIsResolveInTheJobsFileSystems(t *testing.T) {
	r, m := memResolver(t)
	var want []string
	for f := 0; f < 3; f++ {
		var b strings.Builder
		for i := 0; i < 200; i++ {
			l := fmt.Sprintf("file%d-line%03d", f, i)
			want = append(want, strings.ToUpper(l))
			b.WriteString(l + "\n")
		}
		writeMem(t, m, fmt.Sprintf("/in/%d.txt", f), b.String())
	}
	env := asyncTestEnv(stream.WithParallelism(2), stream.WithFileSystems(r))
	lines := file.ReadTextFile(env, "mem:///in/0.txt", "mem:///in/1.txt", "mem:///in/2.txt")
	upper := stream.Map(lines, strings.ToUpper)
	stream.SinkToCommitting(upper, file.ForRowFormat("mem:///out", file.SimpleStringEncoder[string]()).
		WithBucketAssigner(file.BasePathBucketAssigner[string]())).Name("files")
	if _, err := env.Execute("file URIs"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for name, content := range readMemDir(t, m, "/out") {
		if strings.HasPrefix(name, ".") {
			t.Errorf("an uncommitted part %q is left", name)
			continue
		}
		got = append(got, strings.Fields(content)...)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("committed %d lines, want %d exactly once", len(got), len(want))
	}
}

// A URI no file system serves fails the job with an error naming the
// operator and the URI's scheme; so does a missing file.
func TestFileURIErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(env *stream.Environment)
		want  []string
	}{
		{"sink of an unknown scheme", func(env *stream.Environment) {
			stream.SinkToCommitting(stream.FromSlice(env, []string{"a"}),
				file.ForRowFormat("nosuch:///out", file.SimpleStringEncoder[string]())).Name("files")
		}, []string{`operator "files"`, "nosuch:///out", "no filesystem for this URI scheme"}},
		{"source of an unknown scheme", func(env *stream.Environment) {
			stream.Print(file.ReadTextFile(env, "nosuch:///in.txt"))
		}, []string{"file: text file source", "nosuch:///in.txt"}},
		{"missing file", func(env *stream.Environment) {
			stream.Print(file.ReadTextFile(env, "mem:///absent.txt"))
		}, []string{"file: text file source", "/absent.txt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := memResolver(t)
			env := asyncTestEnv(stream.WithParallelism(1), stream.WithFileSystems(r))
			tc.build(env)
			_, err := env.Execute("bad URIs")
			if err == nil {
				t.Fatal("the job succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
}
