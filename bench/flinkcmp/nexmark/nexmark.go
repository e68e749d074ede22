// Package nexmark is the deterministic input of the Sluice–Flink benchmark
// (bench/flinkcmp): Nexmark-like Bid records, a pure function of a seed and
// a record index, defined identically here and in the Java jobs
// (bench/flink, class Generator). testdata/vector.txt holds the first
// records of the default seed; both sides are tested against it.
//
// It also holds what both engines must agree on: the record encoding used
// on Kafka, the order-independent checksum of a job's output, the window
// and watermark parameters of the queries, and Reference, a plain
// sequential computation of every query's expected result.
package nexmark

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// DefaultSeed is the seed of the benchmark and of testdata/vector.txt.
const DefaultSeed uint64 = 42

// Epoch is the event time of record 0 before jitter: 2026-01-01T00:00:00Z in
// epoch milliseconds.
const Epoch int64 = 1767225600000

// RecordsPerMilli is the event-time rate: record i belongs to millisecond
// Epoch + i/RecordsPerMilli, minus its jitter.
const RecordsPerMilli = 10

// MaxJitter bounds how far a record's event time lies before its
// millisecond: records are out of order by less than MaxJitter ms.
const MaxJitter = 500

// WatermarkDelay is the bounded out-of-orderness of the jobs' watermark
// strategy. It exceeds MaxJitter, so no record is ever late, whatever the
// interleaving of splits and channels: results do not depend on timing.
const WatermarkDelay = time.Second

// Window parameters of the stateful queries.
const (
	// Q5Size and Q5Slide: q5 counts bids per auction in sliding windows.
	Q5Size  = 10 * time.Second
	Q5Slide = 2 * time.Second
	// Q7Size: q7 takes the highest bid of each tumbling window.
	Q7Size = 10 * time.Second
	// Q11Gap: q11 counts each bidder's bids per session, sessions ending
	// after this much event time without a bid (Flink's session windows:
	// a bid at most Q11Gap after the session's last joins it).
	Q11Gap = 10 * time.Second
	// Q19Size and Q19N: q19 keeps the Q19N highest bids of each auction in
	// each tumbling window of Q19Size.
	Q19Size = 10 * time.Second
	Q19N    = 3
)

// Q2Modulus: q2 keeps the bids whose auction is a multiple of it.
const Q2Modulus = 123

// Bid is one bid of the Nexmark benchmark's auction model.
type Bid struct {
	Auction  int64
	Bidder   int64
	Price    int64 // in cents
	Channel  string
	URL      string
	DateTime int64 // event time, epoch ms
}

// Channels are the values of Bid.Channel.
var channels = [4]string{"Google", "Facebook", "Baidu", "Apple"}

// urls are the values of Bid.URL.
var urls = func() [16]string {
	var u [16]string
	for n := range u {
		u[n] = "https://www.nexmark.com/item.htm?query=1&channel_id=" + strconv.Itoa(1000+n*37)
	}
	return u
}()

const gamma = 0x9E3779B97F4A7C15

// Mix is SplitMix64's finaliser.
func Mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// Generator produces bids from a seed. Bid(i) depends on the seed and i
// only (each field draws from SplitMix64 at position 4i+k), so any subtask
// can produce any record.
type Generator struct{ Seed uint64 }

func (g Generator) draw(i int64, k uint64) uint64 {
	return Mix(g.Seed + (uint64(i)*4+k+1)*gamma)
}

// Bid returns record i:
//   - Auction: 1000 + u%100 for a quarter of the bids (hot auctions),
//     otherwise 1000 + u%100000;
//   - Bidder: 2000 + u%50000;
//   - Price: 100 + u%99900 cents;
//   - Channel and URL: one of 4 and of 16 fixed strings;
//   - DateTime: Epoch + i/RecordsPerMilli - u%MaxJitter,
//
// where u is a fresh 53-bit draw for each field (the top bits of a
// SplitMix64 output; channel and URL use the low bits of the price's draw).
func (g Generator) Bid(i int64) Bid {
	r0 := g.draw(i, 0)
	var auction int64
	if r0&0xff < 64 {
		auction = 1000 + int64((r0>>11)%100)
	} else {
		auction = 1000 + int64((r0>>11)%100_000)
	}
	r1 := g.draw(i, 1)
	r2 := g.draw(i, 2)
	r3 := g.draw(i, 3)
	return Bid{
		Auction:  auction,
		Bidder:   2000 + int64((r1>>11)%50_000),
		Price:    100 + int64((r2>>11)%99_900),
		Channel:  channels[r2&3],
		URL:      urls[(r2>>2)&15],
		DateTime: Epoch + i/RecordsPerMilli - int64((r3>>11)%MaxJitter),
	}
}

// Person is a new user of the auction site (Nexmark's Person), for the
// join queries.
type Person struct {
	ID       int64
	Name     string
	City     string
	State    string
	DateTime int64 // event time, epoch ms
}

