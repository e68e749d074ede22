package jobmaster

import (
	"testing"
)

func TestRatesOf(t *testing.T) {
	// A subtask reporting every second: 100 records/s in, 50 out, busy
	// 300 ms of each second and back-pressured 200 ms for the last 5 s.
	var steady []RateSample
	for i := int64(0); i <= 70; i++ {
		steady = append(steady, RateSample{At: 1_000_000 + i*1000, RecordsIn: 100 * i, RecordsOut: 50 * i, BytesIn: 1000 * i,
			BusyMillis: 300 * i, BackpressuredMillis: 200 * max(0, i-65), IdleMillis: 500 * i})
	}
	for _, tc := range []struct {
		name    string
		samples []RateSample
		want    PerSecond
		ok      bool
	}{
		{"none", nil, PerSecond{}, false},
		{"one", steady[:1], PerSecond{}, false},
		{"same time", []RateSample{{At: 5}, {At: 5, RecordsIn: 9}}, PerSecond{}, false},
		{"two", steady[:2], PerSecond{RecordsIn: 100, RecordsOut: 50, BytesIn: 1000, BusyTimeMs: 300, IdleTimeMs: 500}, true},
		{"steady, meters over the last minute, timers over 5 s", steady,
			PerSecond{RecordsIn: 100, RecordsOut: 50, BytesIn: 1000, BusyTimeMs: 300, BackPressuredTimeMs: 200, IdleTimeMs: 500}, true},
		{"a restarted subtask counts from its new counters",
			[]RateSample{{At: 0, RecordsIn: 1000}, {At: 2000, RecordsIn: 40}}, PerSecond{RecordsIn: 20}, true},
		{"a timer never exceeds 1000 ms/s", []RateSample{{At: 0}, {At: 1000, BusyMillis: 1500}}, PerSecond{BusyTimeMs: 1000}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := RatesOf(tc.samples)
			if ok != tc.ok || got != tc.want {
				t.Errorf("RatesOf = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestRatesKeepsAMinute(t *testing.T) {
	var r Rates
	if _, ok := r.PerSecond(); ok {
		t.Fatal("rates without samples")
	}
	for i := int64(0); i < 200; i++ {
		r.Observe(RateSample{At: i * 1000, RecordsIn: 10 * i})
		r.Observe(RateSample{At: i * 1000, RecordsIn: 99999}) // not newer: ignored
	}
	if n := len(r.mu.samples); n != 61 {
		t.Errorf("keeps %d samples, want the 61 of the last minute", n)
	}
	if got, ok := r.PerSecond(); !ok || got.RecordsIn != 10 {
		t.Errorf("PerSecond = %+v, %v; want 10 records/s", got, ok)
	}
	var none *Rates
	if _, ok := none.PerSecond(); ok {
		t.Error("a nil Rates has rates")
	}
}
