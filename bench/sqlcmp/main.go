// Command sqlcmp is make bench-sql: Nexmark queries written in SQL, run
// on Sluice SQL (`sluice sql -f`, one process per run) and on Apache Flink
// SQL (the integration/flinksql runner, one JVM per run) over the same
// JSON bids in a topic of a real Kafka broker (started here unless
// -bootstrap names one), each run writing into a fresh topic that is read
// back and checksummed: the engines' results must agree. The same queries
// hand-written on Sluice's DataStream API (bench/flinkcmp's sluicebench,
// where bench-flink has them: q1, q2, q5, q7) give the SQL overhead.
//
// Per query and engine, over -reps repetitions (engines alternating which
// goes first): input records per CPU-second of the whole process (min,
// median, max) and its peak RSS. Prints a table, writes -json. Exit
// status 1 when the engines' results differ (or a run fails).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/bench/flinkcmp"
	"github.com/sluice/sluice/bench/flinkcmp/nexmark"
	"github.com/sluice/sluice/integration/flinksql"
	"github.com/sluice/sluice/integration/kafkabroker"
)

// The engines of the report.
const (
	engineSluice     = "sluice-sql"
	engineFlink      = "flink-sql"
	engineDataStream = "sluice-datastream"
)

// bidDDL is the input table; {{topic}} and {{bootstrap}} are filled in.
const bidDDL = `SET 'parallelism.default' = '1';
CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING,
  date_time TIMESTAMP(3), WATERMARK FOR date_time AS date_time - INTERVAL '1' SECOND
) WITH ('connector' = 'kafka', 'topic' = '{{in}}', 'properties.bootstrap.servers' = '{{bootstrap}}',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json');
`

// queries are the Nexmark queries in SQL, after the Nexmark benchmark's
// own (q5 and q7, which Nexmark writes as joins with a max, as window
// Top-N with bench-flink's tie-breaks: the same rows). Each writes into
// table out over {{out}}.
var queries = map[string]string{
	nexmark.Q0: `CREATE TABLE out_t (auction BIGINT, bidder BIGINT, price BIGINT, date_time TIMESTAMP(3))
WITH ('connector' = 'kafka', 'topic' = '{{out}}', 'properties.bootstrap.servers' = '{{bootstrap}}', 'format' = 'json');
INSERT INTO out_t SELECT auction, bidder, price, date_time FROM bid;`,
	nexmark.Q1: `CREATE TABLE out_t (auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), date_time TIMESTAMP(3))
WITH ('connector' = 'kafka', 'topic' = '{{out}}', 'properties.bootstrap.servers' = '{{bootstrap}}', 'format' = 'json');
INSERT INTO out_t SELECT auction, bidder, 0.908 * price, date_time FROM bid;`,
	nexmark.Q2: `CREATE TABLE out_t (auction BIGINT, price BIGINT)
WITH ('connector' = 'kafka', 'topic' = '{{out}}', 'properties.bootstrap.servers' = '{{bootstrap}}', 'format' = 'json');
INSERT INTO out_t SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0;`,
	nexmark.Q5: `CREATE TABLE out_t (window_end TIMESTAMP(3), auction BIGINT, num BIGINT)
WITH ('connector' = 'kafka', 'topic' = '{{out}}', 'properties.bootstrap.servers' = '{{bootstrap}}', 'format' = 'json');
INSERT INTO out_t SELECT window_end, auction, num FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY num DESC, auction ASC) AS rn FROM (
    SELECT window_start, window_end, auction, COUNT(*) AS num
    FROM TABLE(HOP(TABLE bid, DESCRIPTOR(date_time), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
    GROUP BY window_start, window_end, auction)) WHERE rn = 1;`,
	nexmark.Q7: `CREATE TABLE out_t (window_end TIMESTAMP(3), auction BIGINT, bidder BIGINT, price BIGINT)
WITH ('connector' = 'kafka', 'topic' = '{{out}}', 'properties.bootstrap.servers' = '{{bootstrap}}', 'format' = 'json');
INSERT INTO out_t SELECT window_end, auction, bidder, price FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC, auction ASC, bidder ASC) AS rn
  FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(date_time), INTERVAL '10' SECOND))) WHERE rn = 1;`,
}

