// Package file is the file connector: a bounded source of the lines of
// text files (ReadTextFile, ReadFormatted) or of the records of bulk-format
// files (ReadBulk), and a row-format and a bulk-format file sink
// (ForRowFormat and ForBulkFormat, Flink's FileSink.forRowFormat and
// forBulkFormat), over local paths and the URIs of the job's file systems
// (file://, hdfs:// on a cluster).
package file

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/stream"
)

// A row-format file sink (Flink's FileSink.forRowFormat).
//
// Records are encoded one after the other into part files, in buckets
// (sub-directories of the base path) chosen per record by a BucketAssigner.
// Each subtask writes at most one part file per bucket at a time. A part
// file is first written in progress under a hidden name,
//
//	<bucket>/.<prefix>-<uuid>-<subtask>-<counter><suffix>.inprogress.<uuid>
//
// and rolled (closed) by the rolling policy: when it has reached its
// maximum size, when it is older than the rollover interval, or when it has
// not been written to for the inactivity interval. A rolled part is
// pending: it is published under its final name,
//
//	<bucket>/<prefix>-<uuid>-<subtask>-<counter><suffix>
//
// only when it is committed. The sink is a two-phase-commit sink: at a
// checkpoint (and at the end of input) every in-progress part is rolled,
// and the pending parts become the checkpoint's committables; they are
// renamed to their final names once the checkpoint is complete. Readers
// that skip hidden files (names starting with "." or "_", as Hadoop's and
// Flink's inputs do) therefore see only committed data, exactly once. As in
// Flink, nothing is published by an unbounded job without checkpoints.
//
// Processing time comes from the task's clock, and part files are written
// through an fs.FileSystem (the local filesystem by default).

// Defaults of the file sink (Flink's DefaultRollingPolicy and bucket
// check interval).
const (
	DefaultMaxPartSize          int64 = 128 << 20
	DefaultRolloverInterval           = 60 * time.Second
	DefaultInactivityInterval         = 60 * time.Second
	DefaultBucketCheckInterval        = 60 * time.Second
	DefaultDateTimeBucketFormat       = "yyyy-MM-dd--HH"
)

// Committable is a pending part file: the committer renames
// PendingPath to FinalPath.
type Committable struct {
	PendingPath string
	FinalPath   string
}

// PartFileInfo describes an in-progress part file to a RollingPolicy.
type PartFileInfo struct {
	BucketID string
	// CreationTime and LastUpdateTime are processing times (epoch ms).
	CreationTime   int64
	LastUpdateTime int64
	// Size is the number of bytes written to the part.
	Size int64
}

// RollingPolicy decides when an in-progress part file is rolled. Parts
// are always rolled at checkpoints and at the end of input.
type RollingPolicy interface {
	// ShouldRollOnEvent is asked before a record is written to part.
	ShouldRollOnEvent(part PartFileInfo) bool
	// ShouldRollOnProcessingTime is asked every bucket check interval.
	ShouldRollOnProcessingTime(part PartFileInfo, now int64) bool
}

// DefaultRollingPolicy rolls a part once it has reached MaxPartSize bytes
// (so a part exceeds it by less than one record), once it is older than
// RolloverInterval, or once it has not been written to for
// InactivityInterval. A zero field takes its default (128 MiB, 60 s, 60 s);
// a negative one disables that condition.
type DefaultRollingPolicy struct {
	MaxPartSize        int64
	RolloverInterval   time.Duration
	InactivityInterval time.Duration
}

func (p DefaultRollingPolicy) withDefaults() DefaultRollingPolicy {
	if p.MaxPartSize == 0 {
		p.MaxPartSize = DefaultMaxPartSize
	}
	if p.RolloverInterval == 0 {
		p.RolloverInterval = DefaultRolloverInterval
	}
	if p.InactivityInterval == 0 {
		p.InactivityInterval = DefaultInactivityInterval
	}
	return p
}

// ShouldRollOnEvent implements RollingPolicy.
func (p DefaultRollingPolicy) ShouldRollOnEvent(part PartFileInfo) bool {
	p = p.withDefaults()
	return p.MaxPartSize > 0 && part.Size >= p.MaxPartSize
}

// ShouldRollOnProcessingTime implements RollingPolicy.
func (p DefaultRollingPolicy) ShouldRollOnProcessingTime(part PartFileInfo, now int64) bool {
	p = p.withDefaults()
	if p.RolloverInterval > 0 && now-part.CreationTime >= p.RolloverInterval.Milliseconds() {
		return true
	}
	return p.InactivityInterval > 0 && now-part.LastUpdateTime >= p.InactivityInterval.Milliseconds()
}

