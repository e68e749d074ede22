package task_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/sluice/sluice/internal/runtime/task"
)

// fixed16 encodes uint16 values big-endian: a stand-in for a front end's
// own record encoding.
var fixed16 = task.ValuesCodec[uint16]{
	Append: func(dst []byte, vs []uint16) []byte {
		for _, v := range vs {
			dst = binary.BigEndian.AppendUint16(dst, v)
		}
		return dst
	},
	Decode: func(src []byte, dst []uint16) ([]byte, error) {
		if len(src) < 2*len(dst) {
			return nil, fmt.Errorf("%d bytes for %d values", len(src), len(dst))
		}
		for i := range dst {
			dst[i] = binary.BigEndian.Uint16(src[2*i:])
		}
		return src[2*len(dst):], nil
	},
}

func TestCustomTypeEncodesValuesWithItsCodec(t *testing.T) {
	ops := task.CustomType("be16", fixed16)
	if ops.TypeName() != "be16" {
		t.Fatalf("name %q", ops.TypeName())
	}
	bc, err := ops.BatchCodec()
	if err != nil {
		t.Fatal(err)
	}
	enc := bc.AppendBatch(nil, &task.Batch[uint16]{Values: []uint16{0x0102, 7}, Ts: []int64{10, task.NoTimestamp}})
	// count, two timestamp deltas, then the custom values.
	if got := enc[len(enc)-4:]; string(got) != "\x01\x02\x00\x07" {
		t.Fatalf("values encoded as %x", got)
	}
	got, err := bc.DecodeBatch(enc)
	if err != nil {
		t.Fatal(err)
	}
	b := got.(*task.Batch[uint16])
	if fmt.Sprint(b.Values, b.Ts) != fmt.Sprint([]uint16{0x0102, 7}, []int64{10, task.NoTimestamp}) {
		t.Fatalf("decoded %v %v", b.Values, b.Ts)
	}
	bc.ReleaseBatch(got)

	if _, err := bc.DecodeBatch(enc[:len(enc)-1]); !errors.Is(err, task.ErrCorruptBatch) {
		t.Fatalf("truncated batch: %v", err)
	}
	if _, err := bc.DecodeBatch(append(enc, 0)); !errors.Is(err, task.ErrCorruptBatch) {
		t.Fatalf("batch with trailing bytes: %v", err)
	}
	if _, err := task.CustomType("half", task.ValuesCodec[uint16]{Append: fixed16.Append}).BatchCodec(); err == nil {
		t.Fatal("a custom type without a decoder has a batch codec")
	}
}
