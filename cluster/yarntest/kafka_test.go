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
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/integration/kafkabroker"
)

// TestSecureKafkaOverGSSAPI: on the Kerberized cluster, a yarn-application
// job reads a topic and writes counts to another, exactly once, through
// the broker's SASL_PLAINTEXT GSSAPI listener (on the same KDC), with the
// job's own login: kafka.SASLGSSAPI(kafka.KerberosFromConfiguration(...)).
// The client's keytab is deleted once the application runs, so the
// workers' Kafka clients can only log in from the keytab shipped into
// their containers.
// The output holds each key's counts 1..n/keys exactly once.
func TestSecureKafkaOverGSSAPI(t *testing.T) {
	r, k := newSecureRig(t)
	b := kafkabroker.SharedGSSAPI(t, kafkabroker.GSSAPI{Krb5Conf: k.Krb5Conf, Keytab: k.KafkaKT, Principal: k.Kafka})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sfx := make([]byte, 4)
	rand.Read(sfx)
	in, out, prefix := "yarn-in-"+hex.EncodeToString(sfx), "yarn-out-"+hex.EncodeToString(sfx), "yarn-"+hex.EncodeToString(sfx)
	const partitions, perPartition, keys = 3, 300, 5

	// The topics and input through the broker's PLAINTEXT listener. The
	// topics have the brokers' default replication factor (-1): 1 on the
	// single harness broker, 3 on the docker cluster, whose
	// min.insync.replicas of 2 refuses writes to a topic of one replica.
	admin, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	for _, topic := range []string{in, out} {
		if _, err := adm.CreateTopic(ctx, partitions, -1, nil, topic); err != nil {
			t.Fatalf("creating %s: %v", topic, err)
		}
	}
	var recs []*kgo.Record
	for p := 0; p < partitions; p++ {
		for i := 0; i < perPartition; i++ {
			recs = append(recs, &kgo.Record{Topic: in, Partition: int32(p), Value: []byte(fmt.Sprintf("%d:%d", p, p*perPartition+i))})
		}
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing the input: %v", err)
	}
	producer.Close()

	// A copy of the client's keytab, gone once the application is submitted.
	keytab := filepath.Join(t.TempDir(), "client.keytab")
	kb, err := os.ReadFile(k.Keytab)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keytab, kb, 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run", "--target", "yarn-application", "-p", "2", "-Dyarn.application.name=yarntest-kafka-gssapi",
		"-Dexecution.checkpointing.dir=hdfs://" + r.hdfs + "/ckpt", "-Dexecution.checkpointing.interval=500ms",
		"-Dsecurity.kerberos.login.keytab=" + keytab, "-Dsecurity.kerberos.login.principal=" + k.Principal,
		"-Dsecurity.kerberos.krb5-conf.path=" + k.Krb5Conf}, small...)
	args = append(args, bins.kafkaJob, "-bootstrap", b.GSSAPIAddr, "-in", in, "-out", out, "-prefix", prefix,
		"-keys", strconv.Itoa(keys), "-gssapi")
	p := r.start(ctx, args...)
	appID := match(t, p, reAppID, 2*time.Minute)
	if err := os.Remove(keytab); err != nil {
		t.Fatal(err)
	}
	succeeded(t, p, appID)

	// The committed output, read_committed.
	consumer, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumeTopics(out), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	want := partitions * perPartition
	var got []string
	deadline := time.Now().Add(time.Minute)
	for len(got) < want && time.Now().Before(deadline) {
		fctx, fcancel := context.WithTimeout(ctx, 5*time.Second)
		fs := consumer.PollFetches(fctx)
		fcancel()
		fs.EachRecord(func(rec *kgo.Record) { got = append(got, string(rec.Value)) })
	}
	var wantLines []string
	for key := 0; key < keys; key++ {
		for c := 1; c <= want/keys; c++ {
			wantLines = append(wantLines, fmt.Sprintf("%d:%d", key, c))
		}
	}
	slices.Sort(got)
	slices.Sort(wantLines)
	if !slices.Equal(got, wantLines) {
		t.Errorf("committed output: %d records, want %d exactly once (first got %q)", len(got), len(wantLines), got[:min(5, len(got))])
	}
}