// BucketContext is what a BucketAssigner may use besides the record.
type BucketContext struct {
	// CurrentProcessingTime is the task clock's time (epoch ms).
	CurrentProcessingTime int64
	// Timestamp is the record's event timestamp, or NoTimestamp.
	Timestamp int64
}

// BucketAssigner chooses the bucket of each record: a relative directory
// under the sink's base path ("" is the base path itself; "a/b" nests).
type BucketAssigner[T any] interface {
	BucketID(v T, ctx BucketContext) string
}

// BucketAssignerFunc adapts a function to a BucketAssigner.
type BucketAssignerFunc[T any] func(v T, ctx BucketContext) string

// BucketID implements BucketAssigner.
func (f BucketAssignerFunc[T]) BucketID(v T, ctx BucketContext) string { return f(v, ctx) }

// BasePathBucketAssigner writes every record directly under the base path
// (Flink's BasePathBucketAssigner).
func BasePathBucketAssigner[T any]() BucketAssigner[T] {
	return BucketAssignerFunc[T](func(T, BucketContext) string { return "" })
}

// DateTimeBucketAssigner buckets records by the processing time at which
// they are written, formatted with a pattern in the notation of Java's
// DateTimeFormatter (Flink's DateTimeBucketAssigner; its default is
// DefaultDateTimeBucketFormat, "yyyy-MM-dd--HH", one bucket per hour).
// Supported letters: y (year; yy: two digits), M (month; MMM, MMMM:
// name), d (day), H (hour 0-23), m (minute), s (second), S (fraction of a
// second); text in single quotes and characters other than letters are
// copied. loc nil means the local time zone, as in Flink.
func DateTimeBucketAssigner[T any](format string, loc *time.Location) (BucketAssigner[T], error) {
	f, err := parseDateTimePattern(format)
	if err != nil {
		return nil, err
	}
	if loc == nil {
		loc = time.Local
	}
	return &dateTimeAssigner[T]{f: f, loc: loc}, nil
}

type dateTimeAssigner[T any] struct {
	f     dateTimePattern
	loc   *time.Location
	cache atomic.Pointer[dateTimeCacheEntry] // shared by the subtasks
}

type dateTimeCacheEntry struct {
	key int64
	id  string
}

