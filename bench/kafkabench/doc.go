// Package kafkabench compares a Kafka → Kafka Sluice pipeline with a raw
// franz-go consume → produce loop on the same real broker (`make
// bench-kafka`). It reports records/s; it does not fail on a figure.
package kafkabench
