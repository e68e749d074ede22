package clusterpb

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// opError is a typed error that adds to its cause (as task.OperatorError).
type opError struct{ err error }

func (e *opError) Error() string { return "operator map: " + e.err.Error() }
func (e *opError) Unwrap() error { return e.err }

// marker wraps without changing the text (as restart.Unrecoverable).
type marker struct{ err error }

func (e *marker) Error() string { return e.err.Error() }
func (e *marker) Unwrap() error { return e.err }

type leaf struct{}

func (leaf) Error() string { return "leaf" }

func TestErrorClass(t *testing.T) {
	base := errors.New("boom")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"errors.New", base, "*errors.errorString"},
		{"a value type", leaf{}, "clusterpb.leaf"},
		{"fmt.Errorf without %w", fmt.Errorf("no: %v", base), "*errors.errorString"},
		{"fmt.Errorf around errors.New", fmt.Errorf("ctx: %w", base), "*errors.errorString"},
		{"a typed error", &opError{base}, "*clusterpb.opError"},
		{"a typed error wrapped twice", fmt.Errorf("a: %w", fmt.Errorf("b: %w", &opError{base})), "*clusterpb.opError"},
		{"a marker around a typed error", &marker{&opError{base}}, "*clusterpb.opError"},
		{"a marker around fmt", &marker{fmt.Errorf("x: %w", context.Canceled)}, "*errors.errorString"},
		{"errors.Join names its first", errors.Join(&opError{base}, leaf{}), "*clusterpb.opError"},
		{"fmt with two %w names the first", fmt.Errorf("%w and %w", leaf{}, base), "clusterpb.leaf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ErrorClass(tc.err); got != tc.want {
				t.Errorf("ErrorClass(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
}
