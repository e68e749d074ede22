package file

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/stream"
)

// pollBatch bounds the lines the reader emits per PollNext.
const pollBatch = 256

// Split is one text file and the byte offset reached in it.
type Split struct {
	Path   string
	Offset int64
}

// SplitID implements stream.Split.
func (s Split) SplitID() string { return s.Path }

// textFileSource reads the lines of files, each made a T by decode.
type textFileSource[T any] struct {
	paths []string
	// decode makes a record of a line (without its end of line) that
	// starts at byte offset of path; skip drops the line.
	decode func(path string, offset int64, line string) (v T, skip bool, err error)
}

func (s *textFileSource[T]) Boundedness() stream.Boundedness { return stream.Bounded }

func (s *textFileSource[T]) CreateEnumerator(ctx stream.SplitEnumeratorContext[Split]) (stream.SplitEnumerator[Split], error) {
	splits := make([]Split, len(s.paths))
	for i, p := range s.paths {
		splits[i] = Split{Path: p}
	}
	return stream.NewStaticEnumerator(ctx, splits), nil
}

// RestoreEnumeratorState implements stream.RestorableSource.
func (s *textFileSource[T]) RestoreEnumeratorState(ctx stream.SplitEnumeratorContext[Split], state []byte) (stream.SplitEnumerator[Split], error) {
	return stream.RestoreStaticEnumerator(ctx, state)
}

func (s *textFileSource[T]) CreateReader(ctx stream.SourceReaderContext) (stream.SourceReader[T, Split], error) {
	return &textFileReader[T]{ctx: ctx, decode: s.decode}, nil
}

type textFileReader[T any] struct {
	ctx    stream.SourceReaderContext
	decode func(path string, offset int64, line string) (T, bool, error)
	splits []Split
	noMore bool
	asked  bool
	f      io.ReadCloser
	r      *bufio.Reader
}

func (r *textFileReader[T]) Start(context.Context) error {
	r.ctx.SendSplitRequest()
	r.asked = true
	return nil
}
func (r *textFileReader[T]) AddSplits(s []Split) error {
	r.splits = append(r.splits, s...)
	r.asked = false
	return nil
}
func (r *textFileReader[T]) NotifyNoMoreSplits()        { r.noMore = true }
func (r *textFileReader[T]) Available() <-chan struct{} { return nil }
func (r *textFileReader[T]) SnapshotState(int64) ([]Split, error) {
	return append([]Split(nil), r.splits...), nil
}

func (r *textFileReader[T]) Close() error {
	if r.f != nil {
		err := r.f.Close()
		r.f = nil
		return err
	}
	return nil
}

func (r *textFileReader[T]) PollNext(_ context.Context, out stream.ReaderOutput[T]) (stream.InputStatus, error) {
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
	if r.f == nil {
		f, err := openAt(r.ctx.FileSystems(), sp.Path, sp.Offset)
		if err != nil {
			return stream.EndOfInput, fmt.Errorf("file: text file source: %w", err)
		}
		r.f, r.r = f, bufio.NewReaderSize(f, 64<<10)
	}
	so := out.ForSplit(sp.SplitID())
	for i := 0; i < pollBatch; i++ {
		line, err := r.r.ReadString('\n')
		if len(line) > 0 {
			at := sp.Offset
			sp.Offset += int64(len(line))
			v, skip, err := r.decode(sp.Path, at, trimEOL(line))
			if err != nil {
				return stream.EndOfInput, err
			}
			if !skip {
				so.Collect(v, stream.NoTimestamp)
			}
		}
		if errors.Is(err, io.EOF) {
			out.ReleaseSplit(sp.SplitID())
			r.splits = r.splits[1:]
			if cerr := r.Close(); cerr != nil {
				return stream.EndOfInput, fmt.Errorf("file: text file source: closing %s: %w", sp.Path, cerr)
			}
			r.ctx.SendSplitRequest()
			r.asked = true
			return stream.MoreAvailable, nil
		}
		if err != nil {
			return stream.EndOfInput, fmt.Errorf("file: text file source: reading %s at byte %d: %w", sp.Path, sp.Offset, err)
		}
	}
	return stream.MoreAvailable, nil
}

// isURI reports whether p names a file by URI (scheme://...) rather than
// as a local path.
func isURI(p string) bool {
	u, err := url.Parse(p)
	return err == nil && u.Scheme != ""
}

