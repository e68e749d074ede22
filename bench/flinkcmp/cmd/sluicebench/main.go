// Command sluicebench runs one workload of the Sluice–Flink benchmark on
// Sluice's embedded local cluster and prints one line, "RESULT {json}"
// (jobs.Result), on standard output. The driver (cmd/flinkcmp) runs it as
// a child process, so that its CPU time and peak memory are its own.
//
//	sluicebench -workload q1|q2|q5|q7|kafka|raw -records N [-seed S] [-parallelism P]
//	    [-checkpoint-interval 10s -checkpoint-dir DIR]
//	    [-bootstrap HOST:PORT -in-topic T -out-topic T -txn-prefix P] [-cpuprofile FILE]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/sluice/sluice/bench/flinkcmp/jobs"
	"github.com/sluice/sluice/bench/flinkcmp/nexmark"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "sluicebench:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg jobs.Config
	var cpuProfile string
	var verbose bool
	fs := flag.NewFlagSet("sluicebench", flag.ContinueOnError)
	fs.StringVar(&cfg.Workload, "workload", "", "q1, q2, q5, q7, kafka or raw")
	fs.Int64Var(&cfg.Records, "records", 0, "records to generate (q1..q7) or in the input topic (kafka, raw)")
	fs.Uint64Var(&cfg.Seed, "seed", nexmark.DefaultSeed, "generator seed")
	fs.IntVar(&cfg.Parallelism, "parallelism", 2, "parallelism of every operator")
	fs.DurationVar(&cfg.CheckpointInterval, "checkpoint-interval", 0, "exactly-once checkpoint interval (0: off)")
	fs.StringVar(&cfg.CheckpointDir, "checkpoint-dir", "", "checkpoint directory")
	fs.StringVar(&cfg.Bootstrap, "bootstrap", "", "Kafka bootstrap address")
	fs.StringVar(&cfg.InTopic, "in-topic", "", "Kafka input topic")
	fs.StringVar(&cfg.OutTopic, "out-topic", "", "Kafka output topic")
	fs.StringVar(&cfg.TxnPrefix, "txn-prefix", "", "transactional id prefix")
	fs.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
	fs.BoolVar(&verbose, "v", false, "log the engine's warnings to standard error")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	began := time.Now()
	res, err := jobs.Run(ctx, cfg)
	if err != nil {
		return fmt.Errorf("%s after %v: %w", cfg.Workload, time.Since(began).Round(time.Millisecond), err)
	}
	if cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if res.PeakRSSBytes, err = jobs.PeakRSS(); err != nil {
		return err
	}
	line, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Printf("RESULT %s\n", line)
	return nil
}
