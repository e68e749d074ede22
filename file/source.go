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

type textFileSource struct{ paths []string }

func (s *textFileSource) Boundedness() stream.Boundedness { return stream.Bounded }

func (s *textFileSource) CreateEnumerator(ctx stream.SplitEnumeratorContext[Split]) (stream.SplitEnumerator[Split], error) {
	splits := make([]Split, len(s.paths))
	for i, p := range s.paths {
		splits[i] = Split{Path: p}
	}
	return stream.NewStaticEnumerator(ctx, splits), nil
}

// RestoreEnumeratorState implements stream.RestorableSource.
func (s *textFileSource) RestoreEnumeratorState(ctx stream.SplitEnumeratorContext[Split], state []byte) (stream.SplitEnumerator[Split], error) {
	return stream.RestoreStaticEnumerator(ctx, state)
}

func (s *textFileSource) CreateReader(ctx stream.SourceReaderContext) (stream.SourceReader[string, Split], error) {
	return &textFileReader{ctx: ctx}, nil
}

type textFileReader struct {
	ctx    stream.SourceReaderContext
	splits []Split
	noMore bool
	asked  bool
	f      io.ReadCloser
	r      *bufio.Reader
}

func (r *textFileReader) Start(context.Context) error {
	r.ctx.SendSplitRequest()
	r.asked = true
	return nil
}
func (r *textFileReader) AddSplits(s []Split) error {
	r.splits = append(r.splits, s...)
	r.asked = false
	return nil
}
func (r *textFileReader) NotifyNoMoreSplits()        { r.noMore = true }
func (r *textFileReader) Available() <-chan struct{} { return nil }
func (r *textFileReader) SnapshotState(int64) ([]Split, error) {
	return append([]Split(nil), r.splits...), nil
}

func (r *textFileReader) Close() error {
	if r.f != nil {
		err := r.f.Close()
		r.f = nil
		return err
	}
	return nil
}

func (r *textFileReader) PollNext(_ context.Context, out stream.ReaderOutput[string]) (stream.InputStatus, error) {
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
			sp.Offset += int64(len(line))
			so.Collect(trimEOL(line), stream.NoTimestamp)
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
	for _, p := range paths {
		if isURI(p) {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			env.ReportBuildError(fmt.Errorf("file: text file source: %w", err))
		}
	}
	if len(paths) == 0 {
		env.ReportBuildError(fmt.Errorf("file: text file source: no files given"))
	}
	return stream.FromSource[string, Split](env, &textFileSource{paths: append([]string(nil), paths...)}, stream.NoWatermarks[string](), "Text File Source")
}
