package watermark

import (
	"fmt"
	"strings"
	"testing"
)

// TestValveTraces drives a valve with a script of events and checks the
// decisions, one line per event: "wm CH TS", "idle CH", "active CH", "end CH".
func TestValveTraces(t *testing.T) {
	tests := []struct {
		name   string
		chans  int
		script string
		want   string
	}{
		{"minimum over channels", 2, `
wm 0 10
wm 1 5
wm 1 20
wm 0 30`, `
wm 0 10 ->
wm 1 5 -> wm=5
wm 1 20 -> wm=10
wm 0 30 -> wm=20`},
		{"never backwards", 1, `
wm 0 10
wm 0 3`, `
wm 0 10 -> wm=10
wm 0 3 ->`},
		{"idle channel does not hold back", 2, `
wm 0 10
idle 1
wm 0 15
idle 0
wm 1 12`, `
wm 0 10 ->
idle 1 -> wm=10
wm 0 15 -> wm=15
idle 0 -> idle
wm 1 12 -> active`},
		{"reactivated channel behind is not aligned until it catches up", 2, `
wm 0 10
wm 1 10
idle 1
wm 0 50
wm 1 20
wm 0 60
wm 1 55
wm 1 70
wm 0 80`, `
wm 0 10 ->
wm 1 10 -> wm=10
idle 1 ->
wm 0 50 -> wm=50
wm 1 20 ->
wm 0 60 -> wm=60
wm 1 55 ->
wm 1 70 ->
wm 0 80 -> wm=70`},
		{"ended channel releases the minimum", 2, `
wm 0 5
wm 1 7
end 0
wm 1 9
end 1`, `
wm 0 5 ->
wm 1 7 -> wm=5
end 0 -> wm=7
wm 1 9 -> wm=9
end 1 ->`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := NewValve(tc.chans)
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(tc.script), "\n") {
				var op string
				var ch int
				var ts int64
				fmt.Sscan(line, &op, &ch, &ts)
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
					t.Fatalf("bad script line %q", line)
				}
				s := line + " ->"
				if o.IdleChanged {
					if o.Idle {
						s += " idle"
					} else {
						s += " active"
					}
				}
				if o.Advanced {
					s += fmt.Sprintf(" wm=%d", o.Watermark)
				}
				got = append(got, s)
			}
			if g, w := strings.Join(got, "\n"), strings.TrimSpace(tc.want); g != w {
				t.Fatalf("trace:\n%s\nwant:\n%s", g, w)
			}
		})
	}
}
