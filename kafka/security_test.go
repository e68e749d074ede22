package kafka_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/kafka"
	krb "github.com/sluice/sluice/security/kerberos"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

const password = "s3cr3t-Pa55w0rd-do-not-print"

func TestSecretsNeverAppearInFormattedOptionsOrLogs(t *testing.T) {
	t.Setenv("KAFKA_TEST_PASSWORD", password)
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	secrets := []kafka.Secret{kafka.SecretValue(password), kafka.SecretFromEnv("KAFKA_TEST_PASSWORD"), kafka.SecretFromFile(pwFile)}
	for _, s := range secrets {
		opts := []kafka.SourceOpt{kafka.BootstrapServers("localhost:9092"), kafka.Topics("t"), kafka.SASLPlain("alice", s), kafka.WithLogger(log)}
		src, err := kafka.NewSource(kafka.StringValues(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		sink, err := kafka.NewSink(kafka.StringSerializer("t"), kafka.BootstrapServers("localhost:9092"), kafka.SASLScramSHA512("alice", s))
		if err != nil {
			t.Fatal(err)
		}
		log.Info("configured", "secret", s, "source", src)
		var out []string
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
			out = append(out, fmt.Sprintf(verb, s), fmt.Sprintf(verb, opts), fmt.Sprintf(verb, src), fmt.Sprintf(verb, sink),
				fmt.Sprintf(verb, struct{ S kafka.Secret }{s}), fmt.Sprintf(verb, *src))
		}
		out = append(out, src.String(), sink.String(), s.String(), logs.String())
		for _, o := range out {
			if strings.Contains(o, password) || strings.Contains(o, fmt.Sprintf("%x", password)) {
				t.Fatalf("the password appears in %q", o)
			}
		}
		if !strings.Contains(src.String(), "PLAIN{user=alice password=secret(") {
			t.Errorf("the source's description %q does not say how it authenticates", src)
		}
	}
}

func TestSecretErrorsNameTheSourceNotTheValue(t *testing.T) {
	t.Setenv("EMPTY_PW", "")
	c := newCluster(t, kfake.EnableSASL(), kfake.Superuser("PLAIN", "admin", password))
	cases := []struct {
		secret kafka.Secret
		errHas string
	}{
		{kafka.SecretFromEnv("NO_SUCH_VARIABLE_SLUICE"), "environment variable NO_SUCH_VARIABLE_SLUICE is not set"},
		{kafka.SecretFromEnv("EMPTY_PW"), "environment variable EMPTY_PW is empty"},
		{kafka.SecretFromFile("/no/such/pw"), "/no/such/pw"},
	}
	for _, tc := range cases {
		src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics("t"), kafka.Bounded(kafka.Latest()),
			kafka.SASLPlain("admin", tc.secret), kafka.WithLogger(quietLogger()))
		_, err := readAll(t, 1, src)
		if err == nil || !strings.Contains(err.Error(), tc.errHas) || !strings.Contains(err.Error(), "SASL PLAIN password") {
			t.Errorf("%v: got %v, want an error about %q", tc.secret, err, tc.errHas)
		}
	}
}

