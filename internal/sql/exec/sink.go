package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/runtime/pendingcommit"
	"github.com/sluice/sluice/internal/sql/planner"
	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
	"github.com/twmb/franz-go/pkg/kgo"
)

// newKafkaSink is the kafka connector's sink for a kafka or upsert-kafka
// table: rows serialised with the table's key and value formats, written
// with the table's delivery guarantee.
func newKafkaSink(s *planner.Sink, cfg *conf.Configuration, log *slog.Logger) (*kafka.Sink[core.Row], error) {
	t := s.Table
	o := t.Options
	upsert := o[planner.OptConnector] == "upsert-kafka"
	fields := make([]planner.Field, len(s.Columns))
	for i, c := range s.Columns {
		fields[i] = planner.Field{Name: t.Columns[c].Name, Type: t.Columns[c].Type}
	}
	var keyIdx []int
	if upsert {
		for _, pk := range t.PrimaryKey {
			for i, c := range s.Columns {
				if c == pk {
					keyIdx = append(keyIdx, i)
				}
			}
		}
	} else if kf, ok := o[planner.OptKeyFields]; ok {
		for _, k := range strings.Split(kf, ";") {
			for i, f := range fields {
				if f.Name == strings.TrimSpace(k) {
					keyIdx = append(keyIdx, i)
				}
			}
		}
	}
	var valIdx []int
	for i := range fields {
		if o[planner.OptValueFieldsIncl] == "EXCEPT_KEY" && containsInt(keyIdx, i) {
			continue
		}
		valIdx = append(valIdx, i)
	}
	pick := func(idx []int) []planner.Field {
		out := make([]planner.Field, len(idx))
		for j, i := range idx {
			out[j] = fields[i]
		}
		return out
	}
	valPart := ""
	if _, ok := o[planner.OptValueFormat]; ok {
		valPart = "value."
	}
	valFmt, err := newRowFormat(t, valPart, pick(valIdx))
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.Name, err)
	}
	keyFmt, err := newRowFormat(t, "key.", pick(keyIdx))
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.Name, err)
	}
	topic := o[planner.OptTopic]
	ser := kafka.SerializerFunc[core.Row](func(r core.Row, ts stream.Timestamp) (*kgo.Record, error) {
		rec := &kgo.Record{Topic: topic}
		if len(keyIdx) > 0 {
			k, err := keyFmt.encode(topic, nil, r.Values, keyIdx)
			if err != nil {
				return nil, fmt.Errorf("key: %w", err)
			}
			rec.Key = k
		}
		switch r.Kind {
		case core.UpdateBefore:
			if upsert {
				return nil, nil // the +U that follows replaces it
			}
		case core.Delete:
			if upsert {
				return rec, nil // a tombstone
			}
		}
		v, err := valFmt.encode(topic, nil, r.Values, valIdx)
		if err != nil {
			return nil, err
		}
		rec.Value = v
		return rec, nil
	})
	opts := []kafka.SinkOpt{kafka.Checkpointing(cfg)}
	for _, co := range kafkaClientOpts(t, log) {
		opts = append(opts, co)
	}
	switch o[planner.OptDeliveryGuar] {
	case "none":
		opts = append(opts, kafka.Guarantee(kafka.None))
	case "exactly-once":
		prefix, ok := o[planner.OptTxnPrefix]
		if !ok {
			return nil, fmt.Errorf("table %s: 'sink.delivery-guarantee' = 'exactly-once' needs '%s'", t.Name, planner.OptTxnPrefix)
		}
		opts = append(opts, kafka.Guarantee(kafka.ExactlyOnce), kafka.TransactionalIDPrefix(prefix))
	default: // at-least-once, Flink's default
		opts = append(opts, kafka.Guarantee(kafka.AtLeastOnce))
	}
	sink, err := kafka.NewSink(ser, opts...)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.Name, err)
	}
	return sink, nil
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// twoPhaseSink is a connector sink of the stream API whose writer
// pre-commits at checkpoints and whose committer commits after them: the
// kafka connector's (transactions) and the file connector's (part files).
type twoPhaseSink[C any] interface {
	CreateWriter(ctx stream.SinkContext) (stream.SinkWriter[core.Row], error)
	CreateCommitterIn(ctx stream.SinkContext) (stream.Committer[C], error)
}

// kafkaTwoPhase adapts the kafka sink, whose committer needs no context.
type kafkaTwoPhase struct{ *kafka.Sink[core.Row] }

func (k kafkaTwoPhase) CreateCommitterIn(stream.SinkContext) (stream.Committer[kafka.TxnCommittable], error) {
	return k.CreateCommitter()
}

// committingSinkOp is one sink subtask: the sink's writer, and for a
// two-phase commit its committer, driven by the checkpoint hooks as the
// typed API drives them (pre-commit at the barrier, commit on completion,
// restored pre-commits committed before the writer starts).
type committingSinkOp[C any] struct {
	sink twoPhaseSink[C]
	what string // for errors: "Kafka transactions", "part files"
	// noTimestamps writes the rows without their event time (Kafka).
	noTimestamps bool
	ctx          *core.Context
	w            stream.SinkWriter[core.Row]
	committer    stream.Committer[C]
	// ledger holds the pre-committed committables by checkpoint, and those
	// of a restored checkpoint.
	ledger pendingcommit.Ledger[C]
}

func (s *committingSinkOp[C]) run() context.Context { return s.ctx.Task().Ctx() }

