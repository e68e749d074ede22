//go:build integration

package yarn_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/integration/minicluster"
	"github.com/sluice/sluice/security/kerberos"
	"github.com/sluice/sluice/yarn"
)

// TestKerberosResourceManager talks to the secure ResourceManager over SASL GSSAPI with the
// protection its configuration asks for, configured from the cluster's conf dir.
func TestKerberosResourceManager(t *testing.T) {
	c := minicluster.SharedSecure(t)
	k := c.Kerberos
	login, err := kerberos.New(kerberos.Config{Principal: k.Principal, Keytab: k.Keytab, Krb5Conf: k.Krb5Conf})
	if err != nil {
		t.Fatal(err)
	}
	defer login.Close()
	conf := hadoop.NewConfiguration(os.Getenv)
	if err := conf.AddDir(c.ConfDir); err != nil {
		t.Fatal(err)
	}
	cfg := yarn.ClientConfig{ResourceManagers: []string{c.ResourceManager}, User: "sluice", Logger: logger(t), ConnectAttempts: 2}
	if err := yarn.ConfigureKerberos(&cfg, conf, nil); err == nil || !strings.Contains(err.Error(), "no Kerberos login") {
		t.Fatalf("a secure cluster without a login: %v", err)
	}
	if err := yarn.ConfigureKerberos(&cfg, conf, login); err != nil {
		t.Fatal(err)
	}
	if cfg.ServerPrincipal != "hdfs/_HOST@"+k.Realm || len(cfg.QOP) != 3 {
		t.Fatalf("config from the conf dir: principal %q qop %v", cfg.ServerPrincipal, cfg.QOP)
	}
	cl, err := yarn.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	m, err := cl.GetClusterMetrics(testCtx(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if m.NodeManagers < 1 {
		t.Fatalf("cluster metrics %+v", m)
	}
	if _, err := cl.GetNewApplication(testCtx(t, time.Minute)); err != nil {
		t.Fatalf("GetNewApplication over Kerberos: %v", err)
	}

	// Without a login, the secure RM is refused with an error that says what is missing.
	plain, err := yarn.NewClient(yarn.ClientConfig{ResourceManagers: []string{c.ResourceManager}, User: "sluice", ConnectAttempts: 1, MaxFailovers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	_, err = plain.GetClusterMetrics(testCtx(t, time.Minute))
	var re *hadoop.RemoteError
	if err == nil || !errors.As(err, &re) {
		t.Fatalf("SIMPLE against the secure RM: %v, want the server's refusal", err)
	}
	t.Log(err)
}
