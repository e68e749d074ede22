package exchange

import (
	"context"
	"testing"
)

func TestCreditsBoundTheChannel(t *testing.T) {
	g := NewLocalGate(2)
	g.AddChannel(0)
	g.AddChannel(1)
	in, chans := g.Build()
	if !chans[0].TrySend(Buffer{Data: 1}) || !chans[0].TrySend(Buffer{Data: 2}) {
		t.Fatal("sends within credits must succeed")
	}
	if chans[0].TrySend(Buffer{Data: 3}) {
		t.Fatal("third send on a 2-credit channel must find no credit")
	}
	if !chans[1].TrySend(Buffer{Data: 4}) {
		t.Fatal("a full channel must not block its neighbour")
	}
	b := <-in.C()
	if b.Data != 1 || b.Channel != 0 || b.Input != 0 {
		t.Fatalf("got %+v", b)
	}
	if chans[0].TrySend(Buffer{Data: 3}) {
		t.Fatal("credit must come back only on Release, not on receive")
	}
	b.Release()
	if !chans[0].TrySend(Buffer{Data: 3}) {
		t.Fatal("released credit must allow another send")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := chans[0].Send(ctx, Buffer{}); err != context.Canceled {
		t.Fatalf("blocked send must end with the context: %v", err)
	}
}

type countingReturner struct{ n int }

func (c *countingReturner) ReturnCredit() { c.n++ }

func TestReleaseHandsTheCreditToItsReturnerOnce(t *testing.T) {
	var r countingReturner
	b := Buffer{Data: 1}
	b.SetCreditReturner(&r)
	b.Release()
	b.Release()
	if r.n != 1 {
		t.Fatalf("credit returned %d times, want once", r.n)
	}
}
