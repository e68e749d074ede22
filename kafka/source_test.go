package kafka_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestBoundedReadGivesExactlyTheProducedRecords(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "in", 4)
	want := c.fill(t, "in", 4, 250)
	// A record written after the job started is past the stopping offsets.
	for _, par := range []int{1, 3} {
		t.Run(fmt.Sprintf("p%d", par), func(t *testing.T) {
			src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics("in"),
				kafka.Bounded(kafka.Latest()), kafka.WithLogger(testLogger(t)))
			got, err := readAll(t, par, src)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("read %d records, want %d; first differences: %v", len(got), len(want), diff(got, want))
			}
		})
	}
}

func diff(got, want []string) string {
	g, w := map[string]int{}, map[string]int{}
	for _, v := range got {
		g[v]++
	}
	for _, v := range want {
		w[v]++
	}
	var out []string
	for v, n := range g {
		if w[v] != n {
			out = append(out, fmt.Sprintf("%s: got %d want %d", v, n, w[v]))
		}
	}
	for v, n := range w {
		if _, ok := g[v]; !ok {
			out = append(out, fmt.Sprintf("%s: got 0 want %d", v, n))
		}
	}
	slices.Sort(out)
	if len(out) > 10 {
		out = out[:10]
	}
	return strings.Join(out, "; ")
}

// span lists "p:i" for i in [from, to).
func span(p, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%d:%d", p, i))
	}
	return out
}

func TestStartingAndStoppingOffsets(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "t", 2)
	c.fill(t, "t", 2, 10) // record i of each partition at offset i, timestamp 1000*i
	// Group "g" has committed offset 2 for partition 0 only.
	if err := c.adm.CommitAllOffsets(ctxT(t), "g", kadm.Offsets{"t": {0: {Topic: "t", Partition: 0, At: 2, LeaderEpoch: -1}}}); err != nil {
		t.Fatal(err)
	}
	tp := func(p int32) kafka.TopicPartition { return kafka.TopicPartition{Topic: "t", Partition: p} }
	cases := []struct {
		name    string
		opts    []kafka.SourceOpt
		want    []string
		wantErr error
		errHas  string
	}{
		{name: "earliest", opts: []kafka.SourceOpt{kafka.StartingOffsets(kafka.Earliest())},
			want: append(span(0, 0, 10), span(1, 0, 10)...)},
		{name: "default is earliest", want: append(span(0, 0, 10), span(1, 0, 10)...)},
		{name: "latest", opts: []kafka.SourceOpt{kafka.StartingOffsets(kafka.Latest())}},
		{name: "timestamp", opts: []kafka.SourceOpt{kafka.StartingOffsets(kafka.Timestamp(4500))},
			want: append(span(0, 5, 10), span(1, 5, 10)...)},
		{name: "timestamp after the end", opts: []kafka.SourceOpt{kafka.StartingOffsets(kafka.Timestamp(1e9))}},
		{name: "specific", opts: []kafka.SourceOpt{kafka.StartingOffsets(kafka.SpecificOffsets(map[kafka.TopicPartition]int64{tp(0): 3, tp(1): 7}))},
			want: append(span(0, 3, 10), span(1, 7, 10)...)},
		{name: "specific, missing partition at earliest", opts: []kafka.SourceOpt{kafka.StartingOffsets(kafka.SpecificOffsets(map[kafka.TopicPartition]int64{tp(0): 3}))},
			want: append(span(0, 3, 10), span(1, 0, 10)...)},
		{name: "specific, missing partition at latest", opts: []kafka.SourceOpt{kafka.StartingOffsets(kafka.SpecificOffsets(map[kafka.TopicPartition]int64{tp(0): 3}).WithReset(kafka.ResetLatest))},
			want: span(0, 3, 10)},
		{name: "committed, reset earliest", opts: []kafka.SourceOpt{kafka.GroupID("g"), kafka.StartingOffsets(kafka.CommittedOffsets(kafka.ResetEarliest))},
			want: append(span(0, 2, 10), span(1, 0, 10)...)},
		{name: "committed, reset latest", opts: []kafka.SourceOpt{kafka.GroupID("g"), kafka.StartingOffsets(kafka.CommittedOffsets(kafka.ResetLatest))},
			want: span(0, 2, 10)},
		{name: "committed, reset none", opts: []kafka.SourceOpt{kafka.GroupID("g"), kafka.StartingOffsets(kafka.CommittedOffsets(kafka.ResetNone))},
			wantErr: kafka.ErrNoOffset, errHas: `group "g" has no committed offset for t-1`},
		{name: "stop at timestamp", opts: []kafka.SourceOpt{kafka.Bounded(kafka.Timestamp(3000))},
			want: append(span(0, 0, 3), span(1, 0, 3)...)},
		{name: "stop at specific offsets", opts: []kafka.SourceOpt{kafka.StartingOffsets(kafka.Timestamp(2000)),
			kafka.Bounded(kafka.SpecificOffsets(map[kafka.TopicPartition]int64{tp(0): 4, tp(1): 1}))},
			want: span(0, 2, 4)},
		{name: "stop at specific offsets, one missing", opts: []kafka.SourceOpt{kafka.Bounded(kafka.SpecificOffsets(map[kafka.TopicPartition]int64{tp(0): 4}))},
			wantErr: kafka.ErrNoOffset, errHas: "no stopping offset given for t-1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]kafka.SourceOpt{kafka.BootstrapServers(c.addrs...), kafka.Topics("t"), kafka.Bounded(kafka.Latest()),
				kafka.WithLogger(testLogger(t))}, tc.opts...)
			src := mustSource(t, kafka.StringValues(), opts...)
			got, err := readAll(t, 2, src)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("got error %v, want %v containing %q", err, tc.wantErr, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := sorted(tc.want); !slices.Equal(got, want) {
				t.Fatalf("got %v\nwant %v", got, want)
			}
		})
	}
}

