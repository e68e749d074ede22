package restapi

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var rewriteJava = flag.Bool("rewrite-java", false,
	"rewrite testdata/javaser.txt with Java's own serialization of the test cases (needs java and SLUICE_FLINK_CLASSPATH, see integration/scripts/flinkrest.sh)")

// javaCase is an object Sluice serializes for Flink's Java client; kind
// and args are as Check --java-serialize reads them.
type javaCase struct {
	name, kind string
	args       []string
	got        func() ([]byte, error)
}

func javaCases() []javaCase {
	th := func(name, class, msg, trace string) javaCase {
		return javaCase{name, "throwable", []string{class, msg, trace}, func() ([]byte, error) {
			return javaSerializedThrowable(class, msg, trace), nil
		}}
	}
	acc := func(name string, v any) javaCase {
		kind := "string"
		if _, ok := v.(int64); ok {
			kind = "long"
		}
		return javaCase{name, kind, []string{fmt.Sprint(v)}, func() ([]byte, error) { return javaAccumulator(v) }}
	}
	long := strings.Repeat("a long failure, ", 5000) // over 65535 bytes: a long string
	return []javaCase{
		th("throwable-plain", "*errors.errorString", "boom", "boom"),
		th("throwable-wrapped", "*fs.PathError", "jobmaster: savepoint: open /x: no such file or directory",
			"jobmaster: savepoint: open /x: no such file or directory\nsecond line"),
		th("throwable-unicode", "*main.Fehler", "Größe ist \x00 null, 😀 Emoji", "Größe ist \x00 null, 😀 Emoji"),
		th("throwable-empty", "", "", ""),
		th("throwable-long", "*errors.errorString", long[:70000], long),
		acc("long-zero", int64(0)),
		acc("long-restarts", int64(3)),
		acc("long-negative", int64(-9223372036854775808)),
		acc("string-savepoint", "file:/tmp/savepoints/savepoint-1a2b3c-0123456789ab"),
		acc("string-empty", ""),
		acc("string-unicode", "Größe 😀 \x00"),
	}
}

const javaVectors = "testdata/javaser.txt"

// TestJavaSerialization compares Sluice's Java serialization writer with
// the bytes Java's own ObjectOutputStream writes for the same objects
// (Flink's SerializedThrowable and OptionalFailure, from Check
// --java-serialize, kept in testdata/javaser.txt), and reads the
// accumulators back.
func TestJavaSerialization(t *testing.T) {
	cases := javaCases()
	if *rewriteJava {
		rewriteJavaVectors(t, cases)
	}
	want := readJavaVectors(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.got()
			if err != nil {
				t.Fatal(err)
			}
			w, ok := want[c.name]
			if !ok {
				t.Fatalf("no Java vector for %s in %s: run go test ./rest -run TestJavaSerialization -rewrite-java", c.name, javaVectors)
			}
			if !bytes.Equal(got, w) {
				t.Fatalf("differs from Java's serialization at byte %d:\n got  %x\n want %x", firstDiff(got, w), got, w)
			}
			if c.kind == "throwable" {
				return
			}
			v, err := readJavaAccumulator(w)
			if err != nil {
				t.Fatalf("reading Java's bytes back: %v", err)
			}
			if fmt.Sprint(v) != c.args[0] {
				t.Fatalf("read back %v, want %s", v, c.args[0])
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func readJavaVectors(t *testing.T) map[string][]byte {
	t.Helper()
	f, err := os.Open(javaVectors)
	if err != nil {
		t.Fatalf("%v (run with -rewrite-java to create it)", err)
	}
	defer f.Close()
	out := map[string][]byte{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		name, b64, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			t.Fatalf("%s: %s: %v", javaVectors, name, err)
		}
		out[name] = b
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func rewriteJavaVectors(t *testing.T, cases []javaCase) {
	t.Helper()
	cp := os.Getenv("SLUICE_FLINK_CLASSPATH")
	if cp == "" {
		t.Fatal("-rewrite-java needs SLUICE_FLINK_CLASSPATH: export SLUICE_FLINK_CLASSPATH=$(integration/scripts/flinkrest.sh | tail -n 1)")
	}
	var in bytes.Buffer
	for _, c := range cases {
		in.WriteString(c.name + "\t" + c.kind)
		for _, a := range c.args {
			in.WriteString("\t" + base64.StdEncoding.EncodeToString([]byte(a)))
		}
		in.WriteString("\n")
	}
	cmd := exec.Command("java", "--add-opens", "java.base/java.lang=ALL-UNNAMED", "-cp", cp, "io.github.sluice.flinkrest.Check", "--java-serialize")
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("Check --java-serialize: %v\n%s", err, stderr.String())
	}
	head := "# Java's serialization (ObjectOutputStream, Java 17, Flink 2.3 classes) of the cases of javaCases in javaser_test.go:\n" +
		"# name TAB base64. Written by go test ./rest -run TestJavaSerialization -rewrite-java; do not edit.\n"
	if err := os.WriteFile(filepath.FromSlash(javaVectors), append([]byte(head), out...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzReadJavaAccumulator feeds arbitrary bytes to the reader of
// accumulator values: it must answer a value or an error, never panic, and
// a value it reads must serialize back to the same bytes.
func FuzzReadJavaAccumulator(f *testing.F) {
	for _, v := range []any{int64(7), "x", ""} {
		b, _ := javaAccumulator(v)
		f.Add(b)
	}
	f.Add([]byte{0xac, 0xed, 0, 5, jReference, 0, 0x7e, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := readJavaAccumulator(b)
		if err != nil {
			return
		}
		if _, err := javaAccumulator(v); err != nil {
			t.Fatalf("read %v (%T), which does not serialize: %v", v, v, err)
		}
	})
}
