package clusterpb

import "github.com/sluice/sluice/security/kerberos"

// KerberosStatusOf is the wire form of a login's state (a TaskManager's in
// its heartbeats, a worker's in its metrics reports).
func KerberosStatusOf(s kerberos.Status) *KerberosStatus {
	return &KerberosStatus{Principal: s.Principal, TgtExpiry: s.TGTExpiry, TgtRenewTill: s.TGTRenewTill,
		Relogins: s.Relogins, ReloginFailures: s.ReloginFailures}
}

// Status is the login state k carries.
func (k *KerberosStatus) Status() kerberos.Status {
	return kerberos.Status{Principal: k.GetPrincipal(), TGTExpiry: k.GetTgtExpiry(), TGTRenewTill: k.GetTgtRenewTill(),
		Relogins: k.GetRelogins(), ReloginFailures: k.GetReloginFailures()}
}
