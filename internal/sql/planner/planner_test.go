package planner_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluice/sluice/internal/sql/parser"
	"github.com/sluice/sluice/internal/sql/planner"
	"github.com/sluice/sluice/internal/tracetest"
)

// TestPlan replays testdata/plan.txt: each block is a script run in a new
// session; the output is the text the statements produced (EXPLAIN,
// DESCRIBE, SHOW TABLES) or the first error.
func TestPlan(t *testing.T) {
	tracetest.ReplayBlocks(t, "testdata/plan.txt", func(b tracetest.Block) string {
		stmts, err := parser.Parse(b.Input)
		if err != nil {
			return "parse error: " + err.Error()
		}
		s := planner.NewSession(nil)
		var out []string
		for _, st := range stmts {
			res, err := s.Execute(b.Input, st)
			if err != nil {
				kind := "error"
				switch {
				case errors.Is(err, planner.ErrUnknown):
					kind = "unknown"
				case errors.Is(err, planner.ErrInvalid):
					kind = "invalid"
				}
				out = append(out, kind+": "+err.Error())
				break
			}
			if res.Text != "" {
				out = append(out, res.Text)
			}
		}
		return strings.Join(out, "\n")
	})
}
