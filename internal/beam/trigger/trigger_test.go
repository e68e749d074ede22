package trigger

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/sluice/sluice/internal/tracetest"
)

// The triggers the traces name.
var traceTriggers = map[string]*pipepb.Trigger{
	"default":   nil,
	"watermark": {Trigger: &pipepb.Trigger_AfterEndOfWindow_{AfterEndOfWindow: &pipepb.Trigger_AfterEndOfWindow{}}},
	"watermark-early2-late1": {Trigger: &pipepb.Trigger_AfterEndOfWindow_{AfterEndOfWindow: &pipepb.Trigger_AfterEndOfWindow{
		EarlyFirings: count(2), LateFirings: count(1)}}},
	"repeat-count2": repeat(count(2)),
	"count2":        count(2),
	"never":         {Trigger: &pipepb.Trigger_Never_{Never: &pipepb.Trigger_Never{}}},
	"always":        {Trigger: &pipepb.Trigger_Always_{Always: &pipepb.Trigger_Always{}}},
	"each-count1-count2": {Trigger: &pipepb.Trigger_AfterEach_{AfterEach: &pipepb.Trigger_AfterEach{
		Subtriggers: []*pipepb.Trigger{count(1), count(2)}}}},
	"repeat-any-count3-watermark": repeat(&pipepb.Trigger{Trigger: &pipepb.Trigger_AfterAny_{AfterAny: &pipepb.Trigger_AfterAny{
		Subtriggers: []*pipepb.Trigger{count(3), {Trigger: &pipepb.Trigger_AfterEndOfWindow_{AfterEndOfWindow: &pipepb.Trigger_AfterEndOfWindow{}}}}}}}),
	"all-count1-watermark": {Trigger: &pipepb.Trigger_AfterAll_{AfterAll: &pipepb.Trigger_AfterAll{
		Subtriggers: []*pipepb.Trigger{count(1), {Trigger: &pipepb.Trigger_AfterEndOfWindow_{AfterEndOfWindow: &pipepb.Trigger_AfterEndOfWindow{}}}}}}},
	"repeat-count1-orfinally-count3": {Trigger: &pipepb.Trigger_OrFinally_{OrFinally: &pipepb.Trigger_OrFinally{
		Main: repeat(count(1)), Finally: count(3)}}},
}

func count(n int32) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_ElementCount_{ElementCount: &pipepb.Trigger_ElementCount{ElementCount: n}}}
}

func repeat(t *pipepb.Trigger) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_Repeat_{Repeat: &pipepb.Trigger_Repeat{Subtrigger: t}}}
}

// TestTrace replays testdata/trigger.txt. Events:
//
//	window TRIGGER [accumulating] [fire-always]   (a new window)
//	element [eow]     (an element arrives; eow: the watermark is past the window's end)
//	batch-element     (an element of a bounded input: counted, evaluated at the next timer)
//	eow               (the watermark reached the end of the window)
//	expired           (the watermark reached its garbage-collection time)
//	eow-expired       (both at once: no allowed lateness)
//
// Each event's output lists the decision: drop, emit PANE, clear, done.
func TestTrace(t *testing.T) {
	var o Options
	var w Window
	tracetest.Replay(t, "testdata/trigger.txt", func(f []string) (string, error) {
		var ev Event
		switch f[0] {
		case "window":
			pt, ok := traceTriggers[f[1]]
			if !ok {
				return "", fmt.Errorf("unknown trigger %q", f[1])
			}
			spec, err := FromProto(pt)
			if err != nil {
				return "", err
			}
			o, w = Options{Trigger: spec}, Window{}
			for _, flag := range f[2:] {
				switch flag {
				case "accumulating":
					o.Mode = Accumulating
				case "fire-always":
					o.FireAlwaysOnTime = true
				default:
					return "", fmt.Errorf("unknown flag %q", flag)
				}
			}
			return spec.String(), nil
		case "element":
			ev = Event{Element: true, EndOfWindow: len(f) > 1 && f[1] == "eow"}
		case "batch-element":
			ev = Event{Element: true, Deferred: true}
		case "eow":
			ev = Event{EndOfWindow: true}
		case "expired":
			ev = Event{EndOfWindow: true, Expired: true}
		default:
			return "", fmt.Errorf("unknown event %q", f[0])
		}
		next, d := Step(o, w, ev)
		// The state survives its encoding (what keyed state holds).
		dec, err := Decode(next.Encode(nil))
		if err != nil {
			return "", err
		}
		if !bytes.Equal(dec.Encode(nil), next.Encode(nil)) {
			return "", fmt.Errorf("state %+v does not survive encoding", next)
		}
		w = dec
		var out []string
		if d.Drop {
			out = append(out, "drop")
		}
		if d.Emit {
			out = append(out, fmt.Sprintf("emit %s %x", d.Pane, d.Pane.Encode(nil)))
		}
		if d.Clear {
			out = append(out, "clear")
		}
		if d.Done {
			out = append(out, "done")
		}
		return strings.Join(out, "\n"), nil
	})
}

func TestUnsupported(t *testing.T) {
	for _, tr := range []*pipepb.Trigger{
		{Trigger: &pipepb.Trigger_AfterProcessingTime_{AfterProcessingTime: &pipepb.Trigger_AfterProcessingTime{}}},
		repeat(&pipepb.Trigger{Trigger: &pipepb.Trigger_AfterSynchronizedProcessingTime_{AfterSynchronizedProcessingTime: &pipepb.Trigger_AfterSynchronizedProcessingTime{}}}),
		{Trigger: &pipepb.Trigger_AfterAny_{AfterAny: &pipepb.Trigger_AfterAny{}}},
	} {
		if _, err := FromProto(tr); err == nil {
			t.Errorf("FromProto(%v) = nil error, want an UnsupportedError", tr)
		}
	}
}

func TestDecodeCorrupt(t *testing.T) {
	for _, b := range [][]byte{nil, {0}, {0, 1, 0, 5, 0}} {
		if _, err := Decode(b); err == nil {
			t.Errorf("Decode(%x) = nil error", b)
		}
	}
}
