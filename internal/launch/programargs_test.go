package launch

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluice/sluice/conf"
)

// TestProgramArgs: a program a JobManager runs (application mode) gets its
// arguments from SLUICE_PROGRAM_ARGS, with nothing on its command line;
// other processes keep theirs.
func TestProgramArgs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		args    []string
		want    []string
		ok      bool
		wantErr string
	}{
		{name: "handed", env: map[string]string{conf.EnvExecutionTarget: TargetRemote, conf.EnvProgramArgs: `["-in","t","--password=hunter2",""]`},
			args: []string{"./job"}, want: []string{"./job", "-in", "t", "--password=hunter2", ""}, ok: true},
		{name: "none handed", env: map[string]string{conf.EnvExecutionTarget: TargetRemote, conf.EnvProgramArgs: `[]`},
			args: []string{"./job"}, want: []string{"./job"}, ok: true},
		{name: "not set", env: map[string]string{conf.EnvExecutionTarget: TargetRemote},
			args: []string{"./job", "-x"}, want: []string{"./job", "-x"}},
		{name: "a worker ignores it", env: map[string]string{conf.EnvExecutionTarget: TargetWorker, conf.EnvProgramArgs: `["-x"]`},
			args: []string{"./job"}, want: []string{"./job"}},
		{name: "not JSON", env: map[string]string{conf.EnvExecutionTarget: TargetRemote, conf.EnvProgramArgs: `-x`},
			args: []string{"./job"}, ok: true, wantErr: "not a JSON array"},
		{name: "both", env: map[string]string{conf.EnvExecutionTarget: TargetRemote, conf.EnvProgramArgs: `["-x"]`},
			args: []string{"./job", "-y"}, ok: true, wantErr: "both on its command line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := programArgs(func(k string) string { return tc.env[k] }, tc.args)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("%q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
