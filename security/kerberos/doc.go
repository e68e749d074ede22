// Package kerberos is Sluice's Kerberos login: the one place that turns a
// keytab and principal, or a ticket cache, into a ticket-granting ticket and
// service tickets, and keeps them valid for as long as a job runs.
//
// A Login is made from a Config (security.kerberos.login.keytab,
// security.kerberos.login.principal, security.kerberos.krb5-conf.path or
// $KRB5_CONFIG, $KRB5CCNAME) with New. It holds a TGT whose times it knows
// (AS exchange done here, so the start, end and renew-till times are ours to
// plan with rather than hidden in a library goroutine). Its Run method is the
// owner loop of re-login: it renews before expiry (at 80 % of the ticket's
// lifetime, as Hadoop's UserGroupInformation), retries failures with backoff
// until the ticket is gone, logs each new expiry and updates the Metrics. The
// decision of when to act is the pure function nextRefresh, driven in tests
// by internal/clock's Manual clock.
//
// Users of a Login (Hadoop IPC's SASL GSSAPI, HDFS, Kafka's GSSAPI) ask it
// for service tickets (ServiceTicket) or for a gokrb5 client (GokrbClient);
// both always reflect the newest login.
//
// Failures are *Error values whose Kind is one of the package's sentinels
// (ErrKeytab, ErrWrongPrincipal, ErrClockSkew, ErrUnknownRealm,
// ErrTicketExpired, ErrServerPrincipal, ...) and whose message names what to
// check, so that "Kerberos does not work" becomes an instruction.
//
// Only the FILE ticket cache type is read (KRB5CCNAME=FILE:/path or a plain
// path); WriteTicketCache writes one (MIT ccache format version 4).
package kerberos
