package avro

import (
	"errors"
	"fmt"
	"io"

	hamba "github.com/hamba/avro/v2"
	"github.com/hamba/avro/v2/ocf"

	"github.com/sluice/sluice/formats"
)

// Codec is the compression of an object container file's blocks.
type Codec string

// The codecs of object container files (Avro's names).
const (
	Null    Codec = "null"
	Deflate Codec = "deflate"
	Snappy  Codec = "snappy"
)

// OCFOption configures an OCFWriter.
type OCFOption func(*ocfConfig)

type ocfConfig struct {
	codec       Codec
	blockLength int
}

// WithCodec compresses the file's blocks with c. Default Null.
func WithCodec(c Codec) OCFOption { return func(cfg *ocfConfig) { cfg.codec = c } }

// WithBlockLength sets how many records a block holds at most. Default
// 100 (hamba's).
func WithBlockLength(n int) OCFOption { return func(cfg *ocfConfig) { cfg.blockLength = n } }

// OCFWriter writes T as an Avro object container file (Flink's
// AvroWriters, a bulk format of the file sink): a header holding the
// writer schema and the codec, then blocks of records. Its methods
// AddElement and Finish are those of file.BulkWriter:
//
//	file.ForBulkFormat(dir, func(w io.Writer) (file.BulkWriter[User], error) {
//		return avro.NewOCFWriter[User](schema, w, avro.WithCodec(avro.Deflate))
//	})
//
// It is not safe for concurrent use; after an error it fails every call.
type OCFWriter[T any] struct {
	enc    *ocf.Encoder
	schema hamba.Schema
	err    error
}

// NewOCFWriter writes the header of a container file of schema to w.
// Values are Go structs (fields matched by their `avro` tags) or
// map[string]any.
func NewOCFWriter[T any](schema string, w io.Writer, opts ...OCFOption) (*OCFWriter[T], error) {
	cfg := ocfConfig{codec: Null}
	for _, o := range opts {
		o(&cfg)
	}
	var errs []error
	switch cfg.codec {
	case Null, Deflate, Snappy:
	default:
		errs = append(errs, fmt.Errorf("avro: container file: unknown codec %q (null, deflate, snappy)", cfg.codec))
	}
	if cfg.blockLength < 0 {
		errs = append(errs, fmt.Errorf("avro: container file: the block length must not be negative, got %d", cfg.blockLength))
	}
	s, err := parse(schema)
	if err := errors.Join(append(errs, err)...); err != nil {
		return nil, err
	}
	eopts := []ocf.EncoderFunc{ocf.WithCodec(ocf.CodecName(cfg.codec)), ocf.WithEncoderSchemaCache(&hamba.SchemaCache{})}
	if cfg.blockLength > 0 {
		eopts = append(eopts, ocf.WithBlockLength(cfg.blockLength))
	}
	enc, err := ocf.NewEncoderWithSchema(s, w, eopts...)
	if err != nil {
		return nil, fmt.Errorf("avro: container file: writing the header: %w", err)
	}
	return &OCFWriter[T]{enc: enc, schema: s}, nil
}

// AddElement writes v to the file's current block, writing the block out
// once it is full.
func (w *OCFWriter[T]) AddElement(v T) error {
	if w.err != nil {
		return w.err
	}
	if err := w.enc.Encode(v); err != nil {
		// The error's text may quote the value: only its type is named.
		w.err = &formats.Error{Format: "avro", Op: "encode", Kind: formats.ErrEncode, Err: err,
			Reason: fmt.Sprintf("container file: a Go %T does not match the schema %s, or writing failed", v, schemaName(w.schema))}
		return w.err
	}
	return nil
}

// Finish writes the last block; the file is then complete. It does not
// close the writer the file was written to.
func (w *OCFWriter[T]) Finish() error {
	if w.err != nil {
		return w.err
	}
	if err := w.enc.Close(); err != nil {
		w.err = fmt.Errorf("avro: container file: writing the last block: %w", err)
		return w.err
	}
	w.err = errors.New("avro: container file: finished")
	return nil
}

