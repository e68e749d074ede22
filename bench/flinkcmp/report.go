package flinkcmp

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Run is one measured run in the report.
type Run struct {
	Engine   string `json:"engine"`
	Workload string `json:"workload"`
	Rep      int    `json:"rep"`
	Records  int64  `json:"records"`
	// Outputs and Checksum digest the output: as the job counted it, or,
	// for the Kafka workloads, as read back from the output topic with
	// read_committed.
	Outputs  int64 `json:"outputs"`
	Checksum int64 `json:"checksum"`
	// Correct: Outputs and Checksum equal the reference's.
	Correct bool `json:"correct"`
	// ProcessingMillis and ProcessingCPUMillis span the processing, from
	// the first input record to the end of input at the sinks
	// (jobs.Result).
	ProcessingMillis    int64 `json:"processing_ms"`
	ProcessingCPUMillis int64 `json:"processing_cpu_ms"`
	// JobMillis and JobCPUMillis span the job, submission to end.
	JobMillis    int64 `json:"job_ms"`
	JobCPUMillis int64 `json:"job_cpu_ms"`
	// WallMillis and CPUMillis (the child's rusage, user+sys) and
	// MaxRSSBytes (its VmHWM) are of the whole process, start-up included.
	WallMillis  int64 `json:"wall_ms"`
	CPUMillis   int64 `json:"cpu_ms"`
	MaxRSSBytes int64 `json:"max_rss_bytes"`
	// RecordsPerSecond is Records over the processing time.
	RecordsPerSecond float64 `json:"records_per_second"`
	// RecordsPerCPUSecond is Records over the whole process's CPU time;
	// RecordsPerProcessingCPUSecond over the processing's.
	RecordsPerCPUSecond           float64 `json:"records_per_cpu_second"`
	RecordsPerProcessingCPUSecond float64 `json:"records_per_processing_cpu_second"`
}

func perSecond(n int64, millis int64) float64 {
	if millis <= 0 {
		return 0
	}
	return float64(n) / (float64(millis) / 1000)
}

func newRun(rep int, m Measurement) Run {
	r := Run{
		Engine: m.Engine, Workload: m.Workload, Rep: rep, Records: m.Records,
		Outputs: m.Outputs, Checksum: m.Checksum,
		ProcessingMillis: m.ProcessingMillis, ProcessingCPUMillis: m.ProcessingCPUMillis,
		JobMillis: m.JobMillis, JobCPUMillis: m.JobCPUMillis,
		WallMillis: m.Wall.Milliseconds(), CPUMillis: m.CPU.Milliseconds(), MaxRSSBytes: m.MaxRSS,
	}
	r.RecordsPerSecond = perSecond(r.Records, r.ProcessingMillis)
	r.RecordsPerCPUSecond = perSecond(r.Records, r.CPUMillis)
	r.RecordsPerProcessingCPUSecond = perSecond(r.Records, r.ProcessingCPUMillis)
	return r
}

// Spread is the minimum, median and maximum of a metric over the
// repetitions.
type Spread struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

func spreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{Min: s[0], Median: med, Max: s[len(s)-1], N: len(s)}
}

// EngineSummary sums up one engine's runs of one workload.
type EngineSummary struct {
	Engine              string `json:"engine"`
	RecordsPerSecond    Spread `json:"records_per_second"`
	CPUSeconds          Spread `json:"cpu_seconds"`
	RecordsPerCPUSecond Spread `json:"records_per_cpu_second"`
	MaxRSSMiB           Spread `json:"max_rss_mib"`
	// ProcessingCPUSeconds and RecordsPerProcessingCPUSecond count the
	// processing's CPU only (no JVM or cluster start, no final checkpoint).
	ProcessingCPUSeconds          Spread `json:"processing_cpu_seconds"`
	RecordsPerProcessingCPUSecond Spread `json:"records_per_processing_cpu_second"`
}

// Ratio compares engine A with engine B on one workload, repetition by
// repetition (A/B of the runs of the same repetition).
type Ratio struct {
	A                   string `json:"a"`
	B                   string `json:"b"`
	RecordsPerSecond    Spread `json:"records_per_second"`
	RecordsPerCPUSecond Spread `json:"records_per_cpu_second"`
	// RecordsPerProcessingCPUSecond compares the processing's CPU only.
	RecordsPerProcessingCPUSecond Spread `json:"records_per_processing_cpu_second"`
	MaxRSS                        Spread `json:"max_rss"`
}

// WorkloadSummary sums up one workload.
type WorkloadSummary struct {
	Workload string          `json:"workload"`
	Records  int64           `json:"records"`
	Engines  []EngineSummary `json:"engines"`
	Ratios   []Ratio         `json:"ratios"`
}

// Report is the benchmark's result, written as JSON for tracking.
type Report struct {
	Started            time.Time         `json:"started"`
	Seconds            float64           `json:"seconds"`
	Parallelism        int               `json:"parallelism"`
	CheckpointInterval string            `json:"checkpoint_interval"`
	Repetitions        int               `json:"repetitions"`
	Seed               uint64            `json:"seed"`
	Environment        map[string]string `json:"environment"`
	Runs               []Run             `json:"runs"`
	Workloads          []WorkloadSummary `json:"workloads"`
	// Mismatches lists every run whose output differs from the reference.
	Mismatches []string `json:"mismatches"`
}