func (a *dateTimeAssigner[T]) BucketID(_ T, ctx BucketContext) string {
	// Bucket ids change at most once a second (once a millisecond with S):
	// format only when the time crosses into a new one.
	key := ctx.CurrentProcessingTime
	if !a.f.millis {
		key = floorDiv(key, 1000)
	}
	if c := a.cache.Load(); c != nil && c.key == key {
		return c.id
	}
	id := a.f.format(time.UnixMilli(ctx.CurrentProcessingTime).In(a.loc))
	a.cache.Store(&dateTimeCacheEntry{key: key, id: id})
	return id
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// dateTimePattern is a parsed DateTimeFormatter pattern.
type dateTimePattern struct {
	parts  []datePart
	millis bool
}

type datePart struct {
	letter byte // 0 for literal text
	n      int
	text   string
}

func parseDateTimePattern(p string) (dateTimePattern, error) {
	var out dateTimePattern
	bad := func(pos int, format string, args ...any) (dateTimePattern, error) {
		return dateTimePattern{}, fmt.Errorf("file: date-time bucket format %q, position %d: %s", p, pos, fmt.Sprintf(format, args...))
	}
	if p == "" {
		return bad(0, "the format is empty")
	}
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\'':
			// Quoted text; '' is a quote.
			j := i + 1
			var sb strings.Builder
			for {
				if j >= len(p) {
					return bad(i, "unterminated quoted text")
				}
				if p[j] == '\'' {
					if j+1 < len(p) && p[j+1] == '\'' {
						sb.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				sb.WriteByte(p[j])
				j++
			}
			if j == i+1 {
				sb.WriteByte('\'') // '' outside quotes
			}
			out.parts = append(out.parts, datePart{text: sb.String()})
			i = j + 1
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(p) && p[j] == c {
				j++
			}
			n := j - i
			switch c {
			case 'y', 'd', 'H', 'm', 's', 'S':
				if c == 'S' {
					out.millis = true
				}
				if c != 'y' && c != 'S' && n > 2 {
					return bad(i, "%q repeated %d times (at most 2)", c, n)
				}
			case 'M':
				if n > 4 {
					return bad(i, "'M' repeated %d times (at most 4)", n)
				}
			default:
				return bad(i, "unsupported pattern letter %q (supported: y M d H m s S; quote literal text with ')", c)
			}
			out.parts = append(out.parts, datePart{letter: c, n: n})
			i = j
		default:
			out.parts = append(out.parts, datePart{text: string(c)})
			i++
		}
	}
	return out, nil
}

func (f dateTimePattern) format(t time.Time) string {
	var b []byte
	pad := func(v, n int) {
		s := strconv.Itoa(v)
		for k := len(s); k < n; k++ {
			b = append(b, '0')
		}
		b = append(b, s...)
	}
	for _, p := range f.parts {
		switch p.letter {
		case 0:
			b = append(b, p.text...)
		case 'y':
			if p.n == 2 {
				pad(t.Year()%100, 2)
			} else {
				pad(t.Year(), p.n)
			}
		case 'M':
			switch p.n {
			case 3:
				b = append(b, t.Month().String()[:3]...)
			case 4:
				b = append(b, t.Month().String()...)
			default:
				pad(int(t.Month()), p.n)
			}
		case 'd':
			pad(t.Day(), p.n)
		case 'H':
			pad(t.Hour(), p.n)
		case 'm':
			pad(t.Minute(), p.n)
		case 's':
			pad(t.Second(), p.n)
		case 'S':
			frac := fmt.Sprintf("%09d", t.Nanosecond())
			for len(frac) < p.n {
				frac += "0"
			}
			b = append(b, frac[:p.n]...)
		}
	}
	return string(b)
}

// OutputFileConfig names part files: <PartPrefix>-<uuid>-<subtask>-<counter><PartSuffix>.
type OutputFileConfig struct {
	// PartPrefix defaults to "part".
	PartPrefix string
	// PartSuffix (e.g. ".txt") defaults to none.
	PartSuffix string
}

// SimpleStringEncoder writes each record as its default format (%v)
// followed by a newline (Flink's SimpleStringEncoder).
func SimpleStringEncoder[T any]() func(v T, w io.Writer) error {
	return func(v T, w io.Writer) error {
		_, err := fmt.Fprintf(w, "%v\n", v)
		return err
	}
}

// FormatEncoder writes each record with a format of package formats
// (json...) as one line: its bytes and a newline. The format is asked with
// an empty topic. A record whose bytes hold a newline (a binary format)
// fails, naming the format's Go type: such formats are not line formats.
func FormatEncoder[T any](f interface {
	Serialize(topic string, v T) ([]byte, error)
}) func(v T, w io.Writer) error {
	return func(v T, w io.Writer) error {
		b, err := f.Serialize("", v)
		if err != nil {
			return fmt.Errorf("file: sink: %w", err)
		}
		if bytes.IndexByte(b, '\n') >= 0 {
			return fmt.Errorf("file: sink: format %T wrote a record holding a newline; the file sink writes one record per line", f)
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return err
		}
		return nil
	}
}

// RowSink is a row-format file sink; build it with ForRowFormat and write
// a stream to it with SinkToCommitting. Its With methods return a
// modified copy.
type RowSink[T any] struct{ sinkConfig[T] }

// sinkConfig is what the row-format and the bulk-format sinks share: where
// and how part files are written, rolled and committed. newPart makes the
// encoder of each new part file.
type sinkConfig[T any] struct {
	basePath      string
	newPart       func(w io.Writer) (partEncoder[T], error)
	fsys          fs.FileSystem
	policy        RollingPolicy
	assigner      BucketAssigner[T]
	names         OutputFileConfig
	checkInterval time.Duration
	err           error
}

// partEncoder writes the records of one part file.
type partEncoder[T any] interface {
	add(v T) error
	// finish completes the part's content; it is called before the part
	// is closed, never for an abandoned part.
	finish() error
}

type rowPart[T any] struct {
	encode func(T, io.Writer) error
	w      io.Writer
}

func (p rowPart[T]) add(v T) error { return p.encode(v, p.w) }
func (p rowPart[T]) finish() error { return nil }

func newSinkConfig[T any](basePath string, policy RollingPolicy, newPart func(io.Writer) (partEncoder[T], error), errs ...error) sinkConfig[T] {
	s := sinkConfig[T]{basePath: basePath, newPart: newPart, policy: policy, checkInterval: DefaultBucketCheckInterval}
	if basePath == "" {
		errs = append(errs, errors.New("file: sink: the base path is empty"))
	}
	assigner, err := DateTimeBucketAssigner[T](DefaultDateTimeBucketFormat, nil)
	s.assigner, s.err = assigner, errors.Join(append(errs, err)...)
	return s
}

// ForRowFormat returns a row-format file sink writing records under basePath,
// each encoded by encoder (for example SimpleStringEncoder). By default it
// writes to the local filesystem, rolls parts with DefaultRollingPolicy{},
// buckets records by hour of processing time in the local time zone
// (DateTimeBucketAssigner with "yyyy-MM-dd--HH"), names parts
// "part-<uuid>-<subtask>-<counter>" and checks time-based rolling every
// DefaultBucketCheckInterval.
//
//	sink := file.ForRowFormat(dir, file.SimpleStringEncoder[string]()).
//		WithRollingPolicy(file.DefaultRollingPolicy{MaxPartSize: 64 << 20})
//	stream.SinkToCommitting(lines, sink)
func ForRowFormat[T any](basePath string, encoder func(v T, w io.Writer) error) *RowSink[T] {
	var errs []error
	if encoder == nil {
		errs = append(errs, errors.New("file: sink: the encoder is nil"))
	}
	return &RowSink[T]{newSinkConfig(basePath, RollingPolicy(DefaultRollingPolicy{}), func(w io.Writer) (partEncoder[T], error) {
		return rowPart[T]{encode: encoder, w: w}, nil
	}, errs...)}
}

// WithFileSystem writes through fsys, the base path being a path of fsys,
// instead of resolving the base path in the job's file systems.
func (s *RowSink[T]) WithFileSystem(fsys fs.FileSystem) *RowSink[T] {
	c := *s
	c.fsys = fsys
	return &c
}

// WithRollingPolicy sets when parts roll.
func (s *RowSink[T]) WithRollingPolicy(p RollingPolicy) *RowSink[T] {
	c := *s
	c.policy = p
	return &c
}

// WithBucketAssigner sets how records are bucketed.
func (s *RowSink[T]) WithBucketAssigner(a BucketAssigner[T]) *RowSink[T] {
	c := *s
	c.assigner = a
	return &c
}

// WithOutputFileConfig sets the part files' prefix and suffix.
func (s *RowSink[T]) WithOutputFileConfig(cfg OutputFileConfig) *RowSink[T] {
	c := *s
	c.names = cfg
	return &c
}

// WithBucketCheckInterval sets how often time-based rolling is checked
// (default DefaultBucketCheckInterval, one minute).
func (s *RowSink[T]) WithBucketCheckInterval(d time.Duration) *RowSink[T] {
	c := *s
	c.checkInterval = d
	return &c
}

func (s *sinkConfig[T]) validate() error {
	var errs []error
	if s.err != nil {
		errs = append(errs, s.err)
	}
	if s.policy == nil {
		errs = append(errs, errors.New("file: sink: the rolling policy is nil"))
	}
	if s.assigner == nil {
		errs = append(errs, errors.New("file: sink: the bucket assigner is nil"))
	}
	if s.checkInterval <= 0 {
		errs = append(errs, fmt.Errorf("file: sink: the bucket check interval must be positive, got %v", s.checkInterval))
	}
	if strings.Contains(s.names.PartPrefix, "/") || strings.Contains(s.names.PartSuffix, "/") {
		errs = append(errs, fmt.Errorf("file: sink: part prefix %q and suffix %q must not contain '/'", s.names.PartPrefix, s.names.PartSuffix))
	}
	return errors.Join(errs...)
}

// resolved returns the sink with its filesystem: the one given to
// WithFileSystem, else the base path's: a URI (file://, hdfs://...)
// resolves in fileSystems, a plain path is local.
func (s *sinkConfig[T]) resolved(fileSystems *fs.Resolver) (*sinkConfig[T], error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	if s.fsys != nil {
		return s, nil
	}
	c := *s
	if u, err := url.Parse(s.basePath); err != nil || u.Scheme == "" {
		c.fsys = fs.Local{}
		return &c, nil
	}
	if fileSystems == nil {
		fileSystems = fs.NewResolver()
	}
	fsys, p, err := fileSystems.For(s.basePath)
	if err != nil {
		return nil, fmt.Errorf("file: sink: base path: %w", err)
	}
	c.fsys, c.basePath = fsys, p
	return &c, nil
}

// CreateWriter implements Sink.
func (s *sinkConfig[T]) CreateWriter(ctx stream.SinkContext) (stream.SinkWriter[T], error) {
	s, err := s.resolved(ctx.FileSystems())
	if err != nil {
		return nil, err
	}
	if err := s.fsys.MkdirAll(s.basePath); err != nil {
		return nil, fmt.Errorf("file: sink: creating the base directory %s: %w", s.basePath, err)
	}
	w := &fileSinkWriter[T]{
		s: s, ctx: ctx, uuid: newUUID(), subtask: ctx.Subtask(),
		prefix: s.names.PartPrefix, buckets: map[string]*fileBucket[T]{},
	}
	if w.prefix == "" {
		w.prefix = "part"
	}
	w.scheduleCheck()
	return w, nil
}

// CreateCommitter implements TwoPhaseCommitSink. Outside a job it knows
// only the local filesystem (and WithFileSystem's); in a job, the sink
// resolves its base path in the job's file systems instead.
func (s *sinkConfig[T]) CreateCommitter() (stream.Committer[Committable], error) {
	return s.CreateCommitterIn(nil)
}

// CreateCommitterIn implements stream.CommitterInContext: the committer of
// a job's subtask resolves the base path in the job's file systems.
func (s *sinkConfig[T]) CreateCommitterIn(ctx stream.SinkContext) (stream.Committer[Committable], error) {
	var fileSystems *fs.Resolver
	if ctx != nil {
		fileSystems = ctx.FileSystems()
	}
	s, err := s.resolved(fileSystems)
	if err != nil {
		return nil, err
	}
	return &fileCommitter{fsys: s.fsys}, nil
}

// fileSinkWriter writes the parts of one subtask. Its methods and its
// timer run on the task goroutine.
type fileSinkWriter[T any] struct {
	s           *sinkConfig[T]
	ctx         stream.SinkContext
	uuid        string
	subtask     int
	prefix      string
	counter     int64
	buckets     map[string]*fileBucket[T]
	pending     []Committable
	cancelCheck func()
	closed      bool
}

type fileBucket[T any] struct {
	id   string
	dir  string
	part *partFile[T] // in progress, or nil
}

type partFile[T any] struct {
	file    fs.File
	enc     partEncoder[T]
	buf     *bufio.Writer
	counter countingWriter
	info    PartFileInfo
	path    string // in progress
	final   string
}

type countingWriter struct {
	w *bufio.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (w *fileSinkWriter[T]) Write(_ context.Context, v T, ts stream.Timestamp) error {
	now := int64(w.ctx.CurrentProcessingTime())
	id := w.s.assigner.BucketID(v, BucketContext{CurrentProcessingTime: now, Timestamp: int64(ts)})
	b := w.buckets[id]
	if b == nil {
		var err error
		if b, err = w.newBucket(id); err != nil {
			return err
		}
	}
	if b.part != nil && w.s.policy.ShouldRollOnEvent(b.part.info) {
		if err := w.roll(b); err != nil {
			return err
		}
	}
	if b.part == nil {
		if err := w.openPart(b, now); err != nil {
			return err
		}
	}
	p := b.part
	if err := p.enc.add(v); err != nil {
		return fmt.Errorf("file: sink: writing a record to %s: %w", p.path, err)
	}
	p.info.Size = p.counter.n
	p.info.LastUpdateTime = now
	return nil
}

func (w *fileSinkWriter[T]) newBucket(id string) (*fileBucket[T], error) {
	if id != "" {
		clean := path.Clean(id)
		if path.IsAbs(id) || clean == ".." || strings.HasPrefix(clean, "../") || clean == "." {
			return nil, fmt.Errorf("file: sink: bucket id %q is not a relative directory inside the base path", id)
		}
	}
	b := &fileBucket[T]{id: id, dir: path.Join(w.s.basePath, id)}
	if err := w.s.fsys.MkdirAll(b.dir); err != nil {
		return nil, fmt.Errorf("file: sink: creating the directory %s of bucket %q: %w", b.dir, id, err)
	}
	w.buckets[id] = b
	return b, nil
}

func (w *fileSinkWriter[T]) openPart(b *fileBucket[T], now int64) error {
	name := w.prefix + "-" + w.uuid + "-" + strconv.Itoa(w.subtask) + "-" + strconv.FormatInt(w.counter, 10) + w.s.names.PartSuffix
	w.counter++
	p := &partFile[T]{
		path:  path.Join(b.dir, "."+name+".inprogress."+newUUID()),
		final: path.Join(b.dir, name),
		info:  PartFileInfo{BucketID: b.id, CreationTime: now, LastUpdateTime: now},
	}
	f, err := w.s.fsys.Create(p.path)
	if err != nil {
		return fmt.Errorf("file: sink: creating a part file: %w", err)
	}
	p.file = f
	p.buf = bufio.NewWriterSize(f, 64<<10)
	p.counter.w = p.buf
	if p.enc, err = w.s.newPart(&p.counter); err != nil {
		f.Close()
		if rerr := w.s.fsys.Remove(p.path); rerr != nil && !errors.Is(rerr, iofs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
		return fmt.Errorf("file: sink: starting part file %s: %w", p.path, err)
	}
	b.part = p
	return nil
}

// roll closes b's in-progress part; it becomes pending.
func (w *fileSinkWriter[T]) roll(b *fileBucket[T]) error {
	p := b.part
	b.part = nil
	err := p.enc.finish()
	if ferr := p.buf.Flush(); err == nil {
		err = ferr
	}
	if cerr := p.file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("file: sink: closing part file %s: %w", p.path, err)
	}
	w.pending = append(w.pending, Committable{PendingPath: p.path, FinalPath: p.final})
	return nil
}

func (w *fileSinkWriter[T]) scheduleCheck() {
	at := w.ctx.CurrentProcessingTime().Add(w.s.checkInterval)
	w.cancelCheck = w.ctx.RegisterProcessingTimer(at, func(now stream.Timestamp) error { return w.onCheck(int64(now)) })
}

// onCheck rolls parts by processing time and forgets idle buckets.
func (w *fileSinkWriter[T]) onCheck(now int64) error {
	if w.closed {
		return nil
	}
	for id, b := range w.buckets {
		if b.part == nil {
			delete(w.buckets, id)
			continue
		}
		if w.s.policy.ShouldRollOnProcessingTime(b.part.info, now) {
			if err := w.roll(b); err != nil {
				return err
			}
		}
	}
	w.scheduleCheck()
	return nil
}

// Flush writes buffered bytes to the part files.
func (w *fileSinkWriter[T]) Flush(context.Context, bool) error {
	for _, b := range w.buckets {
		if b.part != nil {
			if err := b.part.buf.Flush(); err != nil {
				return fmt.Errorf("file: sink: writing part file %s: %w", b.part.path, err)
			}
		}
	}
	return nil
}

// PrepareCommit rolls every in-progress part and returns the parts
// pending since the last call.
func (w *fileSinkWriter[T]) PrepareCommit(context.Context) ([]Committable, error) {
	for id, b := range w.buckets {
		if b.part != nil {
			if err := w.roll(b); err != nil {
				return nil, err
			}
		}
		delete(w.buckets, id)
	}
	cs := w.pending
	w.pending = nil
	return cs, nil
}

// Close abandons the parts still in progress (their records were not
// pre-committed and are replayed after a failure) and removes their files.
// Pending parts stay for the committer.
func (w *fileSinkWriter[T]) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	if w.cancelCheck != nil {
		w.cancelCheck()
	}
	var errs []error
	for _, b := range w.buckets {
		if p := b.part; p != nil {
			b.part = nil
			p.file.Close() // its content is abandoned
			if err := w.s.fsys.Remove(p.path); err != nil && !errors.Is(err, iofs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("file: sink: removing abandoned part file: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// fileCommitter publishes pending parts by renaming them.
type fileCommitter struct{ fsys fs.FileSystem }

// Commit renames every pending part to its final name. It is idempotent:
// a part whose pending file is gone and whose final file exists was
// committed before.
func (c *fileCommitter) Commit(_ context.Context, cs []Committable) error {
	for _, f := range cs {
		err := c.fsys.Rename(f.PendingPath, f.FinalPath)
		if err == nil {
			continue
		}
		if c.committedBefore(f) {
			continue
		}
		return fmt.Errorf("file: sink: committing %s: %w", f.FinalPath, err)
	}
	return nil
}

// committedBefore reports whether f's pending file is gone and its final
// file exists.
func (c *fileCommitter) committedBefore(f Committable) bool {
	if _, err := c.fsys.Stat(f.PendingPath); !errors.Is(err, iofs.ErrNotExist) {
		return false
	}
	_, err := c.fsys.Stat(f.FinalPath)
	return err == nil
}

func (c *fileCommitter) Close() error { return nil }

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var u [16]byte
	rand.Read(u[:]) // never fails (crypto/rand)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}
