package conf

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

func TestGetDefaultsWhenUnset(t *testing.T) {
	for _, c := range []*Configuration{nil, New()} {
		if got := Get(c, ParallelismDefault); got != 1 {
			t.Errorf("parallelism.default = %d, want 1", got)
		}
		if got := Get(c, HeartbeatTimeout); got != 5*time.Second {
			t.Errorf("heartbeat.timeout = %v, want 5s", got)
		}
		if got := Get(c, TaskManagerProcessMemory); got != 1728*MiB {
			t.Errorf("taskmanager.memory.process.size = %v, want 1728 mb", got)
		}
		if _, set, err := Lookup(c, CheckpointingInterval); set || err != nil {
			t.Errorf("Lookup(interval) on empty config: set=%v err=%v", set, err)
		}
	}
}

func TestGetParsesAndFallsBack(t *testing.T) {
	c := New().
		Set("parallelism.default", "8").
		Set("execution.checkpointing.interval", "10 s").
		Set("taskmanager.numberOfTaskSlots", "many").
		Set("yarn.ship-files", "a;b")

	if got := Get(c, ParallelismDefault); got != 8 {
		t.Errorf("parallelism.default = %d, want 8", got)
	}
	if got := Get(c, CheckpointingInterval); got != 10*time.Second {
		t.Errorf("interval = %v, want 10s", got)
	}
	if got := Get(c, YarnShipFiles); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("yarn.ship-files = %q", got)
	}
	// A bad value reads as the default; Lookup says why.
	if got := Get(c, TaskManagerNumberOfTaskSlots); got != 1 {
		t.Errorf("bad slots read as %d, want default 1", got)
	}
	_, set, err := Lookup(c, TaskManagerNumberOfTaskSlots)
	var p *Problem
	var ve *ValueError
	if !set || !errors.As(err, &p) || !errors.As(err, &ve) {
		t.Fatalf("Lookup(bad slots) = set %v, err %v; want a *Problem wrapping a *ValueError", set, err)
	}
	if p.Key != "taskmanager.numberOfTaskSlots" || p.Value != "many" || p.Source.Name != SourceAPI {
		t.Errorf("problem = %+v", p)
	}
}

func TestSetDoesNotModifyReceiver(t *testing.T) {
	a := New().Set("parallelism.default", "2")
	b := a.Set("parallelism.default", "3")
	c := With(b, PipelineObjectReuse, true)
	if Get(a, ParallelismDefault) != 2 || Get(b, ParallelismDefault) != 3 {
		t.Errorf("Set modified its receiver: a=%d b=%d", Get(a, ParallelismDefault), Get(b, ParallelismDefault))
	}
	if IsSet(b, PipelineObjectReuse) || !Get(c, PipelineObjectReuse) {
		t.Errorf("With modified its receiver or did not set")
	}
}

func TestDefaultsAreNotShared(t *testing.T) {
	opt := StringList("l", []string{"x"}, "")
	got := Get(New(), opt)
	got[0] = "changed"
	if Get(New(), opt)[0] != "x" {
		t.Fatal("modifying a returned default changed the option's default")
	}
}

func TestWithFormatsValues(t *testing.T) {
	c := With(New(), CheckpointingInterval, 90*time.Second)
	c = With(c, TaskManagerProcessMemory, 2*GiB)
	c = With(c, YarnTags, []string{"team-a", "stream,ing"})
	c = With(c, ExponentialDelayBackoffMultiplier, 2.5)
	want := map[string]string{
		"execution.checkpointing.interval":                      "90 s",
		"taskmanager.memory.process.size":                       "2 gb",
		"yarn.tags":                                             `team-a,"stream,ing"`,
		"restart-strategy.exponential-delay.backoff-multiplier": "2.5",
	}
	if got := c.ToMap(); !maps.Equal(got, want) {
		t.Fatalf("ToMap() = %q, want %q", got, want)
	}
	if got := Get(c, YarnTags); !slices.Equal(got, []string{"team-a", "stream,ing"}) {
		t.Errorf("yarn.tags = %q", got)
	}
}

