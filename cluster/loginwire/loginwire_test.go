package loginwire

import (
	"testing"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/security/kerberos"
	"google.golang.org/protobuf/proto"
)

// TestRoundTrip checks that every field of a login's state survives the
// wire message, through its binary encoding as a heartbeat carries it.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    kerberos.Status
	}{
		{"zero", kerberos.Status{}},
		{"renewable", kerberos.Status{Principal: "sluice/host@EXAMPLE.COM", TGTExpiry: 1_800_000_000, TGTRenewTill: 1_800_604_800, Relogins: 3, ReloginFailures: 1}},
		{"not renewable", kerberos.Status{Principal: "alice@EXAMPLE.COM", TGTExpiry: 1_700_000_000, Relogins: 0, ReloginFailures: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := proto.Marshal(Message(tc.s))
			if err != nil {
				t.Fatal(err)
			}
			var m clusterpb.KerberosStatus
			if err := proto.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if got := Status(&m); got != tc.s {
				t.Errorf("Status(Message(%+v)) = %+v", tc.s, got)
			}
		})
	}
}

// TestNil: a heartbeat without a login carries the zero Status.
func TestNil(t *testing.T) {
	if got := Status(nil); got != (kerberos.Status{}) {
		t.Errorf("Status(nil) = %+v, want the zero Status", got)
	}
}
