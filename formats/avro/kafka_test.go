package avro_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/sluice/sluice/formats"
	"github.com/sluice/sluice/formats/avro"
	"github.com/sluice/sluice/formats/registry"
	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
)

// Three jobs write one topic with three versions of a schema; one job
// reads it all with the newest reader schema. A record whose schema id the
// registry does not know goes to the dead-letter topic with its id.
func TestThreeSchemaVersionsInOneTopicReadByOneJob(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "users", "users-dlq"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	addrs := kc.ListenAddrs()
	reg := newRegistry(t)

	run := func(name string, build func(env *stream.Environment)) {
		t.Helper()
		env := stream.NewEnvironment(stream.WithParallelism(1))
		build(env)
		if _, err := env.ExecuteContext(ctx, name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	mail := "x@y"
	run("v1", func(env *stream.Environment) {
		sink, err := kafka.NewSink(kafka.FormatSerializer("users", must1(avro.New[UserV1](reg, userV1, avro.Options{}))), kafka.BootstrapServers(addrs...))
		if err != nil {
			t.Fatal(err)
		}
		stream.SinkTo(stream.FromSlice(env, []UserV1{{"a", 1}, {"b", 2}}), sink)
	})
	run("v2", func(env *stream.Environment) {
		sink, _ := kafka.NewSink(kafka.FormatSerializer("users", must1(avro.New[UserV2](reg, userV2, avro.Options{}))), kafka.BootstrapServers(addrs...))
		stream.SinkTo(stream.FromSlice(env, []UserV2{{"c", 3, &mail}}), sink)
	})
	// A record of an id the registry never gave out, between the versions.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "users", Value: append(registry.AppendHeader(nil, 777), "\x02z\x02"...)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	run("v3", func(env *stream.Environment) {
		sink, _ := kafka.NewSink(kafka.FormatSerializer("users", must1(avro.New[UserV3](reg, userV3, avro.Options{}))), kafka.BootstrapServers(addrs...))
		stream.SinkTo(stream.FromSlice(env, []UserV3{{"d", 4, nil, "SE"}}), sink)
	})

	reader := must1(avro.New[UserV3](reg, userV3, avro.Options{WriteMode: registry.LookupOnly}))
	src, err := kafka.NewSource(kafka.FormatValues(reader), kafka.BootstrapServers(addrs...), kafka.Topics("users"),
		kafka.Bounded(kafka.Latest()), kafka.DeadLetterTopic("users-dlq"))
	if err != nil {
		t.Fatal(err)
	}
	env := stream.NewEnvironment(stream.WithParallelism(1))
	res := stream.Collect(stream.Map(stream.FromSource[UserV3, kafka.PartitionSplit](env, src, stream.NoWatermarks[UserV3](), "users"),
		func(u UserV3) string {
			e := "-"
			if u.Email != nil {
				e = *u.Email
			}
			return u.ID + "/" + strconv.FormatInt(u.Age, 10) + "/" + e + "/" + u.Country
		}))
	if _, err := env.ExecuteContext(ctx, "read"); err != nil {
		t.Fatal(err)
	}
	got := res.Values()
	if want := []string{"a/1/-/NO", "b/2/-/NO", "c/3/x@y/NO", "d/4/-/SE"}; !slices.Equal(got, want) {
		t.Fatalf("read %v, want %v", got, want)
	}
	if m, d := src.Metrics().Malformed.Load(), src.Metrics().DeadLettered.Load(); m != 1 || d != 1 {
		t.Fatalf("malformed %d, dead-lettered %d; want 1 and 1", m, d)
	}
	dl := consumeAll(t, ctx, cl, "users-dlq")
	if len(dl) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dl))
	}
	h := map[string]string{}
	for _, hd := range dl[0].Headers {
		h[hd.Key] = string(hd.Value)
	}
	if h[kafka.HeaderDLQSchemaID] != "777" || h[kafka.HeaderDLQOffset] != "3" {
		t.Fatalf("dead letter headers %v: want schema id 777 at offset 3", h)
	}
}

