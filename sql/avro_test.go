package sql_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/sluice/sluice/formats/avro"
	"github.com/sluice/sluice/formats/registry"
	"github.com/sluice/sluice/sql"
)

// Two versions of a producer's schema (another record name than Flink's
// derived one): v2 adds country with a default.
const (
	sqlUserV1 = `{"type":"record","name":"User","namespace":"shop","fields":[
		{"name":"id","type":"string"},{"name":"age","type":"int"}]}`
	sqlUserV2 = `{"type":"record","name":"User","namespace":"shop","fields":[
		{"name":"id","type":"string"},{"name":"age","type":"long"},
		{"name":"country","type":"string","default":"NO"},
		{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2},"default":"\u0000"},
		{"name":"at","type":{"type":"long","logicalType":"timestamp-millis"},"default":0}]}`
)

type sqlUserV1T struct {
	ID  string `avro:"id"`
	Age int32  `avro:"age"`
}

type sqlUserV2T struct {
	ID      string    `avro:"id"`
	Age     int64     `avro:"age"`
	Country string    `avro:"country"`
	Amount  *big.Rat  `avro:"amount"`
	At      time.Time `avro:"at"`
}

// newSQLRegistry is franz-go's in-process registry (the Confluent API)
// and a client of it.
func newSQLRegistry(t *testing.T) (string, *registry.Client) {
	t.Helper()
	fake := srfake.New()
	t.Cleanup(fake.Close)
	reg, err := registry.New(registry.Config{URLs: []string{fake.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	return fake.URL(), reg
}

// produceAvro writes each value with f (the registry's wire format) to
// partition 0 of topic.
func produceAvro[T any](t *testing.T, b *broker, topic string, f *avro.Format[T], vs ...T) {
	t.Helper()
	var recs []*kgo.Record
	for _, v := range vs {
		data, err := f.Serialize(topic, v)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: topic, Value: data})
	}
	if err := b.cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// readAvro returns "key value" of the n records of topic, each side read
// with its own writer schema and printed as its fields in schema order.
func readAvro(t *testing.T, b *broker, reg *registry.Client, topic string, n int) []string {
	t.Helper()
	g, err := avro.Generic(reg, avro.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	show := func(data []byte) string {
		if data == nil {
			return "null"
		}
		id, _, err := registry.SplitHeader("avro", data)
		if err != nil {
			t.Fatalf("a record of %s: %v", topic, err)
		}
		s, err := reg.SchemaByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		m, err := g.Deserialize(topic, data)
		if err != nil {
			t.Fatalf("a record of %s: %v", topic, err)
		}
		return fieldsInOrder(t, s.Schema, m)
	}
	var out []string
	ctx := ctxT(t)
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records of %s: %v", len(out), n, topic, out)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, show(r.Key)+" "+show(r.Value)) })
	}
	slices.Sort(out)
	return out
}

// The avro-confluent format of a kafka source and an upsert-kafka sink:
// records of two writer schema versions (a record named shop.User, not
// Flink's name) are read with the table's schema (a field v1 lacks is
// NULL), and the sink registers Flink's derived schemas under
// <topic>-key and <topic>-value and writes the wire format.
func TestAvroConfluentKafkaIntoUpsertKafka(t *testing.T) {
	b := newBroker(t)
	b.topic(t, "users", 1)
	b.topic(t, "users-by-id", 1)
	url, reg := newSQLRegistry(t)
	produceAvro(t, b, "users", must(avro.New[sqlUserV1T](reg, sqlUserV1, avro.Options{})), sqlUserV1T{"a", 30}, sqlUserV1T{"b", 41})
	at := time.Date(2024, 5, 1, 12, 0, 0, 250e6, time.UTC)
	produceAvro(t, b, "users", must(avro.New[sqlUserV2T](reg, sqlUserV2, avro.Options{})),
		sqlUserV2T{"c", 1 << 40, "SE", newRat(12345, 100), at}, sqlUserV2T{"a", 31, "DK", newRat(-5, 100), at})
	script := fmt.Sprintf(`
CREATE TABLE users (id STRING NOT NULL, age BIGINT, country STRING, amount DECIMAL(10, 2), at TIMESTAMP(3))
WITH ('connector' = 'kafka', 'topic' = 'users', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'earliest-offset', 'format' = 'avro-confluent', 'avro-confluent.url' = '%[2]s');
CREATE TABLE users_by_id (id STRING NOT NULL, age BIGINT, country STRING, amount DECIMAL(10, 2), at TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = 'users-by-id', 'properties.bootstrap.servers' = '%[1]s',
  'key.format' = 'avro-confluent', 'key.avro-confluent.url' = '%[2]s',
  'value.format' = 'avro-confluent', 'value.avro-confluent.schema-registry.url' = '%[2]s');
INSERT INTO users_by_id SELECT id, age, country, amount, at FROM users;`, b.addr, url)
	start(t, script, nil)
	got := readAvro(t, b, reg, "users-by-id", 4)
	want := []string{
		"{id:a} {id:a age:30 country:<nil> amount:<nil> at:<nil>}",
		"{id:a} {id:a age:31 country:DK amount:-1/20 at:2024-05-01T12:00:00.25Z}",
		"{id:b} {id:b age:41 country:<nil> amount:<nil> at:<nil>}",
		"{id:c} {id:c age:1099511627776 country:SE amount:2469/20 at:2024-05-01T12:00:00.25Z}",
	}
	if !slices.Equal(got, want) {
		t.Errorf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Flink's derived schemas, registered under the TopicNameStrategy's subjects.
	for subject, want := range map[string]string{
		"users-by-id-key": `{"type":"record","name":"record","namespace":"org.apache.flink.avro.generated","fields":[{"name":"id","type":"string"}]}`,
		"users-by-id-value": `{"type":"record","name":"record","namespace":"org.apache.flink.avro.generated","fields":[` +
			`{"name":"id","type":"string"},{"name":"age","type":["null","long"],"default":null},` +
			`{"name":"country","type":["null","string"],"default":null},` +
			`{"name":"amount","type":["null",{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}],"default":null},` +
			`{"name":"at","type":["null",{"type":"long","logicalType":"timestamp-millis"}],"default":null}]}`,
	} {
		ss, err := reg.SR().SchemaByVersion(ctxT(t), subject, -1)
		if err != nil {
			t.Fatalf("subject %s: %v", subject, err)
		}
		if ss.Schema.Schema != want {
			t.Errorf("subject %s has\n%s\nwant\n%s", subject, ss.Schema.Schema, want)
		}
	}
}

// A record whose schema id the registry does not know fails the job once,
// naming the topic, partition, offset and schema id.
func TestAvroConfluentUnknownSchemaIDFailsTheJob(t *testing.T) {
	b := newBroker(t)
	b.topic(t, "users", 1)
	b.topic(t, "out", 1)
	url, reg := newSQLRegistry(t)
	produceAvro(t, b, "users", must(avro.New[sqlUserV1T](reg, sqlUserV1, avro.Options{})), sqlUserV1T{"a", 30})
	b.produce(t, "users", 0, string(registry.AppendHeader(nil, 4242))+"\x02a\x3c")
	script := fmt.Sprintf(`SET 'restart-strategy.type' = 'fixed-delay';
SET 'restart-strategy.fixed-delay.attempts' = '100';
SET 'restart-strategy.fixed-delay.delay' = '10 ms';
CREATE TABLE users (id STRING, age INT)
WITH ('connector' = 'kafka', 'topic' = 'users', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'earliest-offset', 'format' = 'avro-confluent', 'avro-confluent.url' = '%[2]s');
CREATE TABLE out (id STRING, age INT)
WITH ('connector' = 'kafka', 'topic' = 'out', 'properties.bootstrap.servers' = '%[1]s', 'format' = 'json');
INSERT INTO out SELECT id, age FROM users;`, b.addr, url)
	job, _ := start(t, script, nil)
	err := job.Wait()
	if err == nil {
		t.Fatal("the job succeeded")
	}
	if job.Restarts() != 0 {
		t.Errorf("the job restarted %d times on a record of an unknown schema id", job.Restarts())
	}
	t.Logf("the job failed: %v", err)
	if strings.Contains(err.Error(), "ignore-parse-errors") {
		t.Errorf("error %q advises a json option for an avro-confluent table", err)
	}
	for _, want := range []string{`topic "users" partition 0 at offset 1`, "schema id 4242"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// Bad avro-confluent options fail the script naming them.
func TestAvroConfluentOptionErrors(t *testing.T) {
	for _, tc := range []struct{ opts, want string }{
		{``, "format avro-confluent needs 'avro-confluent.url'"},
		{`, 'avro-confluent.url' = 'ftp://x'`, `URL "ftp://x" is not http:// or https://`},
		{`, 'avro-confluent.url' = 'http://x', 'avro-confluent.basic-auth.credentials-source' = 'URL'`, "only USER_INFO is supported"},
		{`, 'avro-confluent.url' = 'http://x', 'avro-confluent.basic-auth.user-info' = 'nocolon'`, "is not user:password"},
		{`, 'avro-confluent.url' = 'http://x', 'avro-confluent.subjec' = 's'`, "did you mean 'avro-confluent.subject'?"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			script := `CREATE TABLE t (id STRING) WITH ('connector' = 'kafka', 'topic' = 't',
  'properties.bootstrap.servers' = 'localhost:1', 'scan.startup.mode' = 'earliest-offset', 'format' = 'avro-confluent'` + tc.opts + `);
CREATE TABLE o (id STRING) WITH ('connector' = 'blackhole');
INSERT INTO o SELECT id FROM t;`
			_, err := newSession().ExecuteScript(ctxT(t), script)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "nocolon") {
				t.Errorf("error %q shows the user info", err)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func newRat(a, b int64) *big.Rat { return big.NewRat(a, b) }

func newSession() *sql.Session { return sql.NewSession(sql.Options{}) }

// fieldsInOrder prints m's fields in the order of the record schema's.
func fieldsInOrder(t *testing.T, schema string, m map[string]any) string {
	t.Helper()
	var s struct{ Fields []struct{ Name string } }
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, f := range s.Fields {
		v := m[f.Name]
		if tm, ok := v.(time.Time); ok {
			v = tm.UTC().Format(time.RFC3339Nano)
		}
		parts = append(parts, fmt.Sprintf("%s:%v", f.Name, v))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// A registry that fails while the job reads is not a malformed record:
// the job restarts (its restart strategy) and reads on once it answers.
func TestAvroConfluentRegistryOutageRestartsTheJob(t *testing.T) {
	b := newBroker(t)
	b.topic(t, "users", 1)
	b.topic(t, "out", 1)
	fake := srfake.New()
	t.Cleanup(fake.Close)
	var failures atomic.Int64
	fake.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasPrefix(r.URL.Path, "/schemas/ids/") && failures.Add(-1) >= 0 {
			http.Error(w, `{"error_code":50001,"message":"store unavailable"}`, http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	reg, err := registry.New(registry.Config{URLs: []string{fake.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	produceAvro(t, b, "users", must(avro.New[sqlUserV1T](reg, sqlUserV1, avro.Options{})), sqlUserV1T{"a", 30}, sqlUserV1T{"b", 41})
	failures.Store(1)
	script := fmt.Sprintf(`SET 'restart-strategy.type' = 'fixed-delay';
SET 'restart-strategy.fixed-delay.attempts' = '3';
SET 'restart-strategy.fixed-delay.delay' = '10 ms';
CREATE TABLE users (id STRING, age INT)
WITH ('connector' = 'kafka', 'topic' = 'users', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'avro-confluent', 'avro-confluent.url' = '%[2]s');
CREATE TABLE out (id STRING, age INT)
WITH ('connector' = 'kafka', 'topic' = 'out', 'properties.bootstrap.servers' = '%[1]s', 'format' = 'json');
INSERT INTO out SELECT id, age FROM users;`, b.addr, fake.URL())
	job, _ := start(t, script, nil)
	if err := job.Wait(); err != nil {
		t.Fatalf("the job failed: %v", err)
	}
	if job.Restarts() != 1 {
		t.Errorf("%d restarts, want 1 (the failed lookup)", job.Restarts())
	}
	if got, want := b.read(t, "out", 2), []string{` {"id":"a","age":30}`, ` {"id":"b","age":41}`}; !slices.Equal(got, want) {
		t.Errorf("output %q, want %q", got, want)
	}
}
