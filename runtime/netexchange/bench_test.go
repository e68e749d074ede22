package netexchange

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/runtime/exchange"
	"github.com/sluice/sluice/internal/runtime/task"
)

// streamRecords sends n records of type T from endpoint a to a gate on b
// over `channels` remote channels (one sending goroutine each), in batches
// of task.DefaultBatchSize, with `credits` per channel. The receiver
// releases every buffer.
func streamRecords[T any](tb testing.TB, a, b *Endpoint, scope string, n, channels, credits int, gen func(i int) T, touch func(T) int64) {
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
	senders := make([]exchange.Sender, channels)
	// One batch per channel, reused: Send encodes it before returning.
	batches := make([]*task.Batch[T], channels)
	for ch := range senders {
		if senders[ch], err = a.Sender(ctx, b.Addr(), key, ch, bc); err != nil {
			tb.Fatal(err)
		}
		batches[ch] = newBatch[T]()
	}
	moveRecords(tb, ctx, senders, gate.C(), n, gen, touch,
		func(ch int) *task.Batch[T] { return batches[ch] },
		func(_ int, d *task.Batch[T]) { bc.ReleaseBatch(d) })
}

// passRecords is streamRecords through the in-process exchange
// (internal/runtime/exchange): the same channels, credits and batches, passed by
// reference. As a task's writer does, each sender takes its batches from a
// pool, and the receiver puts them back once it has read them.
func passRecords[T any](tb testing.TB, n, channels, credits int, gen func(i int) T, touch func(T) int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	g := exchange.NewLocalGate(credits)
	for range channels {
		g.AddChannel(0)
	}
	inbox, chans := g.Build()
	senders := make([]exchange.Sender, channels)
	pools := make([]sync.Pool, channels)
	for ch := range senders {
		senders[ch] = chans[ch]
		pools[ch].New = func() any { return newBatch[T]() }
	}
	moveRecords(tb, ctx, senders, inbox.C(), n, gen, touch,
		func(ch int) *task.Batch[T] { return pools[ch].Get().(*task.Batch[T]) },
		func(ch int, d *task.Batch[T]) {
			clear(d.Values)
			pools[ch].Put(d)
		})
}

func newBatch[T any]() *task.Batch[T] {
	return &task.Batch[T]{Values: make([]T, 0, task.DefaultBatchSize), Ts: make([]int64, 0, task.DefaultBatchSize)}
}

// encodedBatchBytes is the encoded size of a full batch of gen's records.
func encodedBatchBytes[T any](tb testing.TB, gen func(i int) T) int {
	full := newBatch[T]()
	for i := range task.DefaultBatchSize {
		full.Values, full.Ts = append(full.Values, gen(i)), append(full.Ts, int64(i))
	}
	return len(codecOf[T](tb).AppendBatch(nil, full))
}

