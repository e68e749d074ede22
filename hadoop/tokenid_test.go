package hadoop

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestDelegationTokenIdentifierRoundTrip(t *testing.T) {
	want := DelegationTokenIdentifier{Owner: "sluice", Renewer: "yarn", RealUser: "",
		IssueDate: time.UnixMilli(1795960017011), MaxDate: time.UnixMilli(1796564817011), SequenceNumber: 7, MasterKeyID: -3}
	got, err := ParseDelegationTokenIdentifier(AppendDelegationTokenIdentifier(nil, want))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for _, bad := range [][]byte{nil, {1}, {0, 5, 'a'}, AppendDelegationTokenIdentifier(nil, want)[:20]} {
		if _, err := ParseDelegationTokenIdentifier(bad); !errors.Is(err, ErrBadTokenIdentifier) {
			t.Errorf("%x: err = %v, want ErrBadTokenIdentifier", bad, err)
		}
	}
}

func FuzzParseDelegationTokenIdentifier(f *testing.F) {
	f.Add(AppendDelegationTokenIdentifier(nil, DelegationTokenIdentifier{Owner: "a", Renewer: "b", SequenceNumber: 1}))
	f.Add([]byte{0, 0x8f, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDelegationTokenIdentifier(b)
		if err != nil {
			return
		}
		// What decodes re-encodes to a prefix-equal identifier that decodes the same.
		again, err := ParseDelegationTokenIdentifier(AppendDelegationTokenIdentifier(nil, d))
		if err != nil || !reflect.DeepEqual(again, d) {
			t.Fatalf("round trip of %+v: %+v, %v", d, again, err)
		}
	})
}
