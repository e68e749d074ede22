// Command clusterjob is the job the multi-process tests run on a cluster
// and locally. Its records are Recs, written by an exactly-once file sink
// as "key count" lines. -shape chooses the exchange between workers:
//
//   - hash (the default): n records spread over keys, a running count per
//     key kept in keyed state (Reduce) behind a keyBy. Exactly-once shows
//     in the committed output: for each key the counts 1..n/keys appear
//     exactly once, however often the job failed.
//
//   - rebalance: record i is {i % keys, i}, sent round-robin from the
//     source to a Map: n lines, each once.
//
//   - broadcast: record i is {i % keys, i}, sent to every subtask of a
//     Map: each subtask writes all n lines.
//
//   - union: three sources of n records {tag, i} united: tag 0 forward
//     from a source of the job's parallelism, tag 1 rebalanced from a
//     source of parallelism 1, tag 2 broadcast from a source of the job's
//     parallelism. Each union subtask writes its lines: n with tag 0 and
//     n with tag 1 over all subtasks, n with tag 2 at every subtask.
//
// -spin has a Map of its own spend CPU per record in spinWork, a user
// function the flame-graph tests look for.
//
// -worker-delay has every worker wait before it connects to its
// JobMaster, so that a test can act while an attempt deploys.
//
//	clusterjob -out DIR [-shape hash|rebalance|broadcast|union] [-n N] [-keys K] [-rate R] [-slow D] [-spin N] [-worker-delay D]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sluice/sluice/file"
	"github.com/sluice/sluice/stream"
)

// Rec is a key (a tag for -shape union) and a count (a record index but
// for -shape hash).
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
	spin := flag.Int("spin", 0, "iterations of CPU work (spinWork) per record, in a Map of its own")
	shape := flag.String("shape", "hash", "the exchange between workers: hash, rebalance, broadcast or union")
	vary := flag.Bool("vary", false, "build a different graph in workers than in the client (a broken job program)")
	workerDelay := flag.Duration("worker-delay", 0, "time a worker waits before it connects to its JobMaster (a slow deployment)")
	crashWorker := flag.Bool("crash-worker", false, "panic in worker mode, before connecting to the JobMaster (a broken job program)")
	flag.Parse()
	if *crashWorker && os.Getenv("SLUICE_EXECUTION_TARGET") == "worker" {
		panic("clusterjob: deliberate crash in worker mode")
	}
	if *out == "" {
		fmt.Fprintln(os.Stderr, "clusterjob: -out is required")
		os.Exit(2)
	}
	env := stream.NewEnvironment()
	numbered := func(uid string) stream.DataStream[Rec] {
		return stream.DataGen(env, *n, *rate, func(i int64) Rec { return Rec{Key: i % *keys, Count: i} }).UID(uid)
	}
	tagged := func(uid string, tag int64) stream.DataStream[Rec] {
		return stream.DataGen(env, *n, *rate, func(i int64) Rec { return Rec{Key: tag, Count: i} }).UID(uid)
	}
	identity := func(r Rec) Rec { return r }
	var records stream.DataStream[Rec]
	switch *shape {
	case "hash":
		src := stream.DataGen(env, *n, *rate, func(i int64) Rec { return Rec{Key: i % *keys, Count: 1} }).UID("numbers")
		records = stream.Reduce(stream.KeyBy(src, func(r Rec) int64 { return r.Key }), func(a, b Rec) Rec {
			a.Count += b.Count
			return a
		}).UID("counts")
	case "rebalance":
		records = stream.Map(numbered("numbers").Rebalance(), identity).UID("rebalanced")
	case "broadcast":
		records = stream.Map(numbered("numbers").Broadcast(), identity).UID("broadcast")
	case "union":
		records = stream.Map(stream.Union(tagged("forward", 0), tagged("rebalanced", 1).SetParallelism(1).Rebalance(),
			tagged("broadcast", 2).Broadcast()).UID("union"), identity).UID("united")
	default:
		fmt.Fprintf(os.Stderr, "clusterjob: unknown -shape %q (hash, rebalance, broadcast or union)\n", *shape)
		os.Exit(2)
	}
	if *workerDelay > 0 && os.Getenv("SLUICE_EXECUTION_TARGET") == "worker" {
		time.Sleep(*workerDelay) // the behaviour asked for: a worker slow to start
	}
	if *vary && os.Getenv("SLUICE_EXECUTION_TARGET") == "worker" {
		records = stream.Filter(records, func(Rec) bool { return true })
	}
	if *slow > 0 {
		d := *slow
		records = stream.Map(records, func(r Rec) Rec {
			time.Sleep(d) // the behaviour asked for: a slow operator
			return r
		})
	}
	if *spin > 0 {
		k := *spin
		records = stream.Map(records, func(r Rec) Rec { return spinWork(r, k) })
	}
	sink := file.ForRowFormat(*out, func(r Rec, w io.Writer) error {
		_, err := fmt.Fprintf(w, "%d %d\n", r.Key, r.Count)
		return err
	}).WithBucketAssigner(file.BasePathBucketAssigner[Rec]())
	stream.SinkToCommitting(records, sink).UID("files")
	res, err := env.Execute("cluster test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("job %s done: %d restarts, %d checkpoints\n", res.JobID, res.Restarts, res.Checkpoints)
}

// spinWork spends CPU on a record (n rounds of a linear congruential
// step) and returns it as it came: the busy user function that the
// flame-graph tests find in the job's profile.
//
//go:noinline
func spinWork(r Rec, n int) Rec {
	h := uint64(r.Count)
	for range n {
		h = h*6364136223846793005 + 1442695040888963407
	}
	if h == 0 { // one start in 2^64; uses h, so the loop stays
		panic("clusterjob: spinWork's state reached 0")
	}
	return r
}
