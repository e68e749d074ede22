package jobservice

import (
	"fmt"
	"slices"
	"testing"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"

	"github.com/sluice/sluice/internal/tracetest"
)

// TestStates replays testdata/states.txt: "job" starts a job in STOPPED,
// every other line is an event and its output the state after it (or the
// refusal).
func TestStates(t *testing.T) {
	var s State
	tracetest.Replay(t, "testdata/states.txt", func(f []string) (string, error) {
		if f[0] == "job" {
			s = jobpb.JobState_STOPPED
			return s.String(), nil
		}
		i := slices.Index(eventNames[:], f[0])
		if i < 0 {
			return "", fmt.Errorf("unknown event %q", f[0])
		}
		next, err := Next(s, Event(i))
		if err != nil {
			return "refused: " + err.Error(), nil
		}
		s = next
		return fmt.Sprintf("%s terminal=%v", s, Terminal(s)), nil
	})
}
