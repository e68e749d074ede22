//go:build integration

package yarn_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/integration/minicluster"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/security/kerberos"
	"github.com/sluice/sluice/yarn"
	"github.com/sluice/sluice/yarn/delegation"
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

// TestKerberosAMWithPrivacy runs an ApplicationMaster's whole flow against the secure cluster
// with hadoop.rpc.protection=privacy on every connection. The client submits over Kerberos
// (GSSAPI auth-conf) with an HDFS delegation token (renewable by the ResourceManager, which
// renews it at submission) in the AM container's credentials. The AM container hands its
// credentials file to the test, which plays the AM with them: it finds the HDFS token and the
// AMRMToken there, registers and allocates (DIGEST-MD5 auth-conf), starts a container with its
// NMToken (DIGEST-MD5 auth-conf) passing the HDFS token on, and the container's credentials hold
// the live token. (An unmanaged AM cannot be used: a secure RM hands the AMRMToken only to a
// caller whose full principal equals the application's short user name.)
func TestKerberosAMWithPrivacy(t *testing.T) {
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
	privacy := []hadoop.QOP{hadoop.QOPPrivacy}
	cfg := yarn.ClientConfig{ResourceManagers: []string{c.ResourceManager}, User: "sluice", Logger: logger(t)}
	if err := yarn.ConfigureKerberos(&cfg, conf, login); err != nil {
		t.Fatal(err)
	}
	cfg.QOP = privacy
	cl, err := yarn.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testCtx(t, 3*time.Minute)

	dc, err := delegation.New(delegation.Config{Login: login, QOP: privacy})
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	nn, err := delegation.NameNodeOf(conf, "")
	if err != nil {
		t.Fatal(err)
	}
	// The ResourceManager renews the application's tokens as itself: its principal's short name
	// is the renewer.
	rmShort, _, _ := strings.Cut(k.RM, "/")
	hdfsToken, err := dc.ObtainHDFS(ctx, nn, rmShort)
	if err != nil {
		t.Fatal(err)
	}
	var amCreds hadoop.Credentials
	amCreds.AddToken(hdfsToken.Service, hdfsToken)
	amCredBytes, err := amCreds.Marshal(hadoop.FormatWritable)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	amTokensOut, release := filepath.Join(dir, "am-tokens"), filepath.Join(dir, "release")

	na, err := cl.GetNewApplication(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.SubmitApplication(ctx, &yarn.SubmissionContext{
		ID: na.ID, Name: "sluice-kerberos-am", Queue: "default", Type: "SLUICE-TEST", MaxAppAttempts: 1,
		AMResource: yarn.Resource{MemoryMB: 128, VCores: 1},
		AMContainer: yarn.ContainerLaunchContext{
			Environment: map[string]string{"SLUICE_OUT": amTokensOut, "SLUICE_RELEASE": release},
			// Hand the credentials over, then wait (bounded) for the test to finish the AM. The
			// NodeManager runs the command inside bash -c "...": no double quotes, no $(...).
			Commands: []string{`cp $HADOOP_TOKEN_FILE_LOCATION $SLUICE_OUT.tmp && mv $SLUICE_OUT.tmp $SLUICE_OUT && ` +
				`timeout 180 sh -c 'until [ -f $SLUICE_RELEASE ]; do sleep 0.2; done'`},
			Tokens: amCredBytes,
		},
	}); err != nil {
		t.Fatalf("submitting with an HDFS token over Kerberos: %v", err)
	}
	defer os.WriteFile(release, nil, 0o644)
	var held *hadoop.Credentials
	testwait.Eventually(t, 2*time.Minute, "the AM's credentials (the container's file)", func() bool {
		if b, err := os.ReadFile(amTokensOut); err == nil {
			if held, err = hadoop.ParseCredentials(b); err != nil {
				t.Fatal(err)
			}
			return true
		}
		if r, err := cl.GetApplicationReport(ctx, na.ID); err != nil || r.State.Terminal() {
			t.Fatalf("the AM container did not hand its credentials over: %+v, %v", r, err)
		}
		return false
	})
	amrm, ok := held.TokenByKind(hadoop.KindAMRMToken)
	if !ok {
		t.Fatalf("no AMRMToken in the AM's credentials: %v", held.TokenAliases())
	}
	if got, ok := held.TokenByKind(delegation.HDFSTokenKind); !ok || string(got.Identifier) != string(hdfsToken.Identifier) {
		t.Fatalf("the AM's credentials lack the HDFS token: %v", held.TokenAliases())
	}
	report, err := cl.GetApplicationReport(ctx, na.ID)
	if err != nil {
		t.Fatal(err)
	}
	report.AMRMToken = amrm
	am, err := yarn.NewAMClient(yarn.AMClientConfig{
		Schedulers: []string{c.Scheduler}, AMRMToken: report.AMRMToken, Attempt: report.CurrentAttempt, Logger: logger(t), QOP: privacy,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer am.Close()
	if _, err := am.Register(ctx, yarn.RegisterRequest{Host: "localhost"}); err != nil {
		t.Fatalf("register over DIGEST-MD5 auth-conf: %v", err)
	}
	ask := yarn.ResourceRequest{Priority: 1, ResourceName: yarn.AnyResource, Capability: yarn.Resource{MemoryMB: 128, VCores: 1}, NumContainers: 1}
	req := yarn.AllocateRequest{Asks: []yarn.ResourceRequest{ask}, Progress: 0.1}
	var container *yarn.Container
	// Allocate is the AM's heartbeat: it is called until the RM answers.
	testwait.Eventually(t, 2*time.Minute, "a container allocated", func() bool {
		resp, err := am.Allocate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		req = yarn.AllocateRequest{Progress: 0.2}
		if len(resp.Allocated) > 0 {
			cc := resp.Allocated[0]
			container = &cc
			ask.NumContainers = 0
			req.Asks = []yarn.ResourceRequest{ask}
			return true
		}
		return false
	})

	var creds hadoop.Credentials
	creds.AddToken(hdfsToken.Service, hdfsToken)
	credBytes, err := creds.Marshal(hadoop.FormatProtobuf)
	if err != nil {
		t.Fatal(err)
	}
	tokensOut := filepath.Join(t.TempDir(), "tokens.out")
	nm, err := yarn.NewNMClient(yarn.NMClientConfig{Tokens: am, Logger: logger(t), QOP: privacy})
	if err != nil {
		t.Fatal(err)
	}
	defer nm.Close()
	launch := yarn.ContainerLaunchContext{
		Environment: map[string]string{"SLUICE_TOKENS_OUT": tokensOut},
		Commands:    []string{`cp $HADOOP_TOKEN_FILE_LOCATION $SLUICE_TOKENS_OUT`},
		Tokens:      credBytes,
	}
	if err := nm.StartContainer(ctx, *container, launch); err != nil {
		t.Fatalf("start container over DIGEST-MD5 auth-conf: %v", err)
	}
	var done *yarn.ContainerStatus
	// Allocate is the AM's heartbeat: it is called until the RM answers.
	testwait.Eventually(t, 2*time.Minute, "the container to complete", func() bool {
		resp, err := am.Allocate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		req = yarn.AllocateRequest{Progress: 0.5}
		for _, s := range resp.Completed {
			if s.ID == container.ID {
				s := s
				done = &s
			}
		}
		return done != nil
	})
	if done.ExitStatus != yarn.ExitSuccess {
		t.Fatalf("container ended with %s: %q", yarn.ExitStatusName(done.ExitStatus), done.Diagnostics)
	}
	written, err := hadoop.ReadTokenFile(tokensOut)
	if err != nil {
		t.Fatalf("the container's token file: %v", err)
	}
	got, ok := written.TokenByKind(delegation.HDFSTokenKind)
	if !ok || string(got.Identifier) != string(hdfsToken.Identifier) {
		t.Fatalf("the container's credentials lack the HDFS token: %v", written.TokenAliases())
	}
	if id, err := hadoop.ParseDelegationTokenIdentifier(got.Identifier); err != nil || id.Owner != k.Principal {
		t.Errorf("the container's HDFS token identifier: %+v, %v", id, err)
	}
	if err := am.Finish(ctx, yarn.FinishRequest{FinalStatus: yarn.FinalSucceeded, Diagnostics: "done"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := cl.WaitForState(ctx, na.ID, 100*time.Millisecond, yarn.StateFinished); err != nil || r.FinalStatus != yarn.FinalSucceeded {
		t.Fatalf("application %+v, %v", r, err)
	}
}

// A principal given without its realm logs in to krb5.conf's default_realm
// on the real KDC, as MIT kinit and Hadoop do.
func TestKerberosLoginWithoutRealm(t *testing.T) {
	c := minicluster.SharedSecure(t)
	k := c.Kerberos
	name, realm, ok := strings.Cut(k.Principal, "@")
	if !ok || realm != k.Realm {
		t.Fatalf("principal %q is not of realm %s", k.Principal, k.Realm)
	}
	login, err := kerberos.New(kerberos.Config{Principal: name, Keytab: k.Keytab, Krb5Conf: k.Krb5Conf})
	if err != nil {
		t.Fatal(err)
	}
	defer login.Close()
	if login.Principal() != k.Principal || login.Realm() != k.Realm {
		t.Errorf("logged in as %s (realm %s), want %s", login.Principal(), login.Realm(), k.Principal)
	}
}
