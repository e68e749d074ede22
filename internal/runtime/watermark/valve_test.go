package watermark

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata with the actual output")

// TestValveTraces replays testdata/valve.txt: blocks of "channels N" then
// events ("wm CH TS", "idle CH", "active CH", "end CH"), each followed by
// "->" and the valve's decision. With -rewrite the file is regenerated
// from the actual decisions, to be reviewed as a diff.
func TestValveTraces(t *testing.T) {
	const path = "testdata/valve.txt"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	var v *Valve
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			out.WriteString(line + "\n")
			continue
		}
		var n int
		if _, err := fmt.Sscanf(line, "channels %d", &n); err == nil {
			v = NewValve(n)
			out.WriteString(line + "\n")
			continue
		}
		event, want, _ := strings.Cut(line, " ->")
		var op string
		var ch int
		var ts int64
		fmt.Sscan(event, &op, &ch, &ts)
		var o Output
		switch op {
		case "wm":
			o = v.Watermark(ch, ts)
		case "idle":
			o = v.SetIdle(ch, true)
		case "active":
			o = v.SetIdle(ch, false)
		case "end":
			o = v.End(ch)
		default:
			t.Fatalf("%s:%d: bad event %q", path, i+1, line)
		}
		got := ""
		if o.IdleChanged {
			if o.Idle {
				got += " idle"
			} else {
				got += " active"
			}
		}
		if o.Advanced {
			got += fmt.Sprintf(" wm=%d", o.Watermark)
		}
		if got != want && !*rewrite {
			t.Errorf("%s:%d: %s -> got%q, want%q", path, i+1, event, got, want)
		}
		out.WriteString(event + " ->" + got + "\n")
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
