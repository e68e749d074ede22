// Package exec compiles SQL plans (internal/sql/planner) to the engine's
// core job API: each plan node becomes an untyped operator over Row
// records (the Kafka source with per-partition watermarks, Calc, the
// window table function, the keyed window aggregates (SESSION windows
// merging) with event-time timers in keyed state, the regular GROUP BY,
// deduplication, Top-N, window Top-N and window deduplication, regular and
// interval joins, union, and
// the kafka, upsert-kafka, filesystem, print and blackhole sinks), joined by forward or
// hash-partitioned edges. The job
// that results checkpoints, restarts and restores like any other core
// job; the engine below never learns that SQL built it.
package exec

import (
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/file"
	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/sql/planner"
	"github.com/sluice/sluice/kafka"
)

// Options configure a compilation.
type Options struct {
	// Config is the job's configuration (parallelism.default and the
	// checkpointing keys); nil is the defaults.
	Config *conf.Configuration
	// Log receives the connectors' logs (nil: discarded).
	Log *slog.Logger
	// Stdout receives the print connector's rows (nil: discarded).
	Stdout io.Writer
	// Metrics receives the job's counters (nil: a new one).
	Metrics *Metrics
	// Results, if set, receives the rows of a SELECT statement's result
	// (planner.SelectTable) in the order they change, with their values as
	// text, from one sink subtask, in place of printing them.
	Results func(kind core.RowKind, cells []string) error
	// Inputs compile the scans of planner.ConnectorDataStream tables, by
	// table name: each returns the stream of the table's rows, of type out
	// (see datastream.go).
	Inputs map[string]func(out core.Type) (core.Stream, error)
}

// Compile adds the operators of sinks' plans to b. Every operator gets a
// UID from its statement's position and its place in the plan, so a
// savepoint restores into the same script.
func Compile(b *core.Builder, sinks []*planner.Sink, o Options) error {
	if o.Config == nil {
		o.Config = conf.New()
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Metrics == nil {
		o.Metrics = &Metrics{}
	}
	c := &compiler{b: b, o: o, mu: &sync.Mutex{}}
	for i, s := range sinks {
		c.prefix = "sql-" + strconv.Itoa(i)
		c.seq = 0
		if err := c.sink(s); err != nil {
			return err
		}
	}
	return nil
}

type compiler struct {
	b      *core.Builder
	o      Options
	prefix string
	seq    int
	mu     *sync.Mutex // the print sinks' writer
}

func (c *compiler) uid(kind string) string {
	c.seq++
	return fmt.Sprintf("%s-%d-%s", c.prefix, c.seq, kind)
}

func (c *compiler) sink(s *planner.Sink) error {
	in, err := c.node(s.Input)
	if err != nil {
		return err
	}
	t := s.Table
	name := "Sink: " + t.Name
	var newOp func() core.Operator
	switch t.Options[planner.OptConnector] {
	case "kafka", "upsert-kafka":
		ks, err := newKafkaSink(s, c.o.Config, c.o.Log)
		if err != nil {
			return err
		}
		newOp = func() core.Operator {
			return &committingSinkOp[kafka.TxnCommittable]{sink: kafkaTwoPhase{ks}, what: "Kafka transactions", noTimestamps: true}
		}
	case "print":
		if t.Name == planner.SelectTable && c.o.Results != nil {
			fields, results := s.Input.Fields(), c.o.Results
			core.Sink(in, core.OperatorSpec{Name: name, New: func() core.Operator { return &collectSink{fields: fields, results: results} }}).
				UID(c.uid("sink")).SetParallelism(1) // one stream of changes; each key's keep their order
			return nil
		}
		fields := s.Input.Fields()
		id := t.Options["print-identifier"]
		w, mu := c.o.Stdout, c.mu
		newOp = func() core.Operator { return &printSink{w: w, mu: mu, id: id, fields: fields} }
	case "blackhole":
		newOp = func() core.Operator { return blackholeSink{} }
	case "filesystem":
		fsink, err := newFilesystemSink(s)
		if err != nil {
			return err
		}
		newOp = func() core.Operator {
			return &committingSinkOp[file.Committable]{sink: fsink, what: "part files"}
		}
	default:
		return fmt.Errorf("sql: table %s: connector '%s' cannot be written to", t.Name, t.Options[planner.OptConnector])
	}
	par := c.b.Parallelism()
	if s.Input.Changelog() == planner.Updating {
		par = in.Node().Parallelism
	}
	if p, ok := t.Options["sink.parallelism"]; ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return fmt.Errorf("sql: table %s: 'sink.parallelism' = '%s' is not a positive number", t.Name, p)
		}
		par = n
	}
	// A changelog keeps the order of each key's changes: the sink runs at
	// its input's parallelism, or, at another one, behind an exchange
	// hashed by its primary key (Flink's table.exec.sink.keyed-shuffle).
	var pk []int
	for i, col := range s.Columns {
		if containsInt(t.PrimaryKey, col) {
			pk = append(pk, i)
		}
	}
	if s.Input.Changelog() == planner.Updating && par != in.Node().Parallelism && len(pk) > 0 {
		in = in.KeyBy(keySelector(pk))
	}
	core.Sink(in, core.OperatorSpec{Name: name, New: newOp}).UID(c.uid("sink")).SetParallelism(par)
	return nil
}

