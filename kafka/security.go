package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strings"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/sluice/sluice/conf"
	krb "github.com/sluice/sluice/security/kerberos"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/kerberos"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TLSConfig configures TLS to the brokers (Kafka's security.protocol SSL or
// SASL_SSL). Files are PEM and are read when a client connects.
type TLSConfig struct {
	// CAFile holds the certificates that sign the brokers' certificates.
	// Default: the system's roots.
	CAFile string
	// CertFile and KeyFile are the client's certificate and key, for
	// brokers that authenticate clients by certificate (mTLS). Default: none.
	CertFile string
	KeyFile  string
	// ServerName is the name checked against the brokers' certificates.
	// Default: the host of each broker address.
	ServerName string
	// InsecureSkipVerify turns off the verification of the brokers'
	// certificates and host names. Default false; only for tests.
	InsecureSkipVerify bool
}

// TLS connects to the brokers over TLS. Default: plaintext.
func TLS(c TLSConfig) Opt {
	return clientOpt{func(cc *clientConfig) { cc.tls = &c }}
}

func (t *TLSConfig) validate(add func(string, ...any)) {
	if (t.CertFile == "") != (t.KeyFile == "") {
		add("TLS: a client certificate needs both CertFile and KeyFile (got cert %q, key %q)", t.CertFile, t.KeyFile)
	}
}

