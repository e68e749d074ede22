package kerberos

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/errorcode"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/krberror"
	"github.com/jcmturner/gokrb5/v8/messages"

	"github.com/sluice/sluice/internal/clock"
)

// TestClassifyGokrb5Errors feeds errors built the way gokrb5 builds them
// (a KRBError from the KDC flattened by krberror.Errorf) through classify:
// if gokrb5 changes how it renders them, this fails.
func TestClassifyGokrb5Errors(t *testing.T) {
	tests := []struct {
		code int32
		want error
	}{
		{errorcode.KDC_ERR_C_PRINCIPAL_UNKNOWN, ErrWrongPrincipal},
		{errorcode.KDC_ERR_PREAUTH_FAILED, ErrBadCredentials},
		{errorcode.KRB_AP_ERR_SKEW, ErrClockSkew},
		{errorcode.KDC_ERR_WRONG_REALM, ErrUnknownRealm},
		{errorcode.KRB_AP_ERR_TKT_EXPIRED, ErrTicketExpired},
		{errorcode.KDC_ERR_S_PRINCIPAL_UNKNOWN, ErrServerPrincipal},
		{errorcode.KRB_AP_ERR_MODIFIED, ErrServerPrincipal},
		{errorcode.KDC_ERR_BADOPTION, ErrKDC},
	}
	for _, tc := range tests {
		t.Run(errorcode.Lookup(tc.code), func(t *testing.T) {
			kerr := messages.KRBError{ErrorCode: tc.code, EText: "from the KDC"}
			err := krberror.Errorf(kerr, krberror.KDCError, "AS Exchange Error: kerberos error response from KDC")
			err = krberror.Errorf(err, krberror.KRBMsgError, "outer")
			e := classify(err, "login from keytab", "a@R", "", ErrKDC)
			if !errors.Is(e, tc.want) || e.Code != tc.code {
				t.Fatalf("classify = %v (code %d), want kind %v code %d", e, e.Code, tc.want, tc.code)
			}
			if tc.want != ErrKDC && !strings.Contains(e.Error(), hints[tc.want]) {
				t.Errorf("message %q lacks the hint %q", e, hints[tc.want])
			}
		})
	}
	t.Run("java GSS-API failure from a server", func(t *testing.T) {
		err := fmt.Errorf("ipc: remote javax.security.sasl.SaslException: GSS initiate failed [Caused by GSSException: Failure unspecified at GSS-API level (Mechanism level: Clock skew too great (37))]")
		if e := classify(err, "authenticate", "a@R", "hdfs/localhost", ErrKDC); !errors.Is(e, ErrClockSkew) {
			t.Fatalf("classify = %v, want ErrClockSkew", e)
		}
	})
	t.Run("unreachable KDC", func(t *testing.T) {
		err := krberror.Errorf(fmt.Errorf("communication error with KDC via TCP: dial tcp 127.0.0.1:1: connection refused"), krberror.NetworkingError, "AS Exchange Error: failed sending AS_REQ to KDC")
		if e := classify(err, "login", "a@R", "", ErrKDC); !errors.Is(e, ErrKDCUnreachable) || !Retryable(e) {
			t.Fatalf("classify = %v, want a retryable ErrKDCUnreachable", e)
		}
	})
}

