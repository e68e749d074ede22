//go:build integration

package kerberos

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/integration/minicluster"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/testwait"
)

func TestMain(m *testing.M) { os.Exit(minicluster.RunMain(m)) }

func kdcOf(t *testing.T) *minicluster.Kerberos {
	t.Helper()
	return minicluster.SharedSecure(t).Kerberos
}

func TestKeytabLoginAgainstTheKDC(t *testing.T) {
	k := kdcOf(t)
	l, err := New(Config{Principal: k.Principal, Keytab: k.Keytab, Krb5Conf: k.Krb5Conf}, WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tm := l.Times()
	if life := tm.Lifetime(); life < 9*time.Hour || life > 11*time.Hour {
		t.Errorf("TGT lifetime %s, want the KDC's 10h", life)
	}
	if d := time.Until(tm.End); d < 9*time.Hour {
		t.Errorf("TGT ends in %s", d)
	}
	if tm.RenewTill.Before(tm.End) {
		t.Errorf("renew-till %s before end %s", tm.RenewTill, tm.End)
	}
	tkt, key, err := l.ServiceTicket("hdfs/localhost")
	if err != nil {
		t.Fatal(err)
	}
	if tkt.SName.PrincipalNameString() != "hdfs/localhost" || len(key.KeyValue) == 0 {
		t.Errorf("service ticket for %s, key %d bytes", tkt.SName.PrincipalNameString(), len(key.KeyValue))
	}
	if _, err := l.GokrbClient(); err != nil {
		t.Fatalf("GokrbClient: %v", err)
	}

	// The same TGT through a ticket cache file, as KRB5CCNAME hands it to a process.
	cc := filepath.Join(t.TempDir(), "krb5cc")
	if err := l.WriteTicketCache(cc); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KRB5CCNAME", "FILE:"+cc)
	fromCache, err := New(Config{UseTicketCache: true, Krb5Conf: k.Krb5Conf})
	if err != nil {
		t.Fatal(err)
	}
	defer fromCache.Close()
	if fromCache.Principal() != k.Principal || fromCache.Source() != FromTicketCache {
		t.Errorf("cache login: %s from %s", fromCache.Principal(), fromCache.Source())
	}
	if _, _, err := fromCache.ServiceTicket("yarn/localhost"); err != nil {
		t.Fatalf("service ticket from the cached TGT: %v", err)
	}
	// Renewal of the cached (renewable) TGT by a TGS exchange: the cache holds nothing newer.
	before := fromCache.Times()
	s, err := fromCache.obtain(fromCache.mu.cur)
	if err != nil {
		t.Fatalf("renewing the cached TGT: %v", err)
	}
	fromCache.install(s)
	if after := fromCache.Times(); after.End.Before(before.End) || after.RenewTill.IsZero() {
		t.Errorf("renewed TGT %+v, before %+v", after, before)
	}
	if _, _, err := fromCache.ServiceTicket("hdfs/localhost"); err != nil {
		t.Fatalf("service ticket after renewal: %v", err)
	}
}

// TestReloginFromKeytab runs the owner loop with a manual clock against the real KDC: at 80%
// of the lifetime it logs in again and installs the new TGT.
func TestReloginFromKeytab(t *testing.T) {
	k := kdcOf(t)
	clk := clock.NewManualAt(time.Now())
	l, err := New(Config{Principal: k.Principal, Keytab: k.Keytab, Krb5Conf: k.Krb5Conf}, WithClock(clk), WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	first := l.Times()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); l.Run(ctx) }()
	defer func() { cancel(); wg.Wait() }()
	want := first.Start.Add(time.Duration(float64(first.Lifetime()) * renewWindow))
	armed(t, clk, want)
	clk.SetTime(want)
	testwait.Eventually(t, 30*time.Second, "the re-login", func() bool { return l.Metrics().Refreshes.Load() == 1 })
	// The manual clock now runs 8h ahead of the KDC's, so the new ticket looks due already:
	// the loop must still wait the minimum interval instead of hammering the KDC.
	armed(t, clk, want.Add(time.Minute))
	if n := l.Metrics().Refreshes.Load(); n != 1 {
		t.Fatalf("%d refreshes, want 1", n)
	}
	if _, _, err := l.ServiceTicket("hdfs/localhost"); err != nil {
		t.Fatalf("service ticket after re-login: %v", err)
	}
}

// armed waits until the login's loop arms its timer for at.
func armed(t *testing.T, clk *clock.Manual, at time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := clk.BlockUntilArmedAt(ctx, at.UnixMilli()); err != nil {
		t.Fatalf("the login did not plan a refresh at %s: %v", at, err)
	}
}

