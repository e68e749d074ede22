package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluice/sluice/cluster/jobmanager"
	"github.com/sluice/sluice/yarn"
)

func TestFinalStatus(t *testing.T) {
	exit1 := errors.New("exit status 1")
	tests := []struct {
		name        string
		err         error
		application bool
		want        yarn.FinalStatus
		diagnostics []string // substrings of the diagnostics
	}{
		{"application jobs finished", nil, true, yarn.FinalSucceeded, []string{"the application's jobs finished"}},
		{"session shut down", nil, false, yarn.FinalSucceeded, []string{"session cluster was shut down"}},
		{"job cancelled", &jobmanager.ApplicationError{Err: errors.New("job 42 was cancelled"), Canceled: true}, true, yarn.FinalKilled,
			[]string{"a job of the application was cancelled", "job 42 was cancelled"}},
		{"job cancelled, wrapped", fmt.Errorf("jobmanager: %w", &jobmanager.ApplicationError{Err: errors.New("job 7 was cancelled"), Canceled: true}), true, yarn.FinalKilled,
			[]string{"cancelled", "job 7"}},
		{"program failed", &jobmanager.ApplicationError{Err: exit1, Tail: "panic: boom"}, true, yarn.FinalFailed,
			[]string{"exit status 1", "panic: boom"}},
		{"JobManager failed", errors.New("jobmanager: listen tcp :8081: address already in use"), false, yarn.FinalFailed,
			[]string{"address already in use"}},
		{"JobManager failed in application mode", errors.New("jobmanager: HA store unreadable"), true, yarn.FinalFailed,
			[]string{"HA store unreadable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := finalStatus(tt.err, tt.application)
			if got.Status != tt.want {
				t.Errorf("status = %v, want %v (diagnostics %q)", got.Status, tt.want, got.Diagnostics)
			}
			for _, s := range tt.diagnostics {
				if !strings.Contains(got.Diagnostics, s) {
					t.Errorf("diagnostics %q do not mention %q", got.Diagnostics, s)
				}
			}
		})
	}
}
