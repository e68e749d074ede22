package yarndeploy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/hadoop"
)

// The client's Kerberos failures are ErrKerberos and say "kerberos:" once
// (issue 18 saw "Kerberos: kerberos:"), naming what to fix.
func TestKerberosErrorsSayKerberosOnce(t *testing.T) {
	h := hadoop.NewConfiguration(nil)
	h.Set(hadoop.KeySecurityAuthentication, "kerberos")
	krb5 := filepath.Join(t.TempDir(), "krb5.conf")
	if err := os.WriteFile(krb5, []byte("[libdefaults]\n  default_realm = R\n[realms]\n  R = {\n    kdc = 127.0.0.1:1\n  }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"a principal without a keytab or ticket cache", map[string]string{"security.kerberos.login.principal": "a@R",
			"security.kerberos.login.use-ticket-cache": "false"}, "security.kerberos.login.keytab"},
		{"a keytab that is not there", map[string]string{"security.kerberos.login.principal": "a@R",
			"security.kerberos.login.keytab": "/nonexistent/a.keytab"}, "/nonexistent/a.keytab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.props["security.kerberos.krb5-conf.path"] = krb5
			_, _, err := kerberosLogin(Options{Conf: conf.FromMap(tc.props, conf.Source{Name: "test"}), Logger: testLogger(t)}, h)
			if !errors.Is(err, ErrKerberos) {
				t.Fatalf("kerberosLogin: %v, want an ErrKerberos", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "yarndeploy: ") || strings.Count(strings.ToLower(msg), "kerberos:") != 1 || !strings.Contains(msg, tc.want) {
				t.Errorf("%q: want one \"kerberos:\" after \"yarndeploy: \", naming %s", msg, tc.want)
			}
		})
	}
}
