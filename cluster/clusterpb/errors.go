package clusterpb

import (
	"fmt"
	"reflect"
)

// ErrorClass names the type of a failure for reports that carry it across
// processes (a TaskEnded's error_type) and for the exception history of
// GET /jobs/:jobid/exceptions, where Flink puts the Java exception's class.
// It is the Go type of the outermost error in err's chain that is not a
// mere wrapper: errors made by fmt.Errorf's %w or errors.Join, and
// wrappers whose text is their cause's (restart.Unrecoverable), are passed
// over; a chain of wrappers only names its innermost error. So a task's
// *task.OperatorError is "*task.OperatorError" whatever wraps it, and a
// plain errors.New is "*errors.errorString". "" for nil.
func ErrorClass(err error) string {
	for err != nil {
		var next error
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			next = u.Unwrap()
		case interface{ Unwrap() []error }:
			if es := u.Unwrap(); len(es) > 0 {
				next = es[0]
			}
		}
		if next == nil || !isWrapper(err, next) {
			return fmt.Sprintf("%T", err)
		}
		err = next
	}
	return ""
}

// isWrapper reports whether err, which wraps next, adds nothing but
// context: it comes from fmt or errors, or its text is next's.
func isWrapper(err, next error) bool {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if p := t.PkgPath(); p == "fmt" || p == "errors" {
		return true
	}
	return err.Error() == next.Error()
}
