package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sluice/sluice/kafka"
)

// The Kafka tools: a job's lingering transactions.
//
//	sluice kafka transactions list  --bootstrap HOST:PORT --prefix PREFIX
//	sluice kafka transactions abort --bootstrap HOST:PORT --prefix PREFIX

func kafkaCommand() *cli.Command {
	txFlags := []cli.Flag{
		&cli.StringSliceFlag{Name: "bootstrap", Aliases: []string{"b"}, Usage: "Kafka bootstrap servers (host:port, repeatable or comma-separated); required"},
		&cli.StringFlag{Name: "prefix", Aliases: []string{"p"}, Usage: "the job's transactional-id prefix (the sink's TransactionalIDPrefix); required"},
		&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "how long to wait for the brokers"},
	}
	return &cli.Command{
		Name:  "kafka",
		Usage: "Kafka tools",
		Subcommands: []*cli.Command{{
			Name:  "transactions",
			Usage: "list or abort a job's lingering Kafka transactions",
			Subcommands: []*cli.Command{
				{
					Name:      "list",
					Usage:     "list the transactions of a transactional-id prefix",
					UsageText: "sluice kafka transactions list --bootstrap HOST:PORT --prefix PREFIX",
					Flags:     txFlags,
					Action: func(c *cli.Context) error {
						txs, err := withKafka(c, kafka.ListTransactions)
						if err != nil {
							return err
						}
						return printTransactions(c.App.Writer, txs)
					},
				},
				{
					Name:      "abort",
					Usage:     "abort the open transactions of a transactional-id prefix (fences their producers)",
					UsageText: "sluice kafka transactions abort --bootstrap HOST:PORT --prefix PREFIX",
					Flags:     txFlags,
					Action: func(c *cli.Context) error {
						txs, err := withKafka(c, kafka.AbortLingeringTransactions)
						if err != nil {
							return err
						}
						fmt.Fprintf(c.App.Writer, "aborted %d transaction(s)\n", len(txs))
						return printTransactions(c.App.Writer, txs)
					},
				},
			},
		}},
	}
}

func withKafka(c *cli.Context, fn func(context.Context, string, ...kafka.Opt) ([]kafka.Transaction, error)) ([]kafka.Transaction, error) {
	if c.Args().Present() {
		return nil, usagef(c, "unexpected arguments %q; give the brokers with --bootstrap and the prefix with --prefix", c.Args().Slice())
	}
	var addrs []string
	for _, b := range c.StringSlice("bootstrap") {
		for _, a := range strings.Split(b, ",") {
			if a = strings.TrimSpace(a); a != "" {
				addrs = append(addrs, a)
			}
		}
	}
	if len(addrs) == 0 {
		return nil, usagef(c, "--bootstrap is required: give at least one Kafka broker as host:port")
	}
	if c.String("prefix") == "" {
		return nil, usagef(c, "--prefix is required: give the job's transactional-id prefix (the sink's TransactionalIDPrefix)")
	}
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	return fn(ctx, c.String("prefix"), kafka.BootstrapServers(addrs...))
}

func printTransactions(w io.Writer, txs []kafka.Transaction) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TRANSACTIONAL ID\tSTATE\tPRODUCER ID\tEPOCH\tSTARTED")
	for _, t := range txs {
		started := "-"
		if !t.Started.IsZero() {
			started = t.Started.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", t.TransactionalID, t.State, t.ProducerID, t.ProducerEpoch, started)
	}
	return tw.Flush()
}
