package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluice/sluice/internal/sql/parser"
)

// Connector option names (Flink's).
const (
	OptConnector        = "connector"
	OptTopic            = "topic"
	OptTopicPattern     = "topic-pattern"
	OptBootstrap        = "properties.bootstrap.servers"
	OptGroupID          = "properties.group.id"
	OptAutoOffsetReset  = "properties.auto.offset.reset"
	OptFormat           = "format"
	OptKeyFormat        = "key.format"
	OptKeyFields        = "key.fields"
	OptValueFormat      = "value.format"
	OptValueFieldsIncl  = "value.fields-include"
	OptStartupMode      = "scan.startup.mode"
	OptStartupTimestamp = "scan.startup.timestamp-millis"
	OptDeliveryGuar     = "sink.delivery-guarantee"
	OptTxnPrefix        = "sink.transactional-id-prefix"
	OptIdleTimeout      = "table.exec.source.idle-timeout"
)

// The json format's options (with format, key.format or value.format
// json; prefixed json., key.json. or value.json.).
var jsonOptions = []string{"fail-on-missing-field", "ignore-parse-errors", "timestamp-format.standard",
	"map-null-key.mode", "map-null-key.literal", "encode.decimal-as-plain-number", "encode.ignore-null-fields"}

// The avro-confluent format's options (prefixed avro-confluent.,
// key.avro-confluent. or value.avro-confluent.): Flink's, and Sluice's
// *-file options, which read a credential from a file instead of the DDL.
// ssl.truststore.location is a PEM file of certificate authorities (Flink's
// is a JKS truststore).
var avroConfluentOptions = []string{"url", "schema-registry.url", "subject",
	"basic-auth.credentials-source", "basic-auth.user-info", "basic-auth.user-info-file",
	"bearer-auth.credentials-source", "bearer-auth.token", "bearer-auth.token-file",
	"ssl.truststore.location"}

// The csv format's options (prefixed csv., key.csv. or value.csv.).
var csvOptions = []string{"field-delimiter", "disable-quote-character", "quote-character", "allow-comments",
	"ignore-parse-errors", "array-element-delimiter", "escape-character", "null-literal", "write-bigdecimal-in-scientific-notation"}

// formatOptions are the options of each format, without their prefix.
var formatOptions = map[string][]string{"json": jsonOptions, "avro-confluent": avroConfluentOptions,
	"csv": csvOptions, "raw": {"charset", "endianness"}}

