package exec

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/runtime/codec"
	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/runtime/restart"
	"github.com/sluice/sluice/internal/sql/planner"
	"github.com/sluice/sluice/internal/sql/types"
	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
)

// This file runs the kafka connector's Source and Sink (their readers,
// enumerator, writers and committer: offsets in checkpoints, transactions)
// as core operators. The kafka package implements stream's connector
// contracts, which are interfaces; these adapters implement the contexts
// those contracts expect on top of core.Context.

// kafkaRow is what the source's deserializer makes of a record: the
// table's row, or a record skipped by json.ignore-parse-errors.
type kafkaRow struct {
	vals []any
	skip bool
}

// kafkaSourceSpec is a Kafka table as a source.
type kafkaSourceSpec struct {
	table   *planner.Table
	src     *kafka.Source[kafkaRow]
	rowtime int
	wm      planner.Expr
	metrics *Metrics
	// idleTimeout is table.exec.source.idle-timeout: a partition without
	// records for this long does not hold back the watermark (0: never).
	idleTimeout int64
	// groupOffsets: scan.startup.mode is group-offsets (for the error of a
	// partition without a committed offset).
	groupOffsets bool
	// proctime are the PROCTIME() columns, set to the processing time at
	// which the subtask emits the row.
	proctime []int
	// skipHint follows the error of a malformed record: the option that
	// skips such records, when the format has one.
	skipHint string
}

func kafkaClientOpts(t *planner.Table, log *slog.Logger) []kafka.Opt {
	var servers []string
	for _, s := range strings.Split(t.Options[planner.OptBootstrap], ",") {
		if s = strings.TrimSpace(s); s != "" {
			servers = append(servers, s)
		}
	}
	opts := []kafka.Opt{kafka.BootstrapServers(servers...)}
	if id, ok := t.Options["properties.client.id"]; ok {
		opts = append(opts, kafka.ClientID(id))
	}
	if log != nil {
		opts = append(opts, kafka.WithLogger(log))
	}
	return opts
}

