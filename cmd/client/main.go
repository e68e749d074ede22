// Command sluice is Sluice's command-line client. Flink's run, list,
// savepoint, stop and cancel commands arrive with the distributed runtime;
// today it offers the Kafka tools:
//
//	sluice kafka transactions list  --bootstrap HOST:PORT --prefix PREFIX
//	sluice kafka transactions abort --bootstrap HOST:PORT --prefix PREFIX
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sluice/sluice/kafka"
)

func main() {
	if err := newApp(os.Stdout).Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "sluice:", err)
		os.Exit(1)
	}
}

// newApp builds the CLI writing to out.
func newApp(out io.Writer) *cli.App {
	txFlags := []cli.Flag{
		&cli.StringSliceFlag{Name: "bootstrap", Aliases: []string{"b"}, Required: true, Usage: "Kafka bootstrap servers (host:port, repeatable or comma-separated)"},
		&cli.StringFlag{Name: "prefix", Aliases: []string{"p"}, Required: true, Usage: "the job's transactional-id prefix (the sink's TransactionalIDPrefix)"},
		&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "how long to wait for the brokers"},
	}
	return &cli.App{
		Name:      "sluice",
		Usage:     "the Sluice stream processor's client",
		Writer:    out,
		ErrWriter: out,
		Commands: []*cli.Command{{
			Name:  "kafka",
			Usage: "Kafka tools",
			Subcommands: []*cli.Command{{
				Name:  "transactions",
				Usage: "list or abort a job's lingering Kafka transactions",
				Subcommands: []*cli.Command{
					{
						Name:  "list",
						Usage: "list the transactions of a transactional-id prefix",
						Flags: txFlags,
						Action: func(c *cli.Context) error {
							txs, err := withKafka(c, kafka.ListTransactions)
							if err != nil {
								return err
							}
							return printTransactions(c.App.Writer, txs)
						},
					},
					{
						Name:  "abort",
						Usage: "abort the open transactions of a transactional-id prefix (fences their producers)",
						Flags: txFlags,
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
		}},
	}
}

func withKafka(c *cli.Context, fn func(context.Context, string, ...kafka.Opt) ([]kafka.Transaction, error)) ([]kafka.Transaction, error) {
	var addrs []string
	for _, b := range c.StringSlice("bootstrap") {
		for _, a := range strings.Split(b, ",") {
			if a = strings.TrimSpace(a); a != "" {
				addrs = append(addrs, a)
			}
		}
	}
	if len(addrs) == 0 {
		return nil, errors.New("--bootstrap: give at least one host:port")
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
