package checkpoint

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/conf"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want []string // substrings of the error, one per problem; none: valid
	}{
		{name: "zero value", opts: Options{}},
		{name: "flink-like", opts: Options{Interval: time.Minute, Timeout: 10 * time.Minute, MinPause: time.Second,
			MaxConcurrent: 2, TolerableFailures: 3, Mode: AtLeastOnce}},
		{name: "interval too short", opts: Options{Interval: 5 * time.Millisecond},
			want: []string{"execution.checkpointing.interval: 5ms must be 0 (disabled) or at least 10 ms"}},
		{name: "all wrong at once",
			opts: Options{Interval: -time.Second, Timeout: time.Millisecond, MinPause: -1, MaxConcurrent: -1,
				TolerableFailures: -2, Mode: Mode(7)},
			want: []string{
				"execution.checkpointing.interval: -1s must be 0",
				"execution.checkpointing.timeout: 1ms must be at least 10 ms",
				"execution.checkpointing.min-pause: -1ns must not be negative",
				"execution.checkpointing.max-concurrent-checkpoints: -1 must be at least 1",
				"execution.checkpointing.tolerable-failed-checkpoints: -2 must not be negative",
				"execution.checkpointing.mode: Mode(7) is not EXACTLY_ONCE or AT_LEAST_ONCE",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %d problems", len(tt.want))
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("Validate() reported %d problems, want %d:\n%v", len(lines), len(tt.want), err)
			}
			for i, w := range tt.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, lines[i], w)
				}
			}
		})
	}
}

func TestOptionsFromConfig(t *testing.T) {
	tests := []struct {
		name    string
		conf    map[string]string
		want    Options
		wantErr string
	}{
		{name: "defaults", conf: nil, want: Options{Timeout: 10 * time.Minute, MaxConcurrent: 1}},
		{name: "all set", conf: map[string]string{
			"execution.checkpointing.interval":                     "30 s",
			"execution.checkpointing.timeout":                      "2 min",
			"execution.checkpointing.min-pause":                    "500 ms",
			"execution.checkpointing.max-concurrent-checkpoints":   "3",
			"execution.checkpointing.tolerable-failed-checkpoints": "4",
			"execution.checkpointing.mode":                         "at_least_once",
		}, want: Options{Interval: 30 * time.Second, Timeout: 2 * time.Minute, MinPause: 500 * time.Millisecond,
			MaxConcurrent: 3, TolerableFailures: 4, Mode: AtLeastOnce}},
		{name: "bad values", conf: map[string]string{
			"execution.checkpointing.interval":                   "5 ms",
			"execution.checkpointing.max-concurrent-checkpoints": "zero",
		}, wantErr: "execution.checkpointing.interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OptionsFromConfig(conf.FromMap(tt.conf, conf.Source{Name: "test"}))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) ||
					!strings.Contains(err.Error(), "execution.checkpointing.max-concurrent-checkpoints") {
					t.Fatalf("OptionsFromConfig() error = %v, want both bad keys named", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("OptionsFromConfig() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	exp := &ExpiredError{ID: 3, Kind: Savepoint, Timeout: time.Second,
		Waiting: []TaskID{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}, {2, 0}}}
	if got, want := exp.Error(), "checkpoint: savepoint 3 expired after 1s; not acknowledged by 0.0, 0.1, 0.2, 1.0, 1.1 and 2 more"; got != want {
		t.Errorf("ExpiredError = %q, want %q", got, want)
	}
	cause := errors.New("disk full")
	dec := &DeclinedError{ID: 4, Task: TaskID{2, 1}, Err: cause}
	fe := &FailuresError{Failures: 2, Tolerable: 1, Last: dec}
	for _, c := range []struct {
		err    error
		target error
	}{{exp, ErrExpired}, {dec, cause}, {fe, ErrTooManyFailures}, {fe, cause}} {
		if !errors.Is(c.err, c.target) {
			t.Errorf("errors.Is(%v, %v) = false", c.err, c.target)
		}
	}
	if errors.Is(dec, ErrExpired) {
		t.Errorf("a decline matches ErrExpired")
	}
}

func TestKindAndMode(t *testing.T) {
	for _, c := range []struct {
		k                          Kind
		name                       string
		checkpoint, savepoint, stp bool
	}{
		{Checkpoint, "checkpoint", true, false, false},
		{Savepoint, "savepoint", false, true, false},
		{SavepointSuspend, "savepoint-suspend", false, true, true},
		{SavepointTerminate, "savepoint-terminate", false, true, true},
		{FullCheckpoint, "full-checkpoint", true, false, false},
		{Kind(9), "Kind(9)", false, false, false},
	} {
		if c.k.String() != c.name || c.k.IsCheckpoint() != c.checkpoint || c.k.IsSavepoint() != c.savepoint || c.k.IsStop() != c.stp {
			t.Errorf("%d: got %q checkpoint=%v savepoint=%v stop=%v, want %q %v %v %v", int(c.k), c.k, c.k.IsCheckpoint(), c.k.IsSavepoint(), c.k.IsStop(),
				c.name, c.checkpoint, c.savepoint, c.stp)
		}
	}
	for _, m := range []Mode{ExactlyOnce, AtLeastOnce} {
		if got, err := ParseMode(strings.ToLower(m.String())); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", strings.ToLower(m.String()), got, err)
		}
	}
	if _, err := ParseMode("BEST_EFFORT"); err == nil {
		t.Error("ParseMode(BEST_EFFORT) succeeded")
	}
}

func TestNewCoordinatorPanicsOnMisuse(t *testing.T) {
	src := []TaskID{{0, 0}}
	for name, f := range map[string]func(){
		"invalid options":   func() { NewCoordinator(Options{MaxConcurrent: -1}, src, src, 0, 1) },
		"first id 0":        func() { NewCoordinator(Options{}, src, src, 0, 0) },
		"source not a task": func() { NewCoordinator(Options{}, src, []TaskID{{1, 0}}, 0, 1) },
		"task twice":        func() { NewCoordinator(Options{}, src, []TaskID{{0, 0}, {0, 0}}, 0, 1) },
		"aligner 0 chans":   func() { NewAligner(ExactlyOnce, 0) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			f()
		})
	}
}