func newKafkaSourceSpec(t *planner.Table, cfg *conf.Configuration, m *Metrics, log *slog.Logger) (*kafkaSourceSpec, error) {
	o := t.Options
	var idle int64
	if e, ok := cfg.Raw(planner.OptIdleTimeout); ok {
		d, err := conf.ParseDuration(e.Value)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("'%s' = '%s' is not a duration", planner.OptIdleTimeout, e.Value)
		}
		idle = d.Milliseconds()
	}
	var physical []planner.Field
	var physIdx []int
	for i, c := range t.Columns {
		if c.Kind == planner.Physical {
			physical = append(physical, planner.Field{Name: c.Name, Type: c.Type})
			physIdx = append(physIdx, i)
		}
	}
	valPart := ""
	if _, ok := o[planner.OptValueFormat]; ok {
		valPart = "value."
	}
	var keyFields []string
	if kf, ok := o[planner.OptKeyFields]; ok {
		for _, k := range strings.Split(kf, ";") {
			keyFields = append(keyFields, strings.TrimSpace(k))
		}
	}
	// Key fields come from the key's JSON, the rest from the value's
	// (value.fields-include ALL reads every physical field from the value).
	var valFields, keyFs []planner.Field
	var valIdx, keyIdx []int
	exceptKey := o[planner.OptValueFieldsIncl] == "EXCEPT_KEY"
	for j, f := range physical {
		if slices.Contains(keyFields, f.Name) {
			keyFs, keyIdx = append(keyFs, f), append(keyIdx, physIdx[j])
			if exceptKey {
				continue
			}
		}
		valFields, valIdx = append(valFields, f), append(valIdx, physIdx[j])
	}
	valFmt, err := newRowFormat(t, valPart, valFields)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.Name, err)
	}
	keyFmt, err := newRowFormat(t, "key.", keyFs)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.Name, err)
	}
	spec := &kafkaSourceSpec{table: t, rowtime: t.Rowtime, wm: t.Watermark, metrics: m, idleTimeout: idle}
	if f := o[valPart+"format"]; f == "json" || f == "csv" {
		spec.skipHint = fmt.Sprintf(" (set '%s%s.ignore-parse-errors' = 'true' to skip such records)", valPart, f)
	}
	for i, c := range t.Columns {
		if c.Type.Proctime {
			spec.proctime = append(spec.proctime, i)
		}
	}
	topic := o[planner.OptTopic]
	deser := kafka.RecordDeserializer(func(r *kgo.Record) (kafkaRow, error) {
		vals := make([]any, len(t.Columns))
		tmp := make([]any, len(valFields))
		nulled, err := valFmt.decode(r.Topic, r.Value, tmp)
		if errors.Is(err, errSkip) {
			m.SkippedRecords.Add(1)
			return kafkaRow{skip: true}, nil
		}
		if err != nil {
			return kafkaRow{}, err
		}
		m.NulledFields.Add(int64(nulled))
		for j, i := range valIdx {
			vals[i] = tmp[j]
		}
		if len(keyFs) > 0 {
			ktmp := make([]any, len(keyFs))
			nulled, err := keyFmt.decode(r.Topic, r.Key, ktmp)
			if errors.Is(err, errSkip) {
				m.SkippedRecords.Add(1)
				return kafkaRow{skip: true}, nil
			}
			if err != nil {
				return kafkaRow{}, fmt.Errorf("key: %w", err)
			}
			m.NulledFields.Add(int64(nulled))
			for j, i := range keyIdx {
				vals[i] = ktmp[j]
			}
		}
		for i, c := range t.Columns {
			if c.Kind != planner.MetadataCol {
				continue
			}
			var v any
			switch c.MetaKey {
			case "timestamp":
				v = r.Timestamp.UnixMilli()
			case "partition":
				v = int64(r.Partition)
			case "offset":
				v = r.Offset
			case "topic":
				v = r.Topic
			case "timestamp-type":
				v = "CreateTime"
				if r.Attrs.TimestampType() == 1 {
					v = "LogAppendTime"
				}
			}
			cv, err := types.Cast(v, metaType(c.MetaKey), c.Type)
			if err != nil {
				return kafkaRow{}, fmt.Errorf("metadata %s: %w", c.MetaKey, err)
			}
			vals[i] = cv
		}
		for i, c := range t.Columns {
			if c.Kind != planner.Computed {
				continue
			}
			v, err := c.Expr.Eval(vals)
			if err != nil {
				return kafkaRow{}, fmt.Errorf("computed column %s: %w", c.Name, err)
			}
			vals[i] = v
		}
		return kafkaRow{vals: vals}, nil
	})
	opts := []kafka.SourceOpt{}
	for _, co := range kafkaClientOpts(t, log) {
		opts = append(opts, co)
	}
	if p, ok := o[planner.OptTopicPattern]; ok {
		opts = append(opts, kafka.TopicPattern(p))
	} else {
		var topics []string
		for _, s := range strings.Split(topic, ";") {
			topics = append(topics, strings.TrimSpace(s))
		}
		opts = append(opts, kafka.Topics(topics...))
	}
	if g, ok := o[planner.OptGroupID]; ok {
		opts = append(opts, kafka.GroupID(g))
	}
	if o["properties.isolation.level"] == "read_committed" {
		opts = append(opts, kafka.Isolation(kafka.ReadCommitted))
	}
	reset := kafka.ResetNone
	switch strings.ToLower(o[planner.OptAutoOffsetReset]) {
	case "earliest":
		reset = kafka.ResetEarliest
	case "latest":
		reset = kafka.ResetLatest
	case "", "none":
	default:
		return nil, fmt.Errorf("table %s: '%s' = '%s': want earliest, latest or none", t.Name, planner.OptAutoOffsetReset, o[planner.OptAutoOffsetReset])
	}
	var start kafka.OffsetsInitializer
	switch mode := o[planner.OptStartupMode]; mode {
	case "earliest-offset":
		start = kafka.Earliest()
	case "latest-offset":
		start = kafka.Latest()
	case "timestamp":
		var ms int64
		if _, err := fmt.Sscan(o[planner.OptStartupTimestamp], &ms); err != nil {
			return nil, fmt.Errorf("table %s: '%s' = '%s' is not epoch milliseconds", t.Name, planner.OptStartupTimestamp, o[planner.OptStartupTimestamp])
		}
		start = kafka.Timestamp(stream.Timestamp(ms))
	default: // group-offsets, Flink's default
		if _, ok := o[planner.OptGroupID]; !ok {
			return nil, fmt.Errorf("table %s: '%s' is required for 'group-offsets' startup mode (the default; set '%s' otherwise)", t.Name, planner.OptGroupID, planner.OptStartupMode)
		}
		start = kafka.CommittedOffsets(reset)
		spec.groupOffsets = true
	}
	opts = append(opts, kafka.StartingOffsets(start))
	switch mode := o["scan.bounded.mode"]; mode {
	case "", "unbounded":
	case "latest-offset":
		opts = append(opts, kafka.Bounded(kafka.Latest()))
	case "earliest-offset":
		opts = append(opts, kafka.Bounded(kafka.Earliest()))
	case "group-offsets":
		opts = append(opts, kafka.Bounded(kafka.CommittedOffsets(kafka.ResetNone)))
	case "timestamp":
		var ms int64
		if _, err := fmt.Sscan(o["scan.bounded.timestamp-millis"], &ms); err != nil {
			return nil, fmt.Errorf("table %s: 'scan.bounded.timestamp-millis' = '%s' is not epoch milliseconds", t.Name, o["scan.bounded.timestamp-millis"])
		}
		opts = append(opts, kafka.Bounded(kafka.Timestamp(stream.Timestamp(ms))))
	default:
		return nil, fmt.Errorf("table %s: 'scan.bounded.mode' = '%s': want unbounded, latest-offset, earliest-offset, group-offsets or timestamp", t.Name, mode)
	}
	src, err := kafka.NewSource(deser, opts...)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.Name, err)
	}
	spec.src = src
	return spec, nil
}

