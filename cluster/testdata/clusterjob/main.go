// Command clusterjob is the job the multi-process tests run on a cluster
// and locally: n records spread over keys, a running count per key kept in
// keyed state (Reduce), every update written by an exactly-once file sink
// as "key count". Exactly-once shows in the committed output: for each key
// the counts 1..n/keys appear exactly once, however often the job failed.
//
//	clusterjob -out DIR [-n N] [-keys K] [-rate R] [-slow D]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sluice/sluice/stream"
)

// Rec is a key and a count.
type Rec struct {
	Key   int64
	Count int64
}

func main() {
	out := flag.String("out", "", "output directory")
	n := flag.Int64("n", 10000, "records")
	keys := flag.Int64("keys", 10, "keys")
	rate := flag.Float64("rate", 0, "records per second over the job (0: unthrottled)")
	slow := flag.Duration("slow", 0, "time the sink side spends per record (backpressure)")
	vary := flag.Bool("vary", false, "build a different graph in workers than in the client (a broken job program)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "clusterjob: -out is required")
		os.Exit(2)
	}
	env := stream.NewEnvironment()
	src := stream.DataGen(env, *n, *rate, func(i int64) Rec { return Rec{Key: i % *keys, Count: 1} }).UID("numbers")
	counts := stream.Reduce(stream.KeyBy(src, func(r Rec) int64 { return r.Key }), func(a, b Rec) Rec {
		a.Count += b.Count
		return a
	}).UID("counts")
	if *vary && os.Getenv("SLUICE_EXECUTION_TARGET") == "worker" {
		counts = stream.Filter(counts, func(Rec) bool { return true })
	}
	if *slow > 0 {
		d := *slow
		counts = stream.Map(counts, func(r Rec) Rec {
			time.Sleep(d)
			return r
		})
	}
	sink := stream.FileSink(*out, func(r Rec, w io.Writer) error {
		_, err := fmt.Fprintf(w, "%d %d\n", r.Key, r.Count)
		return err
	}).WithBucketAssigner(stream.BasePathBucketAssigner[Rec]())
	stream.SinkToCommitting(counts, sink).UID("files")
	res, err := env.Execute("cluster test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("job %s done: %d restarts, %d checkpoints\n", res.JobID, res.Restarts, res.Checkpoints)
}
