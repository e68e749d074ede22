package kafkabroker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/integration/internal/harness"
)

func TestMain(m *testing.M) { os.Exit(RunMain(m)) }

func TestBrokerAcceptsTCP(t *testing.T) {
	b := Shared(t)
	conn, err := net.DialTimeout("tcp", b.Addr, 10*time.Second)
	if err != nil {
		t.Fatalf("broker %s: %v", b.Addr, err)
	}
	conn.Close()
}

func TestBrokerAnswersApiVersions(t *testing.T) {
	b := Shared(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions error code %d", resp.ErrorCode)
	}
	keys := map[int16]bool{}
	for _, k := range resp.ApiKeys {
		keys[k.ApiKey] = true
	}
	// What Sluice's exactly-once source and sink rely on.
	for _, k := range []kmsg.Key{kmsg.Produce, kmsg.Fetch, kmsg.InitProducerID, kmsg.AddOffsetsToTxn, kmsg.EndTxn, kmsg.TxnOffsetCommit} {
		if !keys[int16(k)] {
			t.Errorf("broker does not offer %s", k.Name())
		}
	}
}

// TestProduceConsume sends records through a transaction and reads them back read_committed.
func TestProduceConsume(t *testing.T) {
	b := Shared(t)
	topic := fmt.Sprintf("sluice-harness-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic(topic),
		kgo.TransactionalID(topic+"-tx"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "b", "c"}
	for _, v := range want {
		if err := prod.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			t.Fatalf("produce %q: %v", v, err)
		}
	}
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []string
	for len(got) < len(want) {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %q before %v", got, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("consumed %q, want %q", got, want)
	}
}

func TestReadyFields(t *testing.T) {
	b := Shared(t)
	if b.proc == nil {
		t.Logf("external broker %s: no READY file to check", b.Addr)
		return
	}
	for _, k := range []string{"bootstrap", "controller", "cluster_id", "kafka_version", "pid", "log_dir"} {
		if b.Fields[k] == "" {
			t.Errorf("READY lacks %s: %v", k, b.Fields)
		}
	}
	host, _, err := net.SplitHostPort(b.Addr)
	if err != nil {
		t.Fatal(err)
	}
	ips, err := net.LookupIP(host)
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			t.Errorf("%s resolves to non-loopback %s", b.Addr, ip)
		}
	}
}

func TestParseReady(t *testing.T) {
	tests := []struct {
		name, data, wantErr string
	}{
		{name: "good", data: "bootstrap=localhost:9092\npid=3\n"},
		{name: "missing bootstrap", data: "pid=3\n", wantErr: "bootstrap: want host:port"},
		{name: "bad port", data: "bootstrap=localhost:0\n", wantErr: "not in 1..65535"},
		{name: "garbage line", data: "bootstrap=localhost:9092\nxyz\n", wantErr: `:2: want key=value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseReady("/d/READY", []byte(tt.data))
			if tt.wantErr == "" {
				if err != nil || f["bootstrap"] != "localhost:9092" {
					t.Fatalf("ParseReady = %v, %v", f, err)
				}
				return
			}
			if !errors.Is(err, ErrBadReady) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v: want ErrBadReady containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestStartStop starts a private broker and checks that Stop ends it and removes its files.
func TestStartStop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := Start(ctx, Options{Logf: t.Logf})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	pid := b.proc.Pid()
	dir := b.Dir
	if err := b.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if harness.ProcessAlive(pid) {
		t.Errorf("broker wrapper %d alive after Stop", pid)
	}
	var brokerPid int
	fmt.Sscan(b.Fields["pid"], &brokerPid)
	if brokerPid == 0 || harness.ProcessAlive(brokerPid) {
		t.Errorf("broker JVM %q alive after Stop (or pid unknown)", b.Fields["pid"])
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still exists after Stop (%v)", dir, err)
	}
	if conn, err := net.DialTimeout("tcp", b.Addr, 2*time.Second); err == nil {
		conn.Close()
		t.Errorf("%s still accepts connections after Stop", b.Addr)
	}
}
