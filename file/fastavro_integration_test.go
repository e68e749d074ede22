//go:build integration

package file_test

import (
	"bytes"
	stdjson "encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/file"
	"github.com/sluice/sluice/formats/avro"
	"github.com/sluice/sluice/stream"
)

// fastavroPython is the formats' venv's interpreter (fastavro from PyPI,
// an independent Avro implementation).
func fastavroPython(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("../integration/scripts/formats-venv.sh").Output()
	if err != nil {
		t.Fatalf("formats-venv.sh: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// Container files the bulk sink wrote are read by fastavro, and a file
// fastavro wrote (with a writer schema of one more field) is read by the
// bulk source.
func TestAvroContainerFilesInteropWithFastavro(t *testing.T) {
	python := fastavroPython(t)
	py := func(stdin string, args ...string) (stdout, stderr string) {
		t.Helper()
		cmd := exec.Command(python, append([]string{"testdata/fastavro_ocf.py"}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("fastavro %s: %v\n%s", args[0], err, errb.String())
		}
		return string(out), errb.String()
	}
	const n = 2000

	// Sluice → fastavro.
	dir := t.TempDir()
	env := asyncTestEnv(stream.WithParallelism(2), stream.WithCheckpointing(50*time.Millisecond, filepath.Join(t.TempDir(), "checkpoints")))
	stream.SinkToCommitting(stream.DataGen(env, n, 5000, readingOf), ocfSink(dir, avro.WithCodec(avro.Deflate)))
	if _, err := env.Execute("write"); err != nil {
		t.Fatal(err)
	}
	parts := committedParts(t, dir)
	out, codecs := py("", append([]string{"read"}, parts...)...)
	if want := strings.Repeat("codec deflate\n", len(parts)); codecs != want {
		t.Fatalf("fastavro saw codecs\n%s\nwant\n%s", codecs, want)
	}
	var read []reading
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r reading
		dec := stdjson.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("fastavro's record %s: %v", line, err)
		}
		read = append(read, r)
	}
	checkAllOnce(t, "fastavro", read, n)

	// fastavro → Sluice, fastavro's writer schema having a field more.
	const withUnit = `{"type":"record","name":"Reading","namespace":"sluice.test","fields":[
		{"name":"sensor","type":"string"},
		{"name":"unit","type":"string"},
		{"name":"seq","type":"long"},
		{"name":"value","type":"double"}]}`
	schemaFile := filepath.Join(t.TempDir(), "reading.avsc")
	if err := os.WriteFile(schemaFile, []byte(withUnit), 0o644); err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	for i := int64(0); i < n; i++ {
		r := readingOf(i)
		b, _ := stdjson.Marshal(map[string]any{"sensor": r.Sensor, "unit": "°C", "seq": r.Seq, "value": r.Value})
		in.Write(append(b, '\n'))
	}
	for _, codec := range []string{"null", "deflate"} {
		path := filepath.Join(t.TempDir(), "fastavro-"+codec+".avro")
		py(in.String(), "write", path, codec, schemaFile)
		env = asyncTestEnv(stream.WithParallelism(1))
		got := stream.Collect(file.ReadBulk(env, ocfReader, path))
		if _, err := env.Execute("read"); err != nil {
			t.Fatalf("%s: %v", codec, err)
		}
		vs := got.Values()
		checkAllOnce(t, "the bulk source ("+codec+")", vs, n)
		for i, r := range vs {
			if r.Seq != int64(i) {
				t.Fatalf("%s: record %d is %+v, want the file's order", codec, i, r)
			}
		}
	}
}