func TestMissingTopicFailsTheJob(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "here", 1)
	src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics("here", "gone"),
		kafka.Bounded(kafka.Latest()), kafka.WithLogger(testLogger(t)))
	_, err := readAll(t, 1, src)
	if !errors.Is(err, kafka.ErrTopicNotFound) || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("got %v, want ErrTopicNotFound naming topic gone", err)
	}
}

func TestTopicPatternReadsMatchingTopicsOnly(t *testing.T) {
	c := newCluster(t)
	for _, name := range []string{"orders-eu", "orders-us", "orders", "returns-eu"} {
		c.createTopic(t, name, 2)
		c.produce(t, &kgo.Record{Topic: name, Partition: 1, Value: []byte(name)})
	}
	src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.TopicPattern("orders-.*"),
		kafka.Bounded(kafka.Latest()), kafka.WithLogger(testLogger(t)))
	got, err := readAll(t, 2, src)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"orders-eu", "orders-us"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestPartitionDiscoveryPicksUpNewPartitionsAndTopics(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "grow", 1)
	c.produce(t, &kgo.Record{Topic: "grow", Partition: 0, Value: []byte("grow/0")})
	src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.TopicPattern("grow|late"),
		kafka.PartitionDiscoveryInterval(100*time.Millisecond), kafka.WithLogger(testLogger(t)))
	env := newEnv(t, 2)
	sink := newLiveSink[string]()
	stream.SinkTo(stream.FromSource[string, kafka.PartitionSplit](env, src, stream.NoWatermarks[string](), "kafka"), sink)
	done, stop := runJob(t, env)
	has := func(want ...string) func() bool {
		return func() bool {
			got := sink.values()
			for _, w := range want {
				if !slices.Contains(got, w) {
					return false
				}
			}
			return true
		}
	}
	waitFor(t, "the first record", done, has("grow/0"))

	// New partitions start at the earliest offset: records written before
	// discovery found them are read too.
	if _, err := c.adm.CreatePartitions(ctxT(t), 2, "grow"); err != nil {
		t.Fatal(err)
	}
	c = connect(t, c.Cluster, c.addrs) // a producer that knows the new partitions
	c.produce(t, &kgo.Record{Topic: "grow", Partition: 1, Value: []byte("grow/1")}, &kgo.Record{Topic: "grow", Partition: 2, Value: []byte("grow/2")})
	c.createTopic(t, "late", 1)
	c.produce(t, &kgo.Record{Topic: "late", Partition: 0, Value: []byte("late/0")})
	waitFor(t, "the records of the new partitions", done, has("grow/1", "grow/2", "late/0"))
	stop()
	if got, want := sorted(sink.values()), []string{"grow/0", "grow/1", "grow/2", "late/0"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v (each once)", got, want)
	}
}

