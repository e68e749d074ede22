package rest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/rest"
	"github.com/sluice/sluice/rest/resttest"
)

// POST /savepoint-disposal deletes a savepoint asynchronously, as Flink's
// savepoint -dispose asks: 202 with a request-id, then the status at
// /savepoint-disposal/:triggerid, {} or the failure cause.
func TestSavepointDisposal(t *testing.T) {
	clk := clock.NewManual(start)
	b := resttest.New()
	b.Clock = clk
	b.AddJob(resttest.Job{Overview: restapi.JobOverview{ID: jobVertices, Name: "j", State: restapi.JobRunning},
		Details: restapi.JobDetails{ID: jobVertices, Name: "j", State: restapi.JobRunning}})
	sp, err := b.TriggerSavepoint(context.Background(), jobVertices, rest.SavepointRequest{TargetDirectory: "/sp"})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	b.Dispose = func(ctx context.Context, p string) error {
		if p == "/slow" {
			<-release
		}
		if p != sp && p != "/slow" {
			return restapi.ErrNotFound
		}
		return nil
	}
	s := serve(t, b, clk, nil)

	trigger := func(body string) string {
		t.Helper()
		r := do(t, http.MethodPost, s.URL()+"/savepoint-disposal", "application/json", []byte(body))
		var tr restapi.TriggerResponse
		if r.status != http.StatusAccepted || json.Unmarshal(r.body, &tr) != nil || tr.RequestID == "" {
			t.Fatalf("POST /savepoint-disposal %s: %d %s", body, r.status, r.body)
		}
		return tr.RequestID
	}
	status := func(id string) (string, map[string]json.RawMessage) {
		t.Helper()
		r := do(t, http.MethodGet, s.URL()+"/v1/savepoint-disposal/"+id, "", nil)
		var st struct {
			Status    restapi.QueueStatus
			Operation map[string]json.RawMessage
		}
		if r.status != http.StatusOK || json.Unmarshal(r.body, &st) != nil {
			t.Fatalf("GET /savepoint-disposal/%s: %d %s", id, r.status, r.body)
		}
		return st.Status.ID, st.Operation
	}
	poll := func(id string) map[string]json.RawMessage {
		t.Helper()
		var op map[string]json.RawMessage
		testwait.Eventually(t, 10*time.Second, "the disposal to complete", func() bool {
			var st string
			st, op = status(id)
			return st == restapi.StatusCompleted
		})
		return op
	}

	if op := poll(trigger(`{"savepoint-path":"` + sp + `"}`)); len(op) != 0 {
		t.Errorf("a disposal that succeeded answered operation %v, want {}", op)
	}
	if got := b.Disposed(); !slices.Equal(got, []string{sp}) {
		t.Errorf("disposed of %v, want [%s]", got, sp)
	}
	op := poll(trigger(`{"savepoint-path":"/nowhere"}`))
	if fc := string(op["failure-cause"]); !strings.Contains(fc, `"serialized-throwable"`) || !strings.Contains(fc, "not found") {
		t.Errorf("a failed disposal answered operation %v, want its failure cause", op)
	}
	slow := trigger(`{"savepoint-path":"/slow","triggerId":"0123456789abcdef0123456789abcdef"}`)
	if slow != "0123456789abcdef0123456789abcdef" {
		t.Errorf("request-id %s, want the triggerId sent", slow)
	}
	if st, _ := status(slow); st != restapi.StatusInProgress {
		t.Errorf("a running disposal is %s, want IN_PROGRESS", st)
	}
	close(release)
	poll(slow)

	for _, tc := range []struct {
		method, path, body string
		want               int
	}{
		{http.MethodPost, "/savepoint-disposal", `{}`, http.StatusBadRequest},
		{http.MethodPost, "/savepoint-disposal", `{"savepoint-path":"/x","bogus":1}`, http.StatusBadRequest},
		{http.MethodPost, "/savepoint-disposal", `{"savepoint-path":"/x","triggerId":"nope"}`, http.StatusBadRequest},
		{http.MethodGet, "/savepoint-disposal", ``, http.StatusMethodNotAllowed},
		{http.MethodGet, "/savepoint-disposal/ffffffffffffffffffffffffffffffff", ``, http.StatusNotFound},
		{http.MethodGet, "/savepoint-disposal/xyz", ``, http.StatusBadRequest},
	} {
		if r := do(t, tc.method, s.URL()+tc.path, "application/json", []byte(tc.body)); r.status != tc.want {
			t.Errorf("%s %s %s: %d %s, want %d", tc.method, tc.path, tc.body, r.status, r.body, tc.want)
		}
	}
}
