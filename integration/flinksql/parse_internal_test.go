package flinksql

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	out, err := parse(strings.NewReader("some Flink noise\nSCRIPT /a.sql OK 1500 2750\nSCRIPT /b.sql FAILED it broke: because\nSCRIPT /c.sql OK 20\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 {
		t.Fatalf("%d results, want 3", len(out))
	}
	if out[0].Script != "/a.sql" || out[0].Err != nil || out[0].Elapsed != 1500*time.Millisecond || out[0].CPU != 2750*time.Millisecond {
		t.Errorf("a: %+v", out[0])
	}
	var se *ScriptError
	if !errors.As(out[1].Err, &se) || se.Script != "/b.sql" || se.Message != "it broke: because" {
		t.Errorf("b: %+v", out[1])
	}
	if out[2].Elapsed != 20*time.Millisecond || out[2].CPU != 0 {
		t.Errorf("c: %+v", out[2])
	}
	for _, bad := range []string{"SCRIPT /x.sql\n", "SCRIPT /x.sql MAYBE\n", "SCRIPT /x.sql OK soon\n"} {
		if _, err := parse(strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