func TestMergePrecedence(t *testing.T) {
	base := FromMap(map[string]string{"parallelism.default": "2", "pipeline.name": "base"}, Source{Name: "base"})
	over := FromMap(map[string]string{"parallelism.default": "4", "rest.port": "9000"}, Source{Name: "over"})
	c := base.Merge(over)
	if Get(c, ParallelismDefault) != 4 || Get(c, PipelineName) != "base" || Get(c, RESTPort) != 9000 {
		t.Fatalf("merged = %v", c.ToMap())
	}
	if e, _ := c.Raw("parallelism.default"); e.Source.Name != "over" {
		t.Errorf("source of merged value = %v, want over", e.Source)
	}
	if base.Len() != 2 || over.Len() != 2 {
		t.Errorf("Merge modified its inputs")
	}
	if got := base.Merge(nil); !maps.Equal(got.ToMap(), base.ToMap()) {
		t.Errorf("Merge(nil) = %v", got.ToMap())
	}
}

func TestDeprecatedKeysAreStoredUnderCurrentName(t *testing.T) {
	c := New().Set("state.checkpoints.dir", "hdfs:///old")
	if got := Get(c, CheckpointingDir); got != "hdfs:///old" {
		t.Fatalf("execution.checkpointing.dir = %q", got)
	}
	if got := c.Keys(); !slices.Equal(got, []string{"execution.checkpointing.dir"}) {
		t.Errorf("Keys() = %q", got)
	}
	e, ok := c.Raw("state.checkpoints.dir")
	if !ok || e.Key != "execution.checkpointing.dir" || e.WrittenAs != "state.checkpoints.dir" {
		t.Errorf("Raw(old key) = %+v, %v", e, ok)
	}
	// A later layer overrides, whichever name either uses.
	c = c.Merge(FromDynamicProperties([]string{"execution.checkpointing.dir=hdfs:///new"}))
	if got := Get(c, CheckpointingDir); got != "hdfs:///new" {
		t.Errorf("after override = %q", got)
	}
	c = c.Merge(FromDynamicProperties([]string{"execution.buffer-timeout=5 ms"}))
	if got := Get(c, ExecutionBufferTimeout); got != 5*time.Millisecond {
		t.Errorf("execution.buffer-timeout via old key = %v", got)
	}
}

func TestOptionsOutsideCatalogFindDeprecatedKeys(t *testing.T) {
	opt := Int("kafka.sluice.fetch-threads", 2, "").WithDeprecatedKeys("kafka.sluice.threads")
	c := New().Set("kafka.sluice.threads", "5")
	if got := Get(c, opt); got != 5 {
		t.Fatalf("Get via deprecated key = %d", got)
	}
	if !IsSet(c, opt) {
		t.Error("IsSet = false")
	}
}

func TestToMapFromMapRoundTrip(t *testing.T) {
	c, err := ParseYAML("config.yaml", []byte(`
parallelism.default: 3
yarn:
  ship-files: [a;b, c]
  tags: [x, "y,z"]
execution.checkpointing.interval: 1 min
properties.bootstrap.servers: k1:9092
`))
	if err != nil {
		t.Fatal(err)
	}
	back := FromMap(c.ToMap(), Source{Name: "client"})
	if !maps.Equal(back.ToMap(), c.ToMap()) {
		t.Fatalf("round trip changed the map: %v vs %v", back.ToMap(), c.ToMap())
	}
	if got := Get(back, YarnShipFiles); !slices.Equal(got, []string{"a;b", "c"}) {
		t.Errorf("yarn.ship-files after round trip = %q", got)
	}
	if got := Get(back, YarnTags); !slices.Equal(got, []string{"x", "y,z"}) {
		t.Errorf("yarn.tags after round trip = %q", got)
	}
	if !slices.IsSorted(back.Keys()) || len(back.Entries()) != back.Len() {
		t.Errorf("Keys not sorted or Entries incomplete")
	}
}

func TestSubset(t *testing.T) {
	c := FromMap(map[string]string{
		"properties.bootstrap.servers": "k:9092",
		"properties.acks":              "all",
		"properties.":                  "ignored",
		"parallelism.default":          "1",
	}, Source{Name: "t"})
	want := map[string]string{"bootstrap.servers": "k:9092", "acks": "all"}
	if got := c.Subset("properties."); !maps.Equal(got, want) {
		t.Fatalf("Subset = %v, want %v", got, want)
	}
}

