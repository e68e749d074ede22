package parser

import (
	"errors"
	"fmt"
	"strings"
)

// Pos is a place in a script: 1-based line and column (in characters) and
// the byte offset.
type Pos struct {
	Line, Col int
	Offset    int
}

func (p Pos) String() string { return fmt.Sprintf("line %d, column %d", p.Line, p.Col) }

// ErrSyntax is wrapped by every *Error of the parser.
var ErrSyntax = errors.New("sql: syntax error")

// Error is a problem at a place in a script: a syntax error, or (made with
// ErrorAt by the planner) an unknown name or a type mismatch. Its message
// shows the line with a caret under the column.
type Error struct {
	Pos Pos
	Msg string
	// Line is the text of the script's line Pos.Line.
	Line string
	// Kind is what the error wraps (ErrSyntax for the parser's).
	Kind error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.Pos, e.Msg)
	if e.Line != "" || e.Pos.Line > 0 {
		b.WriteString("\n  ")
		// Tabs print as one space, so the caret stands under the column.
		b.WriteString(strings.ReplaceAll(e.Line, "\t", " "))
		b.WriteString("\n  ")
		b.WriteString(strings.Repeat(" ", max(0, e.Pos.Col-1)))
		b.WriteString("^")
	}
	return b.String()
}

// Unwrap returns the error's kind.
func (e *Error) Unwrap() error { return e.Kind }

// ErrorAt is an Error of kind at pos in src.
func ErrorAt(src string, pos Pos, kind error, format string, args ...any) *Error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...), Line: lineOf(src, pos.Line), Kind: kind}
}

func errorAt(src string, pos Pos, format string, args ...any) *Error {
	return ErrorAt(src, pos, ErrSyntax, format, args...)
}

func lineOf(src string, n int) string {
	lines := strings.Split(src, "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	return strings.TrimRight(lines[n-1], "\r")
}

// Nearest is the candidate closest to name by edit distance (case
// insensitive), or "" when none is close enough to be a likely typo.
func Nearest(name string, candidates []string) string {
	best, bestD := "", 1<<30
	ln := strings.ToLower(name)
	for _, c := range candidates {
		d := editDistance(ln, strings.ToLower(c))
		if d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > max(2, len(name)/3) {
		return ""
	}
	return best
}

func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