// OCFReader reads the records of an Avro object container file (a bulk
// format of the file source). Its Read method is file.BulkReader's:
//
//	file.ReadBulk(env, func(r io.Reader) (file.BulkReader[User], error) {
//		return avro.NewOCFReader[User](schema, r)
//	}, paths...)
//
// With a reader schema, records are read by Avro's resolution of the
// file's writer schema (from its header) against it: a field the writer
// lacks takes the reader's default, a field the reader lacks is skipped,
// ints widen. A writer schema the reader schema cannot read fails
// NewOCFReader with formats.ErrIncompatible. Without one (""), records are
// read with the writer schema, into structs by field name or into
// map[string]any. Errors name what is wrong, never the file's content.
type OCFReader[T any] struct {
	dec    *ocf.Decoder
	writer hamba.Schema
	err    error
}

// NewOCFReader reads the header of a container file from r.
func NewOCFReader[T any](readerSchema string, r io.Reader) (rd *OCFReader[T], err error) {
	defer recoverCorrupt(&err)
	api := &resolvingAPI{API: hamba.DefaultConfig}
	if readerSchema != "" {
		if api.reader, err = parse(readerSchema); err != nil {
			return nil, err
		}
	}
	dec, err := ocf.NewDecoder(r, ocf.WithDecoderSchemaCache(&hamba.SchemaCache{}), ocf.WithDecoderConfig(api))
	if err != nil {
		return nil, &formats.Error{Format: "avro", Op: "decode", Kind: formats.ErrMalformed, Err: err,
			Reason: "not an Avro container file, or its header is corrupt: " + err.Error()}
	}
	if api.err != nil {
		return nil, &formats.Error{Format: "avro", Op: "decode", Kind: formats.ErrIncompatible, Err: api.err,
			Reason: "the reader schema cannot read the container file's writer schema: " + api.err.Error()}
	}
	return &OCFReader[T]{dec: dec, writer: dec.Schema()}, nil
}

// resolvingAPI is hamba's API but for its decoders, which read with the
// resolution of their (writer) schema against the reader schema: hamba's
// container decoder makes its one value decoder here, with the schema of
// the file's header.
type resolvingAPI struct {
	hamba.API
	reader hamba.Schema // nil: read with the writer schema
	err    error        // the resolution's failure
}

func (a *resolvingAPI) NewDecoder(writer hamba.Schema, r io.Reader) *hamba.Decoder {
	s := writer
	if a.reader != nil && a.reader.Fingerprint() != writer.Fingerprint() {
		resolved, err := hamba.NewSchemaCompatibility().Resolve(a.reader, writer)
		if err != nil {
			a.err = err
		} else {
			s = resolved
		}
	}
	return a.API.NewDecoder(s, r)
}

// WriterSchema is the schema in the file's header.
func (r *OCFReader[T]) WriterSchema() hamba.Schema { return r.writer }

// Read returns the next record, io.EOF after the last.
func (r *OCFReader[T]) Read() (v T, err error) {
	if r.err != nil {
		return v, r.err
	}
	defer func() {
		if err != nil {
			r.err = err
		}
	}()
	defer recoverCorrupt(&err) // runs first
	if !r.dec.HasNext() {
		if err := r.dec.Error(); err != nil {
			return v, corrupt(err)
		}
		return v, io.EOF
	}
	if err := r.dec.Decode(&v); err != nil {
		return v, corrupt(err)
	}
	return v, nil
}

func corrupt(err error) error {
	// hamba's decode errors name the schema's types and lengths, not values.
	return &formats.Error{Format: "avro", Op: "decode", Kind: formats.ErrMalformed, Err: err,
		Reason: "invalid container file: " + err.Error()}
}

// recoverCorrupt turns a panic of hamba's decoder on a corrupt file (a
// negative block size makes a slice of negative length) into an error.
func recoverCorrupt(err *error) {
	if p := recover(); p != nil {
		*err = &formats.Error{Format: "avro", Op: "decode", Kind: formats.ErrMalformed,
			Reason: fmt.Sprintf("invalid container file (the decoder failed: %v)", p)}
	}
}
