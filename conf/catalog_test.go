package conf

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCatalogKeysAreUnique(t *testing.T) {
	if _, err := newIndex(Catalog()); err != nil {
		t.Fatal(err)
	}
}

// TestCatalogIsDocumented checks that every option documents itself and its
// default, and that a default given as a value parses back to itself.
func TestCatalogIsDocumented(t *testing.T) {
	for _, o := range Catalog() {
		t.Run(o.Key(), func(t *testing.T) {
			if strings.ContainsAny(o.Key(), " \t") || o.Key() != strings.TrimSpace(o.Key()) {
				t.Errorf("bad key %q", o.Key())
			}
			if o.Description() == "" || !strings.HasSuffix(o.Description(), ".") {
				t.Errorf("description %q is empty or not a sentence", o.Description())
			}
			if o.DefaultString() == "" {
				t.Errorf("default is not documented")
			}
			if err := defaultRoundTrips(o); err != nil {
				t.Error(err)
			}
		})
	}
}

func defaultRoundTrips(o AnyOption) error {
	switch o := o.(type) {
	case Option[string]:
		return roundTrip(o)
	case Option[int]:
		return roundTrip(o)
	case Option[bool]:
		return roundTrip(o)
	case Option[float64]:
		return roundTrip(o)
	case Option[MemorySize]:
		return roundTrip(o)
	case Option[[]string]:
		return roundTrip(o)
	case Option[time.Duration]:
		return roundTrip(o)
	default:
		return &ValueError{Type: "option", Value: o.Key(), Reason: "unexpected option type " + reflect.TypeOf(o).String()}
	}
}

func roundTrip[T any](o Option[T]) error {
	if o.defaultDoc != "" {
		return nil // the default is "not set"; it need not be a valid value
	}
	v, err := o.Parse(o.Format(o.Default()))
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(v, o.Default()) && !(reflect.ValueOf(v).Kind() == reflect.Slice && reflect.ValueOf(v).Len() == 0) {
		return &ValueError{Type: "default", Value: o.Format(o.Default()), Reason: "parses to " + o.Format(v)}
	}
	return nil
}

// TestCatalogHasFlinkKeys pins the keys users bring from Flink, including
// the older names Flink 2 renamed.
func TestCatalogHasFlinkKeys(t *testing.T) {
	for _, key := range strings.Fields(`
parallelism.default pipeline.max-parallelism pipeline.name pipeline.auto-watermark-interval pipeline.object-reuse
execution.runtime-mode execution.buffer-timeout.interval execution.buffer-timeout
execution.checkpointing.interval execution.checkpointing.mode execution.checkpointing.timeout
execution.checkpointing.min-pause execution.checkpointing.max-concurrent-checkpoints
execution.checkpointing.tolerable-failed-checkpoints execution.checkpointing.externalized-checkpoint-retention
execution.checkpointing.dir state.checkpoints.dir state.savepoints.dir execution.checkpointing.savepoint-dir
state.checkpoints.num-retained execution.checkpointing.num-retained state.backend.type
state.backend.incremental execution.checkpointing.incremental
restart-strategy.type restart-strategy.fixed-delay.attempts restart-strategy.fixed-delay.delay
restart-strategy.exponential-delay.initial-backoff restart-strategy.exponential-delay.max-backoff
restart-strategy.exponential-delay.backoff-multiplier restart-strategy.exponential-delay.reset-backoff-threshold
restart-strategy.exponential-delay.jitter-factor restart-strategy.exponential-delay.attempts-before-reset-backoff
restart-strategy.failure-rate.max-failures-per-interval restart-strategy.failure-rate.failure-rate-interval
restart-strategy.failure-rate.delay heartbeat.interval heartbeat.timeout
jobmanager.rpc.address jobmanager.rpc.port jobmanager.memory.process.size
taskmanager.numberOfTaskSlots taskmanager.memory.process.size taskmanager.rpc.port taskmanager.data.port
rest.port rest.address rest.bind-address high-availability.type high-availability.storageDir
yarn.application.name yarn.application.type yarn.application.queue yarn.tags yarn.application.priority
yarn.application-attempts yarn.application.id yarn.provided.lib.dirs yarn.appmaster.vcores
yarn.containers.vcores yarn.staging-directory yarn.ship-files yarn.security.kerberos.ship-local-keytab
security.kerberos.login.keytab security.kerberos.login.principal security.kerberos.login.use-ticket-cache
security.kerberos.krb5-conf.path security.kerberos.access.hadoopFileSystems
execution.target execution.attached execution.savepoint.path execution.state-recovery.path
execution.savepoint.ignore-unclaimed-state execution.state-recovery.ignore-unclaimed-state
`) {
		if _, ok := Find(key); !ok {
			t.Errorf("catalog lacks %q", key)
		}
	}
}