func TestEmptyKeyIsAProblem(t *testing.T) {
	_, err := New().Set(" ", "x").Validate()
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Reason != "empty key" {
		t.Fatalf("Validate() = %v", err)
	}
}

// TestConcurrentUse shares one Configuration between goroutines, as the
// processes of a cluster do; run with -race.
func TestConcurrentUse(t *testing.T) {
	c := FromDynamicProperties([]string{"parallelism.default=3", "yarn.ship-files=a;b", "paralelism.default=1"})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			d := c.Set("rest.port", strconv.Itoa(9000+i)).Merge(c)
			if Get(d, ParallelismDefault) != 3 || len(Get(c, YarnShipFiles)) != 2 {
				t.Error("unexpected value")
			}
			if w, err := d.Validate(); err != nil || len(w) != 1 {
				t.Errorf("Validate() = %v, %v", w, err)
			}
			_ = d.ToMap()
		})
	}
	wg.Wait()
	if c.Len() != 3 {
		t.Errorf("shared configuration changed: %v", c.ToMap())
	}
}

// A fallback key is read only where the option's own key is not set, is
// named by KeyOf and by the problem of a bad value, and serves every
// option that names it.
func TestFallbackKeys(t *testing.T) {
	shared := Int("shared.threads", 0, "")
	a := Int("a.threads", 1, "").WithFallbackKeys(shared.Key())
	b := Int("b.threads", 2, "").WithDeprecatedKeys("b.old-threads").WithFallbackKeys(shared.Key())
	for _, tc := range []struct {
		name         string
		kv           []string
		a, b         int
		aSet, bSet   bool
		aKey, bKey   string
		aErr         bool
		aProblemKeys string
	}{
		{name: "nothing set", a: 1, b: 2, aKey: "a.threads", bKey: "b.threads"},
		{name: "the shared key", kv: []string{"shared.threads", "7"}, a: 7, b: 7, aSet: true, bSet: true,
			aKey: "shared.threads", bKey: "shared.threads"},
		{name: "own key first", kv: []string{"shared.threads", "7", "a.threads", "3"}, a: 3, b: 7, aSet: true, bSet: true,
			aKey: "a.threads", bKey: "shared.threads"},
		{name: "a deprecated key before the fallback", kv: []string{"shared.threads", "7", "b.old-threads", "4"}, a: 7, b: 4,
			aSet: true, bSet: true, aKey: "shared.threads", bKey: "b.threads"},
		{name: "a bad shared value", kv: []string{"shared.threads", "many"}, a: 1, b: 2, aSet: true, bSet: true,
			aKey: "shared.threads", bKey: "shared.threads", aErr: true, aProblemKeys: "shared.threads"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			for i := 0; i < len(tc.kv); i += 2 {
				c = c.Set(tc.kv[i], tc.kv[i+1])
			}
			if got := Get(c, a); got != tc.a {
				t.Errorf("a = %d, want %d", got, tc.a)
			}
			if got := Get(c, b); got != tc.b {
				t.Errorf("b = %d, want %d", got, tc.b)
			}
			if IsSet(c, a) != tc.aSet || IsSet(c, b) != tc.bSet {
				t.Errorf("IsSet a %v b %v, want %v %v", IsSet(c, a), IsSet(c, b), tc.aSet, tc.bSet)
			}
			if KeyOf(c, a) != tc.aKey || KeyOf(c, b) != tc.bKey {
				t.Errorf("KeyOf a %q b %q, want %q %q", KeyOf(c, a), KeyOf(c, b), tc.aKey, tc.bKey)
			}
			_, _, err := Lookup(c, a)
			var p *Problem
			if tc.aErr != (err != nil) || (err != nil && (!errors.As(err, &p) || p.Key != tc.aProblemKeys)) {
				t.Errorf("Lookup(a) error %v, want a problem of %q: %v", err, tc.aProblemKeys, tc.aErr)
			}
		})
	}
}
