package fs_test

import (
	"net/url"
	"testing"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/fs/memfs"
)

func TestResolverURI(t *testing.T) {
	r := fs.NewResolver()
	mem := memfs.New()
	if err := r.Register("hdfs", func(*url.URL) (fs.FileSystem, error) { return mem, nil }); err != nil {
		t.Fatal(err)
	}
	local, lp, err := r.For("file:///data/ckp")
	if err != nil {
		t.Fatal(err)
	}
	remote, rp, err := r.For("hdfs:///ckp")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		fsys fs.FileSystem
		p    string
		want string
	}{
		{"opened filesystem", remote, rp + "/chk-1", "hdfs:///ckp/chk-1"},
		{"local", local, lp, "/data/ckp"},
		{"unknown filesystem", memfs.New(), "/x", "/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := r.URI(tc.fsys, tc.p)
			if got != tc.want {
				t.Fatalf("URI = %q, want %q", got, tc.want)
			}
			if _, p, err := r.For(got); err != nil || p != tc.p {
				t.Fatalf("For(%q) = %q, %v; want the path %q back", got, p, err, tc.p)
			}
		})
	}
}