func (c *compiler) node(n planner.Node) (core.Stream, error) {
	out, err := rowType(n.Fields())
	if err != nil {
		return core.Stream{}, err
	}
	switch n := n.(type) {
	case *planner.WatermarkAssigner:
		return c.scan(n.Input.Table, out)
	case *planner.Scan:
		return c.scan(n.Table, out)
	case *planner.Calc:
		in, err := c.node(n.Input)
		if err != nil {
			return core.Stream{}, err
		}
		rt := rowtimeOf(n.Fields())
		s := core.Transform(in, core.OperatorSpec{Kind: "calc", Name: "Calc", Out: out,
			New: func() core.Operator { return &calcOp{c: n, rowtime: rt} }}).UID(c.uid("calc"))
		if n.Changelog() == planner.Updating {
			// Over a changelog a Calc keeps its input's parallelism (and so
			// the order of each key's changes), chained to it.
			s.SetParallelism(in.Node().Parallelism)
		}
		return s, nil
	case *planner.WindowTableFunction:
		if n.Window.Kind == "SESSION" {
			codec, err := newRowCodec(n.Input.Fields())
			if err != nil {
				return core.Stream{}, err
			}
			w, late := n.Window, &lateCounter{m: c.o.Metrics}
			return c.keyed(n.Input, w.PartitionKeys, core.OperatorSpec{Kind: "window-tvf", Name: "WindowTableFunction " + w.String(), Out: out,
				NeedsWatermarks: true, New: func() core.Operator { return &sessionTVFOp{w: w, codec: codec, late: late} }}, "window-tvf")
		}
		in, err := c.node(n.Input)
		if err != nil {
			return core.Stream{}, err
		}
		w := n.Window
		return core.Transform(in, core.OperatorSpec{Kind: "window-tvf", Name: "WindowTableFunction " + w.String(), Out: out,
			NeedsWatermarks: true, New: func() core.Operator { return &windowTVFOp{w: w} }}).UID(c.uid("window-tvf")), nil
	case *planner.WindowAggregate:
		in, err := c.node(n.Input)
		if err != nil {
			return core.Stream{}, err
		}
		spec, err := newAggSpec(n.Input.Fields(), n.Keys, n.Aggs)
		if err != nil {
			return core.Stream{}, err
		}
		late := &lateCounter{m: c.o.Metrics}
		keyed := in.KeyBy(keySelector(n.Keys))
		if len(n.Keys) == 0 {
			keyed = in.KeyBy(func(core.Record, []byte) []byte { return nil }).SetParallelism(in.Node().Parallelism)
		}
		newOp := func() core.Operator { return &windowAggOp{aggSpec: spec, w: n, late: late} }
		if n.Window.Kind == "SESSION" {
			newOp = func() core.Operator { return &sessionAggOp{aggSpec: spec, w: n, late: late} }
		}
		s := core.Transform(keyed, core.OperatorSpec{Kind: "window-aggregate", Name: "WindowAggregate " + n.Window.String(), Out: out,
			NeedsWatermarks: true, Props: map[string]string{"window": n.Window.String()},
			New: newOp}).UID(c.uid("window-aggregate"))
		if len(n.Keys) == 0 {
			s.SetParallelism(1)
		}
		return s, nil
	case *planner.GroupAggregate:
		in, err := c.node(n.Input)
		if err != nil {
			return core.Stream{}, err
		}
		spec, err := newAggSpec(n.Input.Fields(), n.Keys, n.Aggs)
		if err != nil {
			return core.Stream{}, err
		}
		keyed := in.KeyBy(keySelector(n.Keys))
		s := core.Transform(keyed, core.OperatorSpec{Kind: "group-aggregate", Name: "GroupAggregate", Out: out,
			New: func() core.Operator { return &groupAggOp{aggSpec: spec} }}).UID(c.uid("group-aggregate"))
		if len(n.Keys) == 0 {
			s.SetParallelism(1)
		}
		return s, nil
	case *planner.Rank:
		codec, err := newRowCodec(n.Input.Fields())
		if err != nil {
			return core.Stream{}, err
		}
		srt := newSorter(n.Input.Fields(), n.OrderKeys)
		return c.keyed(n.Input, n.PartitionKeys, core.OperatorSpec{Kind: "rank", Name: fmt.Sprintf("Rank(rankEnd=%d)", n.N), Out: out,
			New: func() core.Operator { return &rankOp{r: n, codec: codec, sort: srt, firstN: firstNOf(n)} }}, "rank")
	case *planner.Deduplicate:
		codec, err := newRowCodec(n.Input.Fields())
		if err != nil {
			return core.Stream{}, err
		}
		late := &lateCounter{m: c.o.Metrics}
		return c.keyed(n.Input, n.Keys, core.OperatorSpec{Kind: "deduplicate", Name: "Deduplicate", Out: out,
			NeedsWatermarks: !n.Proctime && !n.KeepLast,
			New:             func() core.Operator { return &dedupOp{d: n, codec: codec, late: late} }}, "deduplicate")
	case *planner.WindowRank:
		codec, err := newRowCodec(n.Input.Fields())
		if err != nil {
			return core.Stream{}, err
		}
		srt := newSorter(n.Input.Fields(), n.OrderKeys)
		late := &lateCounter{m: c.o.Metrics}
		return c.keyed(n.Input, n.PartitionKeys, core.OperatorSpec{Kind: "window-rank", Name: "WindowRank " + n.Window.String(), Out: out,
			NeedsWatermarks: true, New: func() core.Operator { return &windowRankOp{r: n, codec: codec, sort: srt, late: late} }}, "window-rank")
	case *planner.WindowDeduplicate:
		codec, err := newRowCodec(n.Input.Fields())
		if err != nil {
			return core.Stream{}, err
		}
		late := &lateCounter{m: c.o.Metrics}
		return c.keyed(n.Input, n.Keys, core.OperatorSpec{Kind: "window-deduplicate", Name: "WindowDeduplicate " + n.Window.String(), Out: out,
			NeedsWatermarks: true, New: func() core.Operator { return &windowDedupOp{d: n, codec: codec, late: late} }}, "window-deduplicate")
	case *planner.Join:
		return c.join(n, out)
	case *planner.Union:
		ins := n.Inputs()
		cur, err := c.node(ins[0])
		if err != nil {
			return core.Stream{}, err
		}
		rt := rowtimeOf(n.Fields())
		for _, next := range ins[1:] {
			s, err := c.node(next)
			if err != nil {
				return core.Stream{}, err
			}
			cur = core.Transform2(cur, s, core.OperatorSpec{Kind: "union", Name: "Union", Out: out,
				New: func() core.Operator { return &unionOp{rowtime: rt} }}).UID(c.uid("union"))
		}
		return cur, nil
	}
	return core.Stream{}, fmt.Errorf("sql: cannot run plan node %T", n)
}