// TestKDCFailuresNameWhatToCheck: the usual failures against a real KDC.
func TestKDCFailuresNameWhatToCheck(t *testing.T) {
	k := kdcOf(t)
	dir := t.TempDir()
	ghost := filepath.Join(dir, "ghost.keytab")
	writeKeytab(t, ghost, "ghost@"+k.Realm)
	stale := filepath.Join(dir, "stale.keytab")
	writeKeytab(t, stale, k.Principal) // a key the KDC does not hold (as after a password change)
	deadKDC := filepath.Join(dir, "dead-krb5.conf")
	os.WriteFile(deadKDC, []byte(strings.ReplaceAll(testKrb5Conf, "EXAMPLE.COM", k.Realm)), 0o644)

	good, err := New(Config{Principal: k.Principal, Keytab: k.Keytab, Krb5Conf: k.Krb5Conf})
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()

	tests := []struct {
		name string
		run  func() error
		kind error
		says []string
	}{
		{"principal unknown to the KDC", func() error {
			_, err := New(Config{Principal: "ghost@" + k.Realm, Keytab: ghost, Krb5Conf: k.Krb5Conf})
			return err
		}, ErrWrongPrincipal, []string{"does not know ghost@" + k.Realm, "security.kerberos.login.principal"}},
		{"outdated keytab", func() error {
			_, err := New(Config{Principal: k.Principal, Keytab: stale, Krb5Conf: k.Krb5Conf})
			return err
		}, ErrBadCredentials, []string{"regenerate the keytab"}},
		{"KDC unreachable", func() error {
			_, err := New(Config{Principal: k.Principal, Keytab: k.Keytab, Krb5Conf: deadKDC})
			return err
		}, ErrKDCUnreachable, []string{"no KDC of realm " + k.Realm + " answered", deadKDC}},
		{"service principal unknown", func() error {
			_, _, err := good.ServiceTicket("hdfs/nosuchhost")
			return err
		}, ErrServerPrincipal, []string{"no principal hdfs/nosuchhost", "_HOST"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if !errors.Is(err, tc.kind) {
				t.Fatalf("err = %v, want kind %v", err, tc.kind)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			t.Log(err)
		})
	}
}

// shortKrb5 is the cluster's krb5.conf asking for 30-second tickets (renewable for the KDC's
// week), so that tests see tickets expire and get replaced in real time.
func shortKrb5(t *testing.T, krb5 string) string {
	t.Helper()
	b, err := os.ReadFile(krb5)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "ticket_lifetime = 10h", "ticket_lifetime = 30s", 1)
	if s == string(b) {
		t.Fatalf("%s has no ticket_lifetime = 10h line to shorten", krb5)
	}
	p := filepath.Join(t.TempDir(), "krb5.conf")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runLogin(t *testing.T, l *Login) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// TestLoginsOutliveTheirTickets runs on the wall clock with 30 s tickets: a keytab login
// re-logs in and a ticket cache login renews its TGT before expiry, so service tickets are
// still had after the first TGT ended; a ticket cache login without its loop expires.
func TestLoginsOutliveTheirTickets(t *testing.T) {
	k := kdcOf(t)
	krb5 := shortKrb5(t, k.Krb5Conf)
	t.Run("keytab", func(t *testing.T) {
		t.Parallel()
		l, err := New(Config{Principal: k.Principal, Keytab: k.Keytab, Krb5Conf: krb5, MinRefreshInterval: 2 * time.Second}, WithLogger(testLogger(t)))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		first := l.Times()
		if first.Lifetime() > time.Minute {
			t.Fatalf("TGT lifetime %s, want the 30s asked for", first.Lifetime())
		}
		runLogin(t, l)
		waitPast(t, first.End)
		if _, _, err := l.ServiceTicket("hdfs/localhost"); err != nil {
			t.Fatalf("after the first TGT ended: %v", err)
		}
		if n := l.Metrics().Refreshes.Load(); n < 1 {
			t.Errorf("%d re-logins", n)
		}
		if got := time.Unix(l.Metrics().TGTExpiry.Load(), 0); !got.After(first.End) {
			t.Errorf("expiry gauge %s, not past the first TGT's %s", got, first.End)
		}
	})
	t.Run("ticket cache", func(t *testing.T) {
		t.Parallel()
		cc := filepath.Join(t.TempDir(), "cc")
		writeCacheFromKeytab(t, k, krb5, cc)
		renewed, err := New(Config{UseTicketCache: true, TicketCache: cc, Krb5Conf: krb5, MinRefreshInterval: 2 * time.Second}, WithLogger(testLogger(t)))
		if err != nil {
			t.Fatal(err)
		}
		defer renewed.Close()
		left, err := New(Config{UseTicketCache: true, TicketCache: cc, Krb5Conf: krb5})
		if err != nil {
			t.Fatal(err)
		}
		defer left.Close()
		first := renewed.Times()
		runLogin(t, renewed) // and none for left
		waitPast(t, first.End)

		// The cache file still holds the first TGT: the one in force was renewed at the KDC.
		if _, _, err := renewed.ServiceTicket("hdfs/localhost"); err != nil {
			t.Fatalf("after the cached TGT ended: %v", err)
		}
		if got := renewed.Times(); !got.End.After(first.End) || renewed.Metrics().Refreshes.Load() < 1 {
			t.Errorf("TGT %+v after renewal of %+v", got, first)
		}

		_, _, err = left.ServiceTicket("hdfs/localhost")
		if !errors.Is(err, ErrTicketExpired) || !strings.Contains(err.Error(), "kinit") {
			t.Fatalf("an expired, unrenewed TGT: %v, want ErrTicketExpired saying what to do", err)
		}
		t.Log(err)
	})
}

func writeCacheFromKeytab(t *testing.T, k *minicluster.Kerberos, krb5, path string) {
	t.Helper()
	l, err := New(Config{Principal: k.Principal, Keytab: k.Keytab, Krb5Conf: krb5})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.WriteTicketCache(path); err != nil {
		t.Fatal(err)
	}
}

// waitPast waits on the wall clock until end has passed (plus a second for the KDC's
// whole-second times): the test is about real expiry.
func waitPast(t *testing.T, end time.Time) {
	t.Helper()
	d := time.Until(end) + time.Second
	if d > time.Minute {
		t.Fatalf("would wait %s", d)
	}
	time.Sleep(d) // waiting for a ticket to expire in real time, not for another goroutine
}
