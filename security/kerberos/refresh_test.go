package kerberos

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/sluice/sluice/internal/clock"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestNextRefresh(t *testing.T) {
	day := Times{Start: t0, End: t0.Add(10 * time.Hour)}
	short := Times{Start: t0, End: t0.Add(2 * time.Minute)}
	tests := []struct {
		name string
		st   refreshState
		min  time.Duration
		want time.Time
	}{
		{"fresh ticket: at 80% of its lifetime", refreshState{Times: day}, time.Minute, t0.Add(8 * time.Hour)},
		{"short ticket: 80% comes before the minimum interval after login, which does not apply to the first refresh",
			refreshState{Times: short}, time.Minute, t0.Add(96 * time.Second)},
		{"a refresh that gave no newer ticket waits the minimum interval",
			refreshState{Times: short, LastAttempt: t0.Add(96 * time.Second)}, time.Minute, t0.Add(156 * time.Second)},
		{"first failure: retry after the minimum interval",
			refreshState{Times: day, LastAttempt: t0.Add(8 * time.Hour), Failures: 1}, time.Minute, t0.Add(8*time.Hour + time.Minute)},
		{"third failure: backoff doubles twice",
			refreshState{Times: day, LastAttempt: t0.Add(8 * time.Hour), Failures: 3}, time.Minute, t0.Add(8*time.Hour + 4*time.Minute)},
		{"many failures: backoff capped at 10m",
			refreshState{Times: day, LastAttempt: t0.Add(8 * time.Hour), Failures: 30}, time.Minute, t0.Add(8*time.Hour + 10*time.Minute)},
		{"a retry that would fall after the end is pulled before it",
			refreshState{Times: day, LastAttempt: t0.Add(9*time.Hour + 55*time.Minute), Failures: 5}, time.Minute, t0.Add(10*time.Hour - 30*time.Second)},
		{"after the end: retries go on with backoff",
			refreshState{Times: day, LastAttempt: t0.Add(11 * time.Hour), Failures: 2}, time.Minute, t0.Add(11*time.Hour + 2*time.Minute)},
		{"just before the end: no sooner than half the minimum interval",
			refreshState{Times: day, LastAttempt: t0.Add(10*time.Hour - 40*time.Second), Failures: 4}, time.Minute, t0.Add(10*time.Hour - 10*time.Second)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextRefresh(tc.st, tc.min); !got.Equal(tc.want) {
				t.Fatalf("nextRefresh = %s, want %s", got.Sub(t0), tc.want.Sub(t0))
			}
		})
	}
}

// fakeTGT returns a ticket-cache credential with a well-formed (but
// undecryptable) ticket: enough to build a gokrb5 client offline.
func fakeTGT(t *testing.T, principal string, times Times, renewable bool) *tgtCred {
	t.Helper()
	name, realm, err := SplitPrincipal(principal)
	if err != nil {
		t.Fatal(err)
	}
	cipher := make([]byte, 64)
	rand.Read(cipher)
	tkt := messages.Ticket{
		TktVNO: 5, Realm: realm,
		SName:   types.PrincipalName{NameType: nametype.KRB_NT_SRV_INST, NameString: []string{"krbtgt", realm}},
		EncPart: types.EncryptedData{EType: etypeID.AES256_CTS_HMAC_SHA1_96, KVNO: 1, Cipher: cipher},
	}
	b, err := tkt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	rand.Read(key)
	flags := []byte{0x40, 0, 0, 0} // forwardable
	if renewable {
		flags[1] |= 0x80
	}
	return &tgtCred{
		client: types.NewPrincipalName(nametype.KRB_NT_PRINCIPAL, name), realm: realm, ticket: b,
		key: types.EncryptionKey{KeyType: etypeID.AES256_CTS_HMAC_SHA1_96, KeyValue: key}, times: times, flags: flags,
	}
}

func writeCache(t *testing.T, path string, c *tgtCred) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", encodeCCache(c), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

const testKrb5Conf = `[libdefaults]
  default_realm = EXAMPLE.COM
  dns_lookup_kdc = false
  dns_lookup_realm = false
[realms]
  EXAMPLE.COM = {
    kdc = 127.0.0.1:1
  }
`

