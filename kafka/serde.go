package kafka

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/stream"
)

// Deserializer turns a Kafka record into a value of the stream. It sees
// the whole record: key, value, headers, timestamp, topic, partition and
// offset. An error makes the record malformed (see MalformedRecords).
type Deserializer[T any] interface {
	Deserialize(r *kgo.Record) (T, error)
}

// DeserializerFunc adapts a function to a Deserializer.
type DeserializerFunc[T any] func(r *kgo.Record) (T, error)

// Deserialize implements Deserializer.
func (f DeserializerFunc[T]) Deserialize(r *kgo.Record) (T, error) { return f(r) }

// RecordDeserializer deserialises with access to the whole record.
func RecordDeserializer[T any](fn func(r *kgo.Record) (T, error)) Deserializer[T] {
	return DeserializerFunc[T](fn)
}

type valueOnly[T any] struct{ fn func([]byte) (T, error) }

func (v valueOnly[T]) Deserialize(r *kgo.Record) (T, error) { return v.fn(r.Value) }

// ValueOnly deserialises the record's value alone (a tombstone's value is nil).
func ValueOnly[T any](fn func(value []byte) (T, error)) Deserializer[T] {
	return valueOnly[T]{fn}
}

// StringValues reads each value as a string, bytes as they are (Flink's
// SimpleStringSchema; no UTF-8 check).
func StringValues() Deserializer[string] {
	return ValueOnly(func(b []byte) (string, error) { return string(b), nil })
}

// ErrNoValue is the error of JSONValues for a record without a value (a
// tombstone).
var ErrNoValue = errors.New("kafka: record has no value")

// JSONValues decodes each value as JSON into a T (encoding/json rules:
// unknown fields are ignored). A record without a value is malformed.
func JSONValues[T any]() Deserializer[T] {
	return ValueOnly(decodeJSON[T])
}

func decodeJSON[T any](b []byte) (T, error) {
	var v T
	if b == nil {
		return v, ErrNoValue
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("decoding JSON: %w", err)
	}
	return v, nil
}

// recordTimestamp is the record's timestamp as the stream's source
// timestamp: epoch ms, or stream.NoTimestamp when Kafka has none (-1).
func recordTimestamp(r *kgo.Record) stream.Timestamp {
	ms := r.Timestamp.UnixMilli()
	if ms < 0 || r.Timestamp.IsZero() {
		return noTimestamp
	}
	return stream.Timestamp(ms)
}

// Serializer turns a value of the stream into the record to produce: it
// chooses the topic, key, value, headers and timestamp; the partition is
// chosen by franz-go's default partitioner (murmur2 of the key, as Kafka's
// Java producer; keyless records stick to a partition per batch). ts is
// the value's event timestamp (or stream.NoTimestamp); a record left
// without a timestamp gets ts, or the time of producing when there is
// none. A nil record is skipped.
type Serializer[T any] interface {
	Serialize(v T, ts stream.Timestamp) (*kgo.Record, error)
}

// SerializerFunc adapts a function to a Serializer.
type SerializerFunc[T any] func(v T, ts stream.Timestamp) (*kgo.Record, error)

// Serialize implements Serializer.
func (f SerializerFunc[T]) Serialize(v T, ts stream.Timestamp) (*kgo.Record, error) { return f(v, ts) }

// ValueSerializer writes fn(v) as the value of a record to topic, without a key.
func ValueSerializer[T any](topic string, fn func(v T) ([]byte, error)) Serializer[T] {
	return SerializerFunc[T](func(v T, _ stream.Timestamp) (*kgo.Record, error) {
		b, err := fn(v)
		if err != nil {
			return nil, err
		}
		return &kgo.Record{Topic: topic, Value: b}, nil
	})
}

// StringSerializer writes each string as a value to topic.
func StringSerializer(topic string) Serializer[string] {
	return ValueSerializer(topic, func(s string) ([]byte, error) { return []byte(s), nil })
}

// JSONSerializer writes each value as JSON to topic.
func JSONSerializer[T any](topic string) Serializer[T] {
	return ValueSerializer(topic, func(v T) ([]byte, error) { return json.Marshal(v) })
}

// ValueFormat is a format of package formats (JSON, Avro, Protobuf, JSON
// Schema) as the source uses it: it reads a record's value knowing its
// topic (the schema registry's subject is named after it).
type ValueFormat[T any] interface {
	Deserialize(topic string, value []byte) (T, error)
}

type formatValues[T any] struct{ f ValueFormat[T] }

func (d formatValues[T]) Deserialize(r *kgo.Record) (T, error) {
	return d.f.Deserialize(r.Topic, r.Value)
}

// FormatValues deserialises each record's value with a format. An error
// makes the record malformed, except one that says SkipRecord() (the
// format's ignore-parse-errors policy): that record is dropped and counted
// in SourceMetrics.Skipped, and one that says Unavailable() (the schema
// registry could not be asked), which fails the reader without making the
// record malformed: the job's restart strategy decides, and the record is
// read again after the restart. An error that has a RecordSchemaID() names the
// record's schema id in its text and in a dead-letter record's headers
// (HeaderDLQSchemaID).
func FormatValues[T any](f ValueFormat[T]) Deserializer[T] { return formatValues[T]{f} }

// FormatSerializer writes each value with a format as the value of a record
// to topic, without a key.
func FormatSerializer[T any](topic string, f interface {
	Serialize(topic string, v T) ([]byte, error)
}) Serializer[T] {
	return ValueSerializer(topic, func(v T) ([]byte, error) { return f.Serialize(topic, v) })
}

// skipped reports whether a deserialiser's error asks to skip the record.
func skipped(err error) bool {
	var s interface{ SkipRecord() bool }
	return errors.As(err, &s) && s.SkipRecord()
}

// unavailable reports whether a deserialiser's error says that what it
// needed to read the record (a schema registry) failed, not the record:
// such a record is neither malformed nor dead-lettered.
func unavailable(err error) bool {
	var u interface{ Unavailable() bool }
	return errors.As(err, &u) && u.Unavailable()
}

// schemaIDOf is the schema id an error names, 0 when none.
func schemaIDOf(err error) int {
	var s interface{ RecordSchemaID() int }
	if errors.As(err, &s) {
		return s.RecordSchemaID()
	}
	return 0
}