// Summarise fills r.Workloads from r.Runs, in the order of workloads.
func (r *Report) Summarise(workloads []string) {
	r.Workloads = nil
	for _, w := range workloads {
		byEngine := map[string]map[int]Run{}
		var engines []string
		var records int64
		for _, run := range r.Runs {
			if run.Workload != w {
				continue
			}
			if byEngine[run.Engine] == nil {
				byEngine[run.Engine] = map[int]Run{}
				engines = append(engines, run.Engine)
			}
			byEngine[run.Engine][run.Rep] = run
			records = run.Records
		}
		if len(engines) == 0 {
			continue
		}
		slices.SortFunc(engines, func(a, b string) int { return engineOrder(a) - engineOrder(b) })
		ws := WorkloadSummary{Workload: w, Records: records}
		for _, e := range engines {
			var rps, cpu, rpc, rss, pcpu, rppc []float64
			for _, run := range sortedRuns(byEngine[e]) {
				rps = append(rps, run.RecordsPerSecond)
				cpu = append(cpu, float64(run.CPUMillis)/1000)
				rpc = append(rpc, run.RecordsPerCPUSecond)
				rss = append(rss, float64(run.MaxRSSBytes)/(1<<20))
				pcpu = append(pcpu, float64(run.ProcessingCPUMillis)/1000)
				rppc = append(rppc, run.RecordsPerProcessingCPUSecond)
			}
			ws.Engines = append(ws.Engines, EngineSummary{Engine: e, RecordsPerSecond: spreadOf(rps), CPUSeconds: spreadOf(cpu),
				RecordsPerCPUSecond: spreadOf(rpc), MaxRSSMiB: spreadOf(rss),
				ProcessingCPUSeconds: spreadOf(pcpu), RecordsPerProcessingCPUSecond: spreadOf(rppc)})
		}
		for _, pair := range [][2]string{{Sluice, Flink}, {Sluice, RawKafka}} {
			a, b := byEngine[pair[0]], byEngine[pair[1]]
			if a == nil || b == nil {
				continue
			}
			var rps, rpc, rppc, rss []float64
			for rep, ra := range a {
				rb, ok := b[rep]
				if !ok {
					continue
				}
				rps = append(rps, div(ra.RecordsPerSecond, rb.RecordsPerSecond))
				rpc = append(rpc, div(ra.RecordsPerCPUSecond, rb.RecordsPerCPUSecond))
				rppc = append(rppc, div(ra.RecordsPerProcessingCPUSecond, rb.RecordsPerProcessingCPUSecond))
				rss = append(rss, div(float64(ra.MaxRSSBytes), float64(rb.MaxRSSBytes)))
			}
			ws.Ratios = append(ws.Ratios, Ratio{A: pair[0], B: pair[1], RecordsPerSecond: spreadOf(rps),
				RecordsPerCPUSecond: spreadOf(rpc), RecordsPerProcessingCPUSecond: spreadOf(rppc), MaxRSS: spreadOf(rss)})
		}
		r.Workloads = append(r.Workloads, ws)
	}
}

func div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func engineOrder(e string) int {
	switch e {
	case Flink:
		return 0
	case Sluice:
		return 1
	case RawKafka:
		return 2
	}
	return 3
}

func sortedRuns(m map[int]Run) []Run {
	runs := make([]Run, 0, len(m))
	for _, r := range m {
		runs = append(runs, r)
	}
	slices.SortFunc(runs, func(a, b Run) int { return a.Rep - b.Rep })
	return runs
}