// Formats are the formats the planner knows.
func Formats() []string {
	var out []string
	for k := range formatOptions {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The filesystem connector's options (Flink's).
const (
	OptPath            = "path"
	OptMonitorInterval = "source.monitor-interval"
	OptRollFileSize    = "sink.rolling-policy.file-size"
	OptRollInterval    = "sink.rolling-policy.rollover-interval"
	OptRollCheck       = "sink.rolling-policy.check-interval"
	OptRollInactivity  = "sink.rolling-policy.inactivity-interval"
	OptPartitionDef    = "partition.default-name"
)

var connectorOptions = map[string][]string{
	"kafka": {OptConnector, OptTopic, OptTopicPattern, OptFormat, OptKeyFormat, OptKeyFields, "key.fields-prefix",
		OptValueFormat, OptValueFieldsIncl, OptStartupMode, "scan.startup.specific-offsets", OptStartupTimestamp,
		"scan.bounded.mode", "scan.bounded.timestamp-millis", "scan.topic-partition-discovery.interval", "sink.partitioner", OptDeliveryGuar,
		OptTxnPrefix, "sink.parallelism", "scan.parallelism"},
	"upsert-kafka": {OptConnector, OptTopic, OptKeyFormat, "key.fields-prefix", OptValueFormat, OptValueFieldsIncl,
		"sink.parallelism", "sink.buffer-flush.max-rows", "sink.buffer-flush.interval", OptDeliveryGuar, OptTxnPrefix},
	"print":     {OptConnector, "print-identifier", "standard-error", "sink.parallelism"},
	"blackhole": {OptConnector},
	"datagen":   {OptConnector, "rows-per-second", "number-of-rows", "scan.parallelism"},
	"filesystem": {OptConnector, OptPath, OptFormat, OptMonitorInterval, OptRollFileSize, OptRollInterval, OptRollCheck,
		OptRollInactivity, OptPartitionDef, "sink.parallelism"},
}

// datagenFieldOptions are the datagen connector's per-column options,
// 'fields.<column>.<option>'.
var datagenFieldOptions = []string{"kind", "min", "max", "max-past", "length", "var-len", "start", "end", "null-rate"}

// Connectors are the connectors the planner knows.
func Connectors() []string {
	var out []string
	for k := range connectorOptions {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

var startupModes = []string{"earliest-offset", "latest-offset", "group-offsets", "timestamp", "specific-offsets"}

func (p *session) validateConnector(s *parser.CreateTable, t *Table) error {
	optPos := func(key string) parser.Pos {
		for _, o := range s.Options {
			if o.Key == key {
				return o.Position()
			}
		}
		return s.Name.Position()
	}
	conn, ok := t.Options[OptConnector]
	if !ok {
		return p.errAt(s.Name.Position(), ErrInvalid, "table %s has no 'connector' option (one of %s)", t.Name, strings.Join(Connectors(), ", "))
	}
	known, ok := connectorOptions[conn]
	if !ok {
		msg := fmt.Sprintf("unknown connector '%s'", conn)
		if n := parser.Nearest(conn, Connectors()); n != "" {
			msg += fmt.Sprintf("; did you mean '%s'?", n)
		} else {
			msg += fmt.Sprintf(" (supported: %s)", strings.Join(Connectors(), ", "))
		}
		return p.errAt(optPos(OptConnector), ErrUnknown, "%s", msg)
	}
	formats := map[string]string{} // option prefix -> format
	for _, k := range []string{OptFormat, OptKeyFormat, OptValueFormat} {
		if f, ok := t.Options[k]; ok {
			if _, ok := formatOptions[f]; !ok || conn == "filesystem" && f == "avro-confluent" {
				supported := Formats()
				if conn == "filesystem" {
					supported = slices.DeleteFunc(supported, func(f string) bool { return f == "avro-confluent" })
				}
				return p.errAt(optPos(k), ErrInvalid, "format '%s' is not supported by connector '%s' (supported: %s)", f, conn, strings.Join(supported, ", "))
			}
			prefix := strings.TrimSuffix(k, "format")
			formats[prefix+f+"."] = f
		}
	}
	// Unsupported options, with the nearest supported one.
	var all []string
	all = append(all, known...)
	for prefix, f := range formats {
		for _, o := range formatOptions[f] {
			all = append(all, prefix+o)
		}
	}
	if conn == "datagen" {
		for _, c := range t.Columns {
			if c.Kind == Physical {
				for _, o := range datagenFieldOptions {
					all = append(all, "fields."+c.Name+"."+o)
				}
			}
		}
	}
	for _, o := range s.Options {
		if strings.HasPrefix(o.Key, "properties.") && strings.HasPrefix(conn, "kafka") || (conn == "upsert-kafka" && strings.HasPrefix(o.Key, "properties.")) {
			continue
		}
		if slices.Contains(all, o.Key) {
			continue
		}
		msg := fmt.Sprintf("unsupported option '%s' for connector '%s'", o.Key, conn)
		if n := parser.Nearest(o.Key, all); n != "" {
			msg += fmt.Sprintf("; did you mean '%s'?", n)
		}
		return p.errAt(o.Position(), ErrInvalid, "%s", msg)
	}
	var missing []string
	need := func(keys ...string) {
		for _, k := range keys {
			if _, ok := t.Options[k]; !ok {
				missing = append(missing, "'"+k+"'")
			}
		}
	}
	switch conn {
	case "kafka":
		_, topic := t.Options[OptTopic]
		_, pattern := t.Options[OptTopicPattern]
		switch {
		case topic && pattern:
			return p.errAt(optPos(OptTopicPattern), ErrInvalid, "table %s: 'topic' and 'topic-pattern' cannot both be set", t.Name)
		case !topic && !pattern:
			need(OptTopic)
		}
		need(OptBootstrap)
		_, f := t.Options[OptFormat]
		_, vf := t.Options[OptValueFormat]
		if f && vf {
			return p.errAt(optPos(OptValueFormat), ErrInvalid, "table %s: 'format' and 'value.format' cannot both be set", t.Name)
		}
		if !f && !vf {
			need(OptFormat)
		}
		if mode, ok := t.Options[OptStartupMode]; ok {
			if !slices.Contains(startupModes, mode) {
				return p.errAt(optPos(OptStartupMode), ErrInvalid, "'%s' = '%s' is not a startup mode (one of %s)", OptStartupMode, mode, strings.Join(startupModes, ", "))
			}
			if mode == "timestamp" {
				need(OptStartupTimestamp)
			}
			if mode == "specific-offsets" {
				return p.errAt(optPos(OptStartupMode), ErrInvalid, "scan.startup.mode 'specific-offsets' is not supported yet")
			}
			if mode == "group-offsets" {
				if _, ok := t.Options[OptGroupID]; !ok {
					return p.errAt(optPos(OptStartupMode), ErrInvalid, "table %s: '%s' is required for 'group-offsets' startup mode", t.Name, OptGroupID)
				}
			}
		}
		if _, ok := t.Options[OptKeyFields]; ok {
			if _, ok := t.Options[OptKeyFormat]; !ok {
				need(OptKeyFormat)
			}
		}
	case "filesystem":
		need(OptPath, OptFormat)
	case "upsert-kafka":
		need(OptTopic, OptBootstrap, OptKeyFormat, OptValueFormat)
		if len(missing) == 0 && len(t.PrimaryKey) == 0 {
			return p.errAt(s.Name.Position(), ErrInvalid, "'upsert-kafka' tables require a PRIMARY KEY constraint (table %s)", t.Name)
		}
	}
	if len(missing) > 0 {
		return p.errAt(s.Name.Position(), ErrInvalid, "table %s: connector '%s' is missing required option(s) %s", t.Name, conn, strings.Join(missing, ", "))
	}
	if g, ok := t.Options[OptDeliveryGuar]; ok && !slices.Contains([]string{"none", "at-least-once", "exactly-once"}, g) {
		return p.errAt(optPos(OptDeliveryGuar), ErrInvalid, "'%s' = '%s': want none, at-least-once or exactly-once", OptDeliveryGuar, g)
	}
	if vi, ok := t.Options[OptValueFieldsIncl]; ok && vi != "ALL" && vi != "EXCEPT_KEY" {
		return p.errAt(optPos(OptValueFieldsIncl), ErrInvalid, "'%s' = '%s': want ALL or EXCEPT_KEY", OptValueFieldsIncl, vi)
	}
	for _, c := range t.Columns {
		if c.Kind != MetadataCol {
			continue
		}
		if !strings.HasPrefix(conn, "kafka") && conn != "upsert-kafka" {
			return p.errAt(s.Name.Position(), ErrInvalid, "connector '%s' has no metadata column %s", conn, c.MetaKey)
		}
		if !slices.Contains([]string{"timestamp", "partition", "offset", "topic", "timestamp-type"}, c.MetaKey) {
			return p.errAt(s.Name.Position(), ErrInvalid, "unknown metadata key '%s' of column %s (timestamp, partition, offset, topic, timestamp-type)", c.MetaKey, c.Name)
		}
	}
	return nil
}
