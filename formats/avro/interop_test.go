//go:build integration

package avro_test

import (
	"bytes"
	"encoding/hex"
	stdjson "encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice/sluice/formats/avro"
	"github.com/sluice/sluice/formats/internal/registryserver"
	"github.com/sluice/sluice/formats/registry"
)

// Records written by fastavro (an independent Avro implementation, from
// PyPI) in the registry's wire format are read by Sluice, and Sluice's are
// read by fastavro, with the schema registered in a real registry.
func TestInteropWithFastavro(t *testing.T) {
	out, err := exec.Command("../../integration/scripts/formats-venv.sh").Output()
	if err != nil {
		t.Fatalf("formats-venv.sh: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	python := lines[len(lines)-1]
	reg, err := registry.New(registry.Config{URLs: []string{registryserver.Start(t)}})
	if err != nil {
		t.Fatal(err)
	}
	f := must1(avro.New[UserV3](reg, userV3, avro.Options{}))
	mail := "m@x"
	users := []UserV3{{"a", 1, nil, "NO"}, {"b", -2, &mail, "SE"}, {"ü", 1 << 40, nil, ""}}
	var sluiceOut []string
	id := 0
	for _, u := range users {
		b, err := f.Serialize("interop", u)
		if err != nil {
			t.Fatal(err)
		}
		id, _, _ = registry.SplitHeader("avro", b)
		sluiceOut = append(sluiceOut, hex.EncodeToString(b))
	}
	schemaFile := filepath.Join(t.TempDir(), "user.avsc")
	if err := os.WriteFile(schemaFile, []byte(userV3), 0o644); err != nil {
		t.Fatal(err)
	}
	py := func(mode, in string) []string {
		cmd := exec.Command(python, "testdata/interop.py", mode, schemaFile, strconv.Itoa(id))
		cmd.Stdin = strings.NewReader(in)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("fastavro %s: %v\n%s", mode, err, stderr.String())
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}

	// Sluice → fastavro.
	got := py("read", strings.Join(sluiceOut, "\n"))
	want := []string{
		`{"age": 1, "country": "NO", "email": null, "id": "a"}`,
		`{"age": -2, "country": "SE", "email": "m@x", "id": "b"}`,
		`{"age": 1099511627776, "country": "", "email": null, "id": "\u00fc"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("fastavro read\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// fastavro → Sluice: the same records, written by fastavro, read back.
	var in []string
	for _, u := range users {
		m := map[string]any{"id": u.ID, "age": u.Age, "country": u.Country, "email": nil}
		if u.Email != nil {
			m["email"] = *u.Email
		}
		b, _ := stdjson.Marshal(m)
		in = append(in, string(b))
	}
	for i, h := range py("write", strings.Join(in, "\n")) {
		if h != sluiceOut[i] {
			t.Errorf("record %d: fastavro wrote %s, Sluice %s", i, h, sluiceOut[i])
		}
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		u, err := f.Deserialize("interop", b)
		if err != nil {
			t.Fatalf("reading fastavro's record %d: %v", i, err)
		}
		if u.ID != users[i].ID || u.Age != users[i].Age || u.Country != users[i].Country || (u.Email == nil) != (users[i].Email == nil) {
			t.Fatalf("fastavro's record %d read as %+v, want %+v", i, u, users[i])
		}
	}
}
