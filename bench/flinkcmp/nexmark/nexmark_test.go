package nexmark

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/vector.txt from the Go generator")

// VectorPath is the cross-language test vector: the first VectorRecords
// bids of DefaultSeed, one per line as "index,Bid.String()", then the
// first VectorRecords/4 persons ("p" index) and auctions ("a" index).
const (
	VectorPath    = "testdata/vector.txt"
	VectorRecords = 200
)

// vector renders the first n bids of g as the vector file does.
func vector(g Generator, n int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# seed=%d records=%d\n", g.Seed, n)
	for i := int64(0); i < n; i++ {
		fmt.Fprintf(&b, "%d,%s\n", i, g.Bid(i))
	}
	// The join queries' persons and auctions, n/4 of each.
	for j := int64(0); j < n/4; j++ {
		fmt.Fprintf(&b, "p%d,%s\n", j, g.Person(j))
	}
	for k := int64(0); k < n/4; k++ {
		fmt.Fprintf(&b, "a%d,%s\n", k, g.Auction(k))
	}
	return b.String()
}

// TestGeneratorVector checks the Go generator against the vector file the
// Java generator is checked against too (bench/flinkcmp's integration test).
func TestGeneratorVector(t *testing.T) {
	got := vector(Generator{DefaultSeed}, VectorRecords)
	if *rewrite {
		if err := os.WriteFile(VectorPath, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(VectorPath)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		diffLines(t, string(want), got)
	}
}

func diffLines(t *testing.T, want, got string) {
	t.Helper()
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			t.Fatalf("line %d:\nwant %q\ngot  %q", i+1, wl, gl)
		}
	}
}

func TestGeneratorProperties(t *testing.T) {
	g := Generator{DefaultSeed}
	const n = 200_000
	hot := 0
	maxTs := g.Bid(0).DateTime
	for i := int64(0); i < n; i++ {
		b := g.Bid(i)
		if b.Auction < 1000 || b.Auction >= 101_000 || b.Bidder < 2000 || b.Bidder >= 52_000 ||
			b.Price < 100 || b.Price >= 100_000 {
			t.Fatalf("bid %d out of range: %v", i, b)
		}
		if b.Auction < 1100 {
			hot++
		}
		// Never late under WatermarkDelay: at most MaxJitter-1 behind the
		// largest timestamp so far in index order (any subsequence too).
		if d := maxTs - b.DateTime; d >= WatermarkDelay.Milliseconds() || d >= MaxJitter {
			t.Fatalf("bid %d is %d ms behind the largest timestamp before it", i, d)
		}
		maxTs = max(maxTs, b.DateTime)
		if b != g.Bid(i) {
			t.Fatalf("bid %d is not a function of its index", i)
		}
	}
	// A quarter of the bids go to 100 hot auctions (plus the few the cold
	// draw puts there).
	if hot < n/5 || hot > n*3/10 {
		t.Errorf("%d of %d bids on hot auctions, want about a quarter", hot, n)
	}
	if other := (Generator{Seed: 7}).Bid(0); other == g.Bid(0) {
		t.Errorf("seeds 7 and %d give the same bid %v", DefaultSeed, other)
	}
}

func TestBidEncoding(t *testing.T) {
	g := Generator{DefaultSeed}
	for i := int64(0); i < 1000; i++ {
		b := g.Bid(i)
		got, err := DecodeBid(AppendBid(nil, b))
		if err != nil || got != b {
			t.Fatalf("bid %d: round trip gave %v, %v; want %v", i, got, err, b)
		}
	}
	enc := AppendBid(nil, g.Bid(0))
	for _, tc := range []struct {
		name string
		v    []byte
	}{
		{"empty", nil},
		{"fixed part only", enc[:33]},
		{"truncated url", enc[:len(enc)-1]},
		{"trailing byte", append(append([]byte(nil), enc...), 0)},
		{"channel past end", append(append([]byte(nil), enc[:32]...), 200, 'x')},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodeBid(tc.v); !errors.Is(err, ErrMalformed) {
				t.Fatalf("DecodeBid = %v, want ErrMalformed", err)
			}
		})
	}
	a, c, m, err := DecodeOutput(AppendOutput(nil, 1, 2, 3))
	if err != nil || a != 1 || c != 2 || m != 3 {
		t.Fatalf("output round trip: %d %d %d %v", a, c, m, err)
	}
	if _, _, _, err := DecodeOutput(make([]byte, 23)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("DecodeOutput of 23 bytes = %v, want ErrMalformed", err)
	}
}

func TestWindowStart(t *testing.T) {
	for _, tc := range []struct{ ts, size, want int64 }{
		{0, 10, 0}, {9, 10, 0}, {10, 10, 10}, {-1, 10, -10}, {-10, 10, -10}, {Epoch + 1999, 2000, Epoch},
	} {
		if got := WindowStart(tc.ts, tc.size); got != tc.want {
			t.Errorf("WindowStart(%d, %d) = %d, want %d", tc.ts, tc.size, got, tc.want)
		}
	}
}

// TestReferenceSmall checks Reference on a hand-checkable input: the
// digests must equal ones computed here field by field.
func TestReferenceSmall(t *testing.T) {
	g := Generator{DefaultSeed}
	const n = 5000
	var want Checksum
	for i := int64(0); i < n; i++ {
		b := g.Bid(i)
		if b.Auction%Q2Modulus == 0 {
			want.Add(Hash2(b.Auction, b.Price))
		}
	}
	got, err := Reference(Q2, g, n)
	if err != nil || got != want {
		t.Fatalf("q2 reference = %+v, %v; want %+v", got, err, want)
	}
	if want.Count == 0 {
		t.Fatal("no q2 output in 5000 bids: the test checks nothing")
	}
	// 5000 records are 500 ms of event time: q7 sees at most two tumbling
	// windows, q5 at most six sliding ones.
	q7, _ := Reference(Q7, g, n)
	if q7.Count < 1 || q7.Count > 2 {
		t.Errorf("q7 windows = %d, want 1 or 2", q7.Count)
	}
	q5, _ := Reference(Q5, g, n)
	if q5.Count < 5 || q5.Count > 6 {
		t.Errorf("q5 windows = %d, want 5 or 6", q5.Count)
	}
	k, _ := Reference(Kafka, g, n)
	if k.Count != n {
		t.Errorf("kafka outputs = %d, want %d", k.Count, n)
	}
	if _, err := Reference("q99", g, n); !errors.Is(err, ErrUnknownWorkload) {
		t.Errorf("Reference(q99) = %v, want ErrUnknownWorkload", err)
	}
}
