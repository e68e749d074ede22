//go:build integration

package delegation

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/integration/minicluster"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/security/kerberos"
)

func TestMain(m *testing.M) { os.Exit(minicluster.RunMain(m)) }

func TestHDFSTokenLifecycle(t *testing.T) {
	c := minicluster.SharedSecure(t)
	k := c.Kerberos
	login, err := kerberos.New(kerberos.Config{Principal: k.Principal, Keytab: k.Keytab, Krb5Conf: k.Krb5Conf})
	if err != nil {
		t.Fatal(err)
	}
	defer login.Close()
	hc := hadoop.NewConfiguration(func(string) string { return "" })
	if err := hc.AddDir(c.ConfDir); err != nil {
		t.Fatal(err)
	}
	qop, err := hc.RPCProtection()
	if err != nil {
		t.Fatal(err)
	}
	nn, err := NameNodeOf(hc, "")
	if err != nil {
		t.Fatal(err)
	}
	dc, err := New(Config{Login: login, QOP: qop})
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	tok, err := dc.ObtainHDFS(ctx, nn, "sluice")
	if err != nil {
		t.Fatal(err)
	}
	if tok.Kind != HDFSTokenKind || tok.Service != "127.0.0.1:"+strings.Split(c.NameNode, ":")[1] {
		t.Errorf("token %s", tok)
	}
	id, err := hadoop.ParseDelegationTokenIdentifier(tok.Identifier)
	if err != nil {
		t.Fatal(err)
	}
	// The secure cluster's tokens live TokenMaxLifetime and must be renewed
	// every TokenRenewInterval.
	if id.Owner != k.Principal || id.Renewer != "sluice" || id.MaxDate.Sub(id.IssueDate) != k.TokenMaxLifetime {
		t.Errorf("identifier %+v; want a max date %v after the issue date", id, k.TokenMaxLifetime)
	}
	exp, err := dc.RenewHDFS(ctx, nn, tok)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(exp); d < k.TokenRenewInterval-10*time.Second || d > k.TokenRenewInterval+time.Second || exp.After(id.MaxDate) {
		t.Errorf("renewed until %s, in %v (max %s); want in the renew interval %v", exp, d, id.MaxDate, k.TokenRenewInterval)
	}

	// A token whose renewer is someone else cannot be renewed by us.
	other, err := dc.ObtainHDFS(ctx, nn, "yarn")
	if err != nil {
		t.Fatal(err)
	}
	_, err = dc.RenewHDFS(ctx, nn, other)
	var re *hadoop.RemoteError
	if !errors.As(err, &re) {
		t.Fatalf("renewing a token renewable by yarn: %v, want a remote AccessControlException", err)
	}
	t.Log(err)

	if err := dc.CancelHDFS(ctx, nn, tok); err != nil {
		t.Fatal(err)
	}
	if _, err := dc.RenewHDFS(ctx, nn, tok); err == nil {
		t.Fatal("a cancelled token was renewed")
	}
}

// TestManagerAgainstTheNameNode: one round of the Manager on the secure NameNode gives a
// credentials file's worth of tokens whose expiry it learnt by renewing, and plans the next
// round at 75% of the remaining lifetime.
func TestManagerAgainstTheNameNode(t *testing.T) {
	c := minicluster.SharedSecure(t)
	k := c.Kerberos
	login, err := kerberos.New(kerberos.Config{Principal: k.Principal, Keytab: k.Keytab, Krb5Conf: k.Krb5Conf})
	if err != nil {
		t.Fatal(err)
	}
	defer login.Close()
	hc := hadoop.NewConfiguration(func(string) string { return "" })
	if err := hc.AddDir(c.ConfDir); err != nil {
		t.Fatal(err)
	}
	nn, err := NameNodeOf(hc, "")
	if err != nil {
		t.Fatal(err)
	}
	dc, err := New(Config{Login: login})
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	clk := clock.NewManualAt(time.Now())
	got := make(chan *hadoop.Credentials, 2)
	m, err := NewManager(ManagerConfig{Client: dc, NameNodes: []NameNode{nn}, Clock: clk, OnTokens: func(c *hadoop.Credentials, _ time.Time) { got <- c }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	var creds *hadoop.Credentials
	select {
	case creds = <-got:
	case <-time.After(time.Minute):
		t.Fatal("no tokens within a minute")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	tok, ok := creds.TokenByKind(HDFSTokenKind)
	if !ok {
		t.Fatal("no HDFS token")
	}
	id, err := hadoop.ParseDelegationTokenIdentifier(tok.Identifier)
	if err != nil {
		t.Fatal(err)
	}
	if id.Renewer != "sluice" {
		t.Errorf("renewer %q, want the login's short name", id.Renewer)
	}
	exp := time.Unix(m.Metrics().Expiry.Load(), 0)
	if d, want := time.Until(exp), c.Kerberos.TokenRenewInterval; d < want-10*time.Second || d > want+time.Second {
		t.Errorf("token expires in %s, want the NameNode's renew interval %v", d, want)
	}
}
