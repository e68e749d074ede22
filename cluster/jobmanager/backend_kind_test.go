package jobmanager

import (
	"errors"
	"testing"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/internal/runtime/checkpoint"
)

// TestCheckpointKind checks which kind of checkpoint a REST checkpoint
// type asks the JobMaster for.
func TestCheckpointKind(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		want checkpoint.Kind
		err  error
	}{
		{"", checkpoint.Checkpoint, nil},
		{restapi.CheckpointConfigured, checkpoint.Checkpoint, nil},
		{restapi.CheckpointFull, checkpoint.FullCheckpoint, nil},
		{"INCREMENTAL", 0, restapi.ErrBadRequest},
		{"full", 0, restapi.ErrBadRequest}, // the REST layer hands on upper case
	} {
		got, err := checkpointKind(tc.typ)
		if got != tc.want || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("checkpointKind(%q) = %v, %v; want %v, %v", tc.typ, got, err, tc.want, tc.err)
		}
	}
}

// TestSavepointFormat checks that only canonical savepoints are taken.
func TestSavepointFormat(t *testing.T) {
	for _, tc := range []struct {
		format string
		err    error
	}{
		{"", nil},
		{restapi.FormatCanonical, nil},
		{restapi.FormatNative, restapi.ErrBadRequest},
		{"ZIP", restapi.ErrBadRequest},
	} {
		if err := canonical(tc.format); !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("canonical(%q) = %v, want %v", tc.format, err, tc.err)
		}
	}
}