func atoi(b []byte) (int, error) { return strconv.Atoi(string(b)) }

func TestMalformedRecordFailsTheJobNamingIt(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "nums", 2)
	var recs []*kgo.Record
	for i := 0; i < 5; i++ {
		recs = append(recs, &kgo.Record{Topic: "nums", Partition: 0, Value: []byte(strconv.Itoa(i))})
		v := strconv.Itoa(i)
		if i == 3 {
			v = "three"
		}
		recs = append(recs, &kgo.Record{Topic: "nums", Partition: 1, Value: []byte(v)})
	}
	c.produce(t, recs...)
	src := mustSource(t, kafka.ValueOnly(atoi), kafka.BootstrapServers(c.addrs...), kafka.Topics("nums"),
		kafka.Bounded(kafka.Latest()), kafka.WithLogger(testLogger(t)))
	env := newEnv(t, 1)
	stream.Discard(stream.FromSource[int, kafka.PartitionSplit](env, src, stream.NoWatermarks[int](), "kafka"))
	_, err := env.ExecuteContext(ctxT(t), t.Name())
	var de *kafka.DeserializationError
	if !errors.As(err, &de) {
		t.Fatalf("got %v, want a DeserializationError", err)
	}
	if de.Topic != "nums" || de.Partition != 1 || de.Offset != 3 {
		t.Fatalf("error names %s/%d@%d, want nums/1@3", de.Topic, de.Partition, de.Offset)
	}
	if !errors.Is(err, kafka.ErrMalformedRecord) || !errors.Is(err, strconv.ErrSyntax) {
		t.Fatalf("error %v does not wrap ErrMalformedRecord and the deserialiser's error", err)
	}
	for _, s := range []string{`"nums"`, "partition 1", "offset 3", `"three"`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %s", err, s)
		}
	}
	if n := src.Metrics().Malformed.Load(); n != 1 {
		t.Errorf("malformed counter = %d, want 1", n)
	}
}

