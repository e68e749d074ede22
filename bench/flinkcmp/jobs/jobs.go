// Package jobs holds the Sluice side of the Sluice–Flink benchmark: the
// Nexmark-style queries q1, q2, q5 and q7 over the generator of package
// nexmark, the Kafka → keyed stateful process → Kafka pipeline, and the
// raw franz-go consume → produce loop that is its ceiling. Each is written
// as a user would write it and mirrors the Java job of the same name in
// bench/flink; cmd/sluicebench runs one per process.
package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/bench/flinkcmp/nexmark"
	"github.com/sluice/sluice/stream"
)

// Config says what to run.
type Config struct {
	// Workload is one of nexmark.Workloads, or Raw.
	Workload string
	// Records is the number of generated records (q1..q7) and of records in
	// the Kafka input topic (kafka, raw): the input is records [0, Records).
	Records int64
	// Seed of the generator; default nexmark.DefaultSeed is the caller's to set.
	Seed uint64
	// Parallelism of every operator; default 2.
	Parallelism int
	// CheckpointInterval and CheckpointDir configure exactly-once
	// checkpoints (execution.checkpointing.interval and .dir); an interval
	// of 0 turns checkpointing off.
	CheckpointInterval time.Duration
	CheckpointDir      string
	// Bootstrap, InTopic, OutTopic and TxnPrefix are for the Kafka
	// workloads: the broker, the input topic (written by the driver), the
	// output topic and the transactional id prefix of the sink.
	Bootstrap string
	InTopic   string
	OutTopic  string
	TxnPrefix string
	// Logger receives the engine's logs; default discarded.
	Logger *slog.Logger
}

// Raw is the workload name of the raw franz-go loop.
const Raw = "raw"

// Result is what a run reports; the Java jobs print the same fields.
type Result struct {
	Engine   string `json:"engine"`
	Workload string `json:"workload"`
	Records  int64  `json:"records"`
	// Outputs and Checksum digest the job's output (nexmark.Checksum). The
	// Kafka pipeline leaves them 0: the driver reads the output topic.
	Outputs  int64 `json:"outputs"`
	Checksum int64 `json:"checksum"`
	// ProcessingMillis and ProcessingCPUMillis (the process's user+sys
	// CPU time) span the processing: from the first input record entering
	// the job (generated, or read from Kafka) to the end of input at the
	// sinks, every record handed to them. Cluster start-up, the final
	// checkpoint and commit are outside.
	ProcessingMillis    int64 `json:"processing_ms"`
	ProcessingCPUMillis int64 `json:"processing_cpu_ms"`
	// JobMillis and JobCPUMillis span the job from its submission to its
	// end.
	JobMillis    int64 `json:"job_ms"`
	JobCPUMillis int64 `json:"job_cpu_ms"`
	// PeakRSSBytes is the process's peak resident set size (VmHWM), read
	// by the process itself as it ends (see PeakRSS).
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
}

// span records when (and at what process CPU time) the processing
// began and ended: begin is called for every input record (only the
// first counts), finish at the end of input of every sink subtask (the
// last counts).
type span struct {
	started atomic.Bool
	once    sync.Once
	// Written once under once, read after the job.
	start    time.Time
	startCPU time.Duration
	mu       struct {
		sync.Mutex
		end    time.Time
		endCPU time.Duration
	}
}

func (s *span) begin() {
	if s.started.Load() {
		return
	}
	s.once.Do(func() {
		s.start, s.startCPU = time.Now(), processCPU()
		s.started.Store(true)
	})
}

func (s *span) finish() {
	t, cpu := time.Now(), processCPU()
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.After(s.mu.end) {
		s.mu.end, s.mu.endCPU = t, cpu
	}
}

// fill sets the processing fields of r; call it after the job.
func (s *span) fill(r *Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started.Load() || s.mu.end.IsZero() {
		return
	}
	r.ProcessingMillis = s.mu.end.Sub(s.start).Milliseconds()
	r.ProcessingCPUMillis = (s.mu.endCPU - s.startCPU).Milliseconds()
}

// ErrConfig reports an unusable Config.
var ErrConfig = errors.New("jobs: bad configuration")