// moveRecords sends n records of type T over senders (one goroutine each,
// n split between them), in batches of task.DefaultBatchSize taken from
// next and each followed by an end of partition, and receives them from
// inbox, touching every record and handing each batch to done before
// releasing its buffer.
func moveRecords[T any](tb testing.TB, ctx context.Context, senders []exchange.Sender, inbox <-chan exchange.Buffer, n int,
	gen func(i int) T, touch func(T) int64, next func(ch int) *task.Batch[T], done func(ch int, d *task.Batch[T])) {
	channels := len(senders)
	var wg sync.WaitGroup
	errs := make([]error, channels)
	for ch := range channels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := senders[ch]
			share := n / channels
			if ch == 0 {
				share += n % channels
			}
			for i := 0; i < share; {
				batch := next(ch)
				batch.Values, batch.Ts = batch.Values[:0], batch.Ts[:0]
				for ; i < share && len(batch.Values) < task.DefaultBatchSize; i++ {
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
		buf := <-inbox
		switch {
		case buf.Err != nil:
			tb.Fatal(buf.Err)
		case buf.Data != nil:
			d := buf.Data.(*task.Batch[T])
			for _, v := range d.Values {
				sum += touch(v)
			}
			got += len(d.Values)
			done(buf.Channel, d)
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
}

// The workload of both exchange benchmarks: int64 records and a small
// plain struct.
var (
	genInt64     = func(i int) int64 { return int64(i) * 7919 }
	touchInt64   = func(v int64) int64 { return v }
	genReading   = func(i int) reading { return reading{Sensor: int32(i % 1000), Value: float64(i) / 8, Valid: i%3 != 0} }
	touchReading = func(v reading) int64 { return int64(v.Sensor) }
)

// exchangeCase is one record type of the exchange benchmarks.
type exchangeCase struct {
	name string
	// network streams n records between two endpoints.
	network func(b *testing.B, a, c *Endpoint, scope string, n int)
	// inProcess passes n records through the in-process exchange.
	inProcess func(b *testing.B, n int)
	// batchBytes is the encoded size of a full batch.
	batchBytes func(b *testing.B) int
}

const (
	benchChannels = 2
	benchCredits  = 4
)

var exchangeCases = []exchangeCase{
	{"int64",
		func(b *testing.B, a, c *Endpoint, scope string, n int) {
			streamRecords(b, a, c, scope, n, benchChannels, benchCredits, genInt64, touchInt64)
		},
		func(b *testing.B, n int) { passRecords(b, n, benchChannels, benchCredits, genInt64, touchInt64) },
		func(b *testing.B) int { return encodedBatchBytes(b, genInt64) }},
	{"struct",
		func(b *testing.B, a, c *Endpoint, scope string, n int) {
			streamRecords(b, a, c, scope, n, benchChannels, benchCredits, genReading, touchReading)
		},
		func(b *testing.B, n int) { passRecords(b, n, benchChannels, benchCredits, genReading, touchReading) },
		func(b *testing.B) int { return encodedBatchBytes(b, genReading) }},
}

// reportThroughput reports records/s and MB/s of n records moved in el.
// MB/s counts the records' encoded size (what the network carries) in
// both benchmarks, so the two compare; the in-process exchange encodes
// nothing.
func reportThroughput(b *testing.B, n int, el time.Duration, batchBytes int) {
	b.ReportMetric(float64(n)/el.Seconds(), "records/s")
	b.ReportMetric(float64(n)*float64(batchBytes)/task.DefaultBatchSize/el.Seconds()/1e6, "MB/s")
}

// BenchmarkInProcessExchange is BenchmarkNetworkExchange's workload
// through the in-process exchange (internal/runtime/exchange), its baseline: two
// channels into one inbox, 4 credits each, batches of 512, one sending
// goroutine per channel. One op is one record.
func BenchmarkInProcessExchange(b *testing.B) {
	for _, tc := range exchangeCases {
		b.Run(tc.name, func(b *testing.B) {
			tc.inProcess(b, 100_000) // warm the pools
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			tc.inProcess(b, b.N)
			el := time.Since(start)
			b.StopTimer()
			reportThroughput(b, b.N, el, tc.batchBytes(b))
		})
	}
}

// BenchmarkNetworkExchange streams records between two endpoints over
// loopback gRPC: two channels on one connection, 4 credits each, batches
// of 512. One op is one record (allocs/op is allocations per record, both
// sides); MB/s counts the encoded batches.
func BenchmarkNetworkExchange(b *testing.B) {
	for _, tc := range exchangeCases {
		b.Run(tc.name, func(b *testing.B) {
			a := newEndpoint(b, func(c *Config) { c.Log = nil })
			c := newEndpoint(b, func(c *Config) { c.Log = nil })
			// Warm the connection and the pools.
			tc.network(b, a, c, "warm", 100_000)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			tc.network(b, a, c, fmt.Sprintf("run-%d", b.N), b.N)
			el := time.Since(start)
			b.StopTimer()
			reportThroughput(b, b.N, el, tc.batchBytes(b))
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
