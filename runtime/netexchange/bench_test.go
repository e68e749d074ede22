package netexchange

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/runtime/exchange"
	"github.com/sluice/sluice/runtime/task"
)

// streamRecords sends n records of type T from endpoint a to a gate on b
// over `channels` remote channels (one sending goroutine each), in batches
// of task.DefaultBatchSize, with `credits` per channel, and returns the
// wire bytes of one full batch. The receiver releases every buffer.
func streamRecords[T any](tb testing.TB, a, b *Endpoint, scope string, n, channels, credits int, gen func(i int) T, touch func(T) int64) (batchBytes int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bc := codecOf[T](tb)
	key := GateKey{Scope: scope, Chain: 1}
	gb := b.NewGate(key, credits)
	for range channels {
		gb.AddRemote(0, bc)
	}
	gate, _, err := gb.Build()
	if err != nil {
		tb.Fatal(err)
	}
	defer gate.Close()
	senders := make([]*Sender, channels)
	for ch := range senders {
		if senders[ch], err = a.Sender(ctx, b.Addr(), key, ch, bc); err != nil {
			tb.Fatal(err)
		}
	}
	size := task.DefaultBatchSize
	full := &task.Batch[T]{Values: make([]T, size), Ts: make([]int64, size)}
	for i := range size {
		full.Values[i], full.Ts[i] = gen(i), int64(i)
	}
	batchBytes = len(bc.AppendBatch(nil, full))

	var wg sync.WaitGroup
	errs := make([]error, channels)
	for ch := range channels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := senders[ch]
			// One batch reused: Send encodes it before returning.
			batch := &task.Batch[T]{Values: make([]T, 0, size), Ts: make([]int64, 0, size)}
			share := n / channels
			if ch == 0 {
				share += n % channels
			}
			for i := 0; i < share; {
				batch.Values, batch.Ts = batch.Values[:0], batch.Ts[:0]
				for ; i < share && len(batch.Values) < size; i++ {
					batch.Values = append(batch.Values, gen(i))
					batch.Ts = append(batch.Ts, int64(i))
				}
				buf := exchange.Buffer{Data: batch}
				if !s.TrySend(buf) {
					if err := s.Send(ctx, buf); err != nil {
						errs[ch] = err
						return
					}
				}
			}
			errs[ch] = s.Send(ctx, exchange.Buffer{Event: exchange.Event{Kind: exchange.EndOfPartition}})
		}()
	}
	got, ended := 0, 0
	var sum int64
	for ended < channels {
		buf := <-gate.C()
		switch {
		case buf.Err != nil:
			tb.Fatal(buf.Err)
		case buf.Data != nil:
			d := buf.Data.(*task.Batch[T])
			for _, v := range d.Values {
				sum += touch(v)
			}
			got += len(d.Values)
			bc.ReleaseBatch(d)
		case buf.Event.Kind == exchange.EndOfPartition:
			ended++
		}
		buf.Release()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			tb.Fatal(err)
		}
	}
	if got != n {
		tb.Fatalf("received %d records, want %d (sum %d)", got, n, sum)
	}
	return batchBytes
}

// BenchmarkNetworkExchange streams records between two endpoints over
// loopback gRPC: two channels on one connection, 4 credits each, batches
// of 512. One op is one record (allocs/op is allocations per record, both
// sides); MB/s counts the encoded batches.
func BenchmarkNetworkExchange(b *testing.B) {
	cases := []struct {
		name string
		run  func(b *testing.B, a, c *Endpoint, scope string, n int) int
	}{
		{"int64", func(b *testing.B, a, c *Endpoint, scope string, n int) int {
			return streamRecords(b, a, c, scope, n, 2, 4, func(i int) int64 { return int64(i) * 7919 }, func(v int64) int64 { return v })
		}},
		{"struct", func(b *testing.B, a, c *Endpoint, scope string, n int) int {
			return streamRecords(b, a, c, scope, n, 2, 4,
				func(i int) reading { return reading{Sensor: int32(i % 1000), Value: float64(i) / 8, Valid: i%3 != 0} },
				func(v reading) int64 { return int64(v.Sensor) })
		}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			a := newEndpoint(b, func(c *Config) { c.Log = nil })
			c := newEndpoint(b, func(c *Config) { c.Log = nil })
			// Warm the connection and the pools.
			tc.run(b, a, c, "warm", 100_000)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			batchBytes := tc.run(b, a, c, fmt.Sprintf("run-%d", b.N), b.N)
			el := time.Since(start)
			b.StopTimer()
			b.SetBytes(int64(batchBytes / task.DefaultBatchSize))
			b.ReportMetric(float64(b.N)/el.Seconds(), "records/s")
		})
	}
}

// Across the network, plain records cost no allocation of their own: what
// allocates is per batch or per gRPC message.
func TestNetworkExchangeDoesNotAllocatePerRecord(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	a := newEndpoint(t, func(c *Config) { c.Log = nil })
	c := newEndpoint(t, func(c *Config) { c.Log = nil })
	gen := func(i int) reading { return reading{Sensor: int32(i), Value: 1, Valid: true} }
	touch := func(v reading) int64 { return int64(v.Sensor) }
	streamRecords(t, a, c, "warm", 100_000, 2, 4, gen, touch)
	const n = 1_000_000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	streamRecords(t, a, c, "measured", n, 2, 4, gen, touch)
	runtime.ReadMemStats(&after)
	perRecord := float64(after.Mallocs-before.Mallocs) / n
	t.Logf("%.4f allocations per record (%.1f per batch of %d)", perRecord, perRecord*task.DefaultBatchSize, task.DefaultBatchSize)
	if perRecord > 0.1 {
		t.Fatalf("%.4f allocations per record", perRecord)
	}
}
