package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/stream"
)

// BulkWriter writes the records of one part file of a bulk format (Flink's
// BulkWriter), such as an Avro object container file
// (formats/avro.NewOCFWriter). The sink makes one per part file over the
// part's bytes; Finish is called once, before the part is closed, and must
// leave a complete file (its trailer, its last block) without closing the
// writer it was given. An abandoned part (a failure before its checkpoint)
// is deleted without Finish.
type BulkWriter[T any] interface {
	AddElement(v T) error
	Finish() error
}

// BulkWriterFactory makes the BulkWriter of a new part file writing to w.
type BulkWriterFactory[T any] func(w io.Writer) (BulkWriter[T], error)

type bulkPart[T any] struct{ w BulkWriter[T] }

func (p bulkPart[T]) add(v T) error { return p.w.AddElement(v) }
func (p bulkPart[T]) finish() error { return p.w.Finish() }

// OnCheckpointRollingPolicy rolls parts only at checkpoints and at the end
// of input (Flink's OnCheckpointRollingPolicy), the bulk sink's default: a
// bulk part cannot be resumed, so it never stays open across a checkpoint
// whatever the policy. A bulk sink may still roll by size and time as well
// with DefaultRollingPolicy (its size counts the bytes the BulkWriter has
// handed to the file, not those it buffers).
type OnCheckpointRollingPolicy struct{}

// ShouldRollOnEvent implements RollingPolicy.
func (OnCheckpointRollingPolicy) ShouldRollOnEvent(PartFileInfo) bool { return false }

// ShouldRollOnProcessingTime implements RollingPolicy.
func (OnCheckpointRollingPolicy) ShouldRollOnProcessingTime(PartFileInfo, int64) bool { return false }

// BulkSink is a bulk-format file sink; build it with ForBulkFormat and
// write a stream to it with SinkToCommitting. It writes, rolls, buckets
// and commits part files as RowSink does, each part's content written by a
// BulkWriter of its own. Its With methods return a modified copy.
type BulkSink[T any] struct{ sinkConfig[T] }

// ForBulkFormat returns a bulk-format file sink writing records under
// basePath, each part file written by a BulkWriter from factory. Its
// defaults are ForRowFormat's but for the rolling policy,
// OnCheckpointRollingPolicy.
//
//	sink := file.ForBulkFormat(dir, func(w io.Writer) (file.BulkWriter[User], error) {
//		return avro.NewOCFWriter[User](schema, w, avro.WithCodec(avro.Deflate))
//	})
//	stream.SinkToCommitting(users, sink)
func ForBulkFormat[T any](basePath string, factory BulkWriterFactory[T]) *BulkSink[T] {
	var errs []error
	if factory == nil {
		errs = append(errs, errors.New("file: sink: the bulk writer factory is nil"))
	}
	return &BulkSink[T]{newSinkConfig(basePath, RollingPolicy(OnCheckpointRollingPolicy{}), func(w io.Writer) (partEncoder[T], error) {
		bw, err := factory(w)
		if err != nil {
			return nil, err
		}
		if bw == nil {
			return nil, errors.New("the bulk writer factory returned no writer")
		}
		return bulkPart[T]{bw}, nil
	}, errs...)}
}

// WithFileSystem writes through fsys, the base path being a path of fsys,
// instead of resolving the base path in the job's file systems.
func (s *BulkSink[T]) WithFileSystem(fsys fs.FileSystem) *BulkSink[T] {
	c := *s
	c.fsys = fsys
	return &c
}

// WithRollingPolicy sets when parts roll besides checkpoints.
func (s *BulkSink[T]) WithRollingPolicy(p RollingPolicy) *BulkSink[T] {
	c := *s
	c.policy = p
	return &c
}

// WithBucketAssigner sets how records are bucketed.
func (s *BulkSink[T]) WithBucketAssigner(a BucketAssigner[T]) *BulkSink[T] {
	c := *s
	c.assigner = a
	return &c
}

// WithOutputFileConfig sets the part files' prefix and suffix (".avro"...).
func (s *BulkSink[T]) WithOutputFileConfig(cfg OutputFileConfig) *BulkSink[T] {
	c := *s
	c.names = cfg
	return &c
}

// WithBucketCheckInterval sets how often time-based rolling is checked
// (default DefaultBucketCheckInterval, one minute).
func (s *BulkSink[T]) WithBucketCheckInterval(d time.Duration) *BulkSink[T] {
	c := *s
	c.checkInterval = d
	return &c
}

// BulkReader reads the records of one bulk-format file, such as an Avro
// object container file (formats/avro.NewOCFReader): Read returns the next
// record, io.EOF after the last one.
type BulkReader[T any] interface {
	Read() (T, error)
}

// BulkReaderFactory makes the BulkReader of a file from its bytes, from
// the start.
type BulkReaderFactory[T any] func(r io.Reader) (BulkReader[T], error)

// BulkSplit is one bulk-format file and the number of its records read.
type BulkSplit struct {
	Path    string
	Records int64
}

// SplitID implements stream.Split.
func (s BulkSplit) SplitID() string { return s.Path }

// ErrUnreadableFile: a bulk-format file could not be read: it is corrupt
// (formats.ErrMalformed for Avro) or its records cannot be read as T (a
// writer schema the reader's cannot resolve: formats.ErrIncompatible).
var ErrUnreadableFile = errors.New("file: unreadable file")

// BulkReadError is a failure to read a bulk-format file. It names the
// file and the record where reading failed, never the file's content.
type BulkReadError struct {
	Path   string
	Record int64 // records before the failure
	Err    error // the reader's error
}

