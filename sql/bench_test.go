package sql_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/sluice/sluice/sql"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkGuideQuery runs the guide's window aggregation over a bounded
// scan of benchRecords orders on one partition of an in-process kfake
// broker, into a blackhole table, at parallelism 1. It reports records
// per second and CPU per record; the CPU is the process's, the broker's
// serving of the fetches included.
func BenchmarkGuideQuery(b *testing.B) {
	const benchRecords = 200_000
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("orders"), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	base := time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC).UnixMilli()
	var recs []*kgo.Record
	for i := 0; i < benchRecords; i++ {
		ts := time.UnixMilli(base + int64(i)*10).UTC().Format("2006-01-02 15:04:05.000")
		v := fmt.Sprintf(`{"order_id":"o%d","customer_id":"c%d","amount":%d.%02d,"occurred_at":%q}`, i, i%1000, i%500, i%100, ts)
		recs = append(recs, &kgo.Record{Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	script := `
CREATE TABLE orders (order_id STRING, customer_id STRING, amount DECIMAL(12, 2),
  occurred_at TIMESTAMP(3), WATERMARK FOR occurred_at AS occurred_at - INTERVAL '10' SECOND
) WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = '` + addr + `',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json');
CREATE TABLE customer_totals (customer_id STRING, window_start TIMESTAMP(3),
  window_end TIMESTAMP(3), total_amount DECIMAL(18, 2)) WITH ('connector' = 'blackhole');
INSERT INTO customer_totals SELECT customer_id, window_start, window_end, SUM(amount)
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(occurred_at), INTERVAL '1' MINUTE))
GROUP BY customer_id, window_start, window_end;`
	cpu0 := cpuTime()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		jobs, err := sql.NewSession(sql.Options{}).ExecuteScript(ctx, script)
		if err != nil {
			b.Fatal(err)
		}
		if err := jobs[0].Wait(); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	n := float64(b.N * benchRecords)
	b.ReportMetric(n/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/n/1000, "cpu-µs/record")
	b.ReportMetric(n/cpu.Seconds(), "records/cpu-s")
	b.ReportMetric(peakRSSMiB(), "peak-RSS-MiB")
}

// peakRSSMiB is the process's peak resident set (VmHWM), the broker's
// copy of the topic included.
func peakRSSMiB() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Maxrss) / 1024 // kilobytes on Linux
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
