package testwait

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB that records a Fatalf instead of stopping.
type recorder struct {
	testing.TB
	fatal string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }

func TestEventually(t *testing.T) {
	var n atomic.Int32
	go func() {
		for range 3 {
			n.Add(1)
		}
	}()
	tests := []struct {
		name      string
		cond      func() bool
		wantFatal string // substring; "" for success
	}{
		{"already true", func() bool { return true }, ""},
		{"true once another goroutine is done", func() bool { return n.Load() == 3 }, ""},
		{"never true", func() bool { return false }, "waiting for the answer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			Eventually(r, 50*time.Millisecond, "the answer", tc.cond)
			if tc.wantFatal == "" && r.fatal != "" {
				t.Fatalf("failed: %s", r.fatal)
			}
			if tc.wantFatal != "" && !strings.Contains(r.fatal, tc.wantFatal) {
				t.Fatalf("failure %q, want it to contain %q", r.fatal, tc.wantFatal)
			}
			if tc.wantFatal != "" && !strings.Contains(r.fatal, "timed out after ") {
				t.Fatalf("failure %q does not say how long it waited", r.fatal)
			}
		})
	}
}

func TestEventuallyNilNamesTheLastError(t *testing.T) {
	r := &recorder{TB: t}
	calls := 0
	EventuallyNil(r, 20*time.Millisecond, "the service", func() error {
		calls++
		return fmt.Errorf("attempt %d: %w", calls, errors.ErrUnsupported)
	})
	if want := fmt.Sprintf("waiting for the service: last error: attempt %d: ", calls); !strings.Contains(r.fatal, want) {
		t.Fatalf("failure %q, want it to contain %q", r.fatal, want)
	}
	r = &recorder{TB: t}
	EventuallyNil(r, time.Second, "the service", func() error { return nil })
	if r.fatal != "" {
		t.Fatalf("failed: %s", r.fatal)
	}
}

func TestPollKeepsItsDeadline(t *testing.T) {
	start := time.Now()
	if err := Poll(30*time.Millisecond, func() bool { return false }); err == nil {
		t.Fatal("Poll of a false condition returned nil")
	}
	if d := time.Since(start); d < 30*time.Millisecond || d > 5*time.Second {
		t.Fatalf("Poll(30ms) took %v", d)
	}
}
