package restart

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/runtime/graph"
)

var (
	errOp  = errors.New("operator failed")
	errBad = &Unrecoverable{Err: errors.New("job graph fingerprint mismatch")}
)

// step is one failure and the decision expected for it.
type step struct {
	now     int64
	err     error
	restart bool
	delay   time.Duration
	reason  string // substring of the reason; empty: not checked
}

func run(t *testing.T, s Strategy, steps []step) {
	t.Helper()
	for i, st := range steps {
		err := st.err
		if err == nil {
			err = errOp
		}
		d := s.OnFailure(st.now, err)
		if d.Restart != st.restart || d.Delay != st.delay {
			t.Errorf("failure %d at %d: got restart=%v delay=%s (%s), want restart=%v delay=%s",
				i, st.now, d.Restart, d.Delay, d.Reason, st.restart, st.delay)
		}
		if d.Reason == "" || !strings.Contains(d.Reason, st.reason) {
			t.Errorf("failure %d at %d: reason %q, want it to contain %q", i, st.now, d.Reason, st.reason)
		}
	}
}

func TestNoRestart(t *testing.T) {
	run(t, NoRestart{}, []step{
		{now: 0, reason: "not restarted: restart-strategy.type is none"},
		{now: 1, err: errBad, reason: "unrecoverable: job graph fingerprint mismatch"},
	})
}