func TestSASLMechanismsAuthenticate(t *testing.T) {
	for _, mech := range []string{kafka.MechanismPlain, kafka.MechanismScramSHA256, kafka.MechanismScramSHA512} {
		t.Run(mech, func(t *testing.T) {
			kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser(mech, "admin", password), kfake.SeedTopics(2, "sec"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(kc.Close)
			auth := func(pw kafka.Secret) kafka.Opt {
				switch mech {
				case kafka.MechanismPlain:
					return kafka.SASLPlain("admin", pw)
				case kafka.MechanismScramSHA256:
					return kafka.SASLScramSHA256("admin", pw)
				}
				return kafka.SASLScramSHA512("admin", pw)
			}
			t.Setenv("KAFKA_PW", password)
			sink := mustSink(t, kafka.StringSerializer("sec"), kafka.BootstrapServers(kc.ListenAddrs()...), kafka.Guarantee(kafka.AtLeastOnce),
				auth(kafka.SecretFromEnv("KAFKA_PW")), kafka.WithLogger(testLogger(t)))
			w, err := sink.CreateWriter(sinkCtx{0, 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range []string{"a", "b"} {
				if err := w.Write(context.Background(), v, 0); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Flush(context.Background(), true); err != nil {
				t.Fatal(err)
			}
			w.Close()
			src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(kc.ListenAddrs()...), kafka.Topics("sec"),
				kafka.Bounded(kafka.Latest()), auth(kafka.SecretFromEnv("KAFKA_PW")), kafka.WithLogger(testLogger(t)))
			got, err := readAll(t, 1, src)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, []string{"a", "b"}) {
				t.Fatalf("read %v", got)
			}
			bad := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(kc.ListenAddrs()...), kafka.Topics("sec"),
				kafka.Bounded(kafka.Latest()), auth(kafka.SecretValue("wrong")), kafka.WithLogger(quietLogger()))
			if _, err := readAll(t, 1, bad); err == nil || strings.Contains(err.Error(), "wrong") {
				t.Fatalf("a wrong password: %v, want an authentication error not showing the password", err)
			}
		})
	}
}

// pki makes a CA and a server certificate for 127.0.0.1 and localhost.
func pki(t *testing.T) (caFile string, server tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "broker"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return caFile, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestTLSVerifiesTheBroker(t *testing.T) {
	caFile, cert := pki(t)
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}}), kfake.SeedTopics(1, "tls"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	p, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.DialTLSConfig(&tls.Config{InsecureSkipVerify: true})) //nolint:gosec // test producer
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.ProduceSync(ctxT(t), &kgo.Record{Topic: "tls", Value: []byte("over tls")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		tls    kafka.TLSConfig
		errHas string // "" : reads
	}{
		{"trusted CA", kafka.TLSConfig{CAFile: caFile}, ""},
		{"system roots do not know the CA", kafka.TLSConfig{}, "certificate"},
		{"host name checked", kafka.TLSConfig{CAFile: caFile, ServerName: "evil.example"}, "evil.example"},
		{"explicit insecure skip", kafka.TLSConfig{InsecureSkipVerify: true}, ""},
		{"missing CA file", kafka.TLSConfig{CAFile: "/no/ca.pem"}, "/no/ca.pem"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(kc.ListenAddrs()...), kafka.Topics("tls"),
				kafka.Bounded(kafka.Latest()), kafka.TLS(tc.tls), kafka.WithLogger(quietLogger()))
			got, err := readAll(t, 1, src)
			if tc.errHas == "" {
				if err != nil || !slices.Equal(got, []string{"over tls"}) {
					t.Fatalf("got %v, %v", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.errHas)
			}
		})
	}
}

func TestConfigurationProblemsAreAllReported(t *testing.T) {
	_, err := kafka.NewSource[string](nil, kafka.BootstrapServers("nohost", "h:99999"), kafka.Topics("a", "a"), kafka.TopicPattern("("),
		kafka.PartitionDiscoveryInterval(0), kafka.StartingOffsets(kafka.CommittedOffsets(kafka.ResetNone)),
		kafka.SASLPlain("", kafka.Secret{}), kafka.SASLScramSHA256("u", kafka.SecretValue("p")),
		kafka.TLS(kafka.TLSConfig{CertFile: "c.pem"}), kafka.DeadLetterTopic("a"))
	var ce *kafka.ConfigError
	if !errors.As(err, &ce) || !errors.Is(err, kafka.ErrInvalidConfig) {
		t.Fatalf("got %v, want a ConfigError", err)
	}
	for _, want := range []string{
		`"nohost" is not host:port`, `"h:99999" has an invalid port`, `topic "a" listed twice`, "both kafka.Topics and kafka.TopicPattern",
		`topic pattern "("`, "partition discovery interval 0", "no group id is set", "SASL PLAIN: empty user name", "SASL PLAIN: no password",
		"more than one SASL mechanism configured (PLAIN, SCRAM-SHA-256)", "needs both CertFile and KeyFile",
		`dead-letter topic "a" is also a source topic`, "no deserializer",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not report %q:\n%v", want, err)
		}
	}
	_, err = kafka.NewSink[string](nil, kafka.Guarantee(kafka.ExactlyOnce), kafka.Compression("brotli"), kafka.TransactionalIDPoolSize(-1))
	for _, want := range []string{"no bootstrap servers", "EXACTLY_ONCE needs a transactional id prefix", `unknown compression "brotli"`,
		"pool size -1", "no serializer"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("sink error does not report %q:\n%v", want, err)
		}
	}
}

