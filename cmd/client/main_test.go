package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestKafkaTransactionsListAndAbort(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	// A lingering transaction of the job's prefix: begun, written, never ended.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("myjob-0-0"), kgo.DefaultProduceTopic("out"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := newApp(&out).Run(append([]string{"sluice"}, args...)); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out.String())
		}
		return out.String()
	}
	if out := run("kafka", "transactions", "list", "--bootstrap", addr, "--prefix", "myjob"); !strings.Contains(out, "myjob-0-0") || !strings.Contains(out, "Ongoing") {
		t.Fatalf("list does not show the open transaction:\n%s", out)
	}
	if out := run("kafka", "transactions", "abort", "-b", addr, "-p", "myjob"); !strings.Contains(out, "aborted 1 transaction") {
		t.Fatalf("abort:\n%s", out)
	}
	if out := run("kafka", "transactions", "list", "--bootstrap", addr, "--prefix", "myjob"); strings.Contains(out, "Ongoing") {
		t.Fatalf("the transaction is still open after abort:\n%s", out)
	}
}

func TestMissingFlagsAreNamed(t *testing.T) {
	var out bytes.Buffer
	err := newApp(&out).Run([]string{"sluice", "kafka", "transactions", "list", "--prefix", "x"})
	if err == nil || !strings.Contains(err.Error(), "bootstrap") {
		t.Fatalf("want an error naming --bootstrap, got %v", err)
	}
}
