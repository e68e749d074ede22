package timer

import (
	"encoding/binary"
	"fmt"

	"github.com/sluice/sluice/internal/runtime/codec"
	"github.com/sluice/sluice/internal/runtime/state"
)

// TableName is the name under which a timer service's timers are
// checkpointed with the operator's keyed state.
const TableName = "_timers"

// Name implements state.Table.
func (s *Service[K, N]) Name() string { return TableName }

// Len implements state.Table.
func (s *Service[K, N]) Len() int { return len(s.event.set) + len(s.proc.set) }

type timerCodecs[K, N comparable] struct {
	k   *codec.Codec[K]
	n   *codec.Codec[N]
	err error
}

func (s *Service[K, N]) codecs() (*timerCodecs[K, N], error) {
	if s.cs == nil {
		c := &timerCodecs[K, N]{}
		if c.k, c.err = codec.For[K](); c.err == nil {
			c.n, c.err = codec.For[N]()
		}
		s.cs = c
	}
	return s.cs, s.cs.err
}

// SnapshotKeyGroup implements state.Snapshotter: the live timers of key
// group kg, event time first, each in registration order.
func (s *Service[K, N]) SnapshotKeyGroup(b []byte, kg int) ([]byte, error) {
	var out []byte
	count := 0
	for domain, q := range []*queue[K, N]{&s.event, &s.proc} {
		for _, e := range q.h {
			if e.kg != kg {
				continue
			}
			if seq, ok := q.set[e.t]; !ok || seq != e.seq {
				continue
			}
			cs, err := s.codecs()
			if err != nil {
				return nil, err
			}
			out = append(out, byte(domain))
			out = cs.k.Append(out, e.t.Key)
			out = cs.n.Append(out, e.t.Namespace)
			out = binary.AppendVarint(out, e.t.Time)
			count++
		}
	}
	if count == 0 {
		return b, nil
	}
	b = binary.AppendUvarint(b, uint64(count))
	return append(b, out...), nil
}

// RestoreKeyGroup implements state.Snapshotter.
func (s *Service[K, N]) RestoreKeyGroup(kg int, data []byte) error {
	cs, err := s.codecs()
	if err != nil {
		return err
	}
	n, k := binary.Uvarint(data)
	if k <= 0 {
		return fmt.Errorf("%w: bad timer count", state.ErrCorruptSnapshot)
	}
	data = data[k:]
	for ; n > 0; n-- {
		if len(data) == 0 || data[0] > 1 {
			return fmt.Errorf("%w: bad timer domain", state.ErrCorruptSnapshot)
		}
		domain := data[0]
		var t Timer[K, N]
		if t.Key, data, err = cs.k.Decode(data[1:]); err != nil {
			return err
		}
		if t.Namespace, data, err = cs.n.Decode(data); err != nil {
			return err
		}
		ts, k := binary.Varint(data)
		if k <= 0 {
			return fmt.Errorf("%w: bad timer time", state.ErrCorruptSnapshot)
		}
		t.Time, data = ts, data[k:]
		if domain == 0 {
			s.event.add(t, kg)
		} else {
			s.proc.add(t, kg)
		}
	}
	if len(data) != 0 {
		return fmt.Errorf("%w: %d trailing bytes in timers", state.ErrCorruptSnapshot, len(data))
	}
	s.rearm()
	return nil
}
