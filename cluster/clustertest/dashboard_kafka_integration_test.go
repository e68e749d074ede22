//go:build integration

package clustertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/integration/kafkabroker"
	"github.com/sluice/sluice/internal/testwait"
)

// TestDashboardKafka runs a Kafka → Kafka exactly-once job
// (cluster/testdata/kafkajob, a real broker) on a standalone cluster and
// reads its connectors' state where no other tool shows it in one place:
// the REST API serves each input partition's lag and the sink's open
// transactions as the subtasks' metrics, and the dashboard's Kafka tab
// lists them, in headless Chromium behind the YARN-like proxy.
func TestDashboardKafka(t *testing.T) {
	bin := chromium(t)
	shots := screenshotDir(t)
	broker := kafkabroker.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	sfx := make([]byte, 4)
	rand.Read(sfx)
	s := hex.EncodeToString(sfx)
	in, out, prefix := "dash-in-"+s, "dash-out-"+s, "dash-"+s
	admin, err := kgo.NewClient(kgo.SeedBrokers(broker.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	for topic, partitions := range map[string]int32{in: 4, out: 1} {
		if resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil || resp.Err != nil {
			t.Fatalf("creating %s: %v %v", topic, err, resp.Err)
		}
	}
	// Enough input for the job to lag behind it for the whole test (it is
	// cancelled at the end): the sink's transactions come and go at the
	// checkpoints, the lag gauges go once a partition is read to its end.
	const perPartition = 20000
	var recs []*kgo.Record
	for p := 0; p < 4; p++ {
		for i := 0; i < perPartition; i++ {
			recs = append(recs, &kgo.Record{Topic: in, Partition: int32(p), Value: []byte(fmt.Sprintf("%d:%d", p, i))})
		}
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(broker.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing the input: %v", err)
	}
	producer.Close()

	c := newCluster(t, 2)
	args := append([]string{"run", "-d", "-m", c.rest(), "-p", "2", "-D", "execution.checkpointing.dir=file://" + filepath.Join(c.dir, "ckpt")}, checkpointed...)
	// 10 ms per record, 100 records/s per subtask: the job lags behind
	// its input for minutes.
	args = append(args, kafkaJobBin, "-bootstrap", broker.Addr, "-in", in, "-out", out, "-prefix", prefix, "-slow", "10ms")
	o := c.mustSluice(args...)
	m := regexp.MustCompile(`JobID ([0-9a-f]{32})`).FindStringSubmatch(o)
	if m == nil {
		t.Fatalf("no job id in the output of sluice run -d:\n%s", o)
	}
	job := m[1]
	t.Cleanup(func() { c.sluice("cancel", "-m", c.rest(), job) })
	var details struct {
		State    string `json:"state"`
		Vertices []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"vertices"`
	}
	testwait.Eventually(t, 60*time.Second, "the job to run", func() bool {
		restJSON(t, c, "/jobs/"+job, &details)
		return details.State == "RUNNING"
	})
	c.waitCheckpoint(t)

	// The REST API: every input partition's gauges, on the source's
	// vertex, and the sink's transactions, named with the job's prefix.
	lagRe := regexp.MustCompile(`^([01])\.KafkaSourceReader\.topic\.` + regexp.QuoteMeta(in) + `\.partition\.([0-3])\.lag$`)
	txnRe := regexp.MustCompile(`^([01])\.KafkaSink\.transaction\.` + regexp.QuoteMeta(prefix) + `-[01]-\d+\.openSince$`)
	var lags, txns, seen []string
	polls := 0
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the vertices' metrics last listed: %v", seen)
		}
	})
	// A fresh broker's first transactions wait for its transaction state
	// topic: the sink's first transaction may take a minute to begin (the
	// source waits meanwhile, back-pressured, so the input stays behind).
	testwait.Eventually(t, 3*time.Minute, "the lag of the 4 input partitions and a transaction of the sink in the vertices' metrics", func() bool {
		lags, txns, seen = nil, nil, nil
		for _, v := range details.Vertices {
			var ms []struct {
				ID string `json:"id"`
			}
			restJSON(t, c, "/jobs/"+job+"/vertices/"+v.ID+"/metrics", &ms)
			for _, m := range ms {
				seen = append(seen, m.ID)
				if x := lagRe.FindStringSubmatch(m.ID); x != nil {
					lags = append(lags, "partition "+x[2])
				}
				if txnRe.MatchString(m.ID) {
					txns = append(txns, m.ID)
				}
			}
		}
		slices.Sort(lags)
		polls++
		if polls%200 == 1 {
			var gauges []string
			for _, id := range seen {
				if strings.Contains(id, "Kafka") {
					gauges = append(gauges, id)
				}
			}
			t.Logf("poll %d: the vertices' Kafka gauges: %v", polls, gauges)
		}
		return slices.Equal(lags, []string{"partition 0", "partition 1", "partition 2", "partition 3"}) && len(txns) > 0
	})
	t.Logf("the sink's transactions: %v", txns)

	base := yarnProxy(t, c.rest(), "/proxy/application_1700000000000_0002/") + "?refresh=500"
	b := newBrowser(t, bin, shots)
	page := b.page(base)
	page("20-job-kafka", "#/job/"+job+"/kafka",
		`document.querySelector('#tab-kafka.active') !== null && document.querySelectorAll('#kafka-partitions tbody tr').length === 4 && `+
			`Number(document.querySelector('#kafka-total-lag')?.textContent) > 0 && document.querySelectorAll('#kafka-transactions tbody tr').length >= 1`)
	rows, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('#kafka-partitions tbody tr')].map(r => r.cells[2].textContent + ':' + r.cells[3].textContent).join(',')`))
	if want := fmt.Sprintf("%[1]s:0,%[1]s:1,%[1]s:2,%[1]s:3", in); err != nil || rows != want {
		t.Errorf("the Kafka tab's partitions: %q (%v), want %q", rows, err, want)
	}
	// Each transaction row: the sink's vertex, its id under the job's
	// prefix, one of the two states and an age.
	txRows, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#kafka-transactions tbody tr')].map(r => [...r.cells].map(c => c.textContent).join(' | '))`))
	if err != nil {
		t.Fatal(err)
	}
	rowRe := regexp.MustCompile(`^.+ \| [01] \| ` + regexp.QuoteMeta(prefix) + `-[01]-\d+ \| (open, taking records|pre-committed, awaiting its checkpoint) \| \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \| (\d+ ms|[0-9.]+ s|\d+m \d+s)$`)
	for _, r := range txRows {
		if !rowRe.MatchString(r) {
			t.Errorf("a transaction row of the Kafka tab: %q", r)
		}
	}
	if len(txRows) == 0 || !strings.Contains(strings.Join(txRows, "\n"), prefix) {
		t.Errorf("the Kafka tab lists no transaction of the sink: %q", txRows)
	}
	for _, p := range b.log.take() {
		t.Errorf("the Kafka tab: %s", p)
	}
}
