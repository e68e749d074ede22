package keygroup

import (
	"bytes"
	"testing"
)

// encodedCase checks, for keys of one type, that a key's encoded key
// places it where the typed hasher does.
func encodedCase[K comparable](keys ...K) func(t *testing.T) {
	return func(t *testing.T) {
		h, err := NewHasher[K]()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			enc := h.AppendEncodedKey(nil, k)
			for _, m := range []int{1, 7, 128, 32768} {
				if got, want := ForEncodedKey(enc, m), h.KeyGroup(k, m); got != want {
					t.Errorf("key %v (encoded %x), max parallelism %d: encoded key group %d, typed %d", k, enc, m, got, want)
				}
			}
			// Appending keeps what dst held.
			if got := h.AppendEncodedKey([]byte("x"), k); !bytes.Equal(got[1:], enc) || got[0] != 'x' {
				t.Errorf("key %v: AppendEncodedKey onto a prefix gave %x", k, got)
			}
		}
	}
}

func TestEncodedKeysPlaceAsTypedKeys(t *testing.T) {
	type pair struct {
		A string
		B int64
	}
	t.Run("string", encodedCase("", "a", "user-42", "ünïcode"))
	t.Run("int", encodedCase(0, 1, -1, 1<<40))
	t.Run("int64", encodedCase[int64](0, -7, 1<<62))
	t.Run("uint32", encodedCase[uint32](0, 5, 1<<31))
	t.Run("int16", encodedCase[int16](-3, 300))
	t.Run("int8", encodedCase[int8](-1, 7))
	t.Run("bool", encodedCase(false, true))
	t.Run("float64", encodedCase(0.0, 1.5, -2.25))
	t.Run("array", encodedCase([2]int32{1, 2}, [2]int32{-1, 0}))
	t.Run("struct", encodedCase(pair{"a", 1}, pair{"", -1}))
}

func TestStringEncodedKeyIsItsBytes(t *testing.T) {
	h, err := NewHasher[string]()
	if err != nil {
		t.Fatal(err)
	}
	if got := h.AppendEncodedKey(nil, "key-1"); string(got) != "key-1" {
		t.Fatalf("encoded key of a string: %q", got)
	}
}
