package hadoopenv

import (
	"testing"

	"github.com/sluice/sluice/conf"
)

func TestContainerKerberos(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		settings             map[string]string
		wantOK               bool
		wantKeytab, wantKrb5 string
	}{
		{name: "no keytab", settings: map[string]string{"security.kerberos.login.principal": "alice@EXAMPLE.COM"}},
		{name: "shipped keytab", settings: map[string]string{
			"security.kerberos.login.principal": "alice@EXAMPLE.COM", "security.kerberos.login.keytab": "/home/alice/a.keytab"},
			wantOK: true, wantKeytab: "/c/krb5.keytab"},
		{name: "shipped keytab and krb5.conf, own link name", settings: map[string]string{
			"security.kerberos.login.principal": "alice@EXAMPLE.COM", "security.kerberos.login.keytab": "/home/alice/a.keytab",
			"yarn.security.kerberos.localized-keytab-path": "alice.keytab", "security.kerberos.krb5-conf.path": "/etc/other-krb5.conf"},
			wantOK: true, wantKeytab: "/c/alice.keytab", wantKrb5: "/c/krb5.conf"},
		{name: "keytab on every node", settings: map[string]string{
			"security.kerberos.login.principal": "alice@EXAMPLE.COM", "security.kerberos.login.keytab": "/home/alice/a.keytab",
			"yarn.security.kerberos.ship-local-keytab": "false", "yarn.security.kerberos.localized-keytab-path": "/etc/security/alice.keytab"},
			wantOK: true, wantKeytab: "/etc/security/alice.keytab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc, ok := ContainerKerberos(conf.FromMap(tc.settings, conf.Source{Name: "test"}), "/c")
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if !ok {
				return
			}
			if kc.Keytab != tc.wantKeytab || kc.Krb5Conf != tc.wantKrb5 || kc.UseTicketCache || kc.Principal != "alice@EXAMPLE.COM" {
				t.Fatalf("got %+v, want keytab %q, krb5.conf %q, no ticket cache", kc, tc.wantKeytab, tc.wantKrb5)
			}
			props := KerberosProperties(kc)
			back, _ := ContainerKerberos(conf.FromMap(props, conf.Source{Name: "worker"}), "/elsewhere")
			if back.Principal != kc.Principal {
				t.Fatalf("KerberosProperties lost the principal: %v", props)
			}
			if props[conf.KerberosKeytab.Key()] != kc.Keytab {
				t.Fatalf("KerberosProperties: keytab %q, want %q", props[conf.KerberosKeytab.Key()], kc.Keytab)
			}
		})
	}
}

func TestKeytabLinkName(t *testing.T) {
	for _, tc := range []struct {
		path string
		ok   bool
	}{{"krb5.keytab", true}, {"sub/krb5.keytab", false}, {"..", false}, {"", false}} {
		c := conf.FromMap(map[string]string{"yarn.security.kerberos.localized-keytab-path": tc.path}, conf.Source{Name: "test"})
		if _, err := KeytabLinkName(c); (err == nil) != tc.ok {
			t.Errorf("KeytabLinkName(%q): %v, want ok=%v", tc.path, err, tc.ok)
		}
	}
}
