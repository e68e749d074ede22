package conf

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestValidateReportsEveryProblemAtOnce is the main promise of Validate:
// one run lists every bad value, from the file and the command line, with
// where it was set.
func TestValidateReportsEveryProblemAtOnce(t *testing.T) {
	file, err := ParseYAML("config.yaml", []byte(`parallelism.default: 0
execution:
  checkpointing:
    interval: ten seconds
    mode: exactly-once-please
taskmanager.memory.process.size: 1.5g
paralelism.default: 3
rest.port: 8081
state.backend.type: rocksdb
`))
	if err != nil {
		t.Fatal(err)
	}
	c := file.Merge(FromDynamicProperties([]string{"rest.port=99999", "no-equals-sign", "pipeline.object-reuse=yes"}))
	warnings, err := c.Validate()

	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("Validate() = %v, want ErrInvalid", err)
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Validate() error %T is not a *ValidationError", err)
	}
	var got []string
	for _, p := range ve.Problems {
		got = append(got, fmt.Sprintf("%s|%s|%s", p.Source, p.Key, p.Value))
	}
	want := []string{
		"config.yaml:1|parallelism.default|0",
		"config.yaml:4|execution.checkpointing.interval|ten seconds",
		"config.yaml:5|execution.checkpointing.mode|exactly-once-please",
		"config.yaml:6|taskmanager.memory.process.size|1.5g",
		"config.yaml:9|state.backend.type|rocksdb",
		"-D||no-equals-sign",
		"-D|pipeline.object-reuse|yes",
		"-D|rest.port|99999",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, p := range ve.Problems {
		if p.Reason == "" {
			t.Errorf("problem without a reason: %+v", p)
		}
	}
	msg := err.Error()
	for _, s := range []string{
		"conf: 8 problems",
		`config.yaml:5: execution.checkpointing.mode: invalid value "exactly-once-please": must be one of EXACTLY_ONCE, AT_LEAST_ONCE`,
		`config.yaml:1: parallelism.default: invalid value "0": must be at least 1`,
		`config.yaml:6: taskmanager.memory.process.size: invalid memory size "1.5g": fractions are not supported`,
		`-D: pipeline.object-reuse: invalid boolean "yes": use true or false`,
		`-D: invalid dynamic property "no-equals-sign": expected key=value`,
		`config.yaml:9: state.backend.type: invalid value "rocksdb": must be one of hashmap, pebble`,
	} {
		if !strings.Contains(msg, s) {
			t.Errorf("error message lacks %q:\n%s", s, msg)
		}
	}
	if len(warnings) != 1 || warnings[0].String() !=
		`unknown key "paralelism.default" (config.yaml:7); did you mean "parallelism.default"?` {
		t.Errorf("warnings = %v", warnings)
	}
}

func TestValidateAcceptsGoodConfig(t *testing.T) {
	c, err := ParseYAML("config.yaml", []byte(`
parallelism.default: 4
pipeline:
  max-parallelism: 128
  name: orders
  auto-watermark-interval: 100 ms
  object-reuse: true
execution:
  runtime-mode: streaming
  buffer-timeout.interval: 10
  target: yarn-application
  attached: false
  checkpointing:
    interval: 10 s
    mode: at_least_once
    timeout: 2 min
    min-pause: 500ms
    max-concurrent-checkpoints: 1
    tolerable-failed-checkpoints: 3
    externalized-checkpoint-retention: RETAIN_ON_CANCELLATION
    dir: hdfs:///sluice/checkpoints
    savepoint-dir: hdfs:///sluice/savepoints
    num-retained: 3
    incremental: true
state.backend.type: pebble
restart-strategy:
  type: exponential-delay
  exponential-delay:
    initial-backoff: 1 s
    max-backoff: 30 s
    backoff-multiplier: 2.0
    jitter-factor: 0.2
heartbeat: {interval: 1 s, timeout: 5 s}
jobmanager.memory.process.size: 1g
taskmanager:
  numberOfTaskSlots: 4
  memory.process.size: 4096m
  rpc.port: 50100-50200,50300
yarn:
  application:
    name: orders
    queue: streaming
    priority: 5
  tags: [team-a, prod]
  provided.lib.dirs: [hdfs:///sluice/lib]
  ship-files: [conf/log.yaml]
  containers.vcores: 4
security.kerberos.login:
  keytab: /etc/security/keytabs/sluice.keytab
  principal: sluice@EXAMPLE.COM
properties.bootstrap.servers: kafka-1:9092
kafka.transaction.timeout.ms: 900000
metrics.reporter.prom.port: 9249
flink.hadoop.dfs.replication: 2
containerized.taskmanager.env.TZ: UTC
`))
	if err != nil {
		t.Fatal(err)
	}
	warnings, err := c.Validate()
	if err != nil || len(warnings) != 0 {
		t.Fatalf("Validate() = %v, %v", warnings, err)
	}
	if got := Get(c, CheckpointingMode); got != AtLeastOnce {
		t.Errorf("mode = %q, want the declared spelling %q", got, AtLeastOnce)
	}
	if got := EffectiveRestartStrategy(c); got != RestartExponentialDelay {
		t.Errorf("restart strategy = %q", got)
	}
}

