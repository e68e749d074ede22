package kerberos

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/internal/clock"
)

// Metrics of a Login. Names are those under which the JobManager exports
// them at GET /metrics, for every process of the cluster (the processes
// report their login's Status to it).
type Metrics struct {
	// TGTExpiry is the current TGT's end time, Unix seconds
	// (gauge sluice_kerberos_tgt_expiry_timestamp_seconds).
	TGTExpiry atomic.Int64
	// TGTRenewTill is the current TGT's renew-till time, Unix seconds, 0 if
	// not renewable (gauge sluice_kerberos_tgt_renew_till_timestamp_seconds).
	TGTRenewTill atomic.Int64
	// Refreshes counts successful re-logins and renewals
	// (counter sluice_kerberos_relogins_total).
	Refreshes atomic.Int64
	// RefreshFailures counts failed attempts
	// (counter sluice_kerberos_relogin_failures_total).
	RefreshFailures atomic.Int64
}

// Status is a login's state at one moment, as a plain value: what a
// process reports of its login to the JobManager (TaskManagers in their
// heartbeats, workers in their metrics reports), which exports it at GET
// /metrics under the names of Metrics' fields.
type Status struct {
	// Principal is the logged-in principal, name@REALM.
	Principal string
	// TGTExpiry and TGTRenewTill are Unix seconds; TGTRenewTill is 0 for a
	// TGT that is not renewable.
	TGTExpiry, TGTRenewTill int64
	// Relogins and ReloginFailures count the re-login loop's successful and
	// failed attempts.
	Relogins, ReloginFailures int64
}

// Status reads m as the Status of principal's login.
func (m *Metrics) Status(principal string) Status {
	return Status{
		Principal:       principal,
		TGTExpiry:       m.TGTExpiry.Load(),
		TGTRenewTill:    m.TGTRenewTill.Load(),
		Relogins:        m.Refreshes.Load(),
		ReloginFailures: m.RefreshFailures.Load(),
	}
}

// renewWindow is the fraction of a ticket's lifetime after which it is
// refreshed: Hadoop's UserGroupInformation renews at 80 %.
const renewWindow = 0.8

// maxRetryBackoff bounds the pause between failed refresh attempts.
const maxRetryBackoff = 10 * time.Minute

// refreshState is what the refresh decision looks at.
type refreshState struct {
	// Times of the TGT in force.
	Times Times
	// LastAttempt is when the last refresh was tried, zero if none since
	// the current TGT was obtained.
	LastAttempt time.Time
	// Failures counts consecutive failed attempts.
	Failures int
}

// nextRefresh is when the next refresh should be tried: at 80 % of the
// TGT's lifetime; after a failure, minInterval doubled per consecutive
// failure (at most maxRetryBackoff) after the last attempt, but not later
// than minInterval/2 before the TGT ends while that is still ahead. A
// planned refresh comes no sooner than minInterval after the last attempt,
// a retry no sooner than minInterval/2.
func nextRefresh(s refreshState, minInterval time.Duration) time.Time {
	if s.Failures == 0 {
		at := s.Times.Start.Add(time.Duration(float64(s.Times.Lifetime()) * renewWindow))
		if !s.LastAttempt.IsZero() && at.Before(s.LastAttempt.Add(minInterval)) {
			at = s.LastAttempt.Add(minInterval)
		}
		return at
	}
	backoff := minInterval
	for i := 1; i < s.Failures && backoff < maxRetryBackoff; i++ {
		backoff *= 2
	}
	backoff = min(backoff, maxRetryBackoff)
	at := s.LastAttempt.Add(backoff)
	// One more try just before the end beats learning of the failure
	// after it, when the next attempt would come too late.
	if last := s.Times.End.Add(-minInterval / 2); s.LastAttempt.Before(last) && at.After(last) {
		at = last
	}
	if floor := s.LastAttempt.Add(minInterval / 2); at.Before(floor) {
		at = floor
	}
	return at
}

// Run keeps the login valid until ctx ends: it refreshes the TGT before it
// expires, retries failures with backoff, and logs each new expiry. It
// returns nil when ctx ends, or ErrClosed if the login was closed.
func (l *Login) Run(ctx context.Context) error {
	st := refreshState{Times: l.Times()}
	for {
		at := nextRefresh(st, l.cfg.MinRefreshInterval)
		if d := at.Sub(clock.Now(l.clock)); d > 0 {
			c, stop := clock.After(l.clock, d)
			select {
			case <-ctx.Done():
				stop()
				return nil
			case <-c:
			}
		} else if ctx.Err() != nil {
			return nil
		}
		l.mu.Lock()
		prev, closed := l.mu.cur, l.mu.closed
		l.mu.Unlock()
		if closed {
			return ErrClosed
		}
		st.LastAttempt = clock.Now(l.clock)
		s, err := l.obtain(prev)
		if err != nil {
			st.Failures++
			l.metrics.RefreshFailures.Add(1)
			now := clock.Now(l.clock)
			if now.Before(st.Times.End) {
				l.log.Warn("kerberos: re-login failed; the current TGT is still valid", "principal", l.principal,
					"source", l.source.String(), "expires", st.Times.End, "attempt", st.Failures,
					"retryAt", nextRefresh(st, l.cfg.MinRefreshInterval), "err", err)
			} else {
				l.log.Error("kerberos: re-login failed and the TGT has expired: Kerberos connections will fail",
					"principal", l.principal, "source", l.source.String(), "expired", st.Times.End,
					"attempt", st.Failures, "err", err)
			}
			if errors.Is(err, ErrClosed) {
				return ErrClosed
			}
			continue
		}
		l.install(s)
		l.metrics.Refreshes.Add(1)
		// LastAttempt stays: the next refresh comes no sooner than
		// MinRefreshInterval from now, even if this clock runs ahead of the
		// KDC's and the new ticket looks due already.
		st = refreshState{Times: s.cred.times, LastAttempt: st.LastAttempt}
		l.log.Info("kerberos: TGT refreshed", "principal", l.principal, "source", l.source.String(),
			"expires", st.Times.End, "renewTill", st.Times.RenewTill,
			"nextRefresh", nextRefresh(st, l.cfg.MinRefreshInterval))
	}
}