func (t *TLSConfig) String() string {
	var parts []string
	if t.CAFile != "" {
		parts = append(parts, "ca="+t.CAFile)
	}
	if t.CertFile != "" {
		parts = append(parts, "cert="+t.CertFile)
	}
	if t.ServerName != "" {
		parts = append(parts, "server-name="+t.ServerName)
	}
	if t.InsecureSkipVerify {
		parts = append(parts, "INSECURE-SKIP-VERIFY")
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func (t *TLSConfig) build() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify} //nolint:gosec // opt-in, documented
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("kafka: TLS CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kafka: TLS CA file %s holds no PEM certificate", t.CAFile)
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("kafka: TLS client certificate %s / key %s: %w", t.CertFile, t.KeyFile, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// SASL mechanism names, as Kafka's sasl.mechanism.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
	MechanismGSSAPI      = "GSSAPI"
)

type saslConfig struct {
	name     string
	user     string
	password Secret
	krb      *KerberosConfig
	// login and service: SASL GSSAPI from a shared login.
	login   *krb.Login
	service string
}

func (s saslConfig) String() string {
	if s.krb != nil {
		return s.name + s.krb.String()
	}
	if s.name == MechanismGSSAPI {
		p := "<nil login>"
		if s.login != nil {
			p = s.login.Principal()
		}
		return fmt.Sprintf("%s{login=%s service=%s}", s.name, p, serviceOrDefault(s.service))
	}
	return fmt.Sprintf("%s{user=%s password=%s}", s.name, s.user, s.password)
}

// SASLPlain authenticates with SASL/PLAIN (use it over TLS: the password
// crosses the wire as is). Default: no SASL.
func SASLPlain(user string, password Secret) Opt {
	return clientOpt{func(c *clientConfig) {
		c.sasl = append(c.sasl, saslConfig{name: MechanismPlain, user: user, password: password})
	}}
}

// SASLScramSHA256 authenticates with SASL/SCRAM-SHA-256. Default: no SASL.
func SASLScramSHA256(user string, password Secret) Opt {
	return clientOpt{func(c *clientConfig) {
		c.sasl = append(c.sasl, saslConfig{name: MechanismScramSHA256, user: user, password: password})
	}}
}

// SASLScramSHA512 authenticates with SASL/SCRAM-SHA-512. Default: no SASL.
func SASLScramSHA512(user string, password Secret) Opt {
	return clientOpt{func(c *clientConfig) {
		c.sasl = append(c.sasl, saslConfig{name: MechanismScramSHA512, user: user, password: password})
	}}
}

// KerberosConfig is a Kerberos login from a keytab, for SASL/GSSAPI.
type KerberosConfig struct {
	// Principal to log in as, user@REALM or service/host@REALM. Required.
	Principal string
	// KeytabFile holds the principal's keys. Required.
	KeytabFile string
	// Krb5ConfFile is the krb5.conf. Default: $KRB5_CONFIG, else /etc/krb5.conf.
	Krb5ConfFile string
	// ServiceName is the primary of the brokers' principal (Kafka's
	// sasl.kerberos.service.name). Default "kafka".
	ServiceName string
	// DisableFAST turns off Kerberos FAST pre-authentication, which
	// Active Directory KDCs do not support. Default false.
	DisableFAST bool
}

func (k *KerberosConfig) String() string {
	return fmt.Sprintf("{principal=%s keytab=%s krb5.conf=%s service=%s}", k.Principal, k.KeytabFile, k.krb5Conf(), k.service())
}

func (k *KerberosConfig) krb5Conf() string {
	if k.Krb5ConfFile != "" {
		return k.Krb5ConfFile
	}
	if p := os.Getenv("KRB5_CONFIG"); p != "" {
		return p
	}
	return "/etc/krb5.conf"
}

func (k *KerberosConfig) service() string {
	if k.ServiceName == "" {
		return "kafka"
	}
	return k.ServiceName
}

// SASLGSSAPI authenticates with SASL/GSSAPI (Kerberos), logging in from a
// keytab. Each Kafka client holds its own Kerberos login, destroyed with
// the client. Default: no SASL.
func SASLGSSAPI(k KerberosConfig) Opt {
	return clientOpt{func(c *clientConfig) {
		c.sasl = append(c.sasl, saslConfig{name: MechanismGSSAPI, krb: &k})
	}}
}

// SASLGSSAPILogin authenticates with SASL/GSSAPI (Kerberos) from a shared
// login (package security/kerberos), the one the job also uses for Hadoop:
// every broker connection takes the login's current TGT, so the login's
// re-logins carry over without re-creating the client, and the login is
// not closed with the client. serviceName is the primary of the brokers'
// principal (Kafka's sasl.kerberos.service.name); "" means "kafka". The
// brokers' principal is serviceName/<broker host>, the host as the broker
// advertises it. Default: no SASL.
func SASLGSSAPILogin(login *krb.Login, serviceName string) Opt {
	return clientOpt{func(c *clientConfig) {
		c.sasl = append(c.sasl, saslConfig{name: MechanismGSSAPI, login: login, service: serviceName})
	}}
}

func serviceOrDefault(s string) string {
	if s == "" {
		return "kafka"
	}
	return s
}

// KerberosFromConfiguration reads the Kerberos login of the job's
// configuration (security.kerberos.login.principal,
// security.kerberos.login.keytab, security.kerberos.krb5-conf.path), the
// one the job uses for Hadoop.
func KerberosFromConfiguration(c *conf.Configuration) KerberosConfig {
	return KerberosConfig{
		Principal:    conf.Get(c, conf.KerberosPrincipal),
		KeytabFile:   conf.Get(c, conf.KerberosKeytab),
		Krb5ConfFile: conf.Get(c, conf.KerberosKrb5ConfPath),
	}
}

func (s saslConfig) validate(add func(string, ...any)) {
	if s.name == MechanismGSSAPI && s.krb == nil {
		if s.login == nil {
			add("SASL GSSAPI: nil Kerberos login")
		}
		return
	}
	if s.krb != nil {
		if s.krb.Principal == "" {
			add("SASL GSSAPI: no principal")
		} else if _, _, err := krb.SplitPrincipal(s.krb.Principal); err != nil {
			add("SASL GSSAPI: principal %q is not user[@REALM] or service/host[@REALM]", s.krb.Principal)
		}
		if s.krb.KeytabFile == "" {
			add("SASL GSSAPI: no keytab file (only keytab logins are supported)")
		}
		return
	}
	if s.user == "" {
		add("SASL %s: empty user name", s.name)
	}
	if s.password.IsZero() {
		add("SASL %s: no password (use kafka.SecretFromFile or kafka.SecretFromEnv)", s.name)
	}
}

func (s saslConfig) mechanism() (sasl.Mechanism, error) {
	if s.krb != nil {
		return s.krb.mechanism()
	}
	if s.login != nil {
		login, service := s.login, serviceOrDefault(s.service)
		return gssapiLogin{login: login, service: service, inner: kerberos.Kerberos(func(context.Context) (kerberos.Auth, error) {
			cl, err := login.CurrentClient()
			if err != nil {
				return kerberos.Auth{}, fmt.Errorf("kafka: SASL GSSAPI: %w", err)
			}
			// The client belongs to the login: never destroyed here.
			return kerberos.Auth{Client: cl, Service: service, PersistAfterAuth: true}, nil
		})}, nil
	}
	pw, err := s.password.Reveal()
	if err != nil {
		return nil, fmt.Errorf("kafka: SASL %s password: %w", s.name, err)
	}
	switch s.name {
	case MechanismPlain:
		return plain.Auth{User: s.user, Pass: pw}.AsMechanism(), nil
	case MechanismScramSHA256:
		return scram.Auth{User: s.user, Pass: pw}.AsSha256Mechanism(), nil
	case MechanismScramSHA512:
		return scram.Auth{User: s.user, Pass: pw}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("kafka: unknown SASL mechanism %q", s.name)
}

// mechanism loads krb5.conf and the keytab and returns a GSSAPI mechanism
// whose Kerberos client is destroyed when the Kafka client closes. The
// KDC is contacted only when a broker connection authenticates.
func (k *KerberosConfig) mechanism() (sasl.Mechanism, error) {
	user, realm, err := krb.SplitPrincipal(k.Principal)
	if err != nil {
		return nil, fmt.Errorf("kafka: SASL GSSAPI: principal %q is not user[@REALM] or service/host[@REALM]", k.Principal)
	}
	cfg, err := krbconfig.Load(k.krb5Conf())
	if err != nil {
		return nil, fmt.Errorf("kafka: SASL GSSAPI: loading krb5.conf %s: %w", k.krb5Conf(), err)
	}
	if realm == "" {
		// As kinit does: a principal without a realm is in the default one.
		if realm = cfg.LibDefaults.DefaultRealm; realm == "" {
			return nil, fmt.Errorf("kafka: SASL GSSAPI: principal %q has no realm and krb5.conf %s sets no default_realm", k.Principal, k.krb5Conf())
		}
	}
	kt, err := keytab.Load(k.KeytabFile)
	if err != nil {
		return nil, fmt.Errorf("kafka: SASL GSSAPI: loading keytab %s: %w", k.KeytabFile, err)
	}
	cl := krbclient.NewWithKeytab(user, realm, kt, cfg, krbclient.DisablePAFXFAST(k.DisableFAST))
	return kerberos.Auth{Client: cl, Service: k.service()}.AsMechanismWithClose(), nil
}

// gssapiLogin is franz-go's GSSAPI mechanism over a shared login, asking
// the login for the broker's service ticket first, so that a failure (a
// wrong sasl.kerberos.service.name, an expired login) comes back as a
// classified kerberos error naming what to check. The ticket is cached by
// the login's client, which the inner mechanism then uses.
type gssapiLogin struct {
	login   *krb.Login
	service string
	inner   sasl.Mechanism
}

func (g gssapiLogin) Name() string { return MechanismGSSAPI }

func (g gssapiLogin) Authenticate(ctx context.Context, host string) (sasl.Session, []byte, error) {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	if _, _, err := g.login.ServiceTicket(g.service + "/" + h); err != nil {
		return nil, nil, fmt.Errorf("kafka: SASL GSSAPI to broker %s (principal %s/%s; service name from sasl.kerberos.service.name): %w", host, g.service, h, err)
	}
	return g.inner.Authenticate(ctx, host)
}