// TestDefaults pins defaults that users compare with Flink's, and ours that
// deliberately differ.
func TestDefaults(t *testing.T) {
	for key, want := range map[string]string{
		"parallelism.default":                                        "1",
		"pipeline.max-parallelism":                                   "-1",
		"pipeline.auto-watermark-interval":                           "200 ms",
		"execution.buffer-timeout.interval":                          "100 ms",
		"execution.runtime-mode":                                     "STREAMING",
		"execution.checkpointing.mode":                               "EXACTLY_ONCE",
		"execution.checkpointing.timeout":                            "10 min",
		"execution.checkpointing.min-pause":                          "0 ms",
		"execution.checkpointing.max-concurrent-checkpoints":         "1",
		"execution.checkpointing.tolerable-failed-checkpoints":       "0",
		"execution.checkpointing.externalized-checkpoint-retention":  "NO_EXTERNALIZED_CHECKPOINTS",
		"execution.checkpointing.num-retained":                       "1",
		"execution.checkpointing.incremental":                        "false",
		"state.backend.type":                                         "hashmap",
		"restart-strategy.fixed-delay.attempts":                      "1",
		"restart-strategy.fixed-delay.delay":                         "1 s",
		"restart-strategy.exponential-delay.initial-backoff":         "1 s",
		"restart-strategy.exponential-delay.max-backoff":             "1 min",
		"restart-strategy.exponential-delay.backoff-multiplier":      "1.5",
		"restart-strategy.exponential-delay.reset-backoff-threshold": "1 h",
		"restart-strategy.exponential-delay.jitter-factor":           "0.1",
		"restart-strategy.failure-rate.max-failures-per-interval":    "1",
		"restart-strategy.failure-rate.failure-rate-interval":        "1 min",
		"restart-strategy.failure-rate.delay":                        "1 s",
		"heartbeat.interval":                                         "1 s", // Flink: 10 s
		"heartbeat.timeout":                                          "5 s", // Flink: 50 s
		"jobmanager.rpc.port":                                        "6123",
		"rest.port":                                                  "8081",
		"taskmanager.numberOfTaskSlots":                              "1",
		"taskmanager.memory.process.size":                            "1728 mb",
		"jobmanager.memory.process.size":                             "1600 mb",
		"yarn.appmaster.vcores":                                      "1",
		"yarn.containers.vcores":                                     "-1",
		"yarn.application.priority":                                  "-1",
		"yarn.security.kerberos.ship-local-keytab":                   "true",
		"security.kerberos.login.use-ticket-cache":                   "true",
	} {
		o, ok := Find(key)
		if !ok {
			t.Errorf("no option %q", key)
			continue
		}
		if got := o.DefaultString(); got != want {
			t.Errorf("%s default = %q, want %q", key, got, want)
		}
	}
}

func TestEffectiveRestartStrategy(t *testing.T) {
	tests := []struct {
		props []string
		want  string
	}{
		{nil, RestartNone},
		{[]string{"execution.checkpointing.interval=10 s"}, RestartExponentialDelay},
		{[]string{"execution.checkpointing.interval=10 s", "restart-strategy.type=fixeddelay"}, RestartFixedDelay},
		{[]string{"restart-strategy=failure-rate"}, RestartFailureRate},
		{[]string{"restart-strategy.type=off"}, RestartNone},
	}
	for _, tt := range tests {
		if got := EffectiveRestartStrategy(FromDynamicProperties(tt.props)); got != tt.want {
			t.Errorf("EffectiveRestartStrategy(%q) = %q, want %q", tt.props, got, tt.want)
		}
	}
}

// Every fallback key of a catalog option is a catalog option of the same
// type (Validate checks its value as its own), and Flink's shared TLS keys
// are the fallbacks of both their internal and their REST option.
func TestFallbackKeysAreCatalogOptions(t *testing.T) {
	fallbacks := map[string][]string{}
	for _, o := range Catalog() {
		for _, k := range o.FallbackKeys() {
			f, ok := Find(k)
			if !ok {
				t.Errorf("%s falls back to %q, which is not in the catalog", o.Key(), k)
				continue
			}
			if f.TypeName() != o.TypeName() {
				t.Errorf("%s (%s) falls back to %s (%s)", o.Key(), o.TypeName(), k, f.TypeName())
			}
			fallbacks[k] = append(fallbacks[k], o.Key())
		}
	}
	for shared, want := range map[string][]string{
		"security.ssl.enabled":             {"security.ssl.internal.enabled", "security.ssl.rest.enabled"},
		"security.ssl.keystore":            {"security.ssl.internal.keystore", "security.ssl.rest.keystore"},
		"security.ssl.keystore-password":   {"security.ssl.internal.keystore-password", "security.ssl.rest.keystore-password"},
		"security.ssl.key-password":        {"security.ssl.internal.key-password", "security.ssl.rest.key-password"},
		"security.ssl.truststore":          {"security.ssl.internal.truststore", "security.ssl.rest.truststore"},
		"security.ssl.truststore-password": {"security.ssl.internal.truststore-password", "security.ssl.rest.truststore-password"},
	} {
		if got := fallbacks[shared]; !slices.Equal(got, want) {
			t.Errorf("%s is the fallback of %q, want %q", shared, got, want)
		}
	}
}
