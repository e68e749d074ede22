package main

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// runWithKafkaTo runs the Kafka pipeline on an embedded broker and checks
// that every purchase is counted in exactly one committed window total or
// appears once among the late purchases, and that no window is committed
// twice.
func runWithKafkaTo(t *testing.T, n int64) error {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return err
	}
	defer c.Close()
	if err := runWithKafka(c.ListenAddrs()[0], n, 3000, t.TempDir(), nil); err != nil {
		return err
	}
	totals, late, err := readCommitted(context.Background(), c.ListenAddrs())
	if err != nil {
		return err
	}
	var counted int64
	windows := map[string]bool{}
	for _, tot := range totals {
		k := tot.Customer + "@" + tot.WindowStart.String()
		if windows[k] {
			t.Fatalf("window %s committed twice", k)
		}
		windows[k] = true
		counted += tot.Purchases
	}
	if counted+int64(len(late)) != n {
		t.Fatalf("%d purchases in committed totals + %d late = %d, want exactly %d", counted, len(late), counted+int64(len(late)), n)
	}
	return nil
}