func TestGSSAPIConfiguration(t *testing.T) {
	dir := t.TempDir()
	krb5 := filepath.Join(dir, "krb5.conf")
	if err := os.WriteFile(krb5, []byte("[libdefaults]\n default_realm = EXAMPLE.COM\n[realms]\n EXAMPLE.COM = {\n  kdc = 127.0.0.1:1\n }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kt := keytab.New()
	if err := kt.AddEntry("sluice/host", "EXAMPLE.COM", "pw", time.Now(), 1, 18); err != nil {
		t.Fatal(err)
	}
	ktFile := filepath.Join(dir, "sluice.keytab")
	b, err := kt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ktFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	badConf := filepath.Join(dir, "bad.conf")
	if err := os.WriteFile(badConf, []byte("[libdefaults]\n ticket_lifetime = forever\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noDefault := filepath.Join(dir, "no-default-realm.conf")
	if err := os.WriteFile(noDefault, []byte("[realms]\n EXAMPLE.COM = {\n  kdc = 127.0.0.1:1\n }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		k         kafka.KerberosConfig
		configErr string // a NewSource error
		startErr  string // an error when a client is built
	}{
		{"no principal", kafka.KerberosConfig{KeytabFile: ktFile}, "SASL GSSAPI: no principal", ""},
		{"malformed principal", kafka.KerberosConfig{Principal: "sluice@", KeytabFile: ktFile}, `principal "sluice@" is not user[@REALM]`, ""},
		// As with kinit, a principal without a realm is in krb5.conf's default_realm.
		{"principal without realm", kafka.KerberosConfig{Principal: "sluice/host", KeytabFile: ktFile, Krb5ConfFile: krb5}, "", "UNSUPPORTED_SASL_MECHANISM"},
		{"principal without realm, no default_realm", kafka.KerberosConfig{Principal: "sluice/host", KeytabFile: ktFile, Krb5ConfFile: noDefault}, "", "has no realm and krb5.conf " + noDefault + " sets no default_realm"},
		{"no keytab", kafka.KerberosConfig{Principal: "sluice/host@EXAMPLE.COM"}, "no keytab file", ""},
		{"missing keytab", kafka.KerberosConfig{Principal: "sluice/host@EXAMPLE.COM", KeytabFile: "/no/such.keytab", Krb5ConfFile: krb5}, "", "loading keytab /no/such.keytab"},
		{"bad krb5.conf", kafka.KerberosConfig{Principal: "sluice/host@EXAMPLE.COM", KeytabFile: ktFile, Krb5ConfFile: badConf}, "", "loading krb5.conf " + badConf},
		// A valid login reaches the broker, which (kfake) offers no GSSAPI.
		{"valid", kafka.KerberosConfig{Principal: "sluice/host@EXAMPLE.COM", KeytabFile: ktFile, Krb5ConfFile: krb5}, "", "UNSUPPORTED_SASL_MECHANISM"},
	}
	c := newCluster(t, kfake.EnableSASL(), kfake.Superuser("PLAIN", "admin", "admin"))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src, err := kafka.NewSource(kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics("t"),
				kafka.Bounded(kafka.Latest()), kafka.SASLGSSAPI(tc.k), kafka.WithLogger(quietLogger()))
			if tc.configErr != "" {
				if !errors.Is(err, kafka.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.configErr) {
					t.Fatalf("got %v, want a configuration error %q", err, tc.configErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(src.String(), "GSSAPI{principal="+tc.k.Principal+" keytab="+tc.k.KeytabFile) {
				t.Errorf("description %q", src)
			}
			_, err = readAll(t, 1, src)
			if err == nil || !strings.Contains(err.Error(), tc.startErr) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.startErr)
			}
		})
	}
}

func TestKerberosFromTheJobConfiguration(t *testing.T) {
	c := conf.New().Set("security.kerberos.login.principal", "sluice/h@EXAMPLE.COM").
		Set("security.kerberos.login.keytab", "/etc/sluice.keytab").Set("security.kerberos.krb5-conf.path", "/etc/krb5.conf")
	got := kafka.KerberosFromConfiguration(c)
	want := kafka.KerberosConfig{Principal: "sluice/h@EXAMPLE.COM", KeytabFile: "/etc/sluice.keytab", Krb5ConfFile: "/etc/krb5.conf"}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestDeadLetterTopicMatchedByThePatternIsRejected(t *testing.T) {
	_, err := kafka.NewSource(kafka.StringValues(), kafka.BootstrapServers("h:1"), kafka.TopicPattern("orders.*"), kafka.DeadLetterTopic("orders-dlq"))
	if err == nil || !strings.Contains(err.Error(), `dead-letter topic "orders-dlq" is also a source topic`) {
		t.Fatalf("got %v", err)
	}
}

func TestGSSAPILoginConfiguration(t *testing.T) {
	_, err := kafka.NewSource(kafka.StringValues(), kafka.BootstrapServers("localhost:1"), kafka.Topics("t"),
		kafka.SASLGSSAPILogin(nil, ""), kafka.WithLogger(quietLogger()))
	if !errors.Is(err, kafka.ErrInvalidConfig) || !strings.Contains(err.Error(), "nil Kerberos login") {
		t.Fatalf("a nil login: %v, want a configuration error", err)
	}
	src, err := kafka.NewSource(kafka.StringValues(), kafka.BootstrapServers("localhost:1"), kafka.Topics("t"),
		kafka.SASLGSSAPILogin(&krb.Login{}, "kafka-svc"), kafka.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(src.String(), "GSSAPI{login=") || !strings.Contains(src.String(), "service=kafka-svc") {
		t.Errorf("description %q", src)
	}
}
