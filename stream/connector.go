package stream

// Helpers for connectors built on Source and Sink (such as the file and
// kafka packages).

// NewStaticEnumerator returns a split enumerator that hands out a fixed
// list of splits, one per request, and tells a reader that asks when none
// are left that no more will come. Its checkpointed state is the splits not
// assigned yet, and splits given back after a failure are handed out again.
func NewStaticEnumerator[S Split](ctx SplitEnumeratorContext[S], splits []S) SplitEnumerator[S] {
	return &staticEnumerator[S]{ctx: ctx, pending: append([]S(nil), splits...)}
}

// RestoreStaticEnumerator is the enumerator of NewStaticEnumerator restored
// from its checkpointed state.
func RestoreStaticEnumerator[S Split](ctx SplitEnumeratorContext[S], state []byte) (SplitEnumerator[S], error) {
	return restoreStatic(ctx, state)
}

// ReportBuildError records a mistake found while the dataflow is declared
// (a missing input file, an invalid option of a connector): Execute reports
// it with every other one, in a *BuildError, and runs nothing.
func (e *Environment) ReportBuildError(err error) { e.fail(err) }
