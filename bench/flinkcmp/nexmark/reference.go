package nexmark

import (
	"fmt"
	"slices"
)

// Workload names, shared by the driver, the Sluice jobs and the Java jobs.
const (
	// Q0 passes every bid through: the cost of the source, one exchange-free
	// chain and the sink.
	Q0 = "q0"
	Q1 = "q1"
	Q2 = "q2"
	Q5 = "q5"
	Q7 = "q7"
	// Q3 joins persons of Q3States with the Q3Category auctions they sell
	// (a regular join: unbounded state on both sides).
	Q3 = "q3"
	// Q8 finds the persons who opened an auction in the Q8Size tumbling
	// window in which they were created (a window join).
	Q8 = "q8"
	// Q11 counts each bidder's bids per session (event-time session
	// windows of gap Q11Gap).
	Q11 = "q11"
	// Q19 is a windowed Top-N: the Q19N highest bids of each auction in
	// each tumbling window of Q19Size (price, then the lower bidder, then
	// the earlier bid).
	Q19 = "q19"
	// Kafka is the Kafka → keyed stateful process → Kafka pipeline: per
	// auction, the running bid count and highest price, emitted for every
	// bid.
	Kafka = "kafka"
)

// Workloads lists every workload name.
var Workloads = []string{Q0, Q1, Q2, Q3, Q5, Q7, Q8, Q11, Q19, Kafka}

// ErrUnknownWorkload reports a workload name not in Workloads.
var ErrUnknownWorkload = fmt.Errorf("nexmark: unknown workload (want one of %v)", Workloads)

// RecordsMultiple is what a workload's record count must be a multiple
// of at parallelism p: each generator source splits its records evenly
// over p subtasks (the Flink generator needs it), and the join queries'
// n records are n/4 persons and 3n/4 auctions.
func RecordsMultiple(workload string, p int) int64 {
	if workload == Q3 || workload == Q8 {
		return 4 * int64(p)
	}
	return int64(p)
}

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

// Q19Better reports whether bid a beats bid b in q19's ranking: higher
// price, then lower bidder, then earlier.
func Q19Better(a, b Bid) bool {
	if a.Price != b.Price {
		return a.Price > b.Price
	}
	if a.Bidder != b.Bidder {
		return a.Bidder < b.Bidder
	}
	return a.DateTime < b.DateTime
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
	case Q3:
		local := map[int64]bool{}
		for j := int64(0); j < PersonsOf(n); j++ {
			if p := g.Person(j); slices.Contains(Q3States, p.State) {
				local[p.ID] = true
			}
		}
		for k := int64(0); k < AuctionsOf(n); k++ {
			if a := g.Auction(k); a.Category == Q3Category && local[a.Seller] {
				c.Add(Q3Hash(a.ID, a.Seller))
			}
		}
	case Q8:
		size := Q8Size.Milliseconds()
		type pw struct{ person, start int64 }
		created := map[pw]bool{}
		for j := int64(0); j < PersonsOf(n); j++ {
			p := g.Person(j)
			created[pw{p.ID, WindowStart(p.DateTime, size)}] = true
		}
		opened := map[pw]bool{}
		for k := int64(0); k < AuctionsOf(n); k++ {
			a := g.Auction(k)
			if k := (pw{a.Seller, WindowStart(a.DateTime, size)}); created[k] {
				opened[k] = true
			}
		}
		for k := range opened {
			c.Add(Q8Hash(k.person, k.start))
		}
	case Q0:
		for i := int64(0); i < n; i++ {
			c.Add(Q0Hash(g.Bid(i)))
		}
	case Q11:
		gap := Q11Gap.Milliseconds()
		times := map[int64][]int64{}
		for i := int64(0); i < n; i++ {
			b := g.Bid(i)
			times[b.Bidder] = append(times[b.Bidder], b.DateTime)
		}
		for bidder, ts := range times {
			slices.Sort(ts)
			start, end, count := ts[0], ts[0]+gap, int64(1)
			for _, t := range ts[1:] {
				if t <= end { // Flink merges windows that touch
					end = max(end, t+gap)
					count++
					continue
				}
				c.Add(Q11Hash(bidder, start, end, count))
				start, end, count = t, t+gap, 1
			}
			c.Add(Q11Hash(bidder, start, end, count))
		}
	case Q19:
		size := Q19Size.Milliseconds()
		type wa struct{ end, auction int64 }
		bids := map[wa][]Bid{}
		for i := int64(0); i < n; i++ {
			b := g.Bid(i)
			k := wa{WindowStart(b.DateTime, size) + size, b.Auction}
			bids[k] = append(bids[k], b)
		}
		for k, bs := range bids {
			slices.SortFunc(bs, func(a, b Bid) int {
				switch {
				case Q19Better(a, b):
					return -1
				case Q19Better(b, a):
					return 1
				}
				return 0
			})
			for r, b := range bs[:min(len(bs), Q19N)] {
				c.Add(Q19Hash(k.end, k.auction, int64(r+1), b.Bidder, b.Price))
			}
		}
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
