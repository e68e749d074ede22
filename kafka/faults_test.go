package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// preCommitted writes n records in a transaction of a new EXACTLY_ONCE
// sink and returns the committable and a committer.
func preCommitted(t *testing.T, c *cluster, prefix, topic string, n int) (*kafka.Sink[string], kafka.TxnCommittable, stream.Committer[kafka.TxnCommittable]) {
	t.Helper()
	sink := mustSink(t, kafka.StringSerializer(topic), kafka.BootstrapServers(c.addrs...), kafka.Guarantee(kafka.ExactlyOnce),
		kafka.TransactionalIDPrefix(prefix), kafka.CommitTimeout(20*time.Second), kafka.WithLogger(testLogger(t)))
	w, committer := newTxnWriter(t, sink, 0, 1)
	for _, v := range numbered(n) {
		if err := w.Write(context.Background(), v, stream.NoTimestamp); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := w.PrepareCommit(context.Background())
	if err != nil || len(cs) != 1 {
		t.Fatalf("PrepareCommit: %v, %v", cs, err)
	}
	return sink, cs[0], committer
}

func TestCommitRetriesRetryableCoordinatorErrors(t *testing.T) {
	for _, code := range []*kerr.Error{kerr.CoordinatorNotAvailable, kerr.NotCoordinator, kerr.CoordinatorLoadInProgress, kerr.ConcurrentTransactions} {
		t.Run(code.Message, func(t *testing.T) {
			c := newCluster(t)
			c.createTopic(t, "eo", 1)
			_, tc, committer := preCommitted(t, c, "retry", "eo", 3)
			h := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, TxnID: tc.TransactionalID, Err: code, Count: 2})
			if err := committer.Commit(context.Background(), []kafka.TxnCommittable{tc}); err != nil {
				t.Fatal(err)
			}
			if h.Hits() != 2 {
				t.Fatalf("the fault answered %d EndTxn requests, want 2", h.Hits())
			}
			if got := values(c.consume(t, "eo", true)); !slices.Equal(got, numbered(3)) {
				t.Fatalf("committed records %v", got)
			}
		})
	}
}

// TestLostEndTxnResponseIsCommittedOnRetry: the coordinator commits but
// its answer is lost (the connection dies); the committer retries and the
// retry is answered as a commit that already happened.
func TestLostEndTxnResponseIsCommittedOnRetry(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "eo", 1)
	sink, tc, committer := preCommitted(t, c, "lost", "eo", 4)
	var seen atomic.Int32
	forwarded := make(chan error, 1)
	c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		switch seen.Add(1) {
		case 1:
			// Let the cluster commit the same request, sent by another
			// client, then drop this connection without an answer.
			c.SleepControl(func() {
				fwd := req.(*kmsg.EndTxnRequest)
				resp, err := fwd.RequestWith(ctxT(t), c.cl)
				if err == nil {
					err = kerr.ErrorForCode(resp.ErrorCode)
				}
				forwarded <- err
			})
			return nil, errors.New("response lost"), true
		default:
			return nil, nil, false // handled by the cluster
		}
	})
	if err := committer.Commit(context.Background(), []kafka.TxnCommittable{tc}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-forwarded:
		if err != nil {
			t.Fatalf("the forwarded EndTxn failed: %v", err)
		}
	default:
		t.Fatal("the EndTxn request was never forwarded")
	}
	if n := seen.Load(); n < 3 {
		t.Fatalf("EndTxn seen %d times, want the lost one, its forward and a retry", n)
	}
	if got := values(c.consume(t, "eo", true)); !slices.Equal(got, numbered(4)) {
		t.Fatalf("committed records %v", got)
	}
	if n := sink.Metrics().Transactions.Load(); n != 1 {
		t.Fatalf("Transactions = %d, want 1", n)
	}
}

// fence initialises a transactional id, as a restarted writer does.
func (c *cluster) fence(t *testing.T, id string) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = kmsg.StringPtr(id)
	req.TransactionTimeoutMillis = 60000
	req.ProducerID, req.ProducerEpoch = -1, -1
	resp, err := req.RequestWith(ctxT(t), c.cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		t.Fatalf("fencing %s: %v", id, err)
	}
}

func TestFencedProducerFailsThePreCommit(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "eo", 1)
	sink := mustSink(t, kafka.StringSerializer("eo"), kafka.BootstrapServers(c.addrs...), kafka.Guarantee(kafka.ExactlyOnce),
		kafka.TransactionalIDPrefix("fenced"), kafka.WithLogger(testLogger(t)))
	w, _ := newTxnWriter(t, sink, 0, 1)
	if err := w.Write(context.Background(), "before", stream.NoTimestamp); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	c.fence(t, "fenced-0-0") // a zombie's successor takes over the id
	if err := w.Write(context.Background(), "after", stream.NoTimestamp); err != nil {
		t.Fatal(err)
	}
	_, err := w.PrepareCommit(context.Background())
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("PrepareCommit after fencing: %v, want a fenced producer error", err)
	}
	if got := c.consume(t, "eo", true); len(got) != 0 {
		t.Fatalf("records of the fenced transaction are visible: %v", values(got))
	}
}