func metaType(key string) types.Type {
	switch key {
	case "timestamp":
		return types.Type{Kind: types.TimestampLTZ, Precision: 3}
	case "partition":
		return types.INT
	case "offset":
		return types.BIGINT
	}
	return types.STRING
}

// kafkaSource is one source subtask: a kafka.Reader, fed by a copy of the
// enumerator whose assignments it keeps for its own subtask (the
// enumerator's assignment is a deterministic function of the partition
// and the parallelism, so every subtask's copy agrees), and per-partition
// watermarks from the table's WATERMARK expression.
type kafkaSource struct {
	spec      *kafkaSourceSpec
	ctx       *core.Context
	reader    stream.SourceReader[kafkaRow, kafka.PartitionSplit]
	enum      stream.SplitEnumerator[kafka.PartitionSplit]
	restored  map[kafka.TopicPartition]kafka.PartitionSplit
	pending   []kafka.PartitionSplit
	noMore    bool
	splits    map[string]*splitWatermark
	emitted   int64
	err       error
	restoring bool
	// assigned counts the splits handed to the reader; a subtask with none
	// is idle, so it does not hold back the watermark downstream.
	assigned int
	idle     bool
	// now is the processing time of the current poll.
	now int64
}

type splitWatermark struct {
	s  *kafkaSource
	wm int64
	// active is when the split last had a record (processing time).
	active int64
}

func (s *kafkaSource) SnapshotState(_ *core.Context, id int64) ([][]byte, bool, error) {
	splits, err := s.reader.SnapshotState(id)
	if err != nil {
		return nil, false, err
	}
	c, err := codec.For[kafka.PartitionSplit]()
	if err != nil {
		return nil, false, err
	}
	var out [][]byte
	for _, sp := range splits {
		out = append(out, c.Append(nil, sp))
	}
	// Union: every subtask sees every split on restore and keeps those the
	// enumerator assigns it.
	return out, true, nil
}

func (s *kafkaSource) RestoreState(_ *core.Context, entries [][]byte) error {
	c, err := codec.For[kafka.PartitionSplit]()
	if err != nil {
		return err
	}
	s.restored = map[kafka.TopicPartition]kafka.PartitionSplit{}
	for _, e := range entries {
		sp, _, err := c.Decode(e)
		if err != nil {
			return fmt.Errorf("sql: restoring a Kafka split: %w", err)
		}
		s.restored[sp.TopicPartition] = sp
	}
	s.restoring = true
	return nil
}

func (s *kafkaSource) Open(ctx *core.Context) error {
	s.ctx = ctx
	s.now = ctx.CurrentProcessingTime()
	if s.spec.idleTimeout > 0 && s.spec.wm != nil {
		s.scheduleIdleCheck()
	}
	s.splits = map[string]*splitWatermark{}
	s.emitted = core.NoWatermark
	r, err := s.spec.src.CreateReader(readerCtx{s})
	if err != nil {
		return err
	}
	s.reader = r
	if err := r.Start(ctx.Task().Ctx()); err != nil {
		return err
	}
	e, err := s.spec.src.CreateEnumerator(enumCtx{s})
	if err != nil {
		return err
	}
	if err := e.Start(); err != nil {
		return s.startError(err)
	}
	s.enum = e
	if err := e.AddReader(ctx.Subtask()); err != nil {
		return err
	}
	if err := e.HandleSplitRequest(ctx.Subtask()); err != nil {
		return err
	}
	return s.assignPending()
}