func consumeAll(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) []*kgo.Record {
	t.Helper()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	c, err := kgo.NewClient(kgo.SeedBrokers(cl.OptValue(kgo.SeedBrokers).([]string)...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var recs []*kgo.Record
	for int64(len(recs)) < n {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consuming %s: %v", topic, err)
		}
		recs = append(recs, fs.Records()...)
	}
	return recs
}

func must1[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A registry that fails while the job reads makes no record malformed nor
// dead-lettered: the reader fails, the job restarts (its restart
// strategy) and reads every record once the registry answers again.
func TestRegistryOutageIsNotDeadLettered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "users", "users-dlq"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	addrs := kc.ListenAddrs()
	fake := srfake.New()
	defer fake.Close()
	var failures atomic.Int64
	failures.Store(2)
	fake.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasPrefix(r.URL.Path, "/schemas/ids/") && failures.Add(-1) >= 0 {
			http.Error(w, `{"error_code":50001,"message":"store unavailable"}`, http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	client := func() *registry.Client {
		c, err := registry.New(registry.Config{URLs: []string{fake.URL()}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	w := must1(avro.New[UserV1](client(), userV1, avro.Options{}))
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, u := range []UserV1{{"a", 1}, {"b", 2}} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "users", Value: must1(w.Serialize("users", u))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	src, err := kafka.NewSource(kafka.FormatValues(must1(avro.New[UserV1](client(), userV1, avro.Options{}))), kafka.BootstrapServers(addrs...),
		kafka.Topics("users"), kafka.Bounded(kafka.Latest()), kafka.DeadLetterTopic("users-dlq"))
	if err != nil {
		t.Fatal(err)
	}
	env := stream.NewEnvironment(stream.WithParallelism(1), stream.WithRestartStrategy(stream.FixedDelayRestart(5, 0)))
	res := stream.Collect(stream.Map(stream.FromSource[UserV1, kafka.PartitionSplit](env, src, stream.NoWatermarks[UserV1](), "users"),
		func(u UserV1) string { return u.ID + "/" + strconv.Itoa(int(u.Age)) }))
	jr, err := env.ExecuteContext(ctx, "read")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Values(), []string{"a/1", "b/2"}; !slices.Equal(got, want) {
		t.Fatalf("read %v, want %v", got, want)
	}
	if m, d := src.Metrics().Malformed.Load(), src.Metrics().DeadLettered.Load(); m != 0 || d != 0 {
		t.Fatalf("malformed %d, dead-lettered %d; want none", m, d)
	}
	if jr.Restarts != 2 {
		t.Fatalf("%d restarts, want 2 (one per failed lookup)", jr.Restarts)
	}
}

// Registry credentials come from a file or the environment and appear in
// no log line and no error, whether the registry takes them or refuses
// them; a refused client dead-letters nothing (the record is not at
// fault).
func TestRegistryCredentialsNeverLogged(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const password, wrong = "hunter2-right-pw", "wrong-pw-4711"
	secrets := []string{password, wrong, base64.StdEncoding.EncodeToString([]byte("svc:" + password)),
		base64.StdEncoding.EncodeToString([]byte("svc:" + wrong))}
	fake := srfake.New(srfake.WithAuth("Basic " + base64.StdEncoding.EncodeToString([]byte("svc:"+password))))
	defer fake.Close()
	pwFile := filepath.Join(t.TempDir(), "sr-password")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLUICE_TEST_SR_PASSWORD", wrong)
	client := func(pw registry.Secret) *registry.Client {
		return must1(registry.New(registry.Config{URLs: []string{fake.URL()}, BasicAuthUser: "svc", BasicAuthPassword: pw}))
	}
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "users", "users-dlq"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	addrs := kc.ListenAddrs()
	var logs bytes.Buffer
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w := must1(avro.New[UserV1](client(registry.SecretFromFile(pwFile)), userV1, avro.Options{}))
	sink, err := kafka.NewSink(kafka.FormatSerializer("users", w), kafka.BootstrapServers(addrs...), kafka.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	env := stream.NewEnvironment(stream.WithParallelism(1), stream.WithLogger(log))
	stream.SinkTo(stream.FromSlice(env, []UserV1{{"a", 1}, {"b", 2}}), sink)
	if _, err := env.ExecuteContext(ctx, "write"); err != nil {
		t.Fatal(err)
	}
	read := func(pw registry.Secret) ([]string, *kafka.Source[UserV1], error) {
		src, err := kafka.NewSource(kafka.FormatValues(must1(avro.New[UserV1](client(pw), userV1, avro.Options{}))), kafka.BootstrapServers(addrs...),
			kafka.Topics("users"), kafka.Bounded(kafka.Latest()), kafka.DeadLetterTopic("users-dlq"), kafka.WithLogger(log))
		if err != nil {
			t.Fatal(err)
		}
		env := stream.NewEnvironment(stream.WithParallelism(1), stream.WithLogger(log), stream.WithRestartStrategy(stream.NoRestart()))
		res := stream.Collect(stream.Map(stream.FromSource[UserV1, kafka.PartitionSplit](env, src, stream.NoWatermarks[UserV1](), "users"),
			func(u UserV1) string { return u.ID }))
		_, err = env.ExecuteContext(ctx, "read")
		return res.Values(), src, err
	}
	_, src, err := read(registry.SecretFromEnv("SLUICE_TEST_SR_PASSWORD"))
	if !errors.Is(err, formats.ErrUnavailable) || !strings.Contains(err.Error(), "HTTP 403") {
		t.Fatalf("with the wrong password: %v, want the registry's refusal (ErrUnavailable, HTTP 403 from franz-go's registry)", err)
	}
	if d := src.Metrics().DeadLettered.Load(); d != 0 {
		t.Fatalf("%d records dead-lettered for the client's wrong password", d)
	}
	got, _, err := read(registry.SecretFromFile(pwFile))
	if err != nil || !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("with the password from a file: %v, %v", got, err)
	}
	logMu.Lock()
	text := logs.String()
	logMu.Unlock()
	if !strings.Contains(text, "HTTP 403") {
		t.Fatalf("the logs do not show the refusal; they were:\n%s", text)
	}
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Fatalf("the logs show a credential (%q):\n%s", s, text)
		}
	}
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// Without a dead-letter topic, a record of an unknown schema id fails the
// job with its topic, partition, offset and schema id (typed, for
// errors.As), and the error's text quotes nothing of the payload.
func TestUnknownSchemaIDFailsTheJob(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "users"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	addrs := kc.ListenAddrs()
	reg := newRegistry(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	w := must1(avro.New[UserV1](reg, userV1, avro.Options{}))
	recs := []*kgo.Record{
		{Topic: "users", Partition: 1, Value: must(w.Serialize("users", UserV1{"a", 1}))},
		{Topic: "users", Partition: 1, Value: append(registry.AppendHeader(nil, 9001), "\x0cPAYLOAD"...)},
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	src, err := kafka.NewSource(kafka.FormatValues(must1(avro.New[UserV1](reg, userV1, avro.Options{}))), kafka.BootstrapServers(addrs...),
		kafka.Topics("users"), kafka.Bounded(kafka.Latest()))
	if err != nil {
		t.Fatal(err)
	}
	// A restart cannot mend the record: the job fails once, whatever
	// restarts its strategy allows.
	env := stream.NewEnvironment(stream.WithParallelism(1), stream.WithRestartStrategy(stream.FixedDelayRestart(5, time.Millisecond)))
	stream.Collect(stream.FromSource[UserV1, kafka.PartitionSplit](env, src, stream.NoWatermarks[UserV1](), "users"))
	res, err := env.ExecuteContext(ctx, "read")
	if res.Restarts != 0 {
		t.Errorf("the job restarted %d times on a record of an unknown schema id, want 0", res.Restarts)
	}
	var de *kafka.DeserializationError
	var fe *formats.Error
	if !errors.As(err, &de) || !errors.As(err, &fe) || !errors.Is(err, formats.ErrUnknownSchema) {
		t.Fatalf("error %v, want a kafka.DeserializationError of a formats.Error of ErrUnknownSchema", err)
	}
	if de.Topic != "users" || de.Partition != 1 || de.Offset != 1 || fe.SchemaID != 9001 {
		t.Fatalf("error names topic %q partition %d offset %d schema id %d, want users, 1, 1, 9001", de.Topic, de.Partition, de.Offset, fe.SchemaID)
	}
	if msg := err.Error(); !strings.Contains(msg, `topic "users" partition 1 at offset 1`) || !strings.Contains(msg, "schema id 9001") || strings.Contains(msg, "PAYLOAD") {
		t.Fatalf("error text %q: want topic, partition, offset and schema id, and no payload", msg)
	}
}
