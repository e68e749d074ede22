//go:build integration

package yarntest

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/yarn"
)

// TestExampleWordCountOnHDFS: the WordCount example, deployed with sluice
// run --target yarn-application, reads its input from hdfs:// and writes
// its counts to hdfs:// (as Flink's WordCount is run on YARN); the CLI
// waits for the application to end SUCCEEDED and the committed part files
// on HDFS hold every word's count exactly once.
func TestExampleWordCountOnHDFS(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	want := map[string]int64{}
	var inputs []string
	for f := 0; f < 3; f++ {
		var b strings.Builder
		for i := 0; i < 500; i++ {
			w := letters((i*7 + f) % 97)
			want[w]++
			fmt.Fprintf(&b, "%s, %s!\n", w, strings.ToUpper("x"+w))
			want["x"+w]++
		}
		p := path.Join(r.hdfs, "in", strconv.Itoa(f)+".txt")
		writeHDFS(t, r, p, b.String())
		inputs = append(inputs, "hdfs://"+p)
	}
	out := path.Join(r.hdfs, "counts")
	args := append([]string{"run", "--target", "yarn-application", "-Dyarn.application.name=yarntest-wordcount"}, small...)
	args = append(append(args, bins.wordcount, "-p", "2", "-output", "hdfs://"+out), inputs...)
	o, err := r.sluice(t, ctx, args...)
	if err != nil {
		t.Fatalf("sluice run --target yarn-application wordcount: %v\n%s", err, o)
	}
	if !strings.Contains(o, "final status SUCCEEDED") {
		t.Errorf("the CLI did not report the application's success:\n%s", o)
	}

	got := map[string]int64{}
	infos, err := r.fs.ReadDir(out)
	if err != nil {
		t.Fatalf("reading the output directory on HDFS: %v", err)
	}
	for _, fi := range infos {
		if strings.HasPrefix(fi.Name(), ".") || !strings.HasPrefix(fi.Name(), "part-") {
			t.Errorf("unexpected file %s in the output (uncommitted part?)", fi.Name())
			continue
		}
		f, err := r.fs.Open(path.Join(out, fi.Name()))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			w, c, ok := strings.Cut(l, " ")
			n, err := strconv.ParseInt(c, 10, 64)
			if !ok || err != nil {
				t.Fatalf("%s: malformed line %q", fi.Name(), l)
			}
			if _, dup := got[w]; dup {
				t.Errorf("%q counted twice", w)
			}
			got[w] = n
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("counts on HDFS: %d words, want %d (first differences: %v)", len(got), len(want), firstDiffs(got, want, 5))
	}
}

// letters spells n in base 26 with the letters a..z (words of the
// WordCount tokenizer are runs of letters).
func letters(n int) string {
	s := "w"
	for ; n > 0; n /= 26 {
		s += string(rune('a' + n%26))
	}
	return s
}

// writeHDFS writes a file on the mini cluster's HDFS.
func writeHDFS(t *testing.T, r *rig, p, content string) {
	t.Helper()
	if err := r.fs.MkdirAll(path.Dir(p)); err != nil {
		t.Fatal(err)
	}
	f, err := r.fs.Create(p)
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

// firstDiffs names up to n words whose counts differ.
func firstDiffs(got, want map[string]int64, n int) []string {
	var d []string
	for w, c := range want {
		if got[w] != c && len(d) < n {
			d = append(d, fmt.Sprintf("%s: got %d want %d", w, got[w], c))
		}
	}
	for w, c := range got {
		if _, ok := want[w]; !ok && len(d) < n {
			d = append(d, fmt.Sprintf("%s: got %d, not in the input", w, c))
		}
	}
	return d
}

// TestApplicationFailsWithItsJob: a yarn-application job that fails (an
// input file missing on HDFS, no restarts) ends the application FAILED
// with the job's error in its diagnostics; the CLI says why, naming the
// file, and exits non-zero; no container is left and staging is deleted.
func TestApplicationFailsWithItsJob(t *testing.T) {
	r := newRig(t)
	yc := r.yarnClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	missing := "hdfs://" + path.Join(r.hdfs, "no-such-book.txt")
	args := append([]string{"run", "--target", "yarn-application", "-Drestart-strategy.type=none",
		"-Dyarn.application.name=yarntest-failing"}, small...)
	args = append(args, bins.wordcount, "-p", "1", "-output", "hdfs://"+path.Join(r.hdfs, "counts"), missing)
	p := r.start(ctx, args...)
	appID := match(t, p, reAppID, 2*time.Minute)
	o, err := p.wait()
	if err == nil {
		t.Fatalf("sluice run of a failing job exited 0:\n%s", o)
	}
	if !strings.Contains(o, "no-such-book.txt") || !strings.Contains(o, "FAILED") {
		t.Errorf("the CLI's output does not say the application FAILED because of no-such-book.txt:\n%s", o)
	}
	rep := report(t, ctx, yc, appID)
	if rep.FinalStatus != yarn.FinalFailed {
		t.Errorf("the application's final status is %s (%s), want FAILED", rep.FinalStatus, rep.Diagnostics)
	}
	if !strings.Contains(rep.Diagnostics, "no-such-book.txt") {
		t.Errorf("the application's diagnostics do not name the missing file: %q", rep.Diagnostics)
	}
	r.stagingGone(t, appID)
	noContainersLeft(t, ctx, yc, appID)
}
