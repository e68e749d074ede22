package sql

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/sql/planner"
	"github.com/sluice/sluice/internal/sql/types"
)

// ResultModeKey is the setting that chooses how the client shows a
// SELECT's result, Flink's sql-client.execution.result-mode:
//
//   - "table": the result as a table of its current rows (the changes
//     applied); on a terminal it is drawn again as it changes, elsewhere
//     it is printed once the query ends;
//   - "tableau": a table of the changes as they arrive, with their kind in
//     an "op" column (+I, -U, +U, -D), closed when the query ends;
//   - "changelog": each change on a line of its own, as the print
//     connector writes it (+I[c1, 1.00]).
//
// Unset, it is "tableau" when the client writes to a terminal
// (Options.Terminal) and "changelog" otherwise.
const ResultModeKey = "sql-client.execution.result-mode"

// The result modes.
const (
	ResultTable     = "table"
	ResultTableau   = "tableau"
	ResultChangelog = "changelog"
)

// resultView shows a SELECT's result as its rows arrive.
type resultView interface {
	// row takes one change; calls come from one goroutine at a time.
	row(kind core.RowKind, cells []string) error
	// finish ends the view once the query has ended (cancelled: it was
	// interrupted).
	finish(cancelled bool)
}

// newResultView makes the view of mode for a result with fields.
func newResultView(mode string, fields []planner.Field, w io.Writer, terminal bool) (resultView, error) {
	switch mode {
	case ResultTableau:
		return &tableauView{w: w, cols: columnsOf(fields, true)}, nil
	case ResultTable:
		return &tableView{w: w, cols: columnsOf(fields, false), terminal: terminal}, nil
	}
	return nil, fmt.Errorf("%w: '%s' = '%s': want %s, %s or %s", ErrInvalid, ResultModeKey, mode, ResultTable, ResultTableau, ResultChangelog)
}

// column is a column of a drawn table.
type column struct {
	name  string
	width int
}

// columnsOf lays out the columns of fields: each as wide as its type's
// widest value (at most maxColumnWidth) or its name, since a streaming
// result's values are not known ahead; with op, Flink's "op" column first.
func columnsOf(fields []planner.Field, op bool) []column {
	var cols []column
	if op {
		cols = append(cols, column{name: "op", width: 2})
	}
	for _, f := range fields {
		cols = append(cols, column{name: f.Name, width: max(typeWidth(f.Type), utf8.RuneCountInString(f.Name))})
	}
	return cols
}

// maxColumnWidth bounds a column's width; longer values end in "...".
const maxColumnWidth = 30

// typeWidth is the width of a type's widest value as text.
func typeWidth(t types.Type) int {
	switch t.Kind {
	case types.Boolean:
		return 5
	case types.TinyInt:
		return 4
	case types.SmallInt:
		return 6
	case types.Int:
		return 11
	case types.BigInt:
		return 20
	case types.Decimal:
		return min(t.Precision+2, maxColumnWidth)
	case types.Date:
		return 10
	case types.Time:
		return 8
	case types.Timestamp, types.TimestampLTZ:
		if t.Precision > 0 {
			return 20 + t.Precision
		}
		return 19
	case types.String:
		if t.Precision > 0 {
			return min(t.Precision, maxColumnWidth)
		}
	}
	return maxColumnWidth
}

// border is "+----+------+".
func border(cols []column) string {
	var b strings.Builder
	for _, c := range cols {
		b.WriteString("+")
		b.WriteString(strings.Repeat("-", c.width+2))
	}
	b.WriteString("+\n")
	return b.String()
}

// line is "| a | b |", each cell right-aligned in its column and cut to
// its width.
func line(cols []column, cells []string) string {
	var b strings.Builder
	for i, c := range cols {
		cell := cells[i]
		if n := utf8.RuneCountInString(cell); n > c.width {
			r := []rune(cell)
			cell = string(r[:max(c.width-3, 0)]) + "..."
		}
		b.WriteString("| ")
		b.WriteString(strings.Repeat(" ", c.width-utf8.RuneCountInString(cell)))
		b.WriteString(cell)
		b.WriteString(" ")
	}
	b.WriteString("|\n")
	return b.String()
}

func header(cols []column) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	return border(cols) + line(cols, names) + border(cols)
}

func rowCount(n int) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}

// tableauView prints each change as it arrives, under a header printed
// with the first.
type tableauView struct {
	w    io.Writer
	cols []column
	n    int
}

func (v *tableauView) row(kind core.RowKind, cells []string) error {
	if v.n == 0 {
		io.WriteString(v.w, header(v.cols))
	}
	v.n++
	_, err := io.WriteString(v.w, line(v.cols, append([]string{kind.String()}, cells...)))
	return err
}

func (v *tableauView) finish(cancelled bool) {
	if v.n == 0 {
		io.WriteString(v.w, header(v.cols))
	}
	if cancelled {
		fmt.Fprintf(v.w, "%sQuery terminated, received a total of %s\n", border(v.cols), rowCount(v.n))
		return
	}
	fmt.Fprintf(v.w, "%sReceived a total of %s\n", border(v.cols), rowCount(v.n))
}

// tableView keeps the result's current rows: an insert or update-after
// adds a row, an update-before or delete takes back an equal one.
type tableView struct {
	w        io.Writer
	cols     []column
	terminal bool

	mu      sync.Mutex
	rows    [][]string
	changes int
}

func (v *tableView) row(kind core.RowKind, cells []string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.changes++
	switch kind {
	case core.Insert, core.UpdateAfter:
		v.rows = append(v.rows, cells)
	default:
		if i := slices.IndexFunc(v.rows, func(r []string) bool { return slices.Equal(r, cells) }); i >= 0 {
			v.rows = slices.Delete(v.rows, i, i+1)
		}
	}
	if v.terminal {
		// Drawn again in place: the cursor home, the screen cleared.
		_, err := io.WriteString(v.w, "\x1b[H\x1b[2J"+v.drawLocked())
		return err
	}
	return nil
}

func (v *tableView) drawLocked() string {
	var b strings.Builder
	b.WriteString(header(v.cols))
	for _, r := range v.rows {
		b.WriteString(line(v.cols, r))
	}
	b.WriteString(border(v.cols))
	fmt.Fprintf(&b, "%s in set (%d changes)\n", rowCount(len(v.rows)), v.changes)
	return b.String()
}

func (v *tableView) finish(cancelled bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.terminal && v.changes > 0 {
		if cancelled {
			io.WriteString(v.w, "Query terminated.\n")
		}
		return // on the screen already
	}
	io.WriteString(v.w, v.drawLocked())
	if cancelled {
		io.WriteString(v.w, "Query terminated.\n")
	}
}