// Auction is an item put up for sale by a person (Nexmark's Auction).
type Auction struct {
	ID       int64
	Seller   int64 // a Person's ID
	Category int64
	DateTime int64 // event time, epoch ms
}

var (
	names  = [16]string{"Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy", "Mallory", "Niaj", "Olivia", "Peggy", "Rupert", "Sybil"}
	cities = [8]string{"Portland", "Boise", "San Francisco", "Seattle", "Phoenix", "New York", "Bend", "Los Angeles"}
	states = [6]string{"OR", "ID", "CA", "WA", "AZ", "NY"}
)

// The join queries' input: of every 4 events 1 is a person and 3 are
// auctions (Nexmark's 1:3), at RecordsPerMilli events per millisecond in
// all, each stream drawing from SplitMix64 positions of its own.
const (
	personSalt  uint64 = 0x50455253 // "PERS"
	auctionSalt uint64 = 0x41554354 // "AUCT"
)

// PersonsOf and AuctionsOf split n events of the join queries into n/4
// persons and the rest auctions.
func PersonsOf(n int64) int64  { return n / 4 }
func AuctionsOf(n int64) int64 { return n - n/4 }

func (g Generator) drawSalted(salt uint64, i int64, k uint64) uint64 {
	return Mix((g.Seed ^ salt) + (uint64(i)*4+k+1)*gamma)
}

// Person returns person j: ID 2000 + j (a bidder's id space), a name, a
// city and a state drawn from fixed lists, and event time
// Epoch + 4j/RecordsPerMilli less a jitter below MaxJitter.
func (g Generator) Person(j int64) Person {
	r0 := g.drawSalted(personSalt, j, 0) >> 11
	r1 := g.drawSalted(personSalt, j, 1) >> 11
	return Person{
		ID:       2000 + j,
		Name:     names[r0%16],
		City:     cities[(r0>>4)%8],
		State:    states[(r0>>7)%6],
		DateTime: Epoch + j*4/RecordsPerMilli - int64(r1%MaxJitter),
	}
}

// Auction returns auction k: ID 1000 + k, sold by one of the 20 persons
// created last before it (person k/3 − u%20, at least person 0), in one of
// 5 categories (10 to 14), at event time Epoch + 4k/(3·RecordsPerMilli)
// less a jitter below MaxJitter.
func (g Generator) Auction(k int64) Auction {
	r0 := g.drawSalted(auctionSalt, k, 0) >> 11
	r1 := g.drawSalted(auctionSalt, k, 1) >> 11
	r2 := g.drawSalted(auctionSalt, k, 2) >> 11
	return Auction{
		ID:       1000 + k,
		Seller:   2000 + max(0, k/3-int64(r0%20)),
		Category: 10 + int64(r1%5),
		DateTime: Epoch + k*4/(3*RecordsPerMilli) - int64(r2%MaxJitter),
	}
}

// String is the person's line in testdata/vector.txt.
func (p Person) String() string {
	return fmt.Sprintf("%d,%s,%s,%s,%d", p.ID, p.Name, p.City, p.State, p.DateTime)
}

// String is the auction's line in testdata/vector.txt.
func (a Auction) String() string {
	return fmt.Sprintf("%d,%d,%d,%d", a.ID, a.Seller, a.Category, a.DateTime)
}

// Q3States and Q3Category: q3 joins the persons of these states with the
// auctions of this category they sell.
var Q3States = []string{"OR", "ID", "CA"}

const Q3Category = 10

// Q8Size: q8 finds the persons who opened an auction in the tumbling
// window they were created in.
const Q8Size = 10 * time.Second

// Q3Hash hashes a q3 output: an auction of a seller.
func Q3Hash(auction, seller int64) uint64 { return Hash2(auction, seller) }

// Q8Hash hashes a q8 output: a person and the start of the window.
func Q8Hash(person, windowStart int64) uint64 { return Hash2(person, windowStart) }

// String is the record's line in testdata/vector.txt (and in the Java
// generator's vector printer).
func (b Bid) String() string {
	return fmt.Sprintf("%d,%d,%d,%s,%s,%d", b.Auction, b.Bidder, b.Price, b.Channel, b.URL, b.DateTime)
}

// Q1Price is q1's currency conversion (dollars to euros at 0.908, in whole
// cents, rounding down).
func Q1Price(cents int64) int64 { return cents * 908 / 1000 }

// Checksum is an order-independent digest of a job's output: the number of
// records and the wrapping sum of a hash of each.
type Checksum struct {
	Count int64
	Sum   uint64
}

// Add counts one output record with hash h.
func (c *Checksum) Add(h uint64) {
	c.Count++
	c.Sum += h
}

// Merge adds another digest (of another subtask, say).
func (c *Checksum) Merge(o Checksum) {
	c.Count += o.Count
	c.Sum += o.Sum
}

// SumInt64 is Sum as the signed value the Java side prints.
func (c Checksum) SumInt64() int64 { return int64(c.Sum) }