func (c *Config) validate() error {
	var errs []error
	if c.Records <= 0 {
		errs = append(errs, fmt.Errorf("%w: records %d, want > 0", ErrConfig, c.Records))
	}
	if c.Parallelism <= 0 {
		errs = append(errs, fmt.Errorf("%w: parallelism %d, want > 0", ErrConfig, c.Parallelism))
	}
	if c.CheckpointInterval > 0 && c.CheckpointDir == "" {
		errs = append(errs, fmt.Errorf("%w: checkpointing needs a directory", ErrConfig))
	}
	if c.Workload == nexmark.Kafka || c.Workload == Raw {
		if c.Bootstrap == "" || c.InTopic == "" || c.OutTopic == "" || c.TxnPrefix == "" {
			errs = append(errs, fmt.Errorf("%w: workload %s needs a bootstrap address, input and output topics and a transactional id prefix",
				ErrConfig, c.Workload))
		}
	}
	return errors.Join(errs...)
}

// Run runs one workload to its end.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Parallelism == 0 {
		cfg.Parallelism = 2
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	if cfg.Workload == Raw {
		return runRaw(ctx, cfg)
	}
	opts := []stream.Option{stream.WithParallelism(cfg.Parallelism), stream.WithLogger(cfg.Logger)}
	if cfg.CheckpointInterval > 0 {
		opts = append(opts, stream.WithCheckpointing(cfg.CheckpointInterval, cfg.CheckpointDir))
	}
	env := stream.NewEnvironment(opts...)
	gen := nexmark.Generator{Seed: cfg.Seed}
	sp := &span{}
	bid := func(i int64) nexmark.Bid {
		sp.begin()
		return gen.Bid(i)
	}
	person := func(j int64) nexmark.Person {
		sp.begin()
		return gen.Person(j)
	}
	auction := func(k int64) nexmark.Auction {
		sp.begin()
		return gen.Auction(k)
	}
	var d *digest
	switch cfg.Workload {
	case nexmark.Q3:
		d = q3(env, person, auction, cfg.Records, sp)
	case nexmark.Q8:
		d = q8(env, person, auction, cfg.Records, sp)
	case nexmark.Q0:
		d = q0(env, bid, cfg.Records, sp)
	case nexmark.Q11:
		d = q11(env, bid, cfg.Records, sp)
	case nexmark.Q19:
		d = q19(env, bid, cfg.Records, sp)
	case nexmark.Q1:
		d = q1(env, bid, cfg.Records, sp)
	case nexmark.Q2:
		d = q2(env, bid, cfg.Records, sp)
	case nexmark.Q5:
		d = q5(env, bid, cfg.Records, sp)
	case nexmark.Q7:
		d = q7(env, bid, cfg.Records, sp)
	case nexmark.Kafka:
		var err error
		if d, err = kafkaPipeline(env, cfg, sp); err != nil {
			return Result{}, err
		}
	default:
		return Result{}, fmt.Errorf("%w: %q", nexmark.ErrUnknownWorkload, cfg.Workload)
	}
	cpu0 := processCPU()
	start := time.Now()
	if _, err := env.ExecuteContext(ctx, "flinkcmp-"+cfg.Workload); err != nil {
		return Result{}, err
	}
	end := time.Now()
	cpu := processCPU() - cpu0
	sum := d.result()
	res := Result{
		Engine: "sluice", Workload: cfg.Workload, Records: cfg.Records,
		Outputs: sum.Count, Checksum: sum.SumInt64(),
		JobMillis: end.Sub(start).Milliseconds(), JobCPUMillis: cpu.Milliseconds(),
	}
	sp.fill(&res)
	return res, nil
}

func bidTime(b nexmark.Bid, _ stream.Timestamp) stream.Timestamp { return stream.Timestamp(b.DateTime) }

func eventTime() stream.WatermarkStrategy[nexmark.Bid] {
	return stream.ForBoundedOutOfOrderness[nexmark.Bid](nexmark.WatermarkDelay).WithTimestampAssigner(bidTime)
}

// q0: pass-through, every bid to the sink.
func q0(env *stream.Environment, bid func(int64) nexmark.Bid, n int64, sp *span) *digest {
	return sinkDigest(stream.DataGen(env, n, 0, bid), nexmark.Q0Hash, sp)
}

// countBids counts the bids of a window (q5, q11).
var countBids = stream.AggregateFuncs[nexmark.Bid, int64, int64]{
	AddFn:    func(_ nexmark.Bid, c int64) int64 { return c + 1 },
	ResultFn: func(c int64) int64 { return c },
	MergeFn:  func(a, b int64) int64 { return a + b },
}

// bidderSession is q11's output: a bidder's session and its bids.
type bidderSession struct{ Bidder, Start, End, Count int64 }