func TestFixedDelay(t *testing.T) {
	tests := []struct {
		name  string
		opts  FixedDelayOptions
		steps []step
	}{
		{"two attempts", FixedDelayOptions{Attempts: 2, Delay: 10 * time.Second}, []step{
			{now: 0, restart: true, delay: 10 * time.Second, reason: "fixed-delay: restart attempt 1 of 2 after 10s"},
			// an unrecoverable failure is not restarted and uses no attempt
			{now: 5, err: errBad, reason: "unrecoverable"},
			{now: 1000, restart: true, delay: 10 * time.Second, reason: "attempt 2 of 2"},
			{now: 99999, reason: "not restarted: fixed-delay: all 2 restart attempts used"},
			{now: 999999, reason: "all 2 restart attempts used"},
		}},
		{"no attempts", FixedDelayOptions{Attempts: 0, Delay: time.Second}, []step{
			{now: 0, reason: "all 0 restart attempts used"},
		}},
		{"no delay", FixedDelayOptions{Attempts: 1}, []step{
			{now: 0, restart: true, delay: 0},
			{now: 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewFixedDelay(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			run(t, s, tt.steps)
		})
	}
}

func TestFailureRate(t *testing.T) {
	opts := FailureRateOptions{MaxFailuresPerInterval: 2, Interval: time.Minute, Delay: time.Second}
	tests := []struct {
		name  string
		steps []step
	}{
		{"third failure within the interval fails", []step{
			{now: 0, restart: true, delay: time.Second, reason: "failure-rate: restart after 1s"},
			{now: 10_000, restart: true, delay: time.Second},
			{now: 20_000, reason: "not restarted: failure-rate: 3 failures within 1m0s, at most 2 allowed"},
		}},
		{"the window slides", []step{
			{now: 0, restart: true, delay: time.Second},
			{now: 10_000, restart: true, delay: time.Second},
			{now: 70_000, restart: true, delay: time.Second}, // 0 is 70 s before
			{now: 75_000, restart: true, delay: time.Second}, // 10 000 is 65 s before
			{now: 80_000, reason: "3 failures within 1m0s"},  // 70 000 is 10 s before
		}},
		{"exactly the interval apart still counts", []step{
			{now: 0, restart: true, delay: time.Second},
			{now: 1, restart: true, delay: time.Second},
			{now: 60_000},
			{now: 60_002, restart: true, delay: time.Second},
		}},
		{"unrecoverable failures are not counted", []step{
			{now: 0, restart: true, delay: time.Second},
			{now: 1, err: errBad, reason: "unrecoverable"},
			{now: 2, restart: true, delay: time.Second},
			{now: 3},
		}},
		{"time does not go backwards", []step{
			{now: 100_000, restart: true, delay: time.Second},
			{now: 50_000, restart: true, delay: time.Second},
			{now: 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewFailureRate(opts)
			if err != nil {
				t.Fatal(err)
			}
			run(t, s, tt.steps)
		})
	}
}

// scripted is a Rand that returns the given numbers in turn, then 0, and
// records the bounds it was asked for.
type scripted struct {
	out    []int64
	bounds []int64
}

func (r *scripted) Int64N(n int64) int64 {
	r.bounds = append(r.bounds, n)
	if len(r.out) == 0 {
		return 0
	}
	v := r.out[0]
	r.out = r.out[1:]
	if v < 0 || v >= n {
		panic(fmt.Sprintf("scripted value %d out of [0, %d)", v, n))
	}
	return v
}

func TestExponentialDelay(t *testing.T) {
	base := ExponentialDelayOptions{
		InitialBackoff: time.Second, MaxBackoff: 10 * time.Second, BackoffMultiplier: 2,
		ResetBackoffThreshold: time.Minute, AttemptsBeforeResetBackoff: 5,
	}
	tests := []struct {
		name       string
		opts       func(*ExponentialDelayOptions)
		rand       []int64
		wantBounds []int64
		steps      []step
	}{
		{name: "doubles up to the maximum, then the attempts run out", steps: []step{
			{now: 0, restart: true, delay: time.Second, reason: "exponential-delay: restart attempt 1 after 1s"},
			{now: 5_000, restart: true, delay: 2 * time.Second},
			// the restart due at 7 000 has not happened: same restart
			{now: 6_000, restart: true, delay: time.Second, reason: "failure before restart attempt 2, which is due after 1s"},
			{now: 7_000, restart: true, delay: 0},
			{now: 8_000, restart: true, delay: 4 * time.Second},
			{now: 13_000, restart: true, delay: 8 * time.Second},
			{now: 22_000, restart: true, delay: 10 * time.Second, reason: "attempt 5 after 10s"},
			{now: 33_000, reason: "not restarted: exponential-delay: 5 restart attempts used without a reset"},
			{now: 34_000, reason: "5 restart attempts used"},
		}},
		{name: "a long stable run resets the backoff", steps: []step{
			{now: 0, restart: true, delay: time.Second},
			{now: 2_000, restart: true, delay: 2 * time.Second}, // due at 4 000
			{now: 63_999, restart: true, delay: 4 * time.Second},
			// due at 67 999; 60 s later the backoff resets
			{now: 127_999, restart: true, delay: time.Second, reason: "restart attempt 1 after 1s"},
		}},
		{name: "fractional multiplier truncates to ms", opts: func(o *ExponentialDelayOptions) {
			o.BackoffMultiplier, o.MaxBackoff = 1.5, time.Hour
		}, steps: []step{
			{now: 0, restart: true, delay: 1000 * time.Millisecond},
			{now: 10_000, restart: true, delay: 1500 * time.Millisecond},
			{now: 20_000, restart: true, delay: 2250 * time.Millisecond},
			{now: 30_000, restart: true, delay: 3375 * time.Millisecond},
			{now: 40_000, restart: true, delay: 5062 * time.Millisecond},
		}},
		{name: "jitter within ± factor, never below the initial backoff", opts: func(o *ExponentialDelayOptions) {
			o.JitterFactor, o.MaxBackoff = 0.1, time.Hour
		}, rand: []int64{0, 400, 150, 1600},
			// offsets 100, 200, 400, 800 ms: draws in [0, 2·offset]
			wantBounds: []int64{201, 401, 801, 1601},
			steps: []step{
				{now: 0, restart: true, delay: time.Second},                  // 1000-100, raised to 1000
				{now: 10_000, restart: true, delay: 2200 * time.Millisecond}, // 2000+200
				{now: 20_000, restart: true, delay: 3750 * time.Millisecond}, // 4000-250
				{now: 30_000, restart: true, delay: 8800 * time.Millisecond}, // 8000+800
			}},
		{name: "jitter is capped by the maximum", opts: func(o *ExponentialDelayOptions) {
			o.JitterFactor, o.MaxBackoff = 1, 3*time.Second
		}, rand: []int64{2000, 4000}, wantBounds: []int64{2001, 4001}, steps: []step{
			{now: 0, restart: true, delay: 2 * time.Second},      // 1000+1000
			{now: 10_000, restart: true, delay: 3 * time.Second}, // 2000+2000, capped
		}},
		{name: "no overflow after many attempts", opts: func(o *ExponentialDelayOptions) {
			o.AttemptsBeforeResetBackoff, o.JitterFactor = math.MaxInt32, 1
		}, steps: func() []step { // the draws are all 0: the delay is raised to the initial backoff
			var st []step
			for i := range 200 {
				st = append(st, step{now: int64(i) * 20_000, restart: true, delay: time.Second})
			}
			return st
		}()},
		{name: "unrecoverable failures are not counted", steps: []step{
			{now: 0, restart: true, delay: time.Second},
			{now: 5_000, err: errBad, reason: "unrecoverable"},
			{now: 6_000, restart: true, delay: 2 * time.Second},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base
			if tt.opts != nil {
				tt.opts(&o)
			}
			r := &scripted{out: tt.rand}
			s, err := NewExponentialDelay(o, r)
			if err != nil {
				t.Fatal(err)
			}
			run(t, s, tt.steps)
			if tt.rand != nil && fmt.Sprint(r.bounds) != fmt.Sprint(tt.wantBounds) {
				t.Errorf("jitter drawn from %v, want %v", r.bounds, tt.wantBounds)
			}
		})
	}
}

func TestExponentialDelayWithoutJitterDrawsNothing(t *testing.T) {
	r := &scripted{}
	s, err := NewExponentialDelay(ExponentialDelayOptions{InitialBackoff: time.Second, MaxBackoff: time.Minute,
		BackoffMultiplier: 1.5, ResetBackoffThreshold: time.Hour, AttemptsBeforeResetBackoff: 10}, r)
	if err != nil {
		t.Fatal(err)
	}
	s.OnFailure(0, errOp)
	s.OnFailure(10_000, errOp)
	if len(r.bounds) != 0 {
		t.Fatalf("drew %d random numbers with jitter-factor 0", len(r.bounds))
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want []string // one substring per problem
	}{
		{"fixed-delay", FixedDelayOptions{Attempts: -1, Delay: -time.Second}.Validate(), []string{
			"restart-strategy.fixed-delay.attempts: -1 must not be negative",
			"restart-strategy.fixed-delay.delay: -1s must not be negative",
		}},
		{"failure-rate", FailureRateOptions{Delay: -1}.Validate(), []string{
			"restart-strategy.failure-rate.max-failures-per-interval: 0 must be at least 1",
			"restart-strategy.failure-rate.failure-rate-interval: 0s must be longer than 0",
			"restart-strategy.failure-rate.delay: -1ns must not be negative",
		}},
		{"exponential-delay", ExponentialDelayOptions{InitialBackoff: 2 * time.Minute, MaxBackoff: time.Minute,
			BackoffMultiplier: math.NaN(), JitterFactor: 1.5, AttemptsBeforeResetBackoff: -1}.Validate(), []string{
			"restart-strategy.exponential-delay.max-backoff: 1m0s must be at least restart-strategy.exponential-delay.initial-backoff (2m0s)",
			"restart-strategy.exponential-delay.backoff-multiplier: NaN must be a number of at least 1",
			"restart-strategy.exponential-delay.reset-backoff-threshold: 0s must be at least 1 ms",
			"restart-strategy.exponential-delay.jitter-factor: 1.5 must be between 0 and 1",
			"restart-strategy.exponential-delay.attempts-before-reset-backoff: -1 must not be negative",
		}},
		{"exponential-delay initial", ExponentialDelayOptions{MaxBackoff: time.Second, BackoffMultiplier: 1,
			ResetBackoffThreshold: time.Hour}.Validate(), []string{
			"restart-strategy.exponential-delay.initial-backoff: 0s must be at least 1 ms",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil {
				t.Fatal("no error")
			}
			lines := strings.Split(tt.err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("%d problems, want %d:\n%v", len(lines), len(tt.want), tt.err)
			}
			for i, w := range tt.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, lines[i], w)
				}
			}
		})
	}
}

