package restart

import (
	"errors"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/runtime/graph"
)

// Unrecoverable marks a failure that no restart can fix, so the job fails
// at once whatever the restart strategy: wrap the error with it where it
// is known, e.g. a worker that rebuilt a different job graph, or a
// connector whose configuration is wrong.
//
//	return &restart.Unrecoverable{Err: fmt.Errorf("kafka: topic %q: %w", t, err)}
type Unrecoverable struct{ Err error }

func (e *Unrecoverable) Error() string {
	if e.Err == nil {
		return "restart: unrecoverable failure"
	}
	return e.Err.Error()
}

// Unwrap returns the wrapped error.
func (e *Unrecoverable) Unwrap() error { return e.Err }

// Recoverable reports whether restarting the job may fix err. These are
// not recoverable, wherever they are in err's chain:
//
//   - an *Unrecoverable;
//   - an error with a method Unrecoverable() bool that returns true (how a
//     connector, which does not import the engine, marks its own errors);
//   - an invalid configuration (conf.ErrInvalid);
//   - an invalid job graph (graph.ErrInvalidGraph).
//
// Everything else is: operator errors and panics in user code
// (*task.OperatorError), lost TaskManagers, I/O errors, checkpoint failures
// beyond the tolerable count. A nil error is recoverable.
func Recoverable(err error) bool {
	var u *Unrecoverable
	var marked interface{ Unrecoverable() bool }
	switch {
	case err == nil:
		return true
	case errors.As(err, &u), errors.Is(err, conf.ErrInvalid), errors.Is(err, graph.ErrInvalidGraph):
		return false
	case errors.As(err, &marked) && marked.Unrecoverable():
		return false
	}
	return true
}