// startError makes a failure no restart can fix fail the job once.
func (s *kafkaSource) startError(err error) error {
	t := s.spec.table
	switch {
	case errors.Is(err, kafka.ErrNoOffset) && s.spec.groupOffsets:
		return &restart.Unrecoverable{Err: fmt.Errorf(
			"sql: table %s: %w; 'scan.startup.mode' is 'group-offsets' and '%s' is not set: set it to 'earliest' or 'latest', or commit offsets for group %q",
			t.Name, err, planner.OptAutoOffsetReset, t.Options[planner.OptGroupID])}
	case errors.Is(err, kafka.ErrNoOffset), errors.Is(err, kafka.ErrInvalidConfig), errors.Is(err, kafka.ErrTopicNotFound):
		return &restart.Unrecoverable{Err: fmt.Errorf("sql: table %s: %w", t.Name, err)}
	}
	return fmt.Errorf("sql: table %s: %w", t.Name, err)
}

// scheduleIdleCheck re-evaluates the watermark every half idle timeout,
// so partitions that fall silent are found idle without new records.
func (s *kafkaSource) scheduleIdleCheck() {
	every := max(s.spec.idleTimeout/2, 10)
	s.ctx.Task().RegisterProcessingTimer(s.ctx.CurrentProcessingTime()+every, func(now int64) error {
		s.now = now
		if err := s.emitWatermark(); err != nil {
			return err
		}
		s.scheduleIdleCheck()
		return nil
	})
}

func (s *kafkaSource) assignPending() error {
	if len(s.pending) > 0 {
		p := s.pending
		s.pending = nil
		s.assigned += len(p)
		if err := s.reader.AddSplits(p); err != nil {
			return err
		}
	}
	if s.noMore {
		s.reader.NotifyNoMoreSplits()
	}
	return nil
}

func (s *kafkaSource) Available() <-chan struct{} { return s.reader.Available() }

func (s *kafkaSource) EmitNext(ctx *core.Context) (core.SourceStatus, error) {
	s.now = ctx.CurrentProcessingTime()
	st, err := s.reader.PollNext(ctx.Task().Ctx(), readerOut{s})
	if err == nil {
		err = s.err
	}
	if err == nil {
		err = s.assignPending()
	}
	if err != nil {
		var de *kafka.DeserializationError
		if errors.As(err, &de) {
			// The record stays malformed however often the job restarts.
			err = &restart.Unrecoverable{Err: fmt.Errorf("sql: table %s: %w%s", s.spec.table.Name, err, s.spec.skipHint)}
		}
		return core.EndOfInput, err
	}
	if err := s.emitWatermark(); err != nil {
		return core.EndOfInput, err
	}
	switch st {
	case stream.MoreAvailable:
		return core.MoreAvailable, nil
	case stream.NothingAvailable:
		return core.NothingAvailable, nil
	}
	return core.EndOfInput, nil
}

// emitWatermark emits the minimum of the splits' watermarks when it
// advanced. A split without records yet holds it back, as in Flink.
func (s *kafkaSource) emitWatermark() error {
	if s.spec.wm == nil {
		return nil
	}
	wm := int64(core.MaxWatermark)
	active := 0
	for _, sp := range s.splits {
		if s.spec.idleTimeout > 0 && s.now-sp.active >= s.spec.idleTimeout {
			continue // idle: it does not hold the watermark back
		}
		wm = min(wm, sp.wm)
		active++
	}
	idle := s.assigned == 0 || (len(s.splits) > 0 && active == 0)
	if idle != s.idle {
		s.idle = idle
		if err := s.ctx.Task().EmitIdle(idle); err != nil {
			return err
		}
	}
	if active == 0 {
		return nil
	}
	if wm > s.emitted && wm != core.NoWatermark {
		s.emitted = wm
		return s.ctx.EmitWatermark(wm)
	}
	return nil
}

func (s *kafkaSource) NotifyCheckpointComplete(_ *core.Context, id int64) error {
	if l, ok := s.reader.(stream.ReaderCheckpointListener); ok {
		return l.NotifyCheckpointComplete(id)
	}
	return nil
}

func (s *kafkaSource) Close() error {
	var errs []error
	if s.enum != nil {
		errs = append(errs, s.enum.Close())
	}
	if s.reader != nil {
		errs = append(errs, s.reader.Close())
	}
	return errors.Join(errs...)
}

