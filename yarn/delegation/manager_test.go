package delegation

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/internal/clock"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestNextObtainAndRetry(t *testing.T) {
	day := t0.Add(24 * time.Hour)
	if got := nextObtain(t0, []time.Time{day, t0.Add(48 * time.Hour)}, 0.75); !got.Equal(t0.Add(18 * time.Hour)) {
		t.Errorf("nextObtain = %s, want 18h: 75%% of the earliest token's remaining day", got.Sub(t0))
	}
	if got := nextObtain(t0, []time.Time{t0.Add(-time.Minute)}, 0.75); !got.Equal(t0) {
		t.Errorf("an expired token: nextObtain = %s, want now", got.Sub(t0))
	}
	for _, tc := range []struct {
		name     string
		earliest time.Time
		backoff  time.Duration
		want     time.Duration
	}{
		{"no tokens yet: the backoff", time.Time{}, time.Hour, time.Hour},
		{"tokens far from expiry: the backoff", day, time.Hour, time.Hour},
		{"tokens near expiry: halfway there", t0.Add(40 * time.Minute), time.Hour, 20 * time.Minute},
		{"tokens expired: the backoff", t0.Add(-time.Hour), time.Hour, time.Hour},
		{"never sooner than a second", t0.Add(time.Second), time.Hour, time.Second},
	} {
		if got := nextRetry(t0, tc.earliest, tc.backoff); !got.Equal(t0.Add(tc.want)) {
			t.Errorf("%s: nextRetry = %s, want %s", tc.name, got.Sub(t0), tc.want)
		}
	}
}

// TestManagerLoop drives Run with a manual clock and a scripted source
// of tokens: obtain, wait 75% of the lifetime, fail, retry after the
// backoff, obtain again.
func TestManagerLoop(t *testing.T) {
	clk := clock.NewManualAt(t0)
	var got []*hadoop.Credentials
	var mu sync.Mutex
	m, err := NewManager(ManagerConfig{Client: &Client{}, NameNodes: []NameNode{{Addr: "nn:8020", Principal: "hdfs/_HOST@R"}},
		RetryBackoff: 10 * time.Minute, Clock: clk, OnTokens: func(c *hadoop.Credentials, _ time.Time) { mu.Lock(); got = append(got, c); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan error, 3)
	results <- nil
	results <- errors.New("NameNode down")
	results <- nil
	m.obtain = func(context.Context) (*hadoop.Credentials, []time.Time, error) {
		if err := <-results; err != nil {
			return nil, nil, err
		}
		c := &hadoop.Credentials{}
		c.AddToken("127.0.0.1:8020", &hadoop.Token{Kind: HDFSTokenKind, Identifier: []byte{1}})
		return c, []time.Time{clock.Now(clk).Add(24 * time.Hour)}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	waitArmed := func(want time.Time) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := clk.BlockUntilArmedAt(ctx, want.UnixMilli()); err != nil {
			t.Fatalf("no timer for %s (t0 is %d): %v", want.Sub(t0), t0.UnixMilli(), err)
		}
	}
	waitArmed(t0.Add(18 * time.Hour))
	if m.Metrics().Expiry.Load() != t0.Add(24*time.Hour).Unix() || m.Metrics().Obtained.Load() != 1 {
		t.Errorf("metrics after the first round: expiry %d obtained %d", m.Metrics().Expiry.Load(), m.Metrics().Obtained.Load())
	}
	clk.SetTime(t0.Add(18 * time.Hour))
	waitArmed(t0.Add(18*time.Hour + 10*time.Minute))
	if m.Metrics().Failures.Load() != 1 {
		t.Errorf("failures %d, want 1", m.Metrics().Failures.Load())
	}
	clk.SetTime(t0.Add(18*time.Hour + 10*time.Minute))
	waitArmed(t0.Add(18*time.Hour + 10*time.Minute + 18*time.Hour))
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("OnTokens called %d times, want 2", len(got))
	}
}

func TestNewManagerReportsEveryProblem(t *testing.T) {
	_, err := NewManager(ManagerConfig{TimeRatio: 1.5})
	for _, want := range []string{"Client is required", "NameNodes is empty", "OnTokens is required", "TimeRatio 1.5"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewManager: %v; want it to say %q", err, want)
		}
	}
}