// q11: bids per bidder session (event-time session windows).
func q11(env *stream.Environment, bid func(int64) nexmark.Bid, n int64, sp *span) *digest {
	bids := stream.DataGenWithWatermarks(env, n, 0, bid, eventTime())
	byBidder := stream.KeyBy(bids, func(b nexmark.Bid) int64 { return b.Bidder })
	sessions := stream.WindowAggregateWith(stream.Window(byBidder, stream.EventTimeSessionWindows(nexmark.Q11Gap)),
		countBids, stream.ProcessWindowFunc(func(bidder int64, ctx stream.WindowContext[int64, stream.TimeWindow], c []int64, out stream.Collector[bidderSession]) error {
			w := ctx.Window()
			out.Collect(bidderSession{Bidder: bidder, Start: int64(w.Start), End: int64(w.End), Count: c[0]})
			return nil
		}))
	return sinkDigest(sessions, func(s bidderSession) uint64 { return nexmark.Q11Hash(s.Bidder, s.Start, s.End, s.Count) }, sp)
}

// topBids is q19's accumulator: the highest bids so far, best first.
type topBids struct {
	n    int
	bids [nexmark.Q19N]nexmark.Bid
}

func (t topBids) add(b nexmark.Bid) topBids {
	i := t.n
	for i > 0 && nexmark.Q19Better(b, t.bids[i-1]) {
		i--
	}
	if i >= nexmark.Q19N {
		return t
	}
	copy(t.bids[i+1:], t.bids[i:min(t.n, nexmark.Q19N-1)])
	t.bids[i] = b
	t.n = min(t.n+1, nexmark.Q19N)
	return t
}

// rankedBid is q19's output.
type rankedBid struct{ End, Auction, Rank, Bidder, Price int64 }

// q19: the Q19N highest bids of each auction per tumbling window.
func q19(env *stream.Environment, bid func(int64) nexmark.Bid, n int64, sp *span) *digest {
	bids := stream.DataGenWithWatermarks(env, n, 0, bid, eventTime())
	byAuction := stream.KeyBy(bids, func(b nexmark.Bid) int64 { return b.Auction })
	top := stream.AggregateFuncs[nexmark.Bid, topBids, topBids]{
		AddFn:    func(b nexmark.Bid, t topBids) topBids { return t.add(b) },
		ResultFn: func(t topBids) topBids { return t },
		MergeFn: func(a, b topBids) topBids {
			for _, x := range b.bids[:b.n] {
				a = a.add(x)
			}
			return a
		},
	}
	ranked := stream.WindowAggregateWith(stream.Window(byAuction, stream.TumblingEventTimeWindows(nexmark.Q19Size)),
		top, stream.ProcessWindowFunc(func(auction int64, ctx stream.WindowContext[int64, stream.TimeWindow], t []topBids, out stream.Collector[rankedBid]) error {
			end := int64(ctx.Window().End)
			for r, b := range t[0].bids[:t[0].n] {
				out.Collect(rankedBid{End: end, Auction: auction, Rank: int64(r + 1), Bidder: b.Bidder, Price: b.Price})
			}
			return nil
		}))
	return sinkDigest(ranked, func(r rankedBid) uint64 { return nexmark.Q19Hash(r.End, r.Auction, r.Rank, r.Bidder, r.Price) }, sp)
}

// sellerAuction is q3's output.
type sellerAuction struct{ Auction, Seller int64 }

// q3: local item suggestion. The persons of Q3States joined with the
// Q3Category auctions they sell, a regular join on person id = seller:
// each side waits in keyed state for the other.
func q3(env *stream.Environment, person func(int64) nexmark.Person, auction func(int64) nexmark.Auction, n int64, sp *span) *digest {
	persons := stream.Filter(stream.DataGen(env, nexmark.PersonsOf(n), 0, person), func(p nexmark.Person) bool {
		return slices.Contains(nexmark.Q3States, p.State)
	})
	auctions := stream.Filter(stream.DataGen(env, nexmark.AuctionsOf(n), 0, auction), func(a nexmark.Auction) bool {
		return a.Category == nexmark.Q3Category
	})
	seen := stream.NewValueDescriptor[bool]("person")
	waiting := stream.NewListDescriptor[int64]("auctions")
	joined := stream.KeyedCoProcess(stream.ConnectKeyed(
		stream.KeyBy(persons, func(p nexmark.Person) int64 { return p.ID }),
		stream.KeyBy(auctions, func(a nexmark.Auction) int64 { return a.Seller })),
		stream.KeyedCoProcessFuncs[int64, nexmark.Person, nexmark.Auction, sellerAuction]{
			Element1: func(ctx *stream.KeyedContext[int64], p nexmark.Person, out stream.Collector[sellerAuction]) error {
				if err := stream.Value(ctx, seen).Update(true); err != nil {
					return err
				}
				w := stream.List(ctx, waiting)
				ids, err := w.Get()
				if err != nil {
					return err
				}
				for _, id := range ids {
					out.Collect(sellerAuction{Auction: id, Seller: p.ID})
				}
				return w.Clear()
			},
			Element2: func(ctx *stream.KeyedContext[int64], a nexmark.Auction, out stream.Collector[sellerAuction]) error {
				ok, err := stream.Value(ctx, seen).Value()
				if err != nil {
					return err
				}
				if ok {
					out.Collect(sellerAuction{Auction: a.ID, Seller: a.Seller})
					return nil
				}
				return stream.List(ctx, waiting).Add(a.ID)
			},
		})
	return sinkDigest(joined, func(s sellerAuction) uint64 { return nexmark.Q3Hash(s.Auction, s.Seller) }, sp)
}

