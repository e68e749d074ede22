package checkpoint

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// alignTrace drives an Aligner from the lines of a trace. Events:
//
//	new MODE CHANNELS
//	barrier CH ID [KIND]
//	end CH
//	abort ID
//
// The output lists "aborted IDS", "snapshot ID KIND", "unblock CHS" and,
// after the event, "blocked=CHS" when some channel is blocked.
type alignTrace struct {
	a        *Aligner
	channels int
}

func (tr *alignTrace) do(f []string) (string, error) {
	if len(f) == 0 {
		return "", errors.New("empty event")
	}
	if f[0] != "new" && tr.a == nil {
		return "", errors.New("no aligner: start the block with new")
	}
	num := func(i int) (int, error) {
		if i >= len(f) {
			return 0, fmt.Errorf("missing argument %d", i)
		}
		return strconv.Atoi(f[i])
	}
	var r AlignResult
	switch f[0] {
	case "new":
		if len(f) != 3 {
			return "", errors.New("want: new MODE CHANNELS")
		}
		mode, err1 := ParseMode(f[1])
		n, err2 := num(2)
		if err := errors.Join(err1, err2); err != nil {
			return "", err
		}
		tr.a, tr.channels = NewAligner(mode, n), n
		return "", nil
	case "barrier":
		ch, err1 := num(1)
		id, err2 := num(2)
		kind := Checkpoint
		var err3 error
		if len(f) > 3 {
			kind, err3 = parseKind(f[3])
		}
		if err := errors.Join(err1, err2, err3); err != nil {
			return "", err
		}
		r = tr.a.Barrier(ch, ID(id), kind)
	case "end":
		ch, err := num(1)
		if err != nil {
			return "", err
		}
		r = tr.a.EndOfPartition(ch)
	case "abort":
		id, err := num(1)
		if err != nil {
			return "", err
		}
		r = tr.a.Abort(ID(id))
	default:
		return "", fmt.Errorf("unknown event %q", f[0])
	}
	var out []string
	if len(r.Aborted) > 0 {
		out = append(out, "aborted "+joinInts(r.Aborted))
	}
	if r.Snapshot {
		out = append(out, fmt.Sprintf("snapshot %d %s", r.ID, r.Kind))
	} else if r.ID != 0 || r.Kind != 0 {
		return "", fmt.Errorf("no snapshot but ID %d and kind %s set", r.ID, r.Kind)
	}
	if len(r.Unblock) > 0 {
		for _, ch := range r.Unblock {
			if tr.a.Blocked(ch) {
				return "", fmt.Errorf("channel %d unblocked but still blocked", ch)
			}
		}
		out = append(out, "unblock "+joinInts(r.Unblock))
	}
	var blocked []int
	for ch := range tr.channels {
		if tr.a.Blocked(ch) {
			blocked = append(blocked, ch)
		}
	}
	if len(blocked) > 0 {
		out = append(out, "blocked="+joinInts(blocked))
	}
	return strings.Join(out, "; "), nil
}

func TestAlignerTraces(t *testing.T) {
	tr := &alignTrace{}
	replay(t, "testdata/aligner.txt", tr.do)
}

// TestAlignerConsistency simulates a task reading random interleavings of
// channels, each a FIFO of records, barriers (some missing, as when an
// upstream task declined) and an end of partition, with random aborts. At
// every snapshot it checks the cut: in EXACTLY_ONCE mode every channel has
// been read exactly up to its barrier (or to its end, if it ended without
// one); in AT_LEAST_ONCE mode at least up to it. In the end no channel may
// be left blocked.
func TestAlignerConsistency(t *testing.T) {
	const (
		record = -1
		eop    = -2
	)
	for _, mode := range []Mode{ExactlyOnce, AtLeastOnce} {
		for seed := range uint64(300) {
			rng := rand.New(rand.NewPCG(seed, uint64(mode)))
			n := 1 + rng.IntN(4)
			barriers := 1 + rng.IntN(6)
			chans := make([][]int, n) // item: record, eop or a barrier id
			for c := range chans {
				for id := 1; id <= barriers; id++ {
					for range rng.IntN(3) {
						chans[c] = append(chans[c], record)
					}
					if rng.IntN(8) != 0 {
						chans[c] = append(chans[c], id)
					}
				}
				for range rng.IntN(3) {
					chans[c] = append(chans[c], record)
				}
				chans[c] = append(chans[c], eop)
			}
			next := make([]int, n)
			a := NewAligner(mode, n)
			lastSnap := ID(0)
			done := map[ID]string{}
			fail := func(format string, args ...any) {
				t.Fatalf("%v seed %d channels %v: %s", mode, seed, chans, fmt.Sprintf(format, args...))
			}
			check := func(r AlignResult) {
				for _, id := range r.Aborted {
					if done[id] != "" {
						fail("checkpoint %d aborted after it was %s", id, done[id])
					}
					done[id] = "aborted"
				}
				if !r.Snapshot {
					return
				}
				if done[r.ID] != "" || r.ID <= lastSnap {
					fail("snapshot %d after %s, last snapshot %d", r.ID, done[r.ID], lastSnap)
				}
				done[r.ID], lastSnap = "snapshot", r.ID
				for c, items := range chans {
					at := slices.Index(items, int(r.ID))
					switch {
					case at < 0 && next[c] != len(items):
						fail("snapshot %d: channel %d has no barrier and has not ended", r.ID, c)
					case at >= 0 && mode == ExactlyOnce && next[c] != at+1:
						fail("snapshot %d: channel %d read up to %d, its barrier is at %d", r.ID, c, next[c], at)
					case at >= 0 && next[c] < at+1:
						fail("snapshot %d: channel %d read up to %d, before its barrier at %d", r.ID, c, next[c], at)
					}
				}
			}
			for {
				var readable []int
				for c := range chans {
					if next[c] < len(chans[c]) && !a.Blocked(c) {
						readable = append(readable, c)
					}
				}
				if len(readable) == 0 {
					break
				}
				if rng.IntN(20) == 0 {
					check(a.Abort(ID(1 + rng.IntN(barriers))))
					continue
				}
				c := readable[rng.IntN(len(readable))]
				item := chans[c][next[c]]
				next[c]++
				switch item {
				case record:
				case eop:
					check(a.EndOfPartition(c))
				default:
					check(a.Barrier(c, ID(item), Checkpoint))
				}
			}
			for c := range chans {
				if next[c] != len(chans[c]) {
					fail("deadlock: channel %d blocked=%v at %d of %d", c, a.Blocked(c), next[c], len(chans[c]))
				}
			}
		}
	}
}
