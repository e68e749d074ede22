package codec

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type inner struct {
	Name  string
	score float64
}

type sample struct {
	A    int64
	B    uint8
	C    string
	D    []int
	E    map[string]inner
	F    *inner
	G    [2]bool
	H    []byte
	T    time.Time
	Nil  []string
	Next *sample
	priv int32
}

func roundTrip[T any](t *testing.T, v T) T {
	t.Helper()
	c, err := For[T]()
	if err != nil {
		t.Fatal(err)
	}
	b := c.Append(nil, v)
	got, rest, err := c.Decode(append(b, 0xAB))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rest, []byte{0xAB}) {
		t.Fatalf("rest %x", rest)
	}
	return got
}

func TestRoundTrips(t *testing.T) {
	v := sample{A: -5, B: 200, C: "héllo", D: []int{1, -2, 3}, E: map[string]inner{"x": {"a", 1.5}, "y": {"b", -2}},
		F: &inner{"p", 3}, G: [2]bool{true, false}, H: []byte{}, T: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		Next: &sample{A: 1}, priv: 9}
	got := roundTrip(t, v)
	if !reflect.DeepEqual(got, v) {
		t.Fatalf("got %+v\nwant %+v", got, v)
	}
	if got.H == nil || got.Nil != nil {
		t.Fatal("empty and nil slices must stay distinct")
	}
	if roundTrip(t, int64(-1<<63)) != -1<<63 || roundTrip(t, "") != "" {
		t.Fatal("scalar round trip")
	}
}

func TestMapEncodingIsCanonical(t *testing.T) {
	c := MustFor[map[string]int]()
	m := map[string]int{}
	for i := 0; i < 100; i++ {
		m[strings.Repeat("k", i%7)+string(rune('a'+i%26))] = i
	}
	first := c.Append(nil, m)
	for i := 0; i < 20; i++ {
		if !bytes.Equal(c.Append(nil, m), first) {
			t.Fatal("map encoding depends on iteration order")
		}
	}
}

func TestUnsupportedTypesNameThePath(t *testing.T) {
	type bad struct {
		OK  int
		Fn  func()
		Any any
	}
	_, err := For[bad]()
	if err == nil || !strings.Contains(err.Error(), "codec.bad.Fn") {
		t.Fatalf("got %v", err)
	}
}

func TestCorruptDataIsAnErrorNotAPanic(t *testing.T) {
	c := MustFor[sample]()
	b := c.Append(nil, sample{C: "abc", D: []int{1, 2, 3}, E: map[string]inner{"k": {}}})
	for i := 0; i < len(b); i++ {
		if _, _, err := c.Decode(b[:i]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated at %d: %v", i, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	c := MustFor[sample]()
	f.Add(c.Append(nil, sample{C: "x", D: []int{1}, E: map[string]inner{"a": {"b", 1}}, F: &inner{}}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		v, _, err := c.Decode(data)
		if err != nil {
			return
		}
		// Whatever decodes must re-encode stably.
		enc := c.Append(nil, v)
		again, _, err := c.Decode(enc)
		if err != nil {
			t.Fatalf("re-encoded value fails to decode: %v", err)
		}
		if !bytes.Equal(c.Append(nil, again), enc) {
			t.Fatalf("unstable round trip")
		}
	})
}

func TestValuesRoundTripWithoutPerValueAllocations(t *testing.T) {
	vs := []sample{{A: 1, C: "a"}, {A: 2, D: []int{4}}, {Next: &sample{A: 3}}}
	c := MustFor[sample]()
	b := c.AppendValues(nil, vs)
	var concat []byte
	for _, v := range vs {
		concat = c.Append(concat, v)
	}
	if !bytes.Equal(b, concat) {
		t.Fatal("AppendValues must equal the concatenation of Append")
	}
	got := make([]sample, len(vs))
	rest, err := c.DecodeValues(append(b, 0xAB), got)
	if err != nil || !bytes.Equal(rest, []byte{0xAB}) || !reflect.DeepEqual(got, vs) {
		t.Fatalf("got %+v rest %x err %v", got, rest, err)
	}
	if _, err := c.DecodeValues(b[:len(b)-1], got); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated: %v", err)
	}

	ints := make([]int64, 512)
	for i := range ints {
		ints[i] = int64(i * 1000)
	}
	ic := MustFor[int64]()
	buf := make([]byte, 0, 8192)
	dst := make([]int64, len(ints))
	allocs := testing.AllocsPerRun(20, func() {
		buf = ic.AppendValues(buf[:0], ints)
		if _, err := ic.DecodeValues(buf, dst); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 3 { // per call, never per value
		t.Fatalf("%v allocations for 512 values", allocs)
	}
	if !reflect.DeepEqual(dst, ints) {
		t.Fatal("int64 values differ")
	}
}