func (s *committingSinkOp[C]) Open(ctx *core.Context) error {
	s.ctx = ctx
	c, err := s.sink.CreateCommitterIn(sinkCtx{ctx})
	if err != nil {
		return err
	}
	s.committer = c
	if restored := s.ledger.TakeRestored(); len(restored) > 0 {
		if err := c.Commit(s.run(), restored); err != nil {
			return fmt.Errorf("sql: committing restored %s: %w", s.what, err)
		}
	}
	w, err := s.sink.CreateWriter(sinkCtx{ctx})
	if err != nil {
		return err
	}
	s.w = w
	return nil
}

// ProcessElement writes the row. A Kafka record carries no timestamp (the
// producer's clock stamps it), as Flink SQL's Kafka sinks write theirs
// without a 'timestamp' metadata column: the row's event time would date
// the record, and a broker's time-based retention would delete the output
// of old events as soon as it is written.
func (s *committingSinkOp[C]) ProcessElement(_ *core.Context, _ int, r core.Record, ts int64) error {
	if s.noTimestamps {
		return s.w.Write(s.run(), r.Row(), stream.NoTimestamp)
	}
	return s.w.Write(s.run(), r.Row(), stream.Timestamp(ts))
}

func (s *committingSinkOp[C]) prepare(end bool) ([]C, error) {
	if err := s.w.Flush(s.run(), end); err != nil {
		return nil, err
	}
	cw, ok := s.w.(stream.CommittingWriter[core.Row, C])
	if !ok {
		return nil, nil
	}
	return cw.PrepareCommit(s.run())
}

func (s *committingSinkOp[C]) SnapshotState(_ *core.Context, id int64) ([][]byte, bool, error) {
	cs, err := s.prepare(false)
	if err != nil {
		return nil, false, err
	}
	s.ledger.Add(id, cs)
	entries, err := s.ledger.Snapshot()
	if err != nil {
		return nil, false, err
	}
	return entries, false, nil
}

func (s *committingSinkOp[C]) RestoreState(_ *core.Context, entries [][]byte) error {
	if err := s.ledger.Restore(entries); err != nil {
		return fmt.Errorf("sql: restoring the %s to commit: %w", s.what, err)
	}
	return nil
}

func (s *committingSinkOp[C]) NotifyCheckpointComplete(_ *core.Context, id int64) error {
	due := s.ledger.Due(id)
	if len(due) == 0 {
		return nil
	}
	return s.committer.Commit(s.run(), due)
}

func (s *committingSinkOp[C]) Finish(ctx *core.Context) error {
	cs, err := s.prepare(true)
	if err != nil {
		return err
	}
	if ctx.Checkpointing() {
		s.ledger.Add(core.FinalCheckpoint, cs)
		return nil
	}
	if len(cs) == 0 {
		return nil
	}
	return s.committer.Commit(s.run(), cs)
}

func (s *committingSinkOp[C]) Close() error {
	var errs []error
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	if s.committer != nil {
		errs = append(errs, s.committer.Close())
	}
	return errors.Join(errs...)
}

// sinkCtx is the writer's stream.SinkContext.
type sinkCtx struct{ ctx *core.Context }

func (c sinkCtx) Subtask() int     { return c.ctx.Subtask() }
func (c sinkCtx) Parallelism() int { return c.ctx.Parallelism() }
func (c sinkCtx) JobName() string  { return c.ctx.JobName() }
func (c sinkCtx) CurrentProcessingTime() stream.Timestamp {
	return stream.Timestamp(c.ctx.CurrentProcessingTime())
}
func (c sinkCtx) RegisterProcessingTimer(at stream.Timestamp, fn func(now stream.Timestamp) error) func() {
	return c.ctx.Task().RegisterProcessingTimer(int64(at), func(now int64) error { return fn(stream.Timestamp(now)) })
}
func (c sinkCtx) FileSystems() *fs.Resolver { return c.ctx.Task().FileSystems }
func (c sinkCtx) MetricGroup() stream.MetricGroup {
	return metricGroup{&c.ctx.Task().Metrics().Gauges}
}

// printSink writes rows as Flink's print connector does: "+I[a, b]",
// prefixed with the subtask ("2> ") at parallelism above 1 and with the
// print-identifier.
type printSink struct {
	w      io.Writer
	mu     *sync.Mutex
	id     string
	fields []planner.Field
}

func (p *printSink) ProcessElement(ctx *core.Context, _ int, r core.Record, _ int64) error {
	row := r.Row()
	var b strings.Builder
	if p.id != "" {
		b.WriteString(p.id)
		if ctx.Parallelism() > 1 {
			fmt.Fprintf(&b, ":%d> ", ctx.Subtask()+1)
		} else {
			b.WriteString("> ")
		}
	} else if ctx.Parallelism() > 1 {
		fmt.Fprintf(&b, "%d> ", ctx.Subtask()+1)
	}
	b.WriteString(row.Kind.String())
	b.WriteString("[")
	for i, v := range row.Values {
		if i > 0 {
			b.WriteString(", ")
		}
		if v == nil {
			b.WriteString("NULL")
		} else {
			b.WriteString(toText(v, p.fields[i]))
		}
	}
	b.WriteString("]\n")
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := io.WriteString(p.w, b.String())
	return err
}

// collectSink hands a SELECT's rows to the client, as text.
type collectSink struct {
	fields  []planner.Field
	results func(kind core.RowKind, cells []string) error
}

func (c *collectSink) ProcessElement(_ *core.Context, _ int, r core.Record, _ int64) error {
	row := r.Row()
	cells := make([]string, len(row.Values))
	for i, v := range row.Values {
		if v == nil {
			cells[i] = "NULL"
		} else {
			cells[i] = toText(v, c.fields[i])
		}
	}
	return c.results(row.Kind, cells)
}

// blackholeSink drops every row.
type blackholeSink struct{}

func (blackholeSink) ProcessElement(*core.Context, int, core.Record, int64) error { return nil }