func TestWarnings(t *testing.T) {
	tests := []struct {
		name string
		key  string
		want string // "" for no warning
	}{
		{"typo", "paralelism.default", `unknown key "paralelism.default" (-D); did you mean "parallelism.default"?`},
		{"case", "taskmanager.numberoftaskslots", `unknown key "taskmanager.numberoftaskslots" (-D); did you mean "taskmanager.numberOfTaskSlots"?`},
		{"missing prefix", "numberOfTaskSlots", `unknown key "numberOfTaskSlots" (-D); did you mean "taskmanager.numberOfTaskSlots"?`},
		{"typo in deprecated key suggests current", "state.checkpoint.dir", `unknown key "state.checkpoint.dir" (-D); did you mean "execution.checkpointing.dir"?`},
		{"far from everything", "completely.unrelated.thing", `unknown key "completely.unrelated.thing" (-D)`},
		{"deprecated", "state.savepoints.dir", `key "state.savepoints.dir" (-D) is deprecated; use "execution.checkpointing.savepoint-dir"`},
		{"deprecated buffer timeout", "execution.buffer-timeout", `key "execution.buffer-timeout" (-D) is deprecated; use "execution.buffer-timeout.interval"`},
		{"deprecated savepoint path", "execution.savepoint.path", `key "execution.savepoint.path" (-D) is deprecated; use "execution.state-recovery.path"`},
		{"kafka pass-through", "kafka.bootstrap.servers", ""},
		{"properties pass-through", "properties.group.id", ""},
		{"reporter pass-through", "metrics.reporter.prom.factory.class", ""},
		{"hadoop pass-through", "flink.hadoop.dfs.client.use.datanode.hostname", ""},
		{"bare prefix is not pass-through", "kafka.", `unknown key "kafka." (-D)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			value := "x"
			if strings.Contains(tt.key, "buffer-timeout") {
				value = "10 ms"
			}
			warnings, err := FromDynamicProperties([]string{tt.key + "=" + value}).Validate()
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == "" && len(warnings) != 0:
				t.Fatalf("warnings = %v, want none", warnings)
			case tt.want != "" && (len(warnings) != 1 || warnings[0].String() != tt.want):
				t.Fatalf("warnings = %v\nwant [%s]", warnings, tt.want)
			}
		})
	}
}

func TestCrossChecks(t *testing.T) {
	tests := []struct {
		name  string
		props []string
		want  string // substring of the only problem; "" for none
	}{
		{"heartbeat timeout below interval", []string{"heartbeat.interval=10 s"},
			"-D: heartbeat.interval: heartbeat.timeout (5 s) must be longer than heartbeat.interval (10 s)"},
		{"heartbeat timeout equal", []string{"heartbeat.timeout=1 s"}, "-D: heartbeat.timeout: heartbeat.timeout (1 s) must be longer"},
		{"heartbeat fine", []string{"heartbeat.interval=2 s", "heartbeat.timeout=20 s"}, ""},
		{"parallelism above max", []string{"parallelism.default=200", "pipeline.max-parallelism=128"},
			"-D: parallelism.default: parallelism.default (200) exceeds pipeline.max-parallelism (128)"},
		{"backoff inverted", []string{"restart-strategy.exponential-delay.initial-backoff=2 min"},
			"restart-strategy.exponential-delay.initial-backoff: restart-strategy.exponential-delay.initial-backoff (2 min) exceeds"},
		{"keytab without principal", []string{"security.kerberos.login.keytab=/k"}, "security.kerberos.login.keytab: security.kerberos.login.keytab is set but"},
		{"principal without keytab or cache", []string{"security.kerberos.login.principal=p@R", "security.kerberos.login.use-ticket-cache=false"}, "there is no way to log in"},
		{"principal with ticket cache", []string{"security.kerberos.login.principal=p@R"}, ""},
		{"zookeeper without quorum and dir", []string{"high-availability.type=zookeeper"}, "high availability (ZOOKEEPER) needs high-availability.storageDir"},
		{"bad values skip cross checks", []string{"heartbeat.interval=soon"}, "invalid duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromDynamicProperties(tt.props).Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || !strings.Contains(ve.Problems[0].Error(), tt.want) {
				t.Fatalf("Validate() = %v\nwant a problem containing %q", err, tt.want)
			}
		})
	}
}

func TestValidateExtraOptions(t *testing.T) {
	threads := Int("connector.fetch-threads", 2, "").WithCheck(AtLeast(1)).WithDeprecatedKeys("connector.threads")
	c := FromDynamicProperties([]string{"connector.threads=0"})

	warnings, err := c.Validate()
	if err != nil || len(warnings) != 1 || warnings[0].Kind != UnknownKey {
		t.Fatalf("without the extra option: %v, %v", warnings, err)
	}
	warnings, err = c.Validate(threads)
	if len(warnings) != 1 || warnings[0].Kind != DeprecatedKey || warnings[0].Suggestion != "connector.fetch-threads" {
		t.Errorf("warnings = %v", warnings)
	}
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Problems[0].Key != "connector.threads" {
		t.Errorf("Validate(extra) = %v", err)
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"paralelism", "parallelism", 1}, {"µs", "us", 1},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b, 100); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := editDistance(tt.a, tt.b, 1); tt.want >= 1 && got < 1 {
			t.Errorf("bounded editDistance(%q, %q) = %d, want >= 1", tt.a, tt.b, got)
		}
	}
}