// keyed adds spec's operator over input hash-partitioned by the fields
// keys (all rows to one subtask when there are none).
func (c *compiler) keyed(input planner.Node, keys []int, spec core.OperatorSpec, kind string) (core.Stream, error) {
	in, err := c.node(input)
	if err != nil {
		return core.Stream{}, err
	}
	keyed := in.KeyBy(keySelector(keys))
	if len(keys) == 0 {
		keyed = in.KeyBy(func(core.Record, []byte) []byte { return nil }).SetParallelism(in.Node().Parallelism)
	}
	s := core.Transform(keyed, spec).UID(c.uid(kind))
	if len(keys) == 0 {
		s.SetParallelism(1)
	}
	return s, nil
}

func (c *compiler) scan(t *planner.Table, out core.Type) (core.Stream, error) {
	switch t.Options[planner.OptConnector] {
	case "kafka", "upsert-kafka":
	case planner.ConnectorDataStream:
		return c.dataStreamScan(t, out)
	case "datagen":
		return c.datagenScan(t, out)
	case "filesystem":
		return c.filesystemScan(t, out)
	default:
		return core.Stream{}, fmt.Errorf("sql: table %s: connector '%s' cannot be read yet (kafka, datagen and filesystem can)", t.Name, t.Options[planner.OptConnector])
	}
	if t.Options[planner.OptConnector] == "upsert-kafka" {
		return core.Stream{}, fmt.Errorf("sql: table %s: reading an upsert-kafka table (a changelog) is not supported yet", t.Name)
	}
	spec, err := newKafkaSourceSpec(t, c.o.Config, c.o.Metrics, c.o.Log)
	if err != nil {
		return core.Stream{}, err
	}
	s := core.AddSource(c.b, core.SourceSpec{
		Name: "TableSourceScan: " + t.Name, Out: out, AssignsWatermarks: t.Watermark != nil,
		Bounded: t.Options["scan.bounded.mode"] != "" && t.Options["scan.bounded.mode"] != "unbounded",
		Props:   map[string]string{"table": t.Path()},
		New:     func() core.Source { return &kafkaSource{spec: spec} },
	}).UID(c.uid("source-" + t.Name))
	return scanParallelism(t, s)
}