func (e *BulkReadError) Error() string {
	return fmt.Sprintf("file: bulk file source: %s at record %d: %v", e.Path, e.Record, e.Err)
}

// Unwrap returns ErrUnreadableFile and the reader's error.
func (e *BulkReadError) Unwrap() []error { return []error{ErrUnreadableFile, e.Err} }

// ReadBulk is a bounded source of the records of the given bulk-format
// files (Flink's FileSource.forBulkFileFormat), one split per file, each
// read from its start by a BulkReader from factory. A split's position is
// the number of its records read: a job restored from a checkpoint or
// savepoint reopens a file it had begun and skips the records it had read,
// so each record is read once. A file that cannot be opened or read fails
// the job; a read failure is a *BulkReadError naming the file and record.
// Paths are as ReadTextFile's.
func ReadBulk[T any](env *stream.Environment, factory BulkReaderFactory[T], paths ...string) stream.DataStream[T] {
	checkPaths(env, "bulk file source", paths)
	if factory == nil {
		env.ReportBuildError(errors.New("file: bulk file source: the bulk reader factory is nil"))
	}
	src := &bulkFileSource[T]{paths: append([]string(nil), paths...), factory: factory}
	return stream.FromSource[T, BulkSplit](env, src, stream.NoWatermarks[T](), "Bulk File Source")
}

type bulkFileSource[T any] struct {
	paths   []string
	factory BulkReaderFactory[T]
}

func (s *bulkFileSource[T]) Boundedness() stream.Boundedness { return stream.Bounded }

func (s *bulkFileSource[T]) CreateEnumerator(ctx stream.SplitEnumeratorContext[BulkSplit]) (stream.SplitEnumerator[BulkSplit], error) {
	splits := make([]BulkSplit, len(s.paths))
	for i, p := range s.paths {
		splits[i] = BulkSplit{Path: p}
	}
	return stream.NewStaticEnumerator(ctx, splits), nil
}

// RestoreEnumeratorState implements stream.RestorableSource.
func (s *bulkFileSource[T]) RestoreEnumeratorState(ctx stream.SplitEnumeratorContext[BulkSplit], state []byte) (stream.SplitEnumerator[BulkSplit], error) {
	return stream.RestoreStaticEnumerator(ctx, state)
}

func (s *bulkFileSource[T]) CreateReader(ctx stream.SourceReaderContext) (stream.SourceReader[T, BulkSplit], error) {
	return &bulkFileReader[T]{ctx: ctx, factory: s.factory}, nil
}

type bulkFileReader[T any] struct {
	ctx     stream.SourceReaderContext
	factory BulkReaderFactory[T]
	splits  []BulkSplit
	noMore  bool
	asked   bool
	f       io.ReadCloser
	r       BulkReader[T]
}

func (r *bulkFileReader[T]) Start(context.Context) error {
	r.ctx.SendSplitRequest()
	r.asked = true
	return nil
}

func (r *bulkFileReader[T]) AddSplits(s []BulkSplit) error {
	r.splits = append(r.splits, s...)
	r.asked = false
	return nil
}

func (r *bulkFileReader[T]) NotifyNoMoreSplits()        { r.noMore = true }
func (r *bulkFileReader[T]) Available() <-chan struct{} { return nil }

func (r *bulkFileReader[T]) SnapshotState(int64) ([]BulkSplit, error) {
	return append([]BulkSplit(nil), r.splits...), nil
}

func (r *bulkFileReader[T]) Close() error {
	r.r = nil
	if r.f != nil {
		err := r.f.Close()
		r.f = nil
		return err
	}
	return nil
}

// open opens sp's file and skips the records read before a restore.
func (r *bulkFileReader[T]) open(sp *BulkSplit) error {
	f, err := openAt(r.ctx.FileSystems(), sp.Path, 0)
	if err != nil {
		return fmt.Errorf("file: bulk file source: %w", err)
	}
	br, err := r.factory(f)
	if err != nil {
		f.Close()
		return &BulkReadError{Path: sp.Path, Err: err}
	}
	r.f, r.r = f, br
	for i := int64(0); i < sp.Records; i++ {
		if _, err := br.Read(); err != nil {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("the file has %d records, fewer than the %d read before the restore", i, sp.Records)
			}
			return &BulkReadError{Path: sp.Path, Record: i, Err: err}
		}
	}
	return nil
}

func (r *bulkFileReader[T]) PollNext(_ context.Context, out stream.ReaderOutput[T]) (stream.InputStatus, error) {
	if len(r.splits) == 0 {
		if r.noMore {
			return stream.EndOfInput, nil
		}
		if !r.asked {
			r.ctx.SendSplitRequest()
			r.asked = true
		}
		return stream.NothingAvailable, nil
	}
	sp := &r.splits[0]
	if r.r == nil {
		if err := r.open(sp); err != nil {
			return stream.EndOfInput, err
		}
	}
	so := out.ForSplit(sp.SplitID())
	for i := 0; i < pollBatch; i++ {
		v, err := r.r.Read()
		if errors.Is(err, io.EOF) {
			out.ReleaseSplit(sp.SplitID())
			path := sp.Path
			r.splits = r.splits[1:]
			if cerr := r.Close(); cerr != nil {
				return stream.EndOfInput, fmt.Errorf("file: bulk file source: closing %s: %w", path, cerr)
			}
			r.ctx.SendSplitRequest()
			r.asked = true
			return stream.MoreAvailable, nil
		}
		if err != nil {
			return stream.EndOfInput, &BulkReadError{Path: sp.Path, Record: sp.Records, Err: err}
		}
		sp.Records++
		so.Collect(v, stream.NoTimestamp)
	}
	return stream.MoreAvailable, nil
}