func fold(h uint64, v int64) uint64 { return Mix(h ^ (uint64(v) + gamma)) }

// Hash2, Hash3 and Hash4 hash the fields of one output record.
func Hash2(a, b int64) uint64       { return fold(fold(0, a), b) }
func Hash3(a, b, c int64) uint64    { return fold(Hash2(a, b), c) }
func Hash4(a, b, c, d int64) uint64 { return fold(Hash3(a, b, c), d) }

// Output hashes of the queries, one per output record.

// Q0Hash hashes a bid as q0 passes it through.
func Q0Hash(b Bid) uint64 { return Hash4(b.Auction, b.Bidder, b.Price, b.DateTime) }

// Q11Hash hashes a q11 output: a bidder's session [start, end) and its bids.
func Q11Hash(bidder, start, end, count int64) uint64 { return Hash4(bidder, start, end, count) }

// Q19Hash hashes a q19 output: the bid of rank (1 the highest) of an
// auction in the tumbling window ending at windowEnd.
func Q19Hash(windowEnd, auction, rank, bidder, price int64) uint64 {
	return fold(Hash4(windowEnd, auction, rank, bidder), price)
}

// Q1Hash hashes a converted bid (its price already converted).
func Q1Hash(b Bid) uint64 { return Hash4(b.Auction, b.Bidder, b.Price, b.DateTime) }

// Q2Hash hashes a q2 output (auction, price).
func Q2Hash(auction, price int64) uint64 { return Hash2(auction, price) }

// Q5Hash hashes a q5 output: a window's hottest auction and its bid count.
func Q5Hash(windowEnd, auction, count int64) uint64 { return Hash3(windowEnd, auction, count) }

// Q7Hash hashes a q7 output: a window's highest bid.
func Q7Hash(windowEnd, auction, bidder, price int64) uint64 {
	return Hash4(windowEnd, auction, bidder, price)
}

// KafkaHash hashes an output of the Kafka pipeline: an auction's running
// bid count and highest price after one of its bids.
func KafkaHash(auction, count, maxPrice int64) uint64 { return Hash3(auction, count, maxPrice) }

// Kafka encoding. A bid is a record with key Auction (8 bytes big-endian),
// timestamp DateTime and value
//
//	Auction Bidder Price DateTime (int64 big-endian each)
//	len(Channel) (1 byte) Channel  len(URL) (1 byte) URL
//
// An output of the Kafka pipeline has key Auction and value Auction Count
// MaxPrice (int64 big-endian each).

// ErrMalformed reports a Kafka value that is not an encoded bid or output.
var ErrMalformed = errors.New("nexmark: malformed record")

// AppendBid appends the encoding of b to dst.
func AppendBid(dst []byte, b Bid) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.Auction))
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.Bidder))
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.Price))
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.DateTime))
	dst = append(dst, byte(len(b.Channel)))
	dst = append(dst, b.Channel...)
	dst = append(dst, byte(len(b.URL)))
	return append(dst, b.URL...)
}

// DecodeBid decodes a value written by AppendBid.
func DecodeBid(v []byte) (Bid, error) {
	if len(v) < 34 {
		return Bid{}, fmt.Errorf("%w: bid of %d bytes, want at least 34", ErrMalformed, len(v))
	}
	b := Bid{
		Auction:  int64(binary.BigEndian.Uint64(v)),
		Bidder:   int64(binary.BigEndian.Uint64(v[8:])),
		Price:    int64(binary.BigEndian.Uint64(v[16:])),
		DateTime: int64(binary.BigEndian.Uint64(v[24:])),
	}
	n := int(v[32])
	rest := v[33:]
	if len(rest) < n+1 {
		return Bid{}, fmt.Errorf("%w: channel of %d bytes in %d remaining", ErrMalformed, n, len(rest))
	}
	b.Channel = string(rest[:n])
	rest = rest[n:]
	n = int(rest[0])
	rest = rest[1:]
	if len(rest) != n {
		return Bid{}, fmt.Errorf("%w: url of %d bytes, %d remaining", ErrMalformed, n, len(rest))
	}
	b.URL = string(rest)
	return b, nil
}

// AppendKey appends the key of a record about auction.
func AppendKey(dst []byte, auction int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(auction))
}

// AppendOutput appends the value of a Kafka pipeline output.
func AppendOutput(dst []byte, auction, count, maxPrice int64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(auction))
	dst = binary.BigEndian.AppendUint64(dst, uint64(count))
	return binary.BigEndian.AppendUint64(dst, uint64(maxPrice))
}

// DecodeOutput decodes a value written by AppendOutput.
func DecodeOutput(v []byte) (auction, count, maxPrice int64, err error) {
	if len(v) != 24 {
		return 0, 0, 0, fmt.Errorf("%w: output of %d bytes, want 24", ErrMalformed, len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:])),
		int64(binary.BigEndian.Uint64(v[16:])), nil
}
