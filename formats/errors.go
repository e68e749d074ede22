package formats

import (
	"errors"
	"fmt"
)

// Sentinels that an *Error unwraps to.
var (
	// ErrMalformed: the bytes are not a record of the format (bad syntax,
	// truncated, a value of the wrong type).
	ErrMalformed = errors.New("formats: malformed record")
	// ErrMissingField: a field the reader requires is absent
	// (fail-on-missing-field).
	ErrMissingField = errors.New("formats: missing field")
	// ErrInvalid: the record does not validate against its schema.
	ErrInvalid = errors.New("formats: record does not match its schema")
	// ErrNoMagicByte: a record expected in the registry's wire format does
	// not start with the magic byte 0 and a schema id.
	ErrNoMagicByte = errors.New("formats: no schema registry magic byte")
	// ErrUnknownSchema: the registry has no schema of the record's id (or
	// could not be asked).
	ErrUnknownSchema = errors.New("formats: unknown schema id")
	// ErrIncompatible: the registry refused to register a schema: it breaks
	// the subject's compatibility rule (BACKWARD, FORWARD, FULL...).
	ErrIncompatible = errors.New("formats: schema incompatible with the subject's earlier versions")
	// ErrRegistry: the registry failed or refused otherwise.
	ErrRegistry = errors.New("formats: schema registry")
	// ErrUnavailable: the registry could not be asked for a record's schema
	// (unreachable, a timeout, a server error, credentials refused): the
	// record is not at fault.
	ErrUnavailable = errors.New("formats: schema registry unavailable")
	// ErrEncode: a value could not be written in the format.
	ErrEncode = errors.New("formats: value cannot be encoded")
	// ErrNoValue: a record has no bytes (a Kafka tombstone).
	ErrNoValue = errors.New("formats: record has no value")
)

// ErrSkip is returned for a record the format's policy skips
// (ignore-parse-errors): the connector drops the record without counting it
// malformed. Its SkipRecord method says so to connectors that do not import
// this package.
var ErrSkip error = skipError{}

type skipError struct{}

func (skipError) Error() string    { return "formats: record skipped (ignore-parse-errors)" }
func (skipError) SkipRecord() bool { return true }

// Error is a record a format could not read or write.
type Error struct {
	Format string // "json", "avro", "protobuf", "json-schema"
	Op     string // "decode" or "encode"
	// SchemaID is the registry's id of the record's schema; 0 when the
	// record has none (ids start at 1).
	SchemaID int
	// Subject is the registry subject, when one is involved.
	Subject string
	// Reason says what is wrong without quoting the payload.
	Reason string
	// Kind is the sentinel the error unwraps to (ErrMalformed...).
	Kind error
	// Err is the underlying error, for errors.As; its text may quote the
	// payload, so Error does not show it.
	Err error
}

func (e *Error) Error() string {
	s := "formats: " + e.Format + " " + e.Op
	if e.Subject != "" {
		s += fmt.Sprintf(" (subject %q)", e.Subject)
	}
	if e.SchemaID != 0 {
		s += fmt.Sprintf(" (schema id %d)", e.SchemaID)
	}
	return s + ": " + e.Reason
}

// Unwrap returns Kind and Err.
func (e *Error) Unwrap() []error {
	errs := make([]error, 0, 2)
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// Unavailable reports whether the record could not be read or written
// because the schema registry failed (ErrUnavailable), not because of the
// record; the Kafka connector then fails the reader instead of
// dead-lettering the record.
func (e *Error) Unavailable() bool { return errors.Is(e.Kind, ErrUnavailable) }

// RecordSchemaID returns the schema id (0: none); the Kafka connector puts
// it in a dead-letter record's headers.
func (e *Error) RecordSchemaID() int { return e.SchemaID }

// Deserializer reads a record's bytes. topic is where the record was read
// from (formats that use the registry derive the subject from it).
type Deserializer[T any] interface {
	Deserialize(topic string, data []byte) (T, error)
}

// Serializer writes a value as a record's bytes for topic.
type Serializer[T any] interface {
	Serialize(topic string, v T) ([]byte, error)
}
