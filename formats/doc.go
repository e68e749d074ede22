// Package formats holds what the formats of records have in common: the
// serialisation contract the connectors use, and the errors a format
// returns. The formats themselves are its subpackages, named as Flink's
// format options are (format = 'json', 'avro', 'protobuf', 'json-schema'):
//
//   - formats/json: JSON into Go structs and back, with Flink's
//     fail-on-missing-field and ignore-parse-errors policies;
//   - formats/registry: the schema registry client (Confluent API, through
//     franz-go's pkg/sr) and its wire format: a magic byte 0, the schema id
//     as 4 bytes big-endian, the payload;
//   - formats/avro, formats/protobuf, formats/jsonschema: the registry's
//     three schema types in its wire format.
//
// A format is a Deserializer and a Serializer over a record's bytes. The
// topic is an input because the registry's subject is named after it
// ("<topic>-value", its TopicNameStrategy). The Kafka connector takes them
// with kafka.FormatValues and kafka.FormatSerializer.
//
// # Errors
//
// Every error of a format is an *Error: it names the format, the schema id
// (when the record has one) and a safe description of what is wrong —
// never the payload, nor a fragment of it, so that the error text can go to
// a log or a dead-letter header. It unwraps to one of the sentinels below.
// A format that skips a record (ignore-parse-errors) returns ErrSkip.
package formats