func writeKrb5Conf(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "krb5.conf")
	if err := os.WriteFile(p, []byte(testKrb5Conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tlogWriter struct{ t *testing.T }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestTicketCacheRoundTrip(t *testing.T) {
	dir := t.TempDir()
	cc := filepath.Join(dir, "cc")
	times := Times{Auth: t0, Start: t0, End: t0.Add(time.Hour), RenewTill: t0.Add(24 * time.Hour)}
	cred := fakeTGT(t, "alice/host.example.com@EXAMPLE.COM", times, true)
	writeCache(t, cc, cred)
	clk := clock.NewManualAt(t0.Add(time.Minute))
	l, err := New(Config{Krb5Conf: writeKrb5Conf(t, dir), UseTicketCache: true, TicketCache: "FILE:" + cc}, WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := l.Principal(); got != "alice/host.example.com@EXAMPLE.COM" {
		t.Errorf("Principal = %q", got)
	}
	if got := l.Times(); got != times {
		t.Errorf("Times = %+v, want %+v", got, times)
	}
	if !renewable(l.mu.cur.cred) {
		t.Error("renewable flag lost")
	}
	if got := l.Metrics().TGTExpiry.Load(); got != times.End.Unix() {
		t.Errorf("expiry metric = %d, want %d", got, times.End.Unix())
	}
	out := filepath.Join(dir, "out")
	if err := l.WriteTicketCache(out); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(cc)
	b, _ := os.ReadFile(out)
	if string(a) != string(b) {
		t.Error("a ticket cache written back differs from the one read")
	}
}

// TestRunRefreshesFromTheTicketCache drives the owner loop with a scripted
// clock: it re-reads the cache at 80% of the lifetime and picks up a newer
// TGT (as after a kinit -R by another process), and once no newer TGT comes
// and the old one is not renewable, the login reports it expired.
func TestRunRefreshesFromTheTicketCache(t *testing.T) {
	dir := t.TempDir()
	cc := filepath.Join(dir, "cc")
	first := Times{Auth: t0, Start: t0, End: t0.Add(time.Hour)}
	writeCache(t, cc, fakeTGT(t, "bob@EXAMPLE.COM", first, false))
	clk := clock.NewManualAt(t0)
	l, err := New(Config{Krb5Conf: writeKrb5Conf(t, dir), UseTicketCache: true, TicketCache: cc, MinRefreshInterval: time.Minute},
		WithClock(clk), WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var runErr error
	wg.Add(1)
	go func() { defer wg.Done(); runErr = l.Run(ctx) }()
	defer func() {
		cancel()
		wg.Wait()
		if runErr != nil {
			t.Errorf("Run: %v", runErr)
		}
	}()

	waitTimer := func(want time.Time) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := clk.BlockUntilArmedAt(ctx, want.UnixMilli()); err != nil {
			t.Fatalf("the loop did not arm a timer for %s (t0 is %d): %v", want.Sub(t0), t0.UnixMilli(), err)
		}
	}

	waitTimer(t0.Add(48 * time.Minute))
	second := Times{Auth: t0.Add(47 * time.Minute), Start: t0.Add(47 * time.Minute), End: t0.Add(107 * time.Minute)}
	writeCache(t, cc, fakeTGT(t, "bob@EXAMPLE.COM", second, false))
	clk.SetTime(t0.Add(48 * time.Minute))
	// The next refresh is planned at 80% of the new ticket's lifetime.
	waitTimer(second.Start.Add(48 * time.Minute))
	if got := l.Times(); got != second {
		t.Fatalf("after refresh Times = %+v, want %+v", got, second)
	}
	if got := l.Metrics().Refreshes.Load(); got != 1 {
		t.Errorf("refreshes = %d, want 1", got)
	}
	// No newer ticket: the attempt fails (not renewable) and is retried
	// after the minimum interval while the ticket is still valid.
	clk.SetTime(second.Start.Add(48 * time.Minute))
	waitTimer(second.Start.Add(49 * time.Minute))
	if got := l.Metrics().RefreshFailures.Load(); got != 1 {
		t.Errorf("failures = %d, want 1", got)
	}
	if _, err := l.CurrentClient(); err != nil {
		t.Fatalf("the TGT is still valid, yet: %v", err)
	}
	clk.SetTime(second.End)
	if _, err := l.CurrentClient(); !errors.Is(err, ErrTicketExpired) {
		t.Fatalf("after the end, CurrentClient err = %v, want ErrTicketExpired", err)
	} else {
		t.Log(err)
	}
	if _, _, err := l.ServiceTicket("hdfs/nn.example.com"); !errors.Is(err, ErrTicketExpired) {
		t.Fatalf("after the end, ServiceTicket err = %v, want ErrTicketExpired", err)
	}
}