// openAt opens a file of a text source at a byte offset: a URI in
// fileSystems, a plain path locally.
func openAt(fileSystems *fs.Resolver, p string, offset int64) (io.ReadCloser, error) {
	var f io.ReadCloser
	var err error
	if isURI(p) {
		var fsys fs.FileSystem
		var name string
		if fsys, name, err = fileSystems.For(p); err != nil {
			return nil, err
		}
		f, err = fsys.Open(name)
	} else {
		f, err = os.Open(p)
	}
	if err != nil {
		return nil, err
	}
	if offset == 0 {
		return f, nil
	}
	if sk, ok := f.(io.Seeker); ok {
		_, err = sk.Seek(offset, io.SeekStart)
	} else {
		_, err = io.CopyN(io.Discard, f, offset)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("seeking %s to %d: %w", p, offset, err)
	}
	return f, nil
}

func trimEOL(s string) string {
	if n := len(s); n > 0 && s[n-1] == '\n' {
		s = s[:n-1]
		if n := len(s); n > 0 && s[n-1] == '\r' {
			s = s[:n-1]
		}
	}
	return s
}

// ReadTextFile is a bounded source of the lines of the given files (one
// split per file). A path is a local path or a URI of the job's file
// systems (file://, hdfs:// in a cluster). Missing local files are
// reported at Execute; a URI is opened by the reader that gets its split.
func ReadTextFile(env *stream.Environment, paths ...string) stream.DataStream[string] {
	checkPaths(env, "text file source", paths)
	src := &textFileSource[string]{paths: append([]string(nil), paths...),
		decode: func(_ string, _ int64, line string) (string, bool, error) { return line, false, nil }}
	return stream.FromSource[string, Split](env, src, stream.NoWatermarks[string](), "Text File Source")
}

// NewLineSource is the source ReadTextFile and ReadFormatted build, for a
// front end that drives stream's connector contracts itself (the SQL
// filesystem connector runs its reader): the lines of the given files, one
// split per file, each line (without its end of line; it starts at byte
// offset of path) made a record by decode, which may skip it. Paths are
// as ReadTextFile's.
func NewLineSource[T any](paths []string, decode func(path string, offset int64, line string) (v T, skip bool, err error)) stream.Source[T, Split] {
	return &textFileSource[T]{paths: append([]string(nil), paths...), decode: decode}
}

// LineFormat is a format of package formats (json, json-schema...) as
// the file source reads it: one record per line. The topic is empty.
type LineFormat[T any] interface {
	Deserialize(topic string, data []byte) (T, error)
}

// DeserializationError is a line the format rejected. It names the file
// and the byte offset where the line starts, never the line's content.
type DeserializationError struct {
	Path   string
	Offset int64
	Err    error // the format's error
}

func (e *DeserializationError) Error() string {
	return fmt.Sprintf("file: malformed record in %s at byte %d: %v", e.Path, e.Offset, e.Err)
}

// Unwrap returns ErrMalformedRecord and the format's error.
func (e *DeserializationError) Unwrap() []error { return []error{ErrMalformedRecord, e.Err} }

// ErrMalformedRecord: a line of a formatted file source could not be read.
var ErrMalformedRecord = errors.New("file: malformed record")

// ReadFormatted is a bounded source of the records of the given files, one
// per line, read with a format (Flink's file source with a format such as
// json): empty lines are skipped, a line the format skips (its
// ignore-parse-errors policy: an error with SkipRecord() true) is dropped,
// and any other error fails the job with a *DeserializationError naming
// the file and byte offset. Paths are as ReadTextFile's.
func ReadFormatted[T any](env *stream.Environment, f LineFormat[T], paths ...string) stream.DataStream[T] {
	checkPaths(env, "formatted file source", paths)
	src := &textFileSource[T]{paths: append([]string(nil), paths...),
		decode: func(path string, offset int64, line string) (T, bool, error) {
			var zero T
			if line == "" {
				return zero, true, nil
			}
			v, err := f.Deserialize("", []byte(line))
			if err != nil {
				var s interface{ SkipRecord() bool }
				if errors.As(err, &s) && s.SkipRecord() {
					return zero, true, nil
				}
				return zero, false, &DeserializationError{Path: path, Offset: offset, Err: err}
			}
			return v, false, nil
		}}
	return stream.FromSource[T, Split](env, src, stream.NoWatermarks[T](), "Formatted File Source")
}

func checkPaths(env *stream.Environment, what string, paths []string) {
	for _, p := range paths {
		if isURI(p) {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			env.ReportBuildError(fmt.Errorf("file: %s: %w", what, err))
		}
	}
	if len(paths) == 0 {
		env.ReportBuildError(fmt.Errorf("file: %s: no files given", what))
	}
}
