//go:build integration

package kafka_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluice/sluice/integration/kafkabroker"
	"github.com/sluice/sluice/integration/minicluster"
	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/security/kerberos"
)

// gssapiBroker is the broker's SASL_PLAINTEXT GSSAPI listener on the secure minicluster's KDC,
// a login of the harness's client principal, and a PLAINTEXT admin connection to the same
// broker for setting up and checking topics.
func gssapiBroker(t *testing.T) (gssapiAddr string, login *kerberos.Login, c *cluster, name func(string) string) {
	t.Helper()
	k := minicluster.SharedSecure(t).Kerberos
	b := kafkabroker.SharedGSSAPI(t, kafkabroker.GSSAPI{Krb5Conf: k.Krb5Conf, Keytab: k.KafkaKT, Principal: k.Kafka})
	login, err := kerberos.New(kerberos.Config{Principal: k.Principal, Keytab: k.Keytab, Krb5Conf: k.Krb5Conf}, kerberos.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { login.Close() })
	c, name = realClusterAt(t, b.Addr)
	return b.GSSAPIAddr, login, c, name
}

// TestIntegrationEndToEndExactlyOnceOverGSSAPI runs the exactly-once pipeline (Kafka → keyed
// state → Kafka, failed twice) with every source, sink and transaction client authenticating
// with SASL GSSAPI from one shared Kerberos login.
func TestIntegrationEndToEndExactlyOnceOverGSSAPI(t *testing.T) {
	addr, login, c, name := gssapiBroker(t)
	runEndToEnd(t, []string{addr}, c, 2, name, func(topic string) { c.waitStable(t, topic) }, kafka.SASLGSSAPILogin(login, "kafka"))
}

func TestIntegrationGSSAPIFailuresNameWhatToCheck(t *testing.T) {
	addr, login, _, _ := gssapiBroker(t)
	ctx := ctxT(t)

	// A service name that is not the brokers' principal.
	_, err := kafka.ListTransactions(ctx, "x", kafka.BootstrapServers(addr), kafka.SASLGSSAPILogin(login, "nokafka"))
	if !errors.Is(err, kerberos.ErrServerPrincipal) {
		t.Fatalf("wrong service name: %v, want kerberos.ErrServerPrincipal", err)
	}
	t.Log(err)

	// The right one works.
	if _, err := kafka.ListTransactions(ctx, "x", kafka.BootstrapServers(addr), kafka.SASLGSSAPILogin(login, "")); err != nil {
		t.Fatalf("GSSAPI with the default service name: %v", err)
	}

	// A closed login.
	login.Close()
	start := time.Now()
	_, err = kafka.ListTransactions(ctx, "x", kafka.BootstrapServers(addr), kafka.SASLGSSAPILogin(login, ""))
	if !errors.Is(err, kerberos.ErrClosed) {
		t.Fatalf("closed login: %v (after %s), want kerberos.ErrClosed", err, time.Since(start))
	}
}
