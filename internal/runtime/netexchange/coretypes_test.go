package netexchange

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/runtime/exchange"
	"github.com/sluice/sluice/internal/runtime/task"
)

// TestCoreRecordsCrossEndpoints: the core API's first-class records (Bytes,
// and Rows of a schema) cross a real network channel with their own batch
// codecs: every byte string (empty, binary, large) and every row (NULLs,
// change kinds, every field type) arrives as sent, in order, with its
// timestamp.
func TestCoreRecordsCrossEndpoints(t *testing.T) {
	ctx := testCtx(t)
	a, b := newEndpoint(t), newEndpoint(t)
	schema, err := core.NewSchema(
		core.Field{Name: "id", Type: core.BigInt}, core.Field{Name: "name", Type: core.Varchar},
		core.Field{Name: "score", Type: core.Double}, core.Field{Name: "blob", Type: core.Varbinary},
		core.Field{Name: "ok", Type: core.Boolean}, core.Field{Name: "at", Type: core.TimestampLTZ})
	if err != nil {
		t.Fatal(err)
	}
	codecs := make([]task.BatchCodec, 2)
	for i, typ := range []core.Type{core.Bytes(), core.RowType(schema)} {
		if codecs[i], err = typ.Ops().BatchCodec(); err != nil {
			t.Fatal(err)
		}
	}
	key := GateKey{Scope: "job/0", Chain: 1, Subtask: 0}
	gb := b.NewGate(key, 2)
	gb.AddRemote(0, codecs[0])
	gb.AddRemote(1, codecs[1])
	gate, _, err := gb.Build()
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Close()

	var want [2][]string
	var senders [2]exchange.Sender
	for ch := range senders {
		s, err := a.Sender(ctx, b.Addr(), key, ch, codecs[ch])
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		senders[ch] = s
	}
	send := func(ch int, buf exchange.Buffer, desc string) {
		t.Helper()
		want[ch] = append(want[ch], desc)
		if !senders[ch].TrySend(buf) {
			if err := senders[ch].Send(ctx, buf); err != nil {
				t.Fatal(err)
			}
		}
	}
	done := make(chan error, 1)
	got := [2][]string{}
	go func() {
		ended := 0
		for ended < 2 {
			select {
			case buf := <-gate.C():
				if buf.Err != nil {
					done <- buf.Err
					return
				}
				got[buf.Channel] = append(got[buf.Channel], describeCore(buf))
				if buf.Event.Kind == exchange.EndOfPartition {
					ended++
				}
				if buf.Data != nil {
					codecs[buf.Input].ReleaseBatch(buf.Data)
				}
				buf.Release()
			case <-ctx.Done():
				done <- ctx.Err()
				return
			}
		}
		done <- nil
	}()
	for n := range 50 {
		bs := &task.Batch[[]byte]{}
		rows := &task.Batch[core.Row]{}
		for j := range 1 + n%7 {
			v := []byte(fmt.Sprintf("rec-%d-%d", n, j))
			switch j {
			case 1:
				v = []byte{}
			case 2:
				v = []byte{0, 255, 1, 254}
			case 3:
				v = []byte(strings.Repeat("x", 70_000))
			}
			bs.Values = append(bs.Values, v)
			bs.Ts = append(bs.Ts, int64(n*10+j))
			r := core.Row{Kind: core.RowKind(j % 4), Values: []any{int64(n), fmt.Sprintf("name-%d", j), float64(j) / 3, []byte{byte(j)}, j%2 == 0, int64(1_700_000_000_000 + n)}}
			if j%3 == 2 {
				r.Values[1], r.Values[3] = nil, nil // NULLs
			}
			rows.Values = append(rows.Values, r)
			rows.Ts = append(rows.Ts, int64(n))
		}
		// Descriptions are taken before the batches are sent: the sender
		// owns (and may recycle) a batch once it is sent.
		send(0, exchange.Buffer{Data: bs}, describeCore(exchange.Buffer{Data: bs}))
		send(1, exchange.Buffer{Data: rows}, describeCore(exchange.Buffer{Data: rows}))
	}
	for ch := range senders {
		end := exchange.Buffer{Event: exchange.Event{Kind: exchange.EndOfPartition}}
		send(ch, end, describeCore(end))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for ch, name := range []string{"bytes", "rows"} {
		if !reflect.DeepEqual(got[ch], want[ch]) {
			t.Errorf("%s: got %d buffers, want %d\nfirst got:  %.300q\nfirst want: %.300q", name, len(got[ch]), len(want[ch]), got[ch], want[ch])
		}
	}
}

// describeCore renders a buffer of core records for exact comparisons.
func describeCore(b exchange.Buffer) string {
	switch d := b.Data.(type) {
	case nil:
		return fmt.Sprintf("event %+v", b.Event)
	case *task.Batch[[]byte]:
		var parts []string
		for i, v := range d.Values {
			parts = append(parts, fmt.Sprintf("%x@%d", v, d.Ts[i]))
		}
		return "bytes " + strings.Join(parts, " ")
	case *task.Batch[core.Row]:
		var parts []string
		for i, r := range d.Values {
			parts = append(parts, fmt.Sprintf("%v@%d", r, d.Ts[i]))
		}
		return "rows " + strings.Join(parts, " ")
	}
	return fmt.Sprintf("unexpected %T", b.Data)
}
