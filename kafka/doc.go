// Package kafka will be the Kafka connector (github.com/twmb/franz-go): a
// KafkaSource implementing stream.Source with per-partition splits and
// watermarks, and a KafkaSink with NONE, AT_LEAST_ONCE and EXACTLY_ONCE
// (transactional, two-phase commit) delivery. Nothing here works yet (the
// Kafka connector issue).
package kafka