// newSeller is q8's output: a person who opened an auction in the window
// they were created in, and the window's start.
type newSeller struct{ Person, Start int64 }

// q8: new users who opened auctions, a window join (co-group) of persons
// and auctions on person id = seller in tumbling windows of Q8Size.
func q8(env *stream.Environment, person func(int64) nexmark.Person, auction func(int64) nexmark.Auction, n int64, sp *span) *digest {
	persons := stream.DataGenWithWatermarks(env, nexmark.PersonsOf(n), 0, person,
		stream.ForBoundedOutOfOrderness[nexmark.Person](nexmark.WatermarkDelay).WithTimestampAssigner(
			func(p nexmark.Person, _ stream.Timestamp) stream.Timestamp { return stream.Timestamp(p.DateTime) }))
	auctions := stream.DataGenWithWatermarks(env, nexmark.AuctionsOf(n), 0, auction,
		stream.ForBoundedOutOfOrderness[nexmark.Auction](nexmark.WatermarkDelay).WithTimestampAssigner(
			func(a nexmark.Auction, _ stream.Timestamp) stream.Timestamp { return stream.Timestamp(a.DateTime) }))
	size := nexmark.Q8Size.Milliseconds()
	sellers := stream.CoGroupApply(stream.CoGroup(persons, auctions,
		func(p nexmark.Person) int64 { return p.ID }, func(a nexmark.Auction) int64 { return a.Seller },
		stream.TumblingEventTimeWindows(nexmark.Q8Size)),
		func(ps []nexmark.Person, as []nexmark.Auction, out stream.Collector[newSeller]) {
			if len(ps) > 0 && len(as) > 0 {
				out.Collect(newSeller{Person: ps[0].ID, Start: nexmark.WindowStart(ps[0].DateTime, size)})
			}
		})
	return sinkDigest(sellers, func(s newSeller) uint64 { return nexmark.Q8Hash(s.Person, s.Start) }, sp)
}

// q1: currency conversion, a map over every bid.
func q1(env *stream.Environment, bid func(int64) nexmark.Bid, n int64, sp *span) *digest {
	bids := stream.DataGen(env, n, 0, bid)
	euros := stream.Map(bids, func(b nexmark.Bid) nexmark.Bid {
		b.Price = nexmark.Q1Price(b.Price)
		return b
	})
	return sinkDigest(euros, nexmark.Q1Hash, sp)
}

// auctionPrice is q2's output.
type auctionPrice struct{ Auction, Price int64 }

// q2: the bids of every 123rd auction.
func q2(env *stream.Environment, bid func(int64) nexmark.Bid, n int64, sp *span) *digest {
	bids := stream.DataGen(env, n, 0, bid)
	kept := stream.Filter(bids, func(b nexmark.Bid) bool { return b.Auction%nexmark.Q2Modulus == 0 })
	out := stream.Map(kept, func(b nexmark.Bid) auctionPrice { return auctionPrice{b.Auction, b.Price} })
	return sinkDigest(out, func(a auctionPrice) uint64 { return nexmark.Q2Hash(a.Auction, a.Price) }, sp)
}

// auctionCount is a q5 intermediate and output: an auction's bids in the
// sliding window ending at End.
type auctionCount struct{ End, Auction, Count int64 }