// TestCommitIsIdempotentAcrossRestarts: a job restored twice from the same
// checkpoint commits its committables twice; in between, the restarted
// writers initialised their ids again (a newer epoch). The second commit
// finds the transaction superseded and reports success.
func TestCommitIsIdempotentAcrossRestarts(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "eo", 1)
	sink, tc, committer := preCommitted(t, c, "again", "eo", 2)
	if err := committer.Commit(context.Background(), []kafka.TxnCommittable{tc}); err != nil {
		t.Fatal(err)
	}
	c.fence(t, tc.TransactionalID) // the first restart's writer
	if err := committer.Commit(context.Background(), []kafka.TxnCommittable{tc}); err != nil {
		t.Fatalf("commit after the id moved on: %v", err)
	}
	if n := sink.Metrics().Superseded.Load(); n != 1 {
		t.Fatalf("Superseded = %d, want 1", n)
	}
	if got := values(c.consume(t, "eo", true)); !slices.Equal(got, numbered(2)) {
		t.Fatalf("committed records %v", got)
	}
}

// TestCommitOfATransactionFencedBeforeCommitFails: the id was initialised
// again before the commit, which aborted the transaction. kfake answers
// the commit with INVALID_TXN_STATE (its EndTxn retry detection sees an
// abort one epoch back); a real broker may answer PRODUCER_FENCED, and then
// the committer looks the transaction up (see Committer.abortedByFence).
func TestCommitOfATransactionFencedBeforeCommitFails(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "eo", 1)
	_, tc, committer := preCommitted(t, c, "fenced", "eo", 2)
	c.fence(t, tc.TransactionalID)
	if err := committer.Commit(context.Background(), []kafka.TxnCommittable{tc}); !errors.Is(err, kafka.ErrTransactionAborted) {
		t.Fatalf("got %v, want ErrTransactionAborted", err)
	}
	if got := c.consume(t, "eo", true); len(got) != 0 {
		t.Fatalf("records of the aborted transaction are visible: %v", values(got))
	}
}

// TestSupersededCommitLooksTheTransactionUp: when EndTxn answers
// PRODUCER_FENCED, the committer describes the transaction: CompleteAbort
// one epoch later is this transaction aborted by a fence (a timeout on a
// broker without KIP-890's retry detection), anything else a later use of
// the id. The answers are scripted with kfake's control functions.
func TestSupersededCommitLooksTheTransactionUp(t *testing.T) {
	for _, tc := range []struct {
		state   string
		bump    int16
		wantErr error
	}{
		{"CompleteAbort", 1, kafka.ErrTransactionAborted},
		{"Empty", 2, nil},
		{"Ongoing", 3, nil},
		{"CompleteAbort", 2, nil}, // a later transaction of the id was aborted
	} {
		t.Run(fmt.Sprintf("%s+%d", tc.state, tc.bump), func(t *testing.T) {
			c := newCluster(t)
			c.createTopic(t, "eo", 1)
			sink, committable, committer := preCommitted(t, c, "look", "eo", 1)
			c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
				resp := req.(*kmsg.EndTxnRequest).ResponseKind().(*kmsg.EndTxnResponse)
				resp.ErrorCode = kerr.ProducerFenced.Code
				return resp, nil, true
			})
			c.ControlKey(int16(kmsg.DescribeTransactions), func(req kmsg.Request) (kmsg.Response, error, bool) {
				resp := req.(*kmsg.DescribeTransactionsRequest).ResponseKind().(*kmsg.DescribeTransactionsResponse)
				st := kmsg.NewDescribeTransactionsResponseTransactionState()
				st.TransactionalID, st.State = committable.TransactionalID, tc.state
				st.ProducerID, st.ProducerEpoch = committable.ProducerID, committable.Epoch+tc.bump
				resp.TransactionStates = append(resp.TransactionStates, st)
				return resp, nil, true
			})
			err := committer.Commit(context.Background(), []kafka.TxnCommittable{committable})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("got %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil || sink.Metrics().Superseded.Load() != 1 {
				t.Fatalf("got %v (superseded %d), want success counted as superseded", err, sink.Metrics().Superseded.Load())
			}
		})
	}
}

