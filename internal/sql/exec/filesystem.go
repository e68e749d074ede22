package exec

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	iofs "io/fs"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/file"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/runtime/codec"
	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/runtime/restart"
	"github.com/sluice/sluice/internal/sql/planner"
	"github.com/sluice/sluice/internal/sql/types"
	"github.com/sluice/sluice/stream"
)

// This file is Flink's filesystem SQL connector over the file package:
// the sink is the file connector's row-format sink (part files in progress,
// pending at a checkpoint, committed when it completes: exactly once), the
// source the file connector's line reader, fed with the files found under
// 'path' (once: a bounded scan; or every 'source.monitor-interval': new
// files as they appear). Rows are encoded and decoded one per line with
// the table's format (csv, json or raw).

// Flink's defaults of the filesystem sink's rolling policy.
const (
	fsDefaultFileSize     = 128 << 20
	fsDefaultRollover     = 30 * time.Minute
	fsDefaultInactivity   = 30 * time.Minute
	fsDefaultCheckInteval = time.Minute
)

// newFilesystemSink is the file connector's row-format sink writing the
// rows of s, one line each in the table's format, under the table's path.
func newFilesystemSink(s *planner.Sink) (*file.RowSink[core.Row], error) {
	t := s.Table
	// The files hold the columns but the partition columns, whose values
	// name the rows' directory.
	var fields []planner.Field
	var idx []int
	part := make([]int, len(t.PartitionKeys))
	for i, c := range s.Columns {
		if k := slices.Index(t.PartitionKeys, c); k >= 0 {
			part[k] = i
			continue
		}
		fields = append(fields, planner.Field{Name: t.Columns[c].Name, Type: t.Columns[c].Type})
		idx = append(idx, i)
	}
	f, err := newRowFormat(t, "", fields)
	if err != nil {
		return nil, fmt.Errorf("sql: table %s: %w", t.Name, err)
	}
	policy := file.DefaultRollingPolicy{MaxPartSize: fsDefaultFileSize, RolloverInterval: fsDefaultRollover, InactivityInterval: fsDefaultInactivity}
	check := fsDefaultCheckInteval
	var errs []error
	duration := func(key string, dst *time.Duration) {
		if v, ok := t.Options[key]; ok {
			d, err := conf.ParseDuration(v)
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("'%s' = '%s' is not a positive duration", key, v))
				return
			}
			*dst = d
		}
	}
	duration(planner.OptRollInterval, &policy.RolloverInterval)
	duration(planner.OptRollInactivity, &policy.InactivityInterval)
	duration(planner.OptRollCheck, &check)
	if v, ok := t.Options[planner.OptRollFileSize]; ok {
		m, err := conf.ParseMemorySize(v)
		if err != nil || m <= 0 {
			errs = append(errs, fmt.Errorf("'%s' = '%s' is not a positive memory size", planner.OptRollFileSize, v))
		} else {
			policy.MaxPartSize = int64(m)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("sql: table %s: %w", t.Name, err)
	}
	enc := func(r core.Row, w io.Writer) error {
		b, err := f.encode("", nil, r.Values, idx)
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	// A table without partitions writes its parts directly under its path
	// (not in the DataStream sink's default hourly buckets); a partitioned
	// one in Hive's directories, col=value/... .
	assigner := file.BasePathBucketAssigner[core.Row]()
	if len(part) > 0 {
		defaultName := t.Options[planner.OptPartitionDef]
		if defaultName == "" {
			defaultName = fsDefaultPartitionName
		}
		partFields := make([]planner.Field, len(part))
		for k, c := range t.PartitionKeys {
			partFields[k] = planner.Field{Name: t.Columns[c].Name, Type: t.Columns[c].Type}
		}
		assigner = file.BucketAssignerFunc[core.Row](func(r core.Row, _ file.BucketContext) string {
			var b strings.Builder
			for k, i := range part {
				if k > 0 {
					b.WriteByte('/')
				}
				b.WriteString(escapePartition(partFields[k].Name))
				b.WriteByte('=')
				v := defaultName
				if r.Values[i] != nil {
					if text := toText(r.Values[i], partFields[k]); text != "" {
						v = escapePartition(text)
					}
				}
				b.WriteString(v)
			}
			return b.String()
		})
	}
	return file.ForRowFormat(t.Options[planner.OptPath], enc).WithBucketAssigner(assigner).
		WithRollingPolicy(policy).WithBucketCheckInterval(check), nil
}

// fsDefaultPartitionName is Flink's partition.default-name: the directory
// of a NULL or empty partition value.
const fsDefaultPartitionName = "__DEFAULT_PARTITION__"

// escapePartition escapes a partition directory's name or value as Hive
// and Flink do (PartitionPathUtils.escapePathName): a control character,
// a double or single quote, '#', '%', '*', '/', ':', '=', '?', a
// backslash, DEL, '{', '[', ']' and '^' become %XX.
func escapePartition(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte("\"#%'*/:=?\\{[]^", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// unescapePartition undoes escapePartition.
func unescapePartition(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// fsSourceSpec is a filesystem table as a source.
type fsSourceSpec struct {
	table   *planner.Table
	format  rowFormat
	physIdx []int // the table column of each format field
	// monitor is source.monitor-interval in milliseconds; 0: a bounded
	// scan of the files there at the start.
	monitor int64
	metrics *Metrics
	// skipHint follows the error of a malformed record.
	skipHint string
	proctime []int
	// keepEmpty: empty lines are records (raw); else they are skipped.
	keepEmpty bool
	// defaultName is the directory name of a NULL partition value.
	defaultName string
}

func newFilesystemSourceSpec(t *planner.Table, m *Metrics) (*fsSourceSpec, error) {
	spec := &fsSourceSpec{table: t, metrics: m}
	var fields []planner.Field
	spec.defaultName = t.Options[planner.OptPartitionDef]
	if spec.defaultName == "" {
		spec.defaultName = fsDefaultPartitionName
	}
	for i, c := range t.Columns {
		if slices.Contains(t.PartitionKeys, i) {
			continue // from the file's directories
		}
		if c.Kind == planner.Physical {
			fields = append(fields, planner.Field{Name: c.Name, Type: c.Type})
			spec.physIdx = append(spec.physIdx, i)
		}
		if c.Type.Proctime {
			spec.proctime = append(spec.proctime, i)
		}
	}
	f, err := newRowFormat(t, "", fields)
	if err != nil {
		return nil, fmt.Errorf("sql: table %s: %w", t.Name, err)
	}
	spec.format = f
	switch name := t.Options[planner.OptFormat]; name {
	case "json", "csv":
		spec.skipHint = fmt.Sprintf(" (set '%s.ignore-parse-errors' = 'true' to skip such records)", name)
	case "raw":
		spec.keepEmpty = true
	}
	if v, ok := t.Options[planner.OptMonitorInterval]; ok {
		d, err := conf.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("sql: table %s: '%s' = '%s' is not a positive duration", t.Name, planner.OptMonitorInterval, v)
		}
		spec.monitor = max(d.Milliseconds(), 1)
	}
	return spec, nil
}

// fsFile is a file of a filesystem source in its checkpoints: a file this
// subtask read to its end, or the offset it reached in one.
type fsFile struct {
	Path   string
	Offset int64
	Done   bool
}

var fsFileCodec = codec.MustFor[fsFile]()

// fsRow is a line made a row, or a skipped line.
type fsRow struct{ vals []any }

// fsSource is one source subtask of a filesystem table. Each subtask
// lists the files under the path and reads those whose path hashes to it
// (so the copies agree without talking, and a file added later goes to
// one of them), with the file connector's reader. Its state is every file
// it was given: read to the end, or the byte offset reached (union state,
// so a rescaled job hands each file to its new owner).
type fsSource struct {
	spec   *fsSourceSpec
	ctx    *core.Context
	fsys   fs.FileSystem
	base   string // the path in fsys
	prefix string // scheme://authority of a URI path, "" for a local path
	reader stream.SourceReader[fsRow, file.Split]
	// known are the files given to the reader (by full path); done are
	// those of a restored checkpoint read to their end.
	known    map[string]bool
	restored []file.Split
	lines    map[string]lineMark
	parts    map[string][]any // partition values by file
	err      error
	emitted  int64
	wm       int64
}

// lineMark numbers the lines of a file read from its start.
type lineMark struct {
	offset int64
	line   int
}

func (s *fsSource) SnapshotState(_ *core.Context, id int64) ([][]byte, bool, error) {
	splits, err := s.reader.SnapshotState(id)
	if err != nil {
		return nil, false, err
	}
	at := map[string]int64{}
	for _, sp := range splits {
		at[sp.Path] = sp.Offset
	}
	out := make([][]byte, 0, len(s.known))
	for p := range s.known {
		off, reading := at[p]
		out = append(out, fsFileCodec.Append(nil, fsFile{Path: p, Offset: off, Done: !reading}))
	}
	return out, true, nil
}

func (s *fsSource) RestoreState(ctx *core.Context, entries [][]byte) error {
	s.known = map[string]bool{}
	for _, e := range entries {
		f, _, err := fsFileCodec.Decode(e)
		if err != nil {
			return fmt.Errorf("sql: table %s: restoring a file split: %w", s.spec.table.Name, err)
		}
		if fileOwner(f.Path, ctx.Parallelism()) != ctx.Subtask() {
			continue
		}
		s.known[f.Path] = true
		if !f.Done {
			s.restored = append(s.restored, file.Split{Path: f.Path, Offset: f.Offset})
		}
	}
	slices.SortFunc(s.restored, func(a, b file.Split) int { return strings.Compare(a.Path, b.Path) })
	return nil
}

// fileOwner is the subtask that reads the file at p.
func fileOwner(p string, parallelism int) int {
	h := fnv.New32a()
	h.Write([]byte(p))
	return int(h.Sum32() % uint32(parallelism))
}

func (s *fsSource) Open(ctx *core.Context) error {
	s.ctx = ctx
	s.emitted, s.wm = core.NoWatermark, core.NoWatermark
	s.lines = map[string]lineMark{}
	s.parts = map[string][]any{}
	if s.known == nil {
		s.known = map[string]bool{}
	}
	t := s.spec.table
	p := t.Options[planner.OptPath]
	if u, err := url.Parse(p); err == nil && u.Scheme != "" {
		fsys, name, err := ctx.Task().FileSystems.For(p)
		if err != nil {
			return &restart.Unrecoverable{Err: fmt.Errorf("sql: table %s: 'path' = '%s': %w", t.Name, p, err)}
		}
		s.fsys, s.base, s.prefix = fsys, name, u.Scheme+"://"+u.Host
	} else {
		s.fsys, s.base = fs.Local{}, p
	}
	r, err := file.NewLineSource(nil, s.decode).CreateReader(fsReaderCtx{s})
	if err != nil {
		return err
	}
	s.reader = r
	if err := r.Start(ctx.Task().Ctx()); err != nil {
		return err
	}
	if len(s.restored) > 0 {
		if err := r.AddSplits(s.restored); err != nil {
			return err
		}
		s.restored = nil
	}
	if err := s.discover(); err != nil {
		return err
	}
	if s.spec.monitor == 0 {
		r.NotifyNoMoreSplits()
		return nil
	}
	s.scheduleDiscovery()
	return nil
}

func (s *fsSource) scheduleDiscovery() {
	s.ctx.Task().RegisterProcessingTimer(s.ctx.CurrentProcessingTime()+s.spec.monitor, func(int64) error {
		if err := s.discover(); err != nil {
			return err
		}
		s.scheduleDiscovery()
		return nil
	})
}

// discover gives the reader this subtask's files not given yet.
func (s *fsSource) discover() error {
	t := s.spec.table
	files, err := listFiles(s.fsys, s.base)
	if errors.Is(err, iofs.ErrNotExist) && s.spec.monitor > 0 {
		return nil // not there yet
	}
	if err != nil {
		return &restart.Unrecoverable{Err: fmt.Errorf("sql: table %s: listing 'path' = '%s': %w", t.Name, t.Options[planner.OptPath], err)}
	}
	var splits []file.Split
	for _, f := range files {
		full := s.prefix + f
		if s.known[full] || fileOwner(full, s.ctx.Parallelism()) != s.ctx.Subtask() {
			continue
		}
		s.known[full] = true
		splits = append(splits, file.Split{Path: full})
	}
	if len(splits) == 0 {
		return nil
	}
	return s.reader.AddSplits(splits)
}

// listFiles lists the files at p, a file or a directory read recursively,
// sorted; names starting with '.' or '_' are hidden (in-progress part
// files, _SUCCESS), as Flink's file source skips them.
func listFiles(fsys fs.FileSystem, p string) ([]string, error) {
	st, err := fsys.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	var out []string
	var walk func(dir string) error
	walk = func(dir string) error {
		ents, err := fsys.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			n := e.Name()
			if strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
				continue
			}
			c := path.Join(dir, n)
			if e.IsDir() {
				if err := walk(c); err != nil {
					return err
				}
				continue
			}
			out = append(out, c)
		}
		return nil
	}
	if err := walk(p); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// decode makes a row of the line of file p at byte offset off. A
// malformed line fails with a *file.DeserializationError naming the file,
// the byte offset and (for a file read from its start) the line.
func (s *fsSource) decode(p string, off int64, line string) (fsRow, bool, error) {
	m, ok := s.lines[p]
	switch {
	case off == 0:
		m = lineMark{offset: 0, line: 1}
	case ok && m.line > 0 && off > m.offset:
		m = lineMark{offset: off, line: m.line + 1}
	default:
		m = lineMark{offset: off} // resumed mid-file: the line is unknown
	}
	s.lines[p] = m
	if line == "" && !s.spec.keepEmpty {
		return fsRow{}, true, nil
	}
	spec := s.spec
	parts, err := s.partitionValues(p)
	if err != nil {
		return fsRow{}, false, err
	}
	tmp := make([]any, len(spec.physIdx))
	nulled, err := spec.format.decode("", []byte(line), tmp)
	if errors.Is(err, errSkip) {
		spec.metrics.SkippedRecords.Add(1)
		return fsRow{}, true, nil
	}
	if err != nil {
		if m.line > 0 {
			err = fmt.Errorf("line %d: %w", m.line, err)
		}
		return fsRow{}, false, &file.DeserializationError{Path: p, Offset: off, Err: err}
	}
	spec.metrics.NulledFields.Add(int64(nulled))
	t := spec.table
	vals := make([]any, len(t.Columns))
	for j, i := range spec.physIdx {
		vals[i] = tmp[j]
	}
	for k, i := range t.PartitionKeys {
		vals[i] = parts[k]
	}
	for i, c := range t.Columns {
		if c.Kind != planner.Computed || c.Type.Proctime {
			continue
		}
		v, err := c.Expr.Eval(vals)
		if err != nil {
			return fsRow{}, false, fmt.Errorf("sql: table %s: computed column %s: %w", t.Name, c.Name, err)
		}
		vals[i] = v
	}
	return fsRow{vals: vals}, false, nil
}

// partitionValues are the values of the partition columns that the
// directories of the file at p name (col=value/...): NULL for
// partition.default-name or a missing directory.
func (s *fsSource) partitionValues(p string) ([]any, error) {
	t := s.spec.table
	if len(t.PartitionKeys) == 0 {
		return nil, nil
	}
	if v, ok := s.parts[p]; ok {
		return v, nil
	}
	texts := map[string]string{}
	for _, seg := range strings.Split(path.Dir(p), "/") {
		if k, v, ok := strings.Cut(seg, "="); ok {
			texts[unescapePartition(k)] = unescapePartition(v)
		}
	}
	out := make([]any, len(t.PartitionKeys))
	for k, i := range t.PartitionKeys {
		c := t.Columns[i]
		text, ok := texts[c.Name]
		if !ok || text == s.spec.defaultName {
			continue
		}
		v, err := types.Cast(text, types.STRING, c.Type)
		if err != nil {
			return nil, &restart.Unrecoverable{Err: fmt.Errorf("sql: table %s: file %s: partition %s=%s: %w", t.Name, p, c.Name, text, err)}
		}
		out[k] = v
	}
	s.parts[p] = out
	return out, nil
}

func (s *fsSource) EmitNext(ctx *core.Context) (core.SourceStatus, error) {
	st, err := s.reader.PollNext(ctx.Task().Ctx(), fsOut{s})
	if err == nil {
		err = s.err
	}
	if err != nil {
		if errors.Is(err, file.ErrMalformedRecord) {
			// The line stays malformed however often the job restarts.
			err = &restart.Unrecoverable{Err: fmt.Errorf("sql: table %s: %w%s", s.spec.table.Name, err, s.spec.skipHint)}
		}
		return core.EndOfInput, err
	}
	if s.spec.table.Watermark != nil && s.wm > s.emitted {
		s.emitted = s.wm
		if err := ctx.EmitWatermark(s.wm); err != nil {
			return core.EndOfInput, err
		}
	}
	switch st {
	case stream.MoreAvailable:
		return core.MoreAvailable, nil
	case stream.NothingAvailable:
		return core.NothingAvailable, nil // until the next discovery
	}
	return core.EndOfInput, nil
}

func (s *fsSource) collect(v fsRow) {
	if s.err != nil {
		return
	}
	t := s.spec.table
	if err := emitScanned(s.ctx, t.Rowtime, s.spec.proctime, v.vals); err != nil {
		s.err = err
		return
	}
	if t.Watermark != nil {
		if err := raiseWatermark(&s.wm, t.Name, t.Watermark, v.vals); err != nil {
			s.err = err
		}
	}
}

func (s *fsSource) Close() error {
	if s.reader != nil {
		return s.reader.Close()
	}
	return nil
}

// fsReaderCtx is the reader's stream.SourceReaderContext; the files come
// from discover, so split requests go nowhere.
type fsReaderCtx struct{ s *fsSource }

func (c fsReaderCtx) Subtask() int              { return c.s.ctx.Subtask() }
func (c fsReaderCtx) Parallelism() int          { return c.s.ctx.Parallelism() }
func (c fsReaderCtx) Clock() stream.Clock       { return c.s.ctx.Clock() }
func (c fsReaderCtx) FileSystems() *fs.Resolver { return c.s.ctx.Task().FileSystems }
func (c fsReaderCtx) MetricGroup() stream.MetricGroup {
	return metricGroup{&c.s.ctx.Task().Metrics().Gauges}
}
func (c fsReaderCtx) SendSplitRequest() {}

// fsOut is the reader's stream.ReaderOutput.
type fsOut struct{ s *fsSource }

func (o fsOut) Collect(v fsRow, _ stream.Timestamp)       { o.s.collect(v) }
func (o fsOut) ForSplit(string) stream.SplitOutput[fsRow] { return o }
func (o fsOut) ReleaseSplit(string)                       {}