// datagenScan reads a datagen table.
func (c *compiler) datagenScan(t *planner.Table, out core.Type) (core.Stream, error) {
	spec, err := newDatagenSpec(t)
	if err != nil {
		return core.Stream{}, fmt.Errorf("sql: %w", err)
	}
	s := core.AddSource(c.b, core.SourceSpec{
		Name: "TableSourceScan: " + t.Name, Out: out, AssignsWatermarks: t.Watermark != nil,
		Bounded: spec.rows >= 0,
		Props:   map[string]string{"table": t.Path()},
		New:     func() core.Source { return &datagenSource{spec: spec} },
	}).UID(c.uid("source-" + t.Name))
	return scanParallelism(t, s)
}

// filesystemScan reads a filesystem table.
func (c *compiler) filesystemScan(t *planner.Table, out core.Type) (core.Stream, error) {
	spec, err := newFilesystemSourceSpec(t, c.o.Metrics)
	if err != nil {
		return core.Stream{}, err
	}
	s := core.AddSource(c.b, core.SourceSpec{
		Name: "TableSourceScan: " + t.Name, Out: out, AssignsWatermarks: t.Watermark != nil,
		Bounded: spec.monitor == 0,
		Props:   map[string]string{"table": t.Path()},
		New:     func() core.Source { return &fsSource{spec: spec} },
	}).UID(c.uid("source-" + t.Name))
	return scanParallelism(t, s)
}

// scanParallelism applies a table's 'scan.parallelism'.
func scanParallelism(t *planner.Table, s core.Stream) (core.Stream, error) {
	if p, ok := t.Options["scan.parallelism"]; ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return core.Stream{}, fmt.Errorf("sql: table %s: 'scan.parallelism' = '%s' is not a positive number", t.Name, p)
		}
		s.SetParallelism(n)
	}
	return s, nil
}

// join adds a join over both inputs hashed by their join keys.
func (c *compiler) join(n *planner.Join, out core.Type) (core.Stream, error) {
	l, err := c.node(n.Left)
	if err != nil {
		return core.Stream{}, err
	}
	r, err := c.node(n.Right)
	if err != nil {
		return core.Stream{}, err
	}
	jc, err := newJoinCore(n)
	if err != nil {
		return core.Stream{}, err
	}
	l = l.KeyBy(joinKeySelector(n.LeftKeys, n.KeyTypes))
	r = r.KeyBy(joinKeySelector(n.RightKeys, n.KeyTypes))
	// Without an equality key every row has the empty key: one subtask
	// joins them all (Flink's single distribution).
	single := func(s core.Stream) core.Stream {
		if len(n.LeftKeys) == 0 {
			s.SetParallelism(1)
		}
		return s
	}
	if n.Interval != nil {
		iv := *n.Interval
		return single(core.Transform2(l, r, core.OperatorSpec{Kind: "interval-join", Name: joinName(n), Out: out, NeedsWatermarks: true,
			New: func() core.Operator { return &intervalJoinOp{joinCore: jc, iv: iv} }}).UID(c.uid("interval-join"))), nil
	}
	var raw string
	if v, ok := c.o.Config.Raw("table.exec.state.ttl"); ok {
		raw = v.Value
	}
	ttl, err := stateTTL(raw)
	if err != nil {
		return core.Stream{}, err
	}
	return single(core.Transform2(l, r, core.OperatorSpec{Kind: "join", Name: joinName(n), Out: out,
		New: func() core.Operator { return &joinOp{joinCore: jc, ttl: ttl} }}).UID(c.uid("join"))), nil
}
