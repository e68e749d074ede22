package kerberos

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/clock"
)

func TestMetricsStatus(t *testing.T) {
	for _, tc := range []struct {
		name                                   string
		expiry, renewTill, refreshes, failures int64
		want                                   Status
	}{
		{"fresh login", 1_772_370_000, 1_772_452_800, 0, 0,
			Status{Principal: "sluice/host@EXAMPLE.COM", TGTExpiry: 1_772_370_000, TGTRenewTill: 1_772_452_800}},
		{"not renewable, after re-logins and failures", 1_772_373_600, 0, 3, 2,
			Status{Principal: "sluice/host@EXAMPLE.COM", TGTExpiry: 1_772_373_600, Relogins: 3, ReloginFailures: 2}},
		{"nothing yet", 0, 0, 0, 0, Status{Principal: "sluice/host@EXAMPLE.COM"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Metrics
			m.TGTExpiry.Store(tc.expiry)
			m.TGTRenewTill.Store(tc.renewTill)
			m.Refreshes.Store(tc.refreshes)
			m.RefreshFailures.Store(tc.failures)
			if got := m.Status("sluice/host@EXAMPLE.COM"); got != tc.want {
				t.Errorf("Status = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A login's Status names its principal and its TGT's times, from a ticket
// cache (no KDC).
func TestLoginStatus(t *testing.T) {
	for _, tc := range []struct {
		name      string
		renewable bool
		times     Times
		wantTill  int64
	}{
		{"renewable", true, Times{Auth: t0, Start: t0, End: t0.Add(time.Hour), RenewTill: t0.Add(24 * time.Hour)}, t0.Add(24 * time.Hour).Unix()},
		{"not renewable", false, Times{Auth: t0, Start: t0, End: t0.Add(10 * time.Hour)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cc := filepath.Join(dir, "cc")
			writeCache(t, cc, fakeTGT(t, "carol@EXAMPLE.COM", tc.times, tc.renewable))
			l, err := New(Config{Krb5Conf: writeKrb5Conf(t, dir), UseTicketCache: true, TicketCache: cc}, WithClock(clock.NewManualAt(t0)))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			l.Metrics().Refreshes.Add(2)
			l.Metrics().RefreshFailures.Add(1)
			want := Status{Principal: "carol@EXAMPLE.COM", TGTExpiry: tc.times.End.Unix(), TGTRenewTill: tc.wantTill, Relogins: 2, ReloginFailures: 1}
			if got := l.Status(); got != want {
				t.Errorf("Status = %+v, want %+v", got, want)
			}
		})
	}
}
