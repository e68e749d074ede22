package rest_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/rest"
)

// TestCheckpointType checks how POST /jobs/:jobid/checkpoints reads
// checkpointType: what reaches the Backend, and a 400 with a JSON error
// naming the problem for a malformed request, which never reaches it.
func TestCheckpointType(t *testing.T) {
	b, clk := fixture(t)
	got := make(chan rest.CheckpointRequest, 1)
	b.Checkpoint = func(_ context.Context, _ string, req rest.CheckpointRequest) (int64, error) {
		got <- req
		return 1, nil
	}
	s := serve(t, b, clk, nil)
	url := s.URL() + "/jobs/" + jobRunning + "/checkpoints"
	for _, tc := range []struct {
		name string
		body string
		want string // the Type the Backend gets; "" for a 400
		err  string // in the 400's error
	}{
		{"no body", "", restapi.CheckpointConfigured, ""},
		{"no type", `{}`, restapi.CheckpointConfigured, ""},
		{"configured", `{"checkpointType":"CONFIGURED"}`, restapi.CheckpointConfigured, ""},
		{"full", `{"checkpointType":"FULL"}`, restapi.CheckpointFull, ""},
		{"full in lower case", `{"checkpointType":"full"}`, restapi.CheckpointFull, ""},
		{"incremental", `{"checkpointType":"INCREMENTAL"}`, "", `checkpointType INCREMENTAL cannot be requested: use CONFIGURED`},
		{"unknown type", `{"checkpointType":"SAVEPOINT"}`, "", `checkpointType "SAVEPOINT" is not a checkpoint type: use CONFIGURED or FULL`},
		{"padded type", `{"checkpointType":" FULL"}`, "", `checkpointType " FULL" is not a checkpoint type`},
		{"not a string", `{"checkpointType":1}`, "", `member "checkpointType" must be a JSON string, not number`},
		{"a boolean", `{"checkpointType":true}`, "", `member "checkpointType" must be a JSON string, not bool`},
		{"unknown member", `{"type":"FULL"}`, "", `"type"`},
		{"malformed JSON", `{"checkpointType":"FULL"`, "", `checkpoint request`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := ""
			if tc.body != "" {
				ct = "application/json"
			}
			r := do(t, "POST", url, ct, []byte(tc.body))
			if tc.want != "" {
				if r.status != 202 {
					t.Fatalf("%d %s, want 202", r.status, r.body)
				}
				select {
				case req := <-got:
					if req.Type != tc.want {
						t.Errorf("the backend got type %q, want %q", req.Type, tc.want)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the backend was not asked for a checkpoint")
				}
				return
			}
			var e struct{ Errors []string }
			if r.status != 400 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") || json.Unmarshal(r.body, &e) != nil ||
				len(e.Errors) != 1 || !strings.Contains(e.Errors[0], tc.err) {
				t.Errorf("%d %s %s, want 400 with a JSON error containing %q", r.status, r.header.Get("Content-Type"), r.body, tc.err)
			}
			select {
			case req := <-got:
				t.Errorf("a malformed request reached the backend: %+v", req)
			default:
			}
		})
	}
}