// WriteTable prints the summary: one line per workload and engine with
// medians over the repetitions, then the ratios with min/median/max.
func (r *Report) WriteTable(out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "workload\tengine\trecords\trecords/s\tCPU s\trecords/CPU-s\tproc CPU s\trecords/proc-CPU-s\tpeak RSS MiB\t\n")
	for _, w := range r.Workloads {
		for _, e := range w.Engines {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f\t%s\t%.1f\t%s\t%.0f\t\n", w.Workload, e.Engine, si(float64(w.Records)),
				si(e.RecordsPerSecond.Median), e.CPUSeconds.Median, si(e.RecordsPerCPUSecond.Median),
				e.ProcessingCPUSeconds.Median, si(e.RecordsPerProcessingCPUSecond.Median), e.MaxRSSMiB.Median)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nMedians over %d repetitions; parallelism %d; exactly-once checkpoints every %s.\n"+
		"records/s: over the processing (first input record to end of input at the sinks).\n"+
		"CPU s: the whole process's user+sys (JVM, cluster start and final checkpoint included); proc CPU s: the processing's.\n"+
		"peak RSS: the whole process's VmHWM.\n\n",
		r.Repetitions, r.Parallelism, r.CheckpointInterval)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "workload\tratio\trecords/s\trecords/CPU-s\trecords/proc-CPU-s\tpeak RSS\t\n")
	for _, w := range r.Workloads {
		for _, q := range w.Ratios {
			fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\t%s\t%s\t\n", w.Workload, q.A, q.B, triple(q.RecordsPerSecond),
				triple(q.RecordsPerCPUSecond), triple(q.RecordsPerProcessingCPUSecond), triple(q.MaxRSS))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n(ratios min/median/max over the repetitions, each repetition's runs compared with each other)\n")
	if len(r.Mismatches) > 0 {
		fmt.Fprintf(out, "\nOUTPUTS DISAGREE:\n  %s\n", strings.Join(r.Mismatches, "\n  "))
	} else {
		fmt.Fprintf(out, "\nAll %d runs produced the reference output.\n", len(r.Runs))
	}
	return nil
}

func triple(s Spread) string {
	return fmt.Sprintf("%.2f/%.2f/%.2f", s.Min, s.Median, s.Max)
}

// si renders a count with a k/M/G suffix.
func si(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2fG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// ReadReport reads a report written by an earlier run (the -json file).
func ReadReport(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("flinkcmp: reading the earlier report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("flinkcmp: %s is not a report of make bench-flink: %w", path, err)
	}
	if len(r.Workloads) == 0 {
		return nil, fmt.Errorf("flinkcmp: %s holds no workload summaries", path)
	}
	return &r, nil
}

// WriteComparison prints, for every workload and engine in both r and old,
// the medians of old and of r and the change, and the change of the
// Sluice/Flink ratios: how a change to either engine (or the machine)
// moved each figure. Workloads or engines in only one report are named,
// not compared.
func (r *Report) WriteComparison(out io.Writer, old *Report) error {
	fmt.Fprintf(out, "Compared with the run of %s (%d repetitions, parallelism %d):\n\n",
		old.Started.Format(time.RFC3339), old.Repetitions, old.Parallelism)
	before := map[string]WorkloadSummary{}
	for _, w := range old.Workloads {
		before[w.Workload] = w
	}
	change := func(o, n float64) string {
		if o == 0 {
			return "–"
		}
		return fmt.Sprintf("%+.1f%%", (n/o-1)*100)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "workload\tengine\trecords/s\t\trecords/proc-CPU-s\t\tpeak RSS MiB\t\t\n")
	var only []string
	for _, w := range r.Workloads {
		ow, ok := before[w.Workload]
		if !ok {
			only = append(only, w.Workload+" (new)")
			continue
		}
		for _, e := range w.Engines {
			i := slices.IndexFunc(ow.Engines, func(x EngineSummary) bool { return x.Engine == e.Engine })
			if i < 0 {
				only = append(only, w.Workload+"/"+e.Engine+" (new)")
				continue
			}
			o := ow.Engines[i]
			fmt.Fprintf(tw, "%s\t%s\t%s → %s\t%s\t%s → %s\t%s\t%.0f → %.0f\t%s\t\n", w.Workload, e.Engine,
				si(o.RecordsPerSecond.Median), si(e.RecordsPerSecond.Median), change(o.RecordsPerSecond.Median, e.RecordsPerSecond.Median),
				si(o.RecordsPerProcessingCPUSecond.Median), si(e.RecordsPerProcessingCPUSecond.Median),
				change(o.RecordsPerProcessingCPUSecond.Median, e.RecordsPerProcessingCPUSecond.Median),
				o.MaxRSSMiB.Median, e.MaxRSSMiB.Median, change(o.MaxRSSMiB.Median, e.MaxRSSMiB.Median))
		}
		for _, q := range w.Ratios {
			i := slices.IndexFunc(ow.Ratios, func(x Ratio) bool { return x.A == q.A && x.B == q.B })
			if i < 0 {
				continue
			}
			o := ow.Ratios[i]
			fmt.Fprintf(tw, "%s\t%s/%s\t%.2f → %.2f\t%s\t%.2f → %.2f\t%s\t%.2f → %.2f\t%s\t\n", w.Workload, q.A, q.B,
				o.RecordsPerSecond.Median, q.RecordsPerSecond.Median, change(o.RecordsPerSecond.Median, q.RecordsPerSecond.Median),
				o.RecordsPerProcessingCPUSecond.Median, q.RecordsPerProcessingCPUSecond.Median,
				change(o.RecordsPerProcessingCPUSecond.Median, q.RecordsPerProcessingCPUSecond.Median),
				o.MaxRSS.Median, q.MaxRSS.Median, change(o.MaxRSS.Median, q.MaxRSS.Median))
		}
	}
	for _, w := range old.Workloads {
		if !slices.ContainsFunc(r.Workloads, func(x WorkloadSummary) bool { return x.Workload == w.Workload }) {
			only = append(only, w.Workload+" (not run now)")
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n(medians, earlier → now, and the change)\n")
	if len(only) > 0 {
		fmt.Fprintf(out, "Not compared: %s\n", strings.Join(only, ", "))
	}
	return nil
}
