package io.github.sluice.flinkbench;

import io.github.sluice.flinkbench.Types.AuctionCount;
import io.github.sluice.flinkbench.Types.AuctionPrice;
import io.github.sluice.flinkbench.Types.AuctionTotals;
import io.github.sluice.flinkbench.Types.BidderSession;
import io.github.sluice.flinkbench.Types.NewSeller;
import io.github.sluice.flinkbench.Types.SellerAuction;
import io.github.sluice.flinkbench.Types.RankedBid;
import io.github.sluice.flinkbench.Types.TopBids;
import io.github.sluice.flinkbench.Types.HighestBid;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.CoGroupFunction;
import org.apache.flink.api.common.functions.FilterFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.serialization.AbstractDeserializationSchema;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.BoundedOneInput;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.windowing.assigners.EventTimeSessionWindows;
import org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * The Flink side of Sluice's side-by-side benchmark: runs one workload on Flink's local
 * MiniCluster and prints one line, "RESULT {json}", with the same fields as Go's jobs.Result.
 * The jobs mirror bench/flinkcmp/jobs (Go) operator for operator.
 *
 * <pre>
 * java ... FlinkBench --workload q1|q2|q5|q7|kafka --records N [--seed S] [--parallelism P]
 *     [--checkpoint-interval-ms MS --checkpoint-dir DIR] [--object-reuse true|false]
 *     [--bootstrap HOST:PORT --in-topic T --out-topic T --txn-prefix P]
 * </pre>
 */
public final class FlinkBench {
    private FlinkBench() {}

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = parseArgs(argv);
        String workload = required(args, "workload");
        long records = Long.parseLong(required(args, "records"));
        long seed = Long.parseLong(args.getOrDefault("seed", String.valueOf(Generator.DEFAULT_SEED)));
        int parallelism = Integer.parseInt(args.getOrDefault("parallelism", "2"));
        long checkpointMs = Long.parseLong(args.getOrDefault("checkpoint-interval-ms", "0"));
        // The join queries' records are a quarter persons, the rest auctions, each split evenly.
        long multiple = workload.equals("q3") || workload.equals("q8") ? 4L * parallelism : parallelism;
        if (records % multiple != 0) {
            throw new IllegalArgumentException(
                    "--records " + records + " of " + workload + " must be a multiple of " + multiple);
        }

        // Flink's own configuration keys, as a config.yaml would set them.
        Map<String, String> conf = new LinkedHashMap<>();
        conf.put("parallelism.default", String.valueOf(parallelism));
        conf.put("taskmanager.numberOfTaskSlots", String.valueOf(parallelism));
        conf.put("pipeline.object-reuse", args.getOrDefault("object-reuse", "true"));
        conf.put("state.backend.type", "hashmap");
        if (checkpointMs > 0) {
            conf.put("execution.checkpointing.interval", checkpointMs + " ms");
            conf.put("execution.checkpointing.mode", "EXACTLY_ONCE");
            conf.put("execution.checkpointing.dir", "file://" + required(args, "checkpoint-dir"));
        }
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.createLocalEnvironment(parallelism, Configuration.fromMap(conf));

        Generator gen = new Generator(seed);
        switch (workload) {
            case "q0":
                q0(env, gen, records, parallelism);
                break;
            case "q1":
                q1(env, gen, records, parallelism);
                break;
            case "q3":
                q3(env, gen, records, parallelism);
                break;
            case "q8":
                q8(env, gen, records, parallelism);
                break;
            case "q11":
                q11(env, gen, records, parallelism);
                break;
            case "q19":
                q19(env, gen, records, parallelism);
                break;
            case "q2":
                q2(env, gen, records, parallelism);
                break;
            case "q5":
                q5(env, gen, records, parallelism);
                break;
            case "q7":
                q7(env, gen, records, parallelism);
                break;
            case "kafka":
                kafka(env, args);
                break;
            default:
                throw new IllegalArgumentException("unknown workload " + workload + " (want q0, q1, q2, q3, q5, q7, q8, q11, q19 or kafka)");
        }

