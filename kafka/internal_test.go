package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestJavaStringHashMatchesJava(t *testing.T) {
	// Values of Java's String.hashCode.
	cases := map[string]int32{
		"":                   0,
		"a":                  97,
		"hello":              99162322,
		"ä":                  228,
		"😀":                  1772899, // a surrogate pair: two UTF-16 units
		"polygenelubricants": math.MinInt32,
	}
	for s, want := range cases {
		if got := javaStringHash(s); got != want {
			t.Errorf("javaStringHash(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestPartitionOwnerIsFlinks(t *testing.T) {
	cases := []struct {
		topic string
		par   int
		want  []int // owners of partitions 0, 1, ...
	}{
		// ("a".hashCode()*31 & 0x7FFFFFFF) % 3 = 3007 % 3 = 1
		{"a", 3, []int{1, 2, 0, 1}},
		{"a", 1, []int{0, 0, 0}},
		// MinInt32*31 overflows to MinInt32; masked it is 0.
		{"polygenelubricants", 4, []int{0, 1, 2, 3, 0}},
	}
	for _, tc := range cases {
		for p, want := range tc.want {
			if got := partitionOwner(TopicPartition{tc.topic, int32(p)}, tc.par); got != want {
				t.Errorf("owner of %s-%d at parallelism %d = %d, want %d", tc.topic, p, tc.par, got, want)
			}
		}
	}
}

func TestClassifyEndTxn(t *testing.T) {
	cases := []struct {
		err  error
		want endTxnOutcome
	}{
		{nil, committed},
		{kerr.ProducerFenced, superseded},
		{kerr.InvalidProducerEpoch, superseded},
		{kerr.InvalidTxnState, aborted},
		{kerr.InvalidProducerIDMapping, unknown},
		{kerr.UnknownProducerID, unknown},
		{kerr.TransactionalIDNotFound, unknown},
		{kerr.ConcurrentTransactions, retry},
		{kerr.CoordinatorNotAvailable, retry},
		{kerr.NotCoordinator, retry},
		{kerr.CoordinatorLoadInProgress, retry},
		{kerr.RequestTimedOut, retry},
		{io.EOF, retry},
		{&net.OpError{Op: "dial", Err: errors.New("refused")}, retry},
		{kerr.TransactionalIDAuthorizationFailed, failed},
		{context.DeadlineExceeded, failed},
		{fmt.Errorf("wrapped: %w", context.Canceled), failed},
	}
	for _, tc := range cases {
		if got := classifyEndTxn(tc.err); got != tc.want {
			t.Errorf("classifyEndTxn(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestParseTransactionalID(t *testing.T) {
	cases := []struct {
		prefix, id string
		subtask, n int
		ok         bool
	}{
		{"job", "job-0-1", 0, 1, true},
		{"job", "job-12-3", 12, 3, true},
		{"my-job", "my-job-2-0", 2, 0, true},
		{"job", "job2-0-1", 0, 0, false},
		{"job", "job-0", 0, 0, false},
		{"job", "job-0-1-2", 0, 0, false},
		{"job", "job--1-2", 0, 0, false},
		{"job", "job-01-2", 0, 0, false},
		{"job", "job-a-2", 0, 0, false},
		{"job", "other-0-1", 0, 0, false},
		{"job", "job-+1-2", 0, 0, false},
	}
	for _, tc := range cases {
		s, n, ok := parseTransactionalID(tc.prefix, tc.id)
		if ok != tc.ok || (ok && (s != tc.subtask || n != tc.n)) {
			t.Errorf("parse(%q, %q) = %d, %d, %v; want %d, %d, %v", tc.prefix, tc.id, s, n, ok, tc.subtask, tc.n, tc.ok)
		}
	}
}

// FuzzParseTransactionalID: transactional ids come from the brokers'
// ListTransactions answers. A parsed id is exactly the one its parts make.
func FuzzParseTransactionalID(f *testing.F) {
	for _, s := range []string{"job-0-1", "job-12-3", "job--1", "job-0-1-2", "job-99999999999999999999-0", ""} {
		f.Add("job", s)
	}
	f.Fuzz(func(t *testing.T, prefix, id string) {
		s, n, ok := parseTransactionalID(prefix, id)
		if ok && transactionalID(prefix, s, n) != id {
			t.Fatalf("parse(%q, %q) = %d, %d but that formats as %q", prefix, id, s, n, transactionalID(prefix, s, n))
		}
	})
}

func TestInternalConfigurationNeverShowsSecrets(t *testing.T) {
	const pw = "internal-pw-9f8e7d"
	src, err := NewSource(StringValues(), BootstrapServers("h:1"), Topics("t"), SASLScramSHA256("u", SecretValue(pw)))
	if err != nil {
		t.Fatal(err)
	}
	sink, err := NewSink(StringSerializer("t"), BootstrapServers("h:1"), SASLPlain("u", SecretValue(pw)))
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"%v", "%+v", "%#v"} {
		for _, v := range []any{*src.cfg, src.cfg.client, src.cfg.client.sasl, *sink.cfg, sink.cfg.client.sasl[0]} {
			if s := fmt.Sprintf(verb, v); strings.Contains(s, pw) {
				t.Fatalf("%s of %T shows the password: %s", verb, v, s)
			}
		}
	}
}
