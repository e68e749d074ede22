// Package loginwire converts a Kerberos login's state to and from the
// cluster's wire message, so that cluster/clusterpb (the messages every end
// of the cluster protocol shares) stays a leaf that knows nothing of
// security/kerberos.
package loginwire

import (
	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/security/kerberos"
)

// Message is the wire form of a login's state (a TaskManager's in its
// heartbeats, a worker's in its metrics reports).
func Message(s kerberos.Status) *clusterpb.KerberosStatus {
	return &clusterpb.KerberosStatus{Principal: s.Principal, TgtExpiry: s.TGTExpiry, TgtRenewTill: s.TGTRenewTill,
		Relogins: s.Relogins, ReloginFailures: s.ReloginFailures}
}

// Status is the login state that m carries; a nil m carries the zero
// Status.
func Status(m *clusterpb.KerberosStatus) kerberos.Status {
	return kerberos.Status{Principal: m.GetPrincipal(), TGTExpiry: m.GetTgtExpiry(), TGTRenewTill: m.GetTgtRenewTill(),
		Relogins: m.GetRelogins(), ReloginFailures: m.GetReloginFailures()}
}