// q5: hot items. Bids per auction in 10 s windows sliding by 2 s, then the
// auction with the most bids in each window (ties: the lower auction id),
// found in a tumbling window of one slide over the counts keyed by window
// end (each count's timestamp is its window's last millisecond).
func q5(env *stream.Environment, bid func(int64) nexmark.Bid, n int64, sp *span) *digest {
	bids := stream.DataGenWithWatermarks(env, n, 0, bid, eventTime())
	byAuction := stream.KeyBy(bids, func(b nexmark.Bid) int64 { return b.Auction })
	counts := stream.WindowAggregateWith(stream.Window(byAuction, stream.SlidingEventTimeWindows(nexmark.Q5Size, nexmark.Q5Slide)),
		countBids, stream.ProcessWindowFunc(func(auction int64, ctx stream.WindowContext[int64, stream.TimeWindow], c []int64, out stream.Collector[auctionCount]) error {
			out.Collect(auctionCount{End: int64(ctx.Window().End), Auction: auction, Count: c[0]})
			return nil
		}))
	byWindow := stream.KeyBy(counts, func(c auctionCount) int64 { return c.End })
	hottest := stream.Window(byWindow, stream.TumblingEventTimeWindows(nexmark.Q5Slide)).Reduce(func(a, b auctionCount) auctionCount {
		if nexmark.Q5Better(b.Auction, b.Count, a.Auction, a.Count) {
			return b
		}
		return a
	})
	return sinkDigest(hottest, func(c auctionCount) uint64 { return nexmark.Q5Hash(c.End, c.Auction, c.Count) }, sp)
}

// highestBid is a q7 intermediate and output: the highest bid of an
// auction (then of all auctions) in the tumbling window ending at End.
type highestBid struct{ End, Auction, Bidder, Price int64 }

// q7: the highest bid of each 10 s tumbling window (ties: the lower
// auction, then the lower bidder), as the highest bid per auction and
// window, then the highest of those per window.
func q7(env *stream.Environment, bid func(int64) nexmark.Bid, n int64, sp *span) *digest {
	bids := stream.DataGenWithWatermarks(env, n, 0, bid, eventTime())
	byAuction := stream.KeyBy(bids, func(b nexmark.Bid) int64 { return b.Auction })
	higher := func(a, b nexmark.Bid) nexmark.Bid {
		if nexmark.Q7Better(b.Auction, b.Bidder, b.Price, a.Auction, a.Bidder, a.Price) {
			return b
		}
		return a
	}
	perAuction := stream.WindowReduceWith(stream.Window(byAuction, stream.TumblingEventTimeWindows(nexmark.Q7Size)),
		higher, stream.ProcessWindowFunc(func(_ int64, ctx stream.WindowContext[int64, stream.TimeWindow], b []nexmark.Bid, out stream.Collector[highestBid]) error {
			out.Collect(highestBid{End: int64(ctx.Window().End), Auction: b[0].Auction, Bidder: b[0].Bidder, Price: b[0].Price})
			return nil
		}))
	byWindow := stream.KeyBy(perAuction, func(h highestBid) int64 { return h.End })
	highest := stream.Window(byWindow, stream.TumblingEventTimeWindows(nexmark.Q7Size)).Reduce(func(a, b highestBid) highestBid {
		if nexmark.Q7Better(b.Auction, b.Bidder, b.Price, a.Auction, a.Bidder, a.Price) {
			return b
		}
		return a
	})
	return sinkDigest(highest, func(h highestBid) uint64 { return nexmark.Q7Hash(h.End, h.Auction, h.Bidder, h.Price) }, sp)
}

// digest collects the output checksum of a job's sink subtasks.
type digest struct {
	mu struct {
		sync.Mutex
		sum nexmark.Checksum
	}
}

func (d *digest) add(c nexmark.Checksum) {
	d.mu.Lock()
	d.mu.sum.Merge(c)
	d.mu.Unlock()
}

func (d *digest) result() nexmark.Checksum {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mu.sum
}

// digestSink is a sink whose writers hash every record into a checksum of
// their own, hand it to the digest when they close, and end the span at
// the end of their input.
type digestSink[T any] struct {
	d    *digest
	sp   *span
	hash func(T) uint64
}

func sinkDigest[T any](in stream.DataStream[T], hash func(T) uint64, sp *span) *digest {
	d := &digest{}
	stream.SinkTo(in, &digestSink[T]{d: d, sp: sp, hash: hash}).Name("Checksum")
	return d
}

func (s *digestSink[T]) CreateWriter(stream.SinkContext) (stream.SinkWriter[T], error) {
	return &digestWriter[T]{s: s}, nil
}

type digestWriter[T any] struct {
	s   *digestSink[T]
	sum nexmark.Checksum
}

func (w *digestWriter[T]) Write(_ context.Context, v T, _ stream.Timestamp) error {
	w.sum.Add(w.s.hash(v))
	return nil
}

func (w *digestWriter[T]) Flush(_ context.Context, endOfInput bool) error {
	if endOfInput {
		w.s.sp.finish()
	}
	return nil
}

func (w *digestWriter[T]) Close() error {
	w.s.d.add(w.sum)
	w.sum = nexmark.Checksum{}
	return nil
}
