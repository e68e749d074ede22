package file_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice/sluice/file"
	"github.com/sluice/sluice/formats"
	"github.com/sluice/sluice/formats/json"
	"github.com/sluice/sluice/stream"
)

type order struct {
	ID     string  `json:"id"`
	Amount float64 `json:"amount"`
}

// A job writes records with the json format to the file sink, one per
// line; another reads the part files back with the same format.
func TestJSONFormatThroughTheFileSinkAndSource(t *testing.T) {
	dir := t.TempDir()
	in := []order{{"o1", 1.5}, {"o2", -2}, {"ü\n\"", 1e21}}
	env := asyncTestEnv(stream.WithParallelism(1))
	sink := file.ForRowFormat(dir, file.FormatEncoder[order](json.MustNew[order](json.Options{}))).
		WithBucketAssigner(file.BasePathBucketAssigner[order]())
	stream.SinkToCommitting(stream.FromSlice(env, in), sink)
	if _, err := env.Execute("write"); err != nil {
		t.Fatal(err)
	}
	parts, err := filepath.Glob(filepath.Join(dir, "part-*"))
	if err != nil || len(parts) != 1 {
		t.Fatalf("part files %v, %v; want one", parts, err)
	}
	b, err := os.ReadFile(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":"o1","amount":1.5}` + "\n" + `{"id":"o2","amount":-2}` + "\n" + `{"id":"ü\n\"","amount":1e+21}` + "\n"; string(b) != want {
		t.Fatalf("part file:\n%s\nwant:\n%s", b, want)
	}
	env = asyncTestEnv(stream.WithParallelism(1))
	res := stream.Collect(file.ReadFormatted[order](env, json.MustNew[order](json.Options{FailOnMissingField: true}), parts...))
	if _, err := env.Execute("read"); err != nil {
		t.Fatal(err)
	}
	if got := res.Values(); !slices.Equal(got, in) {
		t.Fatalf("read %v, want %v", got, in)
	}
}

// A malformed line fails the job naming the file and the line's byte
// offset, never its content; with ignore-parse-errors the format's policy
// applies.
func TestFormattedFileSourceMalformedLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orders.json")
	content := `{"id":"o1","amount":1}` + "\n\n" + `{"id":"o2","amount":"secret-ish"}` + "\n" + "oops, not json\n" + `{"id":"o3","amount":3}` + "\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	env := asyncTestEnv(stream.WithParallelism(1))
	stream.Collect(file.ReadFormatted[order](env, json.MustNew[order](json.Options{}), path))
	_, err := env.Execute("strict")
	var de *file.DeserializationError
	if !errors.As(err, &de) || !errors.Is(err, file.ErrMalformedRecord) || !errors.Is(err, formats.ErrMalformed) {
		t.Fatalf("error %v, want a *file.DeserializationError of formats.ErrMalformed", err)
	}
	if de.Path != path || de.Offset != 24 {
		t.Fatalf("error names %s at byte %d, want %s at byte 24", de.Path, de.Offset, path)
	}
	if strings.Contains(err.Error(), "secret-ish") {
		t.Fatalf("error %q quotes the record", err)
	}
	env = asyncTestEnv(stream.WithParallelism(1))
	res := stream.Collect(file.ReadFormatted[order](env, json.MustNew[order](json.Options{IgnoreParseErrors: true}), path))
	if _, err := env.Execute("lenient"); err != nil {
		t.Fatal(err)
	}
	// The json format's ignore-parse-errors: a field it cannot convert is
	// left zero (Flink: NULL), a line that is not JSON is skipped.
	if got, want := res.Values(), []order{{"o1", 1}, {"o2", 0}, {"o3", 3}}; !slices.Equal(got, want) {
		t.Fatalf("read %v, want %v", got, want)
	}
}

type binaryFormat struct{}

func (binaryFormat) Serialize(string, int) ([]byte, error) { return []byte{0, '\n', 1}, nil }

// A format whose records hold a newline is refused by the line sink.
func TestFormatEncoderRefusesNewlines(t *testing.T) {
	var sb strings.Builder
	err := file.FormatEncoder[int](binaryFormat{})(1, &sb)
	if err == nil || !strings.Contains(err.Error(), "file_test.binaryFormat wrote a record holding a newline") || sb.Len() != 0 {
		t.Fatalf("error %v (wrote %q), want the newline refused and nothing written", err, sb.String())
	}
}