func writeKeytab(t *testing.T, path string, principals ...string) {
	t.Helper()
	kt := keytab.New()
	for _, p := range principals {
		name, realm, err := SplitPrincipal(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := kt.AddEntry(name, realm, "secret", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
			t.Fatal(err)
		}
	}
	b, err := kt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLoginErrorsNameWhatToCheck covers the failures found before the KDC
// is asked: each must be of its kind and name the setting or file to check.
func TestLoginErrorsNameWhatToCheck(t *testing.T) {
	dir := t.TempDir()
	krb5 := writeKrb5Conf(t, dir)
	kt := filepath.Join(dir, "sluice.keytab")
	writeKeytab(t, kt, "sluice/host@EXAMPLE.COM", "other@EXAMPLE.COM")
	garbage := filepath.Join(dir, "garbage.keytab")
	os.WriteFile(garbage, []byte("not a keytab"), 0o600)
	ccGarbage := filepath.Join(dir, "cc-garbage")
	os.WriteFile(ccGarbage, []byte{5, 4, 0, 0, 1}, 0o600)
	expired := filepath.Join(dir, "cc-expired")
	writeCache(t, expired, fakeTGT(t, "bob@EXAMPLE.COM", Times{Auth: t0, Start: t0, End: t0.Add(time.Hour)}, false))
	now := clock.NewManualAt(t0.Add(2 * time.Hour))
	noDefaultRealm := filepath.Join(dir, "no-default-realm.conf")
	os.WriteFile(noDefaultRealm, []byte("[realms]\n  EXAMPLE.COM = {\n    kdc = 127.0.0.1:1\n  }\n"), 0o644)

	tests := []struct {
		name string
		cfg  Config
		kind error
		says []string
	}{
		{"keytab without principal", Config{Keytab: kt, Krb5Conf: krb5}, ErrConfig, []string{"security.kerberos.login.principal is not"}},
		{"malformed principal", Config{Principal: "sluice@", Keytab: kt, Krb5Conf: krb5}, ErrConfig, []string{`"sluice@" is not user[@REALM]`}},
		// A principal without a realm is in krb5.conf's default_realm (as for kinit): here, one the keytab has no key of.
		{"principal without realm", Config{Principal: "sluice", Keytab: kt, Krb5Conf: krb5}, ErrKeytab, []string{"no key of sluice@EXAMPLE.COM"}},
		{"principal without realm, no default_realm", Config{Principal: "sluice/host", Keytab: kt, Krb5Conf: noDefaultRealm}, ErrConfig,
			[]string{`"sluice/host" has no realm`, "default_realm", noDefaultRealm}},
		{"nothing to log in with", Config{Principal: "a@EXAMPLE.COM"}, ErrConfig, []string{"use-ticket-cache"}},
		{"missing keytab", Config{Principal: "sluice/host@EXAMPLE.COM", Keytab: filepath.Join(dir, "nope.keytab"), Krb5Conf: krb5}, ErrKeytab,
			[]string{"nope.keytab", "does not exist", "security.kerberos.login.keytab"}},
		{"unreadable keytab (a directory)", Config{Principal: "sluice/host@EXAMPLE.COM", Keytab: dir, Krb5Conf: krb5}, ErrKeytab,
			[]string{dir, "readable"}},
		{"not a keytab", Config{Principal: "sluice/host@EXAMPLE.COM", Keytab: garbage, Krb5Conf: krb5}, ErrKeytab, []string{"not a keytab"}},
		{"wrong principal for the keytab", Config{Principal: "sluice/other@EXAMPLE.COM", Keytab: kt, Krb5Conf: krb5}, ErrKeytab,
			[]string{"no key of sluice/other@EXAMPLE.COM", "sluice/host@EXAMPLE.COM, other@EXAMPLE.COM"}},
		{"unknown realm", Config{Principal: "sluice/host@NOWHERE.ORG", Keytab: kt, Krb5Conf: krb5}, ErrUnknownRealm,
			[]string{"no kdc for realm NOWHERE.ORG", "EXAMPLE.COM", "[realms]"}},
		{"missing krb5.conf", Config{Principal: "sluice/host@EXAMPLE.COM", Keytab: kt, Krb5Conf: filepath.Join(dir, "none.conf")}, ErrConfig,
			[]string{"none.conf", "security.kerberos.krb5-conf.path"}},
		{"missing ticket cache", Config{UseTicketCache: true, TicketCache: filepath.Join(dir, "nocache"), Krb5Conf: krb5}, ErrTicketCache,
			[]string{"nocache", "kinit"}},
		{"unsupported ticket cache type", Config{UseTicketCache: true, TicketCache: "KEYRING:persistent:0", Krb5Conf: krb5}, ErrTicketCache,
			[]string{"KEYRING is not supported", "FILE:"}},
		{"corrupt ticket cache", Config{UseTicketCache: true, TicketCache: ccGarbage, Krb5Conf: krb5}, ErrTicketCache, []string{"cc-garbage"}},
		{"ticket cache of another principal", Config{Principal: "alice@EXAMPLE.COM", UseTicketCache: true, TicketCache: expired, Krb5Conf: krb5}, ErrWrongPrincipal,
			[]string{"holds tickets of bob@EXAMPLE.COM, not of security.kerberos.login.principal alice@EXAMPLE.COM"}},
		{"expired ticket cache", Config{UseTicketCache: true, TicketCache: expired, Krb5Conf: krb5}, ErrTicketExpired,
			[]string{"expired at 2026-03-01T13:00:00Z", "kinit"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg, WithClock(now))
			if !errors.Is(err, tc.kind) {
				t.Fatalf("New: %v, want kind %v", err, tc.kind)
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

// FuzzTicketCacheAndKeytabFiles: whatever a ticket cache or keytab file
// holds, a login reports an error or succeeds; it never panics.
func FuzzTicketCacheAndKeytabFiles(f *testing.F) {
	dir := f.TempDir()
	krb5 := writeKrb5Conf(&testing.T{}, dir)
	cred := &tgtCred{realm: "EXAMPLE.COM", ticket: []byte{0x61, 0x03, 0x02, 0x01, 0x05}, times: Times{End: time.Now().Add(time.Hour)}}
	cred.client.NameString = []string{"bob"}
	f.Add(encodeCCache(cred))
	f.Add([]byte{5, 4, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1})
	f.Add([]byte{5, 2, 0, 0, 0, 40, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if l, err := New(Config{UseTicketCache: true, TicketCache: p, Krb5Conf: krb5}); err == nil {
			l.Close()
		}
		if _, err := loadKeytab(p, "bob@EXAMPLE.COM"); err != nil && !errors.Is(err, ErrKeytab) {
			t.Fatalf("keytab error of another kind: %v", err)
		}
	})
}