func TestCommitOfAnAbortedTransactionFails(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "eo", 1)
	_, tc, committer := preCommitted(t, c, "aborted", "eo", 2)
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = tc.TransactionalID, tc.ProducerID, tc.Epoch, false
	if resp, err := req.RequestWith(ctxT(t), c.cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("aborting: %v %v", resp, err)
	}
	err := committer.Commit(context.Background(), []kafka.TxnCommittable{tc})
	var ce *kafka.CommitError
	if !errors.Is(err, kafka.ErrTransactionAborted) || !errors.As(err, &ce) || ce.Committable != tc {
		t.Fatalf("got %v, want a CommitError wrapping ErrTransactionAborted for %+v", err, tc)
	}
}

func TestCommitOfAnUnknownProducerFails(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "eo", 1)
	_, _, committer := preCommitted(t, c, "known", "eo", 1)
	err := committer.Commit(context.Background(), []kafka.TxnCommittable{{TransactionalID: "known-0-0", ProducerID: 424242, Epoch: 3}})
	if !errors.Is(err, kafka.ErrTransactionUnknown) {
		t.Fatalf("got %v, want ErrTransactionUnknown", err)
	}
}

// TestSourceReadsAcrossABrokerBounce: a broker leaves the cluster (its
// partitions move to the others) and comes back while an unbounded job
// reads; every record is read exactly once.
func TestSourceReadsAcrossABrokerBounce(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	c := connect(t, kc, kc.ListenAddrs(), kgo.WithLogger(kgo.BasicLogger(&tLog{t: t}, kgo.LogLevelWarn, nil)))
	c.createTopic(t, "bounce", 6)
	batch := func(b int) []string {
		var recs []*kgo.Record
		var vals []string
		for p := int32(0); p < 6; p++ {
			v := fmt.Sprintf("b%d/p%d", b, p)
			recs = append(recs, &kgo.Record{Topic: "bounce", Partition: p, Value: []byte(v)})
			vals = append(vals, v)
		}
		c.produce(t, recs...)
		return vals
	}
	src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics("bounce"), kafka.WithLogger(testLogger(t)))
	env := newEnv(t, 2)
	sink := newLiveSink[string]()
	stream.SinkTo(stream.FromSource[string, kafka.PartitionSplit](env, src, stream.NoWatermarks[string](), "kafka"), sink)
	done, stop := runJob(t, env)
	var want []string
	got := func() bool { return len(sink.values()) >= len(want) }
	want = append(want, batch(0)...)
	waitFor(t, "batch 0", done, got)

	if err := kc.RemoveNode(kc.LeaderFor("bounce", 0)); err != nil {
		t.Fatal(err)
	}
	want = append(want, batch(1)...)
	waitFor(t, "batch 1 with a broker down", done, got)
	// A broker joins; partitions move to it.
	if _, _, err := kc.AddNode(-1, 0); err != nil {
		t.Fatal(err)
	}
	want = append(want, batch(2)...)
	waitFor(t, "batch 2 after the broker came back", done, got)
	stop()
	if g := sorted(sink.values()); !slices.Equal(g, sorted(want)) {
		t.Fatalf("read %v\nwant %v", g, sorted(want))
	}
}

// TestExactlyOnceAcrossInjectedBrokerErrors: produce, fetch, and
// transaction requests fail with retryable errors for a while; the job
// still delivers every record once.
func TestExactlyOnceAcrossInjectedBrokerErrors(t *testing.T) {
	c := newCluster(t, kfake.NumBrokers(3))
	c.createTopic(t, "in", 3)
	c.createTopic(t, "out", 3)
	want := c.fill(t, "in", 3, 100)
	c.Fault(
		kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: "in", Err: kerr.NotLeaderForPartition, Count: 3},
		kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "out", Err: kerr.NotLeaderForPartition, Count: 3},
		kfake.Fault{Keys: []kmsg.Key{kmsg.InitProducerID}, Err: kerr.CoordinatorLoadInProgress, Count: 1},
		kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, Err: kerr.NotCoordinator, Count: 1},
	)
	src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics("in"),
		kafka.Bounded(kafka.Latest()), kafka.WithLogger(testLogger(t)))
	sink := mustSink(t, kafka.StringSerializer("out"), kafka.BootstrapServers(c.addrs...), kafka.Guarantee(kafka.ExactlyOnce),
		kafka.TransactionalIDPrefix("faulty"), kafka.WithLogger(testLogger(t)))
	env := newEnv(t, 3)
	stream.SinkToCommitting(stream.FromSource[string, kafka.PartitionSplit](env, src, stream.NoWatermarks[string](), "kafka"), sink)
	if _, err := env.ExecuteContext(ctxT(t), t.Name()); err != nil {
		t.Fatal(err)
	}
	if got := sorted(values(c.consume(t, "out", true))); !slices.Equal(got, want) {
		t.Fatalf("out holds %d records, want %d: %s", len(got), len(want), diff(got, want))
	}
}