func (s *kafkaSource) collect(sw *splitWatermark, v kafkaRow) {
	if v.skip || s.err != nil {
		return
	}
	if err := emitScanned(s.ctx, s.spec.rowtime, s.spec.proctime, v.vals); err != nil {
		s.err = err
		return
	}
	if s.spec.wm != nil && sw != nil {
		sw.active = s.now
		if err := raiseWatermark(&sw.wm, s.spec.table.Name, s.spec.wm, v.vals); err != nil {
			s.err = err
		}
	}
}

// emitScanned emits a row a source read: its rowtime column (index
// rowtime, -1 for none) is the record's timestamp, and its PROCTIME()
// columns are set to the task's processing time.
func emitScanned(ctx *core.Context, rowtime int, proctime []int, vals []any) error {
	ts := core.NoTimestamp
	if rowtime >= 0 {
		if t, ok := vals[rowtime].(int64); ok {
			ts = t
		}
	}
	for _, i := range proctime {
		vals[i] = ctx.CurrentProcessingTime()
	}
	return ctx.Emit(core.RowRecord(core.Row{Values: vals}), ts)
}

// raiseWatermark moves *wm up to the table's watermark expression wmExpr
// over a row it emitted (a NULL watermark leaves it).
func raiseWatermark(wm *int64, table string, wmExpr planner.Expr, vals []any) error {
	w, err := wmExpr.Eval(vals)
	if err != nil {
		return fmt.Errorf("sql: table %s: watermark: %w", table, err)
	}
	if w, ok := w.(int64); ok && w > *wm {
		*wm = w
	}
	return nil
}

// readerCtx is the reader's stream.SourceReaderContext.
type readerCtx struct{ s *kafkaSource }

func (c readerCtx) Subtask() int              { return c.s.ctx.Subtask() }
func (c readerCtx) Parallelism() int          { return c.s.ctx.Parallelism() }
func (c readerCtx) Clock() stream.Clock       { return c.s.ctx.Clock() }
func (c readerCtx) FileSystems() *fs.Resolver { return c.s.ctx.Task().FileSystems }
func (c readerCtx) MetricGroup() stream.MetricGroup {
	return metricGroup{&c.s.ctx.Task().Metrics().Gauges}
}

// metricGroup is a connector's stream.MetricGroup: its subtask's gauges
// (the task's Metrics().Gauges).
type metricGroup struct {
	g interface {
		Set(name string, v float64)
		Remove(name string)
	}
}

func (m metricGroup) SetGauge(name string, v float64) { m.g.Set(name, v) }
func (m metricGroup) RemoveGauge(name string)         { m.g.Remove(name) }
func (c readerCtx) SendSplitRequest() {
	if c.s.enum == nil {
		return
	}
	if err := c.s.enum.HandleSplitRequest(c.s.ctx.Subtask()); err != nil && c.s.err == nil {
		c.s.err = err
	}
}

// enumCtx is the enumerator's stream.SplitEnumeratorContext: only this
// subtask's reader is registered, so only its splits are assigned.
type enumCtx struct{ s *kafkaSource }

func (c enumCtx) Parallelism() int         { return c.s.ctx.Parallelism() }
func (c enumCtx) RegisteredReaders() []int { return []int{c.s.ctx.Subtask()} }
func (c enumCtx) AssignSplits(subtask int, splits []kafka.PartitionSplit) {
	if subtask != c.s.ctx.Subtask() {
		return
	}
	for _, sp := range splits {
		if r, ok := c.s.restored[sp.TopicPartition]; ok {
			sp = r // the checkpoint's position wins over the startup mode
		}
		c.s.pending = append(c.s.pending, sp)
	}
}
func (c enumCtx) SignalNoMoreSplits(subtask int) {
	if subtask == c.s.ctx.Subtask() {
		c.s.noMore = true
	}
}

// readerOut is the reader's stream.ReaderOutput.
type readerOut struct{ s *kafkaSource }

func (o readerOut) Collect(v kafkaRow, _ stream.Timestamp) { o.s.collect(nil, v) }
func (o readerOut) ForSplit(id string) stream.SplitOutput[kafkaRow] {
	sw, ok := o.s.splits[id]
	if !ok {
		sw = &splitWatermark{s: o.s, wm: core.NoWatermark, active: o.s.now}
		o.s.splits[id] = sw
	}
	return sw
}
func (o readerOut) ReleaseSplit(id string) { delete(o.s.splits, id) }

func (sw *splitWatermark) Collect(v kafkaRow, _ stream.Timestamp) { sw.s.collect(sw, v) }