func TestFromConfig(t *testing.T) {
	tests := []struct {
		name    string
		conf    map[string]string
		want    string // the strategy's String()
		wantErr []string
	}{
		{name: "checkpointing off: none", want: "none"},
		{name: "checkpointing on: exponential-delay with Flink's defaults",
			conf: map[string]string{"execution.checkpointing.interval": "10 s"},
			want: "exponential-delay(initial-backoff=1s, max-backoff=1m0s, backoff-multiplier=1.5, reset-backoff-threshold=1h0m0s, jitter-factor=0.1, attempts-before-reset-backoff=2147483647)"},
		{name: "explicit none wins over checkpointing",
			conf: map[string]string{"execution.checkpointing.interval": "10 s", "restart-strategy.type": "off"},
			want: "none"},
		{name: "fixed-delay by Flink's old spelling and key",
			conf: map[string]string{"restart-strategy": "fixeddelay", "restart-strategy.fixed-delay.attempts": "3",
				"restart-strategy.fixed-delay.delay": "10 s"},
			want: "fixed-delay(attempts=3, delay=10s)"},
		{name: "fixed-delay defaults", conf: map[string]string{"restart-strategy.type": "fixed-delay"},
			want: "fixed-delay(attempts=1, delay=1s)"},
		{name: "failure-rate",
			conf: map[string]string{"restart-strategy.type": "failure-rate",
				"restart-strategy.failure-rate.max-failures-per-interval": "5",
				"restart-strategy.failure-rate.failure-rate-interval":     "5 min",
				"restart-strategy.failure-rate.delay":                     "30 s"},
			want: "failure-rate(max-failures-per-interval=5, failure-rate-interval=5m0s, delay=30s)"},
		{name: "exponential-delay settings",
			conf: map[string]string{"restart-strategy.type": "exponential-delay",
				"restart-strategy.exponential-delay.initial-backoff":               "100 ms",
				"restart-strategy.exponential-delay.max-backoff":                   "10 s",
				"restart-strategy.exponential-delay.backoff-multiplier":            "2.0",
				"restart-strategy.exponential-delay.reset-backoff-threshold":       "5 min",
				"restart-strategy.exponential-delay.jitter-factor":                 "0",
				"restart-strategy.exponential-delay.attempts-before-reset-backoff": "7"},
			want: "exponential-delay(initial-backoff=100ms, max-backoff=10s, backoff-multiplier=2, reset-backoff-threshold=5m0s, jitter-factor=0, attempts-before-reset-backoff=7)"},
		{name: "unknown type", conf: map[string]string{"restart-strategy.type": "sometimes"},
			wantErr: []string{"restart-strategy.type"}},
		{name: "bad interval when the type is not set", conf: map[string]string{"execution.checkpointing.interval": "often"},
			wantErr: []string{"execution.checkpointing.interval"}},
		{name: "every bad value named",
			conf: map[string]string{"restart-strategy.type": "exponential-delay",
				"restart-strategy.exponential-delay.jitter-factor":      "2",
				"restart-strategy.exponential-delay.backoff-multiplier": "fast"},
			wantErr: []string{"restart-strategy.exponential-delay.jitter-factor", "restart-strategy.exponential-delay.backoff-multiplier"}},
		{name: "initial above max",
			conf: map[string]string{"restart-strategy.type": "exponential-delay",
				"restart-strategy.exponential-delay.initial-backoff": "2 min"},
			wantErr: []string{"restart-strategy.exponential-delay.max-backoff: 1m0s must be at least"}},
		{name: "negative attempts",
			conf:    map[string]string{"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "-1"},
			wantErr: []string{"restart-strategy.fixed-delay.attempts"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := FromConfig(conf.FromMap(tt.conf, conf.Source{Name: "test"}))
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("FromConfig() = %v, want an error", s)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not name %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.String() != tt.want {
				t.Fatalf("FromConfig() = %s, want %s", s, tt.want)
			}
		})
	}
}

func TestRecoverable(t *testing.T) {
	_, confErr := conf.FromMap(map[string]string{"parallelism.default": "many"}, conf.Source{Name: "test"}).Validate()
	if confErr == nil {
		t.Fatal("the configuration under test is valid")
	}
	graphErr := &graph.ValidationError{Problems: []graph.Problem{{Message: "cycle"}}}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, true},
		{"operator error", fmt.Errorf("operator map (subtask 0): %w", errOp), true},
		{"unrecoverable", errBad, false},
		{"wrapped unrecoverable", fmt.Errorf("worker 3: %w", errBad), false},
		{"unrecoverable without cause", &Unrecoverable{}, false},
		{"invalid configuration", fmt.Errorf("kafka source: %w", confErr), false},
		{"invalid graph", graphErr, false},
		{"marked by its connector", fmt.Errorf("sink: %w", markedErr{true}), false},
		{"marked recoverable", fmt.Errorf("sink: %w", markedErr{false}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Recoverable(tt.err); got != tt.want {
				t.Errorf("Recoverable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
	if errBad.Error() != "job graph fingerprint mismatch" || !errors.Is(fmt.Errorf("x: %w", errBad), errBad.Err) {
		t.Errorf("Unrecoverable does not read or unwrap as its error: %q", errBad)
	}
}

// markedErr is a connector's own error type, marked without importing the
// engine.
type markedErr struct{ permanent bool }

func (e markedErr) Error() string       { return "connector failure" }
func (e markedErr) Unrecoverable() bool { return e.permanent }
