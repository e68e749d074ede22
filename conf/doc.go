// Package conf holds Sluice's configuration: the typed declaration of every
// option, the Configuration that carries their values between processes,
// the reading of config.yaml and -D dynamic properties, and validation.
//
// # Options
//
// Each option is declared once, as a typed Option with its key, default and
// description, in a file per concern: core.go, pipeline.go,
// checkpointing.go, state.go, restart.go, cluster.go, resources.go, yarn.go
// and security.go. Catalog lists them all. Keys, defaults and value formats are
// Apache Flink's wherever Flink has the concept, so a Flink user's
// config.yaml reads the same here; where Flink 2 renamed a key (for example
// state.checkpoints.dir to execution.checkpointing.dir) both names are
// accepted and the old one draws a deprecation warning. Deliberate
// differences are documented on the option, e.g. heartbeat.interval (1 s)
// and heartbeat.timeout (5 s) are lower than Flink's so that a lost
// TaskManager is detected and recovered from within 5 s, and
// state.backend.type offers hashmap and pebble.
//
// Other packages may declare options of their own with the same
// constructors and pass them to Validate.
//
// # Reading values
//
// A Configuration maps keys to values as written, each with the Source it
// came from (a file and line, "-D", or "api"). It is immutable: Set, With and
// Merge return a new one. Get(c, opt) returns an option's value, or its
// default when it is unset; Lookup also tells whether it was set and why a
// value does not parse.
//
//	c, warnings, err := conf.Load(conf.Sources{
//		ConfDir: os.Getenv(conf.EnvConfDir),
//		Dynamic: dynamicProps, // from -D key=value flags
//	})
//	slots := conf.Get(c, conf.TaskManagerNumberOfTaskSlots)
//
// ToMap and FromMap ship a configuration to another process, such as the
// ApplicationMaster and TaskManagers on YARN.
//
// # Sources and precedence
//
// Load layers option defaults, then the config file (Sources.File, or
// $SLUICE_CONF_DIR/config.yaml), then dynamic properties: a later layer wins.
// config.yaml is standard YAML as in Flink 1.19+ and 2.x; nested maps and
// flat dotted keys may be mixed, and list options take YAML sequences:
//
//	parallelism.default: 4
//	execution:
//	  checkpointing:
//	    interval: 10 s
//	    mode: EXACTLY_ONCE
//	yarn.ship-files: [conf/log.yaml, lib/]
//
// # Value formats
//
// As in Flink: durations are a whole number and a unit, "500 ms", "10 s",
// "10s", "1 min", "2 h", "1 d", and a bare number is milliseconds (Go's
// "1h30m" form is also read); memory sizes are a whole number and a binary
// unit, "64kb", "512 mb", "1728m", "1g", and a bare number is bytes;
// booleans are true or false; enum values match case-insensitively; lists
// on one line separate items with ';' (yarn.tags with ','), or use YAML's
// "[a, b]".
//
// # Validation
//
// Validate reports every problem at once: values that do not parse or are
// out of range, keys set twice in one file, malformed -D properties and
// settings that contradict each other (heartbeat.timeout not above
// heartbeat.interval, a keytab without a principal, ...), in one
// *ValidationError whose Problems carry key, value, source and reason.
// Unknown keys are warnings naming the nearest known key:
//
//	unknown key "paralelism.default" (config.yaml:3); did you mean "parallelism.default"?
//
// Keys under the pass-through prefixes are handed on to other systems and
// never reported: "properties." and "kafka." (Kafka client properties),
// "metrics.reporter.", "flink.hadoop." and "flink.yarn." (Hadoop and YARN
// client settings), "containerized.master.env." and
// "containerized.taskmanager.env." (container environment variables).
//
// The package is a leaf: it imports only the standard library and a YAML
// parser, and holds no mutable global state.
package conf