func TestMalformedRecordsGoToTheDeadLetterTopic(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "nums", 2)
	c.createTopic(t, "nums-dlq", 1)
	var recs []*kgo.Record
	for i := 0; i < 6; i++ {
		for p := int32(0); p < 2; p++ {
			v := strconv.Itoa(i)
			if (p == 0 && i == 1) || (p == 1 && i == 4) {
				v = "bad-" + v
			}
			recs = append(recs, &kgo.Record{Topic: "nums", Partition: p, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(v),
				Headers: []kgo.RecordHeader{{Key: "origin", Value: []byte("test")}}, Timestamp: time.UnixMilli(int64(100 + i))})
		}
	}
	c.produce(t, recs...)
	src := mustSource(t, kafka.ValueOnly(atoi), kafka.BootstrapServers(c.addrs...), kafka.Topics("nums"),
		kafka.Bounded(kafka.Latest()), kafka.DeadLetterTopic("nums-dlq"), kafka.WithLogger(testLogger(t)))
	env := newEnv(t, 2)
	res := stream.Collect(stream.FromSource[int, kafka.PartitionSplit](env, src, stream.NoWatermarks[int](), "kafka"))
	if _, err := env.ExecuteContext(ctxT(t), t.Name()); err != nil {
		t.Fatal(err)
	}
	got := res.Values()
	slices.Sort(got)
	if want := []int{0, 0, 1, 2, 2, 3, 3, 4, 5, 5}; !slices.Equal(got, want) {
		t.Fatalf("good records %v, want %v", got, want)
	}
	dlq := c.consume(t, "nums-dlq", false)
	if len(dlq) != 2 {
		t.Fatalf("dead-letter topic has %d records, want 2", len(dlq))
	}
	type dead struct{ key, value, topic, partition, offset, errText, origin string }
	var gotDead []dead
	for _, r := range dlq {
		h := map[string]string{}
		for _, hd := range r.Headers {
			h[hd.Key] = string(hd.Value)
		}
		if r.Timestamp.UnixMilli() < 100 {
			t.Errorf("dead-lettered record lost its timestamp: %v", r.Timestamp)
		}
		gotDead = append(gotDead, dead{string(r.Key), string(r.Value), h[kafka.HeaderDLQTopic], h[kafka.HeaderDLQPartition],
			h[kafka.HeaderDLQOffset], h[kafka.HeaderDLQError], h["origin"]})
	}
	slices.SortFunc(gotDead, func(a, b dead) int { return strings.Compare(a.partition, b.partition) })
	want := []dead{
		{"k1", "bad-1", "nums", "0", "1", `strconv.Atoi: parsing "bad-1": invalid syntax`, "test"},
		{"k4", "bad-4", "nums", "1", "4", `strconv.Atoi: parsing "bad-4": invalid syntax`, "test"},
	}
	if !slices.Equal(gotDead, want) {
		t.Fatalf("dead letters\n got %+v\nwant %+v", gotDead, want)
	}
	if m, d := src.Metrics().Malformed.Load(), src.Metrics().DeadLettered.Load(); m != 2 || d != 2 {
		t.Fatalf("metrics: malformed %d, dead-lettered %d; want 2 and 2", m, d)
	}
}

func TestDeadLetterTopicFailureFailsTheJob(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "nums", 1)
	c.produce(t, &kgo.Record{Topic: "nums", Value: []byte("x")})
	src := mustSource(t, kafka.ValueOnly(atoi), kafka.BootstrapServers(c.addrs...), kafka.Topics("nums"),
		kafka.Bounded(kafka.Latest()), kafka.DeadLetterTopic("no-such-topic"), kafka.WithLogger(testLogger(t)))
	env := newEnv(t, 1)
	stream.Discard(stream.FromSource[int, kafka.PartitionSplit](env, src, stream.NoWatermarks[int](), "kafka"))
	_, err := env.ExecuteContext(ctxT(t), t.Name())
	if err == nil || !strings.Contains(err.Error(), `dead-letter topic "no-such-topic"`) {
		t.Fatalf("got %v, want a dead-letter failure", err)
	}
}

// A partition without a committed offset, under the reset strategy none,
// fails the job once: a restart finds no offset either.
func TestNoOffsetFailsOnceWhateverTheRestartStrategy(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "t", 1)
	src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics("t"), kafka.Bounded(kafka.Latest()),
		kafka.GroupID("fresh"), kafka.StartingOffsets(kafka.CommittedOffsets(kafka.ResetNone)), kafka.WithLogger(quietLogger()))
	env := newEnv(t, 1, stream.WithRestartStrategy(stream.FixedDelayRestart(5, 0)))
	stream.Discard(stream.FromSource(env, src, stream.NoWatermarks[string](), "kafka"))
	res, err := env.ExecuteContext(ctxT(t), t.Name())
	if !errors.Is(err, kafka.ErrNoOffset) || !strings.Contains(err.Error(), `group "fresh" has no committed offset for t-0`) ||
		!strings.Contains(err.Error(), "kafka.CommittedOffsets(kafka.ResetEarliest)") {
		t.Fatalf("got %v, want ErrNoOffset naming the partition and what to do", err)
	}
	if res == nil || res.Restarts != 0 {
		t.Errorf("result %+v: a restart cannot find an offset", res)
	}
}
