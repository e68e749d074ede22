package nexmark

import "fmt"

// Workload names, shared by the driver, the Sluice jobs and the Java jobs.
const (
	Q1 = "q1"
	Q2 = "q2"
	Q5 = "q5"
	Q7 = "q7"
	// Kafka is the Kafka → keyed stateful process → Kafka pipeline: per
	// auction, the running bid count and highest price, emitted for every
	// bid.
	Kafka = "kafka"
)

// Workloads lists every workload name.
var Workloads = []string{Q1, Q2, Q5, Q7, Kafka}

// ErrUnknownWorkload reports a workload name not in Workloads.
var ErrUnknownWorkload = fmt.Errorf("nexmark: unknown workload (want one of %v)", Workloads)

// WindowStart is the start of the window of the given size (a multiple of
// size since the epoch) holding ts, as Flink's TimeWindow computes it with
// offset 0.
func WindowStart(ts, size int64) int64 {
	m := ts % size
	if m < 0 {
		m += size
	}
	return ts - m
}

// Q7Better reports whether bid a (of auction aa) beats bid b (of auction
// ab) in q7: higher price, then lower auction, then lower bidder.
func Q7Better(aa, abidder, aprice, ba, bbidder, bprice int64) bool {
	if aprice != bprice {
		return aprice > bprice
	}
	if aa != ba {
		return aa < ba
	}
	return abidder < bbidder
}

// Q5Better reports whether auction a with count ac beats auction b with
// count bc in q5: more bids, then lower auction.
func Q5Better(a, ac, b, bc int64) bool {
	if ac != bc {
		return ac > bc
	}
	return a < b
}

// Reference computes the expected output digest of a workload over records
// [0, n) of g, sequentially and in memory, in the plainest way: the
// benchmark checks both engines against it. The Kafka pipeline's expected
// output assumes each auction's bids are processed in index order (they
// are: the input topic is keyed by auction, so they share a partition in
// index order).
func Reference(workload string, g Generator, n int64) (Checksum, error) {
	var c Checksum
	switch workload {
	case Q1:
		for i := int64(0); i < n; i++ {
			b := g.Bid(i)
			b.Price = Q1Price(b.Price)
			c.Add(Q1Hash(b))
		}
	case Q2:
		for i := int64(0); i < n; i++ {
			b := g.Bid(i)
			if b.Auction%Q2Modulus == 0 {
				c.Add(Q2Hash(b.Auction, b.Price))
			}
		}
	case Q5:
		size, slide := Q5Size.Milliseconds(), Q5Slide.Milliseconds()
		type wa struct{ end, auction int64 }
		counts := map[wa]int64{}
		for i := int64(0); i < n; i++ {
			b := g.Bid(i)
			for start := WindowStart(b.DateTime, slide); start > b.DateTime-size; start -= slide {
				counts[wa{start + size, b.Auction}]++
			}
		}
		type best struct{ auction, count int64 }
		hottest := map[int64]best{}
		for k, cnt := range counts {
			h, ok := hottest[k.end]
			if !ok || Q5Better(k.auction, cnt, h.auction, h.count) {
				hottest[k.end] = best{k.auction, cnt}
			}
		}
		for end, h := range hottest {
			c.Add(Q5Hash(end, h.auction, h.count))
		}
	case Q7:
		size := Q7Size.Milliseconds()
		type best struct{ auction, bidder, price int64 }
		highest := map[int64]best{}
		for i := int64(0); i < n; i++ {
			b := g.Bid(i)
			end := WindowStart(b.DateTime, size) + size
			h, ok := highest[end]
			if !ok || Q7Better(b.Auction, b.Bidder, b.Price, h.auction, h.bidder, h.price) {
				highest[end] = best{b.Auction, b.Bidder, b.Price}
			}
		}
		for end, h := range highest {
			c.Add(Q7Hash(end, h.auction, h.bidder, h.price))
		}
	case Kafka:
		type st struct{ count, max int64 }
		state := map[int64]st{}
		for i := int64(0); i < n; i++ {
			b := g.Bid(i)
			s := state[b.Auction]
			s.count++
			s.max = max(s.max, b.Price)
			state[b.Auction] = s
			c.Add(KafkaHash(b.Auction, s.count, s.max))
		}
	default:
		return Checksum{}, fmt.Errorf("%w: %q", ErrUnknownWorkload, workload)
	}
	return c, nil
}
