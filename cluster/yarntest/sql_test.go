//go:build integration

package yarntest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/integration/kafkabroker"
)

// TestSQLApplicationMode runs a SQL script with sluice sql --target
// yarn-application: the ApplicationMaster's JobManager runs the sluice
// binary's SQL job program, which submits the script's INSERT (a bounded
// Kafka scan, a window aggregation, Kafka out exactly once) to it; the
// client waits for the application (table.dml-sync), which ends SUCCEEDED
// with the job, and the committed output is the windows' totals.
func TestSQLApplicationMode(t *testing.T) {
	r := newRig(t)
	broker := kafkabroker.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sfx := make([]byte, 4)
	rand.Read(sfx)
	s := hex.EncodeToString(sfx)
	in, out := "sql-orders-"+s, "sql-totals-"+s
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for topic, partitions := range map[string]int32{in: 2, out: 1} {
		if resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil || resp.Err != nil {
			t.Fatalf("creating %s: %v %v", topic, err, resp.Err)
		}
	}
	// 1200 orders, one every 100 ms of event time: two minutes of five
	// customers' orders.
	const n = 1200
	start := time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC)
	type key struct {
		customer string
		minute   time.Time
	}
	sums, counts := map[key]int{}, map[key]int{}
	var recs []*kgo.Record
	for i := range n {
		at, customer, cents := start.Add(time.Duration(i)*100*time.Millisecond), fmt.Sprintf("c%d", i%5), (i*37)%10000
		recs = append(recs, &kgo.Record{Topic: in, Partition: int32(i % 2), Value: []byte(fmt.Sprintf(`{"customer_id":%q,"amount":%d.%02d,"occurred_at":%q}`,
			customer, cents/100, cents%100, at.Format("2006-01-02 15:04:05.000")))})
		k := key{customer, at.Truncate(time.Minute)}
		sums[k] += cents
		counts[k]++
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing the orders: %v", err)
	}
	var want []string
	for k, c := range sums {
		want = append(want, fmt.Sprintf(`{"customer_id":%q,"window_start":%q,"n":%d,"total":%s}`,
			k.customer, k.minute.Format("2006-01-02 15:04:05"), counts[k], flinkDecimal(int64(c))))
	}
	slices.Sort(want)

	script := `SET 'pipeline.name' = 'sql-on-yarn';
SET 'parallelism.default' = '2';
SET 'execution.checkpointing.interval' = '300 ms';
CREATE TABLE orders (customer_id STRING, amount DECIMAL(12, 2), occurred_at TIMESTAMP(3),
  WATERMARK FOR occurred_at AS occurred_at - INTERVAL '5' SECOND
) WITH ('connector' = 'kafka', 'topic' = '` + in + `', 'properties.bootstrap.servers' = '` + broker.Addr + `',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json');
CREATE TABLE totals (customer_id STRING, window_start TIMESTAMP(3), n BIGINT, total DECIMAL(18, 2))
WITH ('connector' = 'kafka', 'topic' = '` + out + `', 'properties.bootstrap.servers' = '` + broker.Addr + `', 'format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'sql-on-yarn-` + s + `');
INSERT INTO totals SELECT customer_id, window_start, COUNT(*), SUM(amount)
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(occurred_at), INTERVAL '1' MINUTE))
GROUP BY customer_id, window_start, window_end;
`
	path := filepath.Join(r.work, "script.sql")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"sql", "--target", "yarn-application", "-Dtable.dml-sync=true",
		"-Dexecution.checkpointing.dir=hdfs://" + r.hdfs + "/ckpt", "-Dyarn.application.name=yarntest-sql"}, small...)
	p := r.start(ctx, append(args, "-f", path)...)
	appID := match(t, p, reAppID, 2*time.Minute)
	succeeded(t, p, appID)

	rd, err := kgo.NewClient(kgo.SeedBrokers(broker.Addr), kgo.ConsumeTopics(out),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var got []string
	poll := func(d time.Duration) {
		pctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		rd.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for deadline := time.Now().Add(time.Minute); len(got) < len(want) && time.Now().Before(deadline); {
		poll(time.Second)
	}
	poll(2 * time.Second) // a duplicate would be committed by now: the job has ended
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("committed output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	r.stagingGone(t, appID)
}

// flinkDecimal is a DECIMAL of cents as Flink's json format writes it:
// Jackson's normalized BigDecimal (7.00 as 7, 5.50 as 5.5, 10.00 as 1E+1).
func flinkDecimal(cents int64) string {
	if cents == 0 {
		return "0"
	}
	v, scale := cents, 2
	for v%10 == 0 {
		v /= 10
		scale--
	}
	d := fmt.Sprint(v)
	if scale < 0 {
		m := d[:1]
		if len(d) > 1 {
			m += "." + d[1:]
		}
		return fmt.Sprintf("%sE+%d", m, len(d)-1-scale)
	}
	for len(d) <= scale {
		d = "0" + d
	}
	if scale == 0 {
		return d
	}
	return d[:len(d)-scale] + "." + d[len(d)-scale:]
}