// warmUpRecords are the bids of the Flink JVM's warm-up script.
const warmUpRecords = 1000

// dataStream are the queries bench-flink has on the DataStream API.
var dataStream = []string{nexmark.Q1, nexmark.Q2, nexmark.Q5, nexmark.Q7}

// run is one measured run.
type run struct {
	Query        string  `json:"query"`
	Engine       string  `json:"engine"`
	Rep          int     `json:"rep"`
	Records      int64   `json:"records"`
	CPUSeconds   float64 `json:"cpu_seconds"`
	WallSeconds  float64 `json:"wall_seconds"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	PerCPUSecond float64 `json:"records_per_cpu_second"`
	Outputs      int64   `json:"outputs"`
	Checksum     string  `json:"checksum,omitempty"`
}

type summary struct {
	Query       string  `json:"query"`
	Engine      string  `json:"engine"`
	Min         float64 `json:"records_per_cpu_second_min"`
	Median      float64 `json:"records_per_cpu_second_median"`
	Max         float64 `json:"records_per_cpu_second_max"`
	PeakRSSMiB  float64 `json:"peak_rss_mib_max"`
	WallSeconds float64 `json:"wall_seconds_median"`
}

// jvmRun is the Flink JVM of one repetition.
type jvmRun struct {
	Rep                      int     `json:"rep"`
	CPUSeconds               float64 `json:"cpu_seconds"`
	OutsideScriptsCPUSeconds float64 `json:"outside_scripts_cpu_seconds"`
	WarmUpCPUSeconds         float64 `json:"warm_up_cpu_seconds"`
	WallSeconds              float64 `json:"wall_seconds"`
	PeakRSSBytes             int64   `json:"peak_rss_bytes"`
}

type report struct {
	FlinkJVM   []jvmRun  `json:"flink_jvm"`
	Started    time.Time `json:"started"`
	Records    int64     `json:"records"`
	Reps       int       `json:"repetitions"`
	Seed       uint64    `json:"seed"`
	Notes      []string  `json:"notes"`
	Runs       []run     `json:"runs"`
	Summary    []summary `json:"summary"`
	Mismatches []string  `json:"mismatches,omitempty"`
}

func main() {
	var (
		records   = flag.Int64("records", 1_000_000, "bids in the input topic")
		reps      = flag.Int("reps", 3, "repetitions")
		qs        = flag.String("queries", "q0,q1,q2,q5,q7", "queries, comma-separated")
		jsonOut   = flag.String("json", "bench-sql.json", "where to write the report")
		bootstrap = flag.String("bootstrap", "", "a Kafka broker (default: one started here)")
		seed      = flag.Uint64("seed", nexmark.DefaultSeed, "the generator's seed")
	)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := bench(ctx, *records, *reps, strings.Split(*qs, ","), *jsonOut, *bootstrap, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "bench-sql:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func bench(ctx context.Context, records int64, reps int, qs []string, jsonOut, bootstrap string, seed uint64) error {
	for _, q := range qs {
		if _, ok := queries[q]; !ok {
			return fmt.Errorf("unknown query %q (have q0, q1, q2, q5, q7; q8 needs SQL joins)", q)
		}
	}
	work, err := os.MkdirTemp("", "bench-sql-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	sluiceBin, dsBin := filepath.Join(work, "sluice"), filepath.Join(work, "sluicebench")
	for _, b := range []struct{ out, pkg string }{{sluiceBin, "./cmd/client"}, {dsBin, "./bench/flinkcmp/cmd/sluicebench"}} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b.out, b.pkg)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building %s: %w", b.pkg, err)
		}
	}
	cp, err := flinksql.Classpath(ctx)
	if err != nil {
		return err
	}
	if bootstrap == "" {
		b, err := kafkabroker.Start(ctx, kafkabroker.Options{Logf: logf})
		if err != nil {
			return err
		}
		defer b.Stop()
		bootstrap = b.Addr
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ProducerLinger(5*time.Millisecond),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	in := fmt.Sprintf("bench-sql-bids-%d", time.Now().UnixNano())
	t0 := time.Now()
	if err := writeBids(ctx, cl, adm, in, nexmark.Generator{Seed: seed}, records); err != nil {
		return err
	}
	defer adm.DeleteTopics(context.WithoutCancel(ctx), in)
	logf("wrote %d bids as JSON to %s (%v)", records, in, time.Since(t0).Round(time.Millisecond))
	// The Flink JVM's first script, unmeasured: it loads and compiles what
	// every query then needs (planner, runtime, Kafka, json), so that no
	// query pays for it; its CPU is the report's warm-up.
	warmIn := in + "-warm-up"
	if err := writeBids(ctx, cl, adm, warmIn, nexmark.Generator{Seed: seed}, warmUpRecords); err != nil {
		return err
	}
	defer adm.DeleteTopics(context.WithoutCancel(ctx), warmIn)
	warmBase := strings.NewReplacer("{{in}}", warmIn, "{{bootstrap}}", bootstrap).Replace(bidDDL)

	rep := &report{Started: time.Now(), Records: records, Reps: reps, Seed: seed, Notes: []string{
		"q8 left out: it needs a SQL window join; the joins (wip/sqljoin) reached this branch only at its end, q8 is not written yet",
		"q5 and q7 are written as window Top-N (ROW_NUMBER = 1 with bench-flink's tie-breaks) instead of Nexmark's join with a MAX: the same rows",
		"records per CPU-second: input bids / CPU seconds (user + system, all threads); sluice-sql: the whole `sluice sql -f` process, one per query; flink-sql: the JVM's CPU over the query's script (planning, code generation, local MiniCluster, job), the repetition's queries running one after the other in one JVM of the runner after an unmeasured warm-up script (class loading, JIT), whose CPU and the JVM's outside the scripts are listed apart; with inputs this small Flink's fixed cost per query (planning, Janino compilation, MiniCluster start) dominates its figure",
		"peak RSS: the process's VmHWM, sampled every 50 ms; flink-sql: the JVM's, over all of the repetition's queries",
		"sluice-datastream: bench-flink's hand-written DataStream job (sluicebench) over the in-process Nexmark generator, not Kafka JSON: no JSON decoding, no Kafka fetch or produce; an upper bound for the SQL jobs",
	}}
	base := strings.NewReplacer("{{in}}", in, "{{bootstrap}}", bootstrap).Replace(bidDDL)
	for r := 1; r <= reps; r++ {
		// This repetition's scripts and output topics, per engine.
		outs := map[string]map[string]string{engineFlink: {}, engineSluice: {}}
		scripts := map[string]map[string]string{engineFlink: {}, engineSluice: {}}
		for _, q := range qs {
			for _, eng := range []string{engineFlink, engineSluice} {
				out := fmt.Sprintf("bench-sql-%s-%s-%d-%d", q, eng, r, time.Now().UnixNano())
				if _, err := adm.CreateTopic(ctx, 1, 1, nil, out); err != nil {
					return fmt.Errorf("creating %s: %w", out, err)
				}
				script := filepath.Join(work, out+".sql")
				text := base + strings.NewReplacer("{{out}}", out, "{{bootstrap}}", bootstrap).Replace(queries[q])
				if err := os.WriteFile(script, []byte(text), 0o644); err != nil {
					return err
				}
				outs[eng][q], scripts[eng][q] = out, script
			}
		}
		// Alternate which engine goes first.
		order := []string{engineFlink, engineSluice}
		if r%2 == 0 {
			order = []string{engineSluice, engineFlink}
		}
		for _, eng := range order {
			if eng == engineFlink {
				// One JVM for the repetition's queries, each script's CPU measured
				// inside it; the JVM's own start-up and end are reported apart.
				warmOut := fmt.Sprintf("bench-sql-warm-up-%d-%d", r, time.Now().UnixNano())
				warm := filepath.Join(work, warmOut+".sql")
				text := warmBase + strings.NewReplacer("{{out}}", warmOut, "{{bootstrap}}", bootstrap).Replace(queries[nexmark.Q1])
				if err := os.WriteFile(warm, []byte(text), 0o644); err != nil {
					return err
				}
				defer adm.DeleteTopics(context.WithoutCancel(ctx), warmOut)
				list := []string{warm}
				for _, q := range qs {
					list = append(list, scripts[eng][q])
				}
				jvm, res, err := runFlink(ctx, cp, list)
				if err != nil {
					return fmt.Errorf("%s rep %d: %w", eng, r, err)
				}
				scriptsCPU := res[0].CPU
				for i, q := range qs {
					m := measurement{cpu: res[i+1].CPU, wall: res[i+1].Elapsed, peakRSS: jvm.peakRSS}
					scriptsCPU += res[i+1].CPU
					rep.Runs = append(rep.Runs, newRun(q, eng, r, records, m))
				}
				rep.FlinkJVM = append(rep.FlinkJVM, jvmRun{Rep: r, CPUSeconds: jvm.cpu.Seconds(), WallSeconds: jvm.wall.Seconds(),
					WarmUpCPUSeconds:         res[0].CPU.Seconds(),
					OutsideScriptsCPUSeconds: (jvm.cpu - scriptsCPU).Seconds(), PeakRSSBytes: jvm.peakRSS})
				logf("rep %d flink-sql JVM: cpu %6.2f s (warm-up script %.2f s, outside the scripts %.2f s)  wall %6.2f s  rss %5.0f MiB",
					r, jvm.cpu.Seconds(), res[0].CPU.Seconds(), (jvm.cpu - scriptsCPU).Seconds(), jvm.wall.Seconds(), float64(jvm.peakRSS)/(1<<20))
				continue
			}
			for _, q := range qs {
				m, err := measure(ctx, exec.Command(sluiceBin, "sql", "-f", scripts[eng][q]))
				if err != nil {
					return fmt.Errorf("%s %s rep %d: %w", eng, q, r, err)
				}
				rep.Runs = append(rep.Runs, newRun(q, eng, r, records, m))
			}
		}
		// Read back and compare.
		for _, q := range qs {
			sums := map[string]string{}
			for _, eng := range []string{engineFlink, engineSluice} {
				n, sum, err := checksum(ctx, bootstrap, outs[eng][q])
				_, _ = adm.DeleteTopics(context.WithoutCancel(ctx), outs[eng][q])
				if err != nil {
					return fmt.Errorf("%s %s rep %d: reading %s: %w", eng, q, r, outs[eng][q], err)
				}
				sums[eng] = fmt.Sprintf("%d:%016x", n, sum)
				for i := range rep.Runs {
					rn := &rep.Runs[i]
					if rn.Query == q && rn.Engine == eng && rn.Rep == r {
						rn.Outputs, rn.Checksum = n, fmt.Sprintf("%016x", sum)
						logf("rep %d %s %-17s %9.0f records/cpu-s  cpu %6.2f s  wall %6.2f s  rss %5.0f MiB  %d outputs",
							r, q, eng, rn.PerCPUSecond, rn.CPUSeconds, rn.WallSeconds, float64(rn.PeakRSSBytes)/(1<<20), n)
					}
				}
			}
			if sums[engineFlink] != sums[engineSluice] {
				rep.Mismatches = append(rep.Mismatches, fmt.Sprintf("%s rep %d: Flink %s, Sluice %s (outputs:checksum)", q, r, sums[engineFlink], sums[engineSluice]))
			}
		}
		for _, q := range qs {
			if !slices.Contains(dataStream, q) {
				continue
			}
			m, err := measure(ctx, exec.Command(dsBin, "-workload", q, "-records", strconv.FormatInt(records, 10),
				"-seed", strconv.FormatUint(seed, 10), "-parallelism", "1"))
			if err != nil {
				return fmt.Errorf("%s %s rep %d: %w", engineDataStream, q, r, err)
			}
			res, err := flinkcmp.ParseResult(m.stdout)
			if err != nil {
				return fmt.Errorf("%s %s rep %d: %w", engineDataStream, q, r, err)
			}
			m.peakRSS = max(m.peakRSS, res.PeakRSSBytes) // the job's own VmHWM: a short run ends between samples
			rn := newRun(q, engineDataStream, r, records, m)
			rn.Outputs = res.Outputs
			rep.Runs = append(rep.Runs, rn)
			logf("rep %d %s %-17s %9.0f records/cpu-s  cpu %6.2f s  wall %6.2f s  rss %5.0f MiB  %d outputs",
				r, q, engineDataStream, rn.PerCPUSecond, rn.CPUSeconds, rn.WallSeconds, float64(rn.PeakRSSBytes)/(1<<20), rn.Outputs)
		}
	}
	rep.summarise(qs)
	printTable(rep)
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(jsonOut, append(b, '\n'), 0o644); err != nil {
		return err
	}
	if len(rep.Mismatches) > 0 {
		return fmt.Errorf("the engines' results differ:\n  %s", strings.Join(rep.Mismatches, "\n  "))
	}
	return nil
}

// writeBids writes n bids of g as JSON into a new one-partition topic.
func writeBids(ctx context.Context, cl *kgo.Client, adm *kadm.Client, topic string, g nexmark.Generator, n int64) error {
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		return fmt.Errorf("creating %s: %w", topic, err)
	}
	errc := make(chan error, 1)
	for i := int64(0); i < n; i++ {
		b := g.Bid(i)
		v := fmt.Sprintf(`{"auction":%d,"bidder":%d,"price":%d,"channel":%q,"url":%q,"date_time":%q}`,
			b.Auction, b.Bidder, b.Price, b.Channel, b.URL, time.UnixMilli(b.DateTime).UTC().Format("2006-01-02 15:04:05.999"))
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v)}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	select {
	case err := <-errc:
		return fmt.Errorf("producing bids: %w", err)
	default:
		return nil
	}
}

// checksum reads topic to its end and returns its record count and the
// sum of the FNV-64a hashes of the records' canonical JSON values (equal
// values written differently hash the same; order does not matter).
func checksum(ctx context.Context, bootstrap, topic string) (int64, uint64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, 0, err
	}
	var end int64
	ends.Each(func(o kadm.ListedOffset) { end += o.Offset })
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var n int64
	var sum uint64
	var last int64 = -1
	for last+1 < end {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return n, sum, fmt.Errorf("read %d of %d records: %w", n, end, ctx.Err())
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return n, sum, ferr
		}
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			c, err := flinksql.CanonicalJSON(r.Value, true)
			if err != nil {
				return n, sum, err
			}
			h := fnv.New64a()
			h.Write([]byte(c))
			sum += h.Sum64()
			n++
			last = r.Offset
		}
	}
	return n, sum, nil
}

// measurement is a process's cost.
type measurement struct {
	cpu, wall time.Duration
	peakRSS   int64
	stdout    []byte
}

func newRun(q, eng string, r int, records int64, m measurement) run {
	return run{Query: q, Engine: eng, Rep: r, Records: records, CPUSeconds: m.cpu.Seconds(), WallSeconds: m.wall.Seconds(),
		PeakRSSBytes: m.peakRSS, PerCPUSecond: float64(records) / m.cpu.Seconds()}
}

// measure runs cmd to its end: its CPU (rusage) and its peak RSS (VmHWM,
// sampled: a child's ru_maxrss starts from the forking process's).
func measure(ctx context.Context, cmd *exec.Cmd) (measurement, error) {
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return measurement{}, err
	}
	peak := sampleRSS(ctx, cmd.Process.Pid)
	err := cmd.Wait()
	m := measurement{wall: time.Since(start), peakRSS: peak(), stdout: []byte(stdout.String())}
	if err != nil {
		return m, fmt.Errorf("%s: %w\n%s", cmd.Path, err, tailLines(stderr.String(), 30))
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return m, nil
}

// runFlink runs the scripts in one JVM of the Flink SQL runner: the
// JVM's measurement and each script's result (its CPU time inside).
func runFlink(ctx context.Context, cp string, scripts []string) (measurement, []flinksql.Result, error) {
	var m measurement
	var peak func() int64
	var stderr strings.Builder
	start := time.Now()
	res, err := flinksql.Run(ctx, flinksql.Options{Classpath: cp, JavaOpts: []string{"-Xmx1g"}, Stderr: &stderr,
		Started: func(pid int) { peak = sampleRSS(ctx, pid) },
		Exited: func(ps *os.ProcessState) {
			if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
				m.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
			}
		}}, scripts...)
	m.wall = time.Since(start)
	if peak != nil {
		m.peakRSS = peak()
	}
	if err == nil {
		for _, r := range res {
			if r.Err != nil {
				err = r.Err
				break
			}
		}
	}
	if err != nil {
		return m, nil, fmt.Errorf("%w\n%s", err, tailLines(stderr.String(), 30))
	}
	return m, res, nil
}

// sampleRSS samples pid's VmHWM every 50 ms until the returned function
// is called, which returns the last value seen.
func sampleRSS(ctx context.Context, pid int) func() int64 {
	done := make(chan struct{})
	result := make(chan int64, 1)
	go func() {
		var hwm int64
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if v, err := vmHWM(pid); err == nil && v > hwm {
				hwm = v
			}
			select {
			case <-done:
				result <- hwm
				return
			case <-ctx.Done():
				result <- hwm
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 { close(done); return <-result }
}

func vmHWM(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM")
}

func tailLines(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

func (r *report) summarise(qs []string) {
	for _, q := range qs {
		for _, eng := range []string{engineSluice, engineFlink, engineDataStream} {
			var per, walls []float64
			var rss int64
			for _, rn := range r.Runs {
				if rn.Query == q && rn.Engine == eng {
					per = append(per, rn.PerCPUSecond)
					walls = append(walls, rn.WallSeconds)
					rss = max(rss, rn.PeakRSSBytes)
				}
			}
			if len(per) == 0 {
				continue
			}
			slices.Sort(per)
			slices.Sort(walls)
			r.Summary = append(r.Summary, summary{Query: q, Engine: eng, Min: per[0], Median: per[len(per)/2], Max: per[len(per)-1],
				PeakRSSMiB: float64(rss) / (1 << 20), WallSeconds: walls[len(walls)/2]})
		}
	}
}

func printTable(r *report) {
	fmt.Printf("bench-sql: %d JSON bids, %d repetitions, parallelism 1\n\n", r.Records, r.Reps)
	fmt.Printf("%-5s %-18s %14s %14s %14s %10s %9s %12s\n", "query", "engine", "rec/cpu-s min", "median", "max", "peak RSS", "wall", "vs Flink")
	flinkMedian := map[string]float64{}
	for _, s := range r.Summary {
		if s.Engine == engineFlink {
			flinkMedian[s.Query] = s.Median
		}
	}
	for _, s := range r.Summary {
		ratio := ""
		if f := flinkMedian[s.Query]; f > 0 {
			ratio = fmt.Sprintf("%.2fx", s.Median/f)
		}
		fmt.Printf("%-5s %-18s %14.0f %14.0f %14.0f %8.0f MiB %8.1fs %12s\n", s.Query, s.Engine, s.Min, s.Median, s.Max, s.PeakRSSMiB, s.WallSeconds, ratio)
	}
	fmt.Println()
	for _, j := range r.FlinkJVM {
		fmt.Printf("flink-sql JVM rep %d: cpu %.1f s, of which the warm-up script (q1 over %d bids: class loading, JIT) %.1f s and outside the scripts %.1f s; wall %.1f s; peak RSS %.0f MiB\n",
			j.Rep, j.CPUSeconds, warmUpRecords, j.WarmUpCPUSeconds, j.OutsideScriptsCPUSeconds, j.WallSeconds, float64(j.PeakRSSBytes)/(1<<20))
	}
	for _, n := range r.Notes {
		fmt.Println("note:", n)
	}
	if len(r.Mismatches) == 0 {
		fmt.Println("results: Sluice SQL and Flink SQL agree on every query and repetition")
	}
}