        long cpu0 = Span.cpuNanos();
        long start = System.nanoTime();
        env.execute("flinkcmp-" + workload);
        long end = System.nanoTime();
        long cpu = Span.cpuNanos() - cpu0;
        System.out.printf(
                "RESULT {\"engine\":\"flink\",\"workload\":\"%s\",\"records\":%d,\"outputs\":%d,\"checksum\":%d,"
                        + "\"processing_ms\":%d,\"processing_cpu_ms\":%d,\"job_ms\":%d,\"job_cpu_ms\":%d,"
                        + "\"peak_rss_bytes\":%d}%n",
                workload, records, DigestSink.COUNT.get(), DigestSink.SUM.get(), Span.millis(), Span.cpuMillis(),
                (end - start) / 1_000_000, cpu / 1_000_000, peakRss());
    }

    // ---------------------------------------------------------------- sources

    /**
     * Maps the generator source's sequence numbers to record indexes so that, as in Sluice's
     * DataGen, subtask s of p generates records s, s+p, s+2p, ... and event time advances evenly
     * over the splits: the source cuts [0, n) into p contiguous ranges of m = n/p, and number j
     * becomes (j mod m)·p + j div m. It is a bijection of [0, n) whatever the ranges are, so the
     * records are the same in any case.
     */
    static final class BidGenerator implements GeneratorFunction<Long, Bid> {
        private static final long serialVersionUID = 1L;
        private final Generator gen;
        private final long m;
        private final long p;

        BidGenerator(Generator gen, long n, int p) {
            this.gen = gen;
            this.m = n / p;
            this.p = p;
        }

        @Override
        public Bid map(Long j) {
            Span.begin();
            return gen.bid((j % m) * p + j / m);
        }
    }

    static DataStream<Bid> bids(
            StreamExecutionEnvironment env, Generator gen, long n, int p, WatermarkStrategy<Bid> wm) {
        DataGeneratorSource<Bid> src =
                new DataGeneratorSource<>(new BidGenerator(gen, n, p), n, TypeInformation.of(Bid.class));
        return env.fromSource(src, wm, "DataGen Source");
    }

    static WatermarkStrategy<Bid> eventTime() {
        return WatermarkStrategy.<Bid>forBoundedOutOfOrderness(Duration.ofMillis(Generator.WATERMARK_DELAY_MS))
                .withTimestampAssigner((b, ts) -> b.dateTime);
    }

    static final class ByAuction implements KeySelector<Bid, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long getKey(Bid b) {
            return b.auction;
        }
    }

    // ---------------------------------------------------------------- q1, q2

    /** q1: currency conversion, a map over every bid. */
    static void q1(StreamExecutionEnvironment env, Generator gen, long n, int p) {
        bids(env, gen, n, p, WatermarkStrategy.noWatermarks())
                .map(new ToEuro())
                .sinkTo(new DigestSink<Bid>(b -> Checksum.hash4(b.auction, b.bidder, b.price, b.dateTime)))
                .name("Checksum");
    }

    static final class ToEuro implements MapFunction<Bid, Bid> {
        private static final long serialVersionUID = 1L;

        @Override
        public Bid map(Bid b) {
            b.price = Generator.q1Price(b.price);
            return b;
        }
    }

    /** q2: the bids of every 123rd auction. */
    static void q2(StreamExecutionEnvironment env, Generator gen, long n, int p) {
        bids(env, gen, n, p, WatermarkStrategy.noWatermarks())
                .filter(new EveryNthAuction())
                .map(new ToAuctionPrice())
                .sinkTo(new DigestSink<AuctionPrice>(a -> Checksum.hash2(a.auction, a.price)))
                .name("Checksum");
    }

    static final class EveryNthAuction implements FilterFunction<Bid> {
        private static final long serialVersionUID = 1L;

        @Override
        public boolean filter(Bid b) {
            return b.auction % Generator.Q2_MODULUS == 0;
        }
    }

    static final class ToAuctionPrice implements MapFunction<Bid, AuctionPrice> {
        private static final long serialVersionUID = 1L;

        @Override
        public AuctionPrice map(Bid b) {
            return new AuctionPrice(b.auction, b.price);
        }
    }

    // ---------------------------------------------------------------- q5

    /**
     * q5: hot items. Bids per auction in 10 s windows sliding by 2 s, then the auction with the
     * most bids in each window (ties: the lower auction id), found in a tumbling window of one
     * slide over the counts keyed by window end.
     */
    static void q5(StreamExecutionEnvironment env, Generator gen, long n, int p) {
        bids(env, gen, n, p, eventTime())
                .keyBy(new ByAuction())
                .window(SlidingEventTimeWindows.of(
                        Duration.ofMillis(Generator.Q5_SIZE_MS), Duration.ofMillis(Generator.Q5_SLIDE_MS)))
                .aggregate(new CountBids(), new WithWindowEnd())
                .keyBy(new ByWindowEnd())
                .window(TumblingEventTimeWindows.of(Duration.ofMillis(Generator.Q5_SLIDE_MS)))
                .reduce(new Hottest())
                .sinkTo(new DigestSink<AuctionCount>(c -> Checksum.hash3(c.end, c.auction, c.count)))
                .name("Checksum");
    }

    static final class CountBids implements AggregateFunction<Bid, Long, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long createAccumulator() {
            return 0L;
        }

        @Override
        public Long add(Bid b, Long acc) {
            return acc + 1;
        }

        @Override
        public Long getResult(Long acc) {
            return acc;
        }

        @Override
        public Long merge(Long a, Long b) {
            return a + b;
        }
    }

    static final class WithWindowEnd extends ProcessWindowFunction<Long, AuctionCount, Long, TimeWindow> {
        private static final long serialVersionUID = 1L;

        @Override
        public void process(Long auction, Context ctx, Iterable<Long> counts, Collector<AuctionCount> out) {
            out.collect(new AuctionCount(ctx.window().getEnd(), auction, counts.iterator().next()));
        }
    }

    static final class ByWindowEnd implements KeySelector<AuctionCount, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long getKey(AuctionCount c) {
            return c.end;
        }
    }

    static final class Hottest implements ReduceFunction<AuctionCount> {
        private static final long serialVersionUID = 1L;

        @Override
        public AuctionCount reduce(AuctionCount a, AuctionCount b) {
            return Types.q5Better(b.auction, b.count, a.auction, a.count) ? b : a;
        }
    }

    // ---------------------------------------------------------------- q7

    /**
     * q7: the highest bid of each 10 s tumbling window (ties: the lower auction, then the lower
     * bidder), as the highest bid per auction and window, then the highest of those per window.
     */
    static void q7(StreamExecutionEnvironment env, Generator gen, long n, int p) {
        bids(env, gen, n, p, eventTime())
                .keyBy(new ByAuction())
                .window(TumblingEventTimeWindows.of(Duration.ofMillis(Generator.Q7_SIZE_MS)))
                .reduce(new HigherBid(), new BidWithWindowEnd())
                .keyBy(new ByHighestWindowEnd())
                .window(TumblingEventTimeWindows.of(Duration.ofMillis(Generator.Q7_SIZE_MS)))
                .reduce(new Highest())
                .sinkTo(new DigestSink<HighestBid>(h -> Checksum.hash4(h.end, h.auction, h.bidder, h.price)))
                .name("Checksum");
    }

    static final class HigherBid implements ReduceFunction<Bid> {
        private static final long serialVersionUID = 1L;

        @Override
        public Bid reduce(Bid a, Bid b) {
            return Types.q7Better(b.auction, b.bidder, b.price, a.auction, a.bidder, a.price) ? b : a;
        }
    }

    static final class BidWithWindowEnd extends ProcessWindowFunction<Bid, HighestBid, Long, TimeWindow> {
        private static final long serialVersionUID = 1L;

        @Override
        public void process(Long auction, Context ctx, Iterable<Bid> bids, Collector<HighestBid> out) {
            Bid b = bids.iterator().next();
            out.collect(new HighestBid(ctx.window().getEnd(), b.auction, b.bidder, b.price));
        }
    }

    static final class ByHighestWindowEnd implements KeySelector<HighestBid, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long getKey(HighestBid h) {
            return h.end;
        }
    }

    static final class Highest implements ReduceFunction<HighestBid> {
        private static final long serialVersionUID = 1L;

        @Override
        public HighestBid reduce(HighestBid a, HighestBid b) {
            return Types.q7Better(b.auction, b.bidder, b.price, a.auction, a.bidder, a.price) ? b : a;
        }
    }

    // ---------------------------------------------------------------- q3, q8

    /** Persons as BidGenerator maps bids: subtask s of p generates persons s, s+p, ... */
    static final class PersonGenerator implements GeneratorFunction<Long, Person> {
        private static final long serialVersionUID = 1L;
        private final Generator gen;
        private final long m;
        private final long p;

        PersonGenerator(Generator gen, long n, int p) {
            this.gen = gen;
            this.m = n / p;
            this.p = p;
        }

        @Override
        public Person map(Long j) {
            Span.begin();
            return gen.person((j % m) * p + j / m);
        }
    }

    static final class AuctionGenerator implements GeneratorFunction<Long, Auction> {
        private static final long serialVersionUID = 1L;
        private final Generator gen;
        private final long m;
        private final long p;

        AuctionGenerator(Generator gen, long n, int p) {
            this.gen = gen;
            this.m = n / p;
            this.p = p;
        }

        @Override
        public Auction map(Long k) {
            Span.begin();
            return gen.auction((k % m) * p + k / m);
        }
    }

    static DataStream<Person> persons(StreamExecutionEnvironment env, Generator gen, long n, int p, WatermarkStrategy<Person> wm) {
        long np = Generator.personsOf(n);
        return env.fromSource(new DataGeneratorSource<>(new PersonGenerator(gen, np, p), np, TypeInformation.of(Person.class)),
                wm, "Persons");
    }

    static DataStream<Auction> auctions(StreamExecutionEnvironment env, Generator gen, long n, int p, WatermarkStrategy<Auction> wm) {
        long na = Generator.auctionsOf(n);
        return env.fromSource(new DataGeneratorSource<>(new AuctionGenerator(gen, na, p), na, TypeInformation.of(Auction.class)),
                wm, "Auctions");
    }

    static final class ById implements KeySelector<Person, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long getKey(Person p) {
            return p.id;
        }
    }

    static final class BySeller implements KeySelector<Auction, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long getKey(Auction a) {
            return a.seller;
        }
    }

    static final class LocalPerson implements FilterFunction<Person> {
        private static final long serialVersionUID = 1L;

        @Override
        public boolean filter(Person p) {
            return Generator.q3State(p.state);
        }
    }

    static final class InCategory implements FilterFunction<Auction> {
        private static final long serialVersionUID = 1L;

        @Override
        public boolean filter(Auction a) {
            return a.category == Generator.Q3_CATEGORY;
        }
    }

    /** q3: local item suggestion, a regular join of persons and auctions on id = seller. */
    static void q3(StreamExecutionEnvironment env, Generator gen, long n, int p) {
        persons(env, gen, n, p, WatermarkStrategy.noWatermarks())
                .filter(new LocalPerson())
                .keyBy(new ById())
                .connect(auctions(env, gen, n, p, WatermarkStrategy.noWatermarks()).filter(new InCategory()).keyBy(new BySeller()))
                .process(new LocalJoin())
                .sinkTo(new DigestSink<SellerAuction>(s -> Checksum.hash2(s.auction, s.seller)))
                .name("Checksum");
    }

    /** Each side waits in keyed state for the other. */
    static final class LocalJoin extends KeyedCoProcessFunction<Long, Person, Auction, SellerAuction> {
        private static final long serialVersionUID = 1L;
        private transient ValueState<Boolean> seen;
        private transient ListState<Long> waiting;

        @Override
        public void open(OpenContext ctx) {
            seen = getRuntimeContext().getState(new ValueStateDescriptor<>("person", Boolean.class));
            waiting = getRuntimeContext().getListState(new ListStateDescriptor<>("auctions", Long.class));
        }

        @Override
        public void processElement1(Person p, Context ctx, Collector<SellerAuction> out) throws Exception {
            seen.update(true);
            for (Long id : waiting.get()) {
                out.collect(new SellerAuction(id, p.id));
            }
            waiting.clear();
        }

        @Override
        public void processElement2(Auction a, Context ctx, Collector<SellerAuction> out) throws Exception {
            if (Boolean.TRUE.equals(seen.value())) {
                out.collect(new SellerAuction(a.id, a.seller));
            } else {
                waiting.add(a.id);
            }
        }
    }

    /** q8: new users who opened auctions, a window co-group of persons and auctions. */
    static void q8(StreamExecutionEnvironment env, Generator gen, long n, int p) {
        WatermarkStrategy<Person> pw = WatermarkStrategy.<Person>forBoundedOutOfOrderness(
                        Duration.ofMillis(Generator.WATERMARK_DELAY_MS))
                .withTimestampAssigner((x, ts) -> x.dateTime);
        WatermarkStrategy<Auction> aw = WatermarkStrategy.<Auction>forBoundedOutOfOrderness(
                        Duration.ofMillis(Generator.WATERMARK_DELAY_MS))
                .withTimestampAssigner((x, ts) -> x.dateTime);
        persons(env, gen, n, p, pw)
                .coGroup(auctions(env, gen, n, p, aw))
                .where(new ById())
                .equalTo(new BySeller())
                .window(TumblingEventTimeWindows.of(Duration.ofMillis(Generator.Q8_SIZE_MS)))
                .apply(new OpenedAuction())
                .sinkTo(new DigestSink<NewSeller>(s -> Checksum.hash2(s.person, s.start)))
                .name("Checksum");
    }

    static final class OpenedAuction implements CoGroupFunction<Person, Auction, NewSeller> {
        private static final long serialVersionUID = 1L;

        @Override
        public void coGroup(Iterable<Person> ps, Iterable<Auction> as, Collector<NewSeller> out) {
            java.util.Iterator<Person> pi = ps.iterator();
            if (pi.hasNext() && as.iterator().hasNext()) {
                Person p = pi.next();
                long start = p.dateTime - Math.floorMod(p.dateTime, Generator.Q8_SIZE_MS);
                out.collect(new NewSeller(p.id, start));
            }
        }
    }

    // ---------------------------------------------------------------- q0, q11, q19

    /** q0: pass-through, every bid to the sink. */
    static void q0(StreamExecutionEnvironment env, Generator gen, long n, int p) {
        bids(env, gen, n, p, WatermarkStrategy.noWatermarks())
                .sinkTo(new DigestSink<Bid>(b -> Checksum.hash4(b.auction, b.bidder, b.price, b.dateTime)))
                .name("Checksum");
    }

    static final class ByBidder implements KeySelector<Bid, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long getKey(Bid b) {
            return b.bidder;
        }
    }

    /** q11: bids per bidder session (event-time session windows). */
    static void q11(StreamExecutionEnvironment env, Generator gen, long n, int p) {
        bids(env, gen, n, p, eventTime())
                .keyBy(new ByBidder())
                .window(EventTimeSessionWindows.withGap(Duration.ofMillis(Generator.Q11_GAP_MS)))
                .aggregate(new CountBids(), new SessionOf())
                .sinkTo(new DigestSink<BidderSession>(s -> Checksum.hash4(s.bidder, s.start, s.end, s.count)))
                .name("Checksum");
    }

    static final class SessionOf extends ProcessWindowFunction<Long, BidderSession, Long, TimeWindow> {
        private static final long serialVersionUID = 1L;

        @Override
        public void process(Long bidder, Context ctx, Iterable<Long> counts, Collector<BidderSession> out) {
            out.collect(new BidderSession(bidder, ctx.window().getStart(), ctx.window().getEnd(), counts.iterator().next()));
        }
    }

    /** q19: the Q19_N highest bids of each auction per tumbling window. */
    static void q19(StreamExecutionEnvironment env, Generator gen, long n, int p) {
        bids(env, gen, n, p, eventTime())
                .keyBy(new ByAuction())
                .window(TumblingEventTimeWindows.of(Duration.ofMillis(Generator.Q19_SIZE_MS)))
                .aggregate(new Top(), new Ranks())
                .sinkTo(new DigestSink<RankedBid>(r -> Checksum.hash5(r.end, r.auction, r.rank, r.bidder, r.price)))
                .name("Checksum");
    }

    static final class Top implements AggregateFunction<Bid, TopBids, TopBids> {
        private static final long serialVersionUID = 1L;

        @Override
        public TopBids createAccumulator() {
            return new TopBids();
        }

        @Override
        public TopBids add(Bid b, TopBids acc) {
            acc.add(b.price, b.bidder, b.dateTime);
            return acc;
        }

        @Override
        public TopBids getResult(TopBids acc) {
            return acc;
        }

        @Override
        public TopBids merge(TopBids a, TopBids b) {
            for (int i = 0; i < b.n; i++) {
                a.add(b.price[i], b.bidder[i], b.dateTime[i]);
            }
            return a;
        }
    }

    static final class Ranks extends ProcessWindowFunction<TopBids, RankedBid, Long, TimeWindow> {
        private static final long serialVersionUID = 1L;

        @Override
        public void process(Long auction, Context ctx, Iterable<TopBids> tops, Collector<RankedBid> out) {
            TopBids t = tops.iterator().next();
            for (int i = 0; i < t.n; i++) {
                out.collect(new RankedBid(ctx.window().getEnd(), auction, i + 1, t.bidder[i], t.price[i]));
            }
        }
    }

    // ---------------------------------------------------------------- Kafka

    /**
     * The Kafka pipeline: bids from the input topic (bounded at its end offsets), keyed by auction,
     * counted in a value state, every update written to the output topic EXACTLY_ONCE. The driver
     * verifies the output topic with a read_committed consumer.
     */
    static void kafka(StreamExecutionEnvironment env, Map<String, String> args) {
        String bootstrap = required(args, "bootstrap");
        KafkaSource<Bid> source = KafkaSource.<Bid>builder()
                .setBootstrapServers(bootstrap)
                .setTopics(required(args, "in-topic"))
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setBounded(OffsetsInitializer.latest())
                .setDeserializer(KafkaRecordDeserializationSchema.valueOnly(new BidDeserializer()))
                .build();
        KafkaSink<AuctionTotals> sink = KafkaSink.<AuctionTotals>builder()
                .setBootstrapServers(bootstrap)
                .setRecordSerializer(new TotalsSerializer(required(args, "out-topic")))
                .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                .setTransactionalIdPrefix(required(args, "txn-prefix"))
                // The broker's transaction.max.timeout.ms (15 min): Flink's default of 1 h is refused.
                .setProperty("transaction.timeout.ms", "900000")
                .build();
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "Kafka Source")
                .keyBy(new ByAuction())
                .process(new CountPerAuction())
                .name("Auction totals")
                .transform("End of input", TypeInformation.of(AuctionTotals.class), new EndOfInput<AuctionTotals>())
                .sinkTo(sink)
                .name("Kafka Sink");
    }

    /**
     * Passes records on and ends the Span at the end of its input, before the Kafka sink (chained
     * to it) flushes: Sluice's job wraps its sink writer to the same end.
     */
    static final class EndOfInput<T> extends AbstractStreamOperator<T>
            implements OneInputStreamOperator<T, T>, BoundedOneInput {
        private static final long serialVersionUID = 1L;

        @Override
        public void processElement(StreamRecord<T> element) {
            output.collect(element);
        }

        @Override
        public void endInput() {
            Span.finish();
        }
    }

    /** Decodes a bid written by Go's nexmark.AppendBid. */
    static final class BidDeserializer extends AbstractDeserializationSchema<Bid> {
        private static final long serialVersionUID = 1L;

        @Override
        public Bid deserialize(byte[] v) throws IOException {
            Span.begin();
            if (v.length < 34) {
                throw new IOException("malformed bid of " + v.length + " bytes");
            }
            ByteBuffer buf = ByteBuffer.wrap(v);
            Bid b = new Bid();
            b.auction = buf.getLong();
            b.bidder = buf.getLong();
            b.price = buf.getLong();
            b.dateTime = buf.getLong();
            int n = buf.get() & 0xff;
            b.channel = new String(v, buf.position(), n, StandardCharsets.UTF_8);
            buf.position(buf.position() + n);
            n = buf.get() & 0xff;
            if (buf.remaining() != n) {
                throw new IOException("malformed bid: url of " + n + " bytes, " + buf.remaining() + " remaining");
            }
            b.url = new String(v, buf.position(), n, StandardCharsets.UTF_8);
            return b;
        }
    }

    static final class CountPerAuction extends KeyedProcessFunction<Long, Bid, AuctionTotals> {
        private static final long serialVersionUID = 1L;
        private transient ValueState<AuctionTotals> totals;

        @Override
        public void open(OpenContext ctx) {
            totals = getRuntimeContext().getState(new ValueStateDescriptor<>("totals", AuctionTotals.class));
        }

        @Override
        public void processElement(Bid b, Context ctx, Collector<AuctionTotals> out) throws Exception {
            AuctionTotals t = totals.value();
            if (t == null) {
                t = new AuctionTotals();
                t.auction = b.auction;
            }
            t.count++;
            t.maxPrice = Math.max(t.maxPrice, b.price);
            totals.update(t);
            out.collect(t);
        }
    }

    /** Key: the auction; value: auction, count, max price (Go's nexmark.AppendOutput). */
    static final class TotalsSerializer implements KafkaRecordSerializationSchema<AuctionTotals> {
        private static final long serialVersionUID = 1L;
        private final String topic;

        TotalsSerializer(String topic) {
            this.topic = topic;
        }

        @Override
        public ProducerRecord<byte[], byte[]> serialize(AuctionTotals t, KafkaSinkContext ctx, Long timestamp) {
            byte[] key = ByteBuffer.allocate(8).putLong(t.auction).array();
            byte[] value = ByteBuffer.allocate(24).putLong(t.auction).putLong(t.count).putLong(t.maxPrice).array();
            return new ProducerRecord<>(topic, null, timestamp, key, value);
        }
    }

    /**
     * The process's peak resident set size in bytes: VmHWM of /proc/self/status (Go's
     * jobs.PeakRSS says why the parent cannot use the child's ru_maxrss).
     */
    static long peakRss() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmHWM:")) {
                String[] f = line.substring(6).trim().split("\\s+");
                if (f.length != 2 || !f[1].equals("kB")) {
                    throw new IOException("/proc/self/status: VmHWM line '" + line + "'");
                }
                return Long.parseLong(f[0]) * 1024;
            }
        }
        throw new IOException("/proc/self/status has no VmHWM line");
    }

    // ---------------------------------------------------------------- arguments

    static Map<String, String> parseArgs(String[] argv) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < argv.length; i++) {
            String a = argv[i];
            if (!a.startsWith("--") || i + 1 >= argv.length) {
                throw new IllegalArgumentException("argument " + (i + 1) + " (" + a + "): want --name value");
            }
            m.put(a.substring(2), argv[++i]);
        }
        return m;
    }

    static String required(Map<String, String> args, String name) {
        String v = args.get(name);
        if (v == null || v.isEmpty()) {
            throw new IllegalArgumentException("--" + name + " is required");
        }
        return v;
    }
}
