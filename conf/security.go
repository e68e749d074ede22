package conf

import (
	"fmt"
	"time"
)

// Security options: Kerberos login and delegation tokens, as on a Kerberized
// Hadoop cluster.

var (
	// KerberosKeytab is the keytab to log in with.
	KerberosKeytab = String("security.kerberos.login.keytab", "",
		"Absolute path of the keytab to log in with; requires security.kerberos.login.principal. "+
			"With a keytab, credentials are renewed for as long as the job runs.").
		WithDefaultDoc("(none)")

	// KerberosPrincipal is the principal to log in as.
	KerberosPrincipal = String("security.kerberos.login.principal", "",
		"Kerberos principal to log in as, e.g. sluice/host@EXAMPLE.COM.").
		WithDefaultDoc("(none)")

	// KerberosUseTicketCache allows using the ticket cache of a kinit.
	KerberosUseTicketCache = Bool("security.kerberos.login.use-ticket-cache", true,
		"Whether the client may use the Kerberos ticket cache (from kinit) when no keytab is given. "+
			"Tickets from the cache expire; long-running jobs need a keytab or delegation tokens.")

	// KerberosKrb5ConfPath is the krb5.conf to use.
	KerberosKrb5ConfPath = String("security.kerberos.krb5-conf.path", "",
		"Path of the krb5.conf to use; on YARN it is shipped to the containers.").
		WithDefaultDoc("(none): $KRB5_CONFIG, else /etc/krb5.conf")

	// KerberosAccessHadoopFileSystems lists extra file systems to get delegation tokens for.
	KerberosAccessHadoopFileSystems = StringList("security.kerberos.access.hadoopFileSystems", nil,
		"Kerberized Hadoop file systems besides the default one that the job accesses, e.g. "+
			"hdfs://other-namenode:8020; delegation tokens are obtained for each.").
		WithDefaultDoc("(none)").
		WithDeprecatedKeys("yarn.security.kerberos.additionalFileSystems")

	// KerberosReloginPeriod is how often a keytab login is renewed.
	KerberosReloginPeriod = Duration("security.kerberos.relogin.period", time.Minute,
		"How often the login from a keytab is checked and renewed.").
		WithCheck(positiveDuration)

	// DelegationTokensRenewalTimeRatio is when new tokens are obtained.
	DelegationTokensRenewalTimeRatio = Float("security.delegation.tokens.renewal.time-ratio", 0.75,
		"Fraction of the delegation tokens' remaining lifetime after which new ones are obtained.").
		WithCheck(func(v float64) error {
			if v <= 0 || v >= 1 {
				return fmt.Errorf("must be in (0, 1), got %v", v)
			}
			return nil
		})

	// DelegationTokensRenewalRetryBackoff is the pause after a failed attempt.
	DelegationTokensRenewalRetryBackoff = Duration("security.delegation.tokens.renewal.retry.backoff", time.Hour,
		"How long to wait before trying again to obtain delegation tokens after a failure "+
			"(never later than halfway to the current tokens' expiry).").
		WithCheck(positiveDuration)

	// DelegationTokensEnabled turns the fetching of delegation tokens on or off.
	DelegationTokensEnabled = Bool("security.delegation.tokens.enabled", true,
		"Whether delegation tokens for HDFS (and YARN) are obtained and handed to the containers.")
)

// InternalSecretFileName is the default secret file's name in the user's
// ~/.sluice directory, and the link name of the shipped one on YARN.
const InternalSecretFileName = "internal-secret"

var (
	// InternalSecretFile is the file holding the secret that authenticates
	// the cluster's internal RPCs when security.ssl.internal.enabled is
	// off.
	InternalSecretFile = String("security.internal.secret-file", "",
		"File holding the cluster's secret (not in Flink): with security.ssl.internal.enabled off, every internal RPC "+
			"(TaskManagers registering with the ResourceManager, slot offers, job binaries fetched from the blob "+
			"service, task deployment and cancellation, workers' sessions with their JobMasters and their data "+
			"exchange) carries it, and a peer without it is refused (gRPC status UNAUTHENTICATED). Every process of "+
			"a cluster must read the same secret: a standalone JobManager or TaskManager creates the file (mode 0600 "+
			"in a 0700 directory) if it does not exist; copy it to the other hosts of the cluster. It must not be "+
			"readable by other users. The secret authenticates peers but does not encrypt: on an untrusted network "+
			"enable security.ssl.internal.enabled. On YARN, where internal mutual TLS is on by default, this option is "+
			"ignored: with security.ssl.internal.enabled false the client generates a secret per application and ships "+
			"it as a private local resource.").
		WithDefaultDoc("(none): ~/.sluice/" + InternalSecretFileName)

	// RESTTokenFile is the file holding the token that requests to a
	// JobManager's REST endpoint which change state must carry.
	RESTTokenFile = String("security.rest.token-file", "",
		"File holding the REST token (not in Flink). A JobManager with one refuses (401) every REST request that changes "+
			"state — submitting or running a job, cancel, stop, savepoints, checkpoints, uploads, shutting the cluster "+
			"down — unless it carries 'Authorization: Bearer <token>'; reading (GET) stays open, as in Flink. Clients "+
			"(the sluice CLI, programs it runs) send the token of this file. On YARN the client generates a token per "+
			"application (yarn.security.rest-token.enabled) and keeps it in the application's staging directory, from which "+
			"later commands read it; set this option on a standalone cluster whose REST endpoint others can reach "+
			"(rest.bind-address). It must not be readable by other users.").
		WithDefaultDoc("(none): the REST endpoint takes any request")
)

// TLS options, as Flink's security.ssl.*: keystores and truststores are
// JKS or PKCS12 files as Flink reads them, or PEM files.
var (
	// SSLRESTEnabled turns TLS on for the REST endpoint.
	SSLRESTEnabled = Bool("security.ssl.rest.enabled", false,
		"Whether the REST endpoint (CLI, job submission, web dashboard) is served over HTTPS; the CLI and job "+
			"programs then connect with https, trusting security.ssl.rest.truststore.").
		WithFallbackKeys(SSLEnabled.Key())

	// SSLRESTKeystore is the REST endpoint's certificate and key.
	SSLRESTKeystore = String("security.ssl.rest.keystore", "",
		"Keystore with the REST endpoint's private key and certificate (chain): a JKS or PKCS12 file as Flink takes "+
			"(keytool -genkeypair), or a PEM file of the certificate chain and the private key. It must hold exactly one "+
			"private key (there is no alias option, as in Flink). With security.ssl.rest.authentication-enabled, "+
			"clients present theirs from the same key.").
		WithDefaultDoc("(none): security.ssl.keystore").
		WithFallbackKeys(SSLKeystore.Key())

	// SSLRESTKeystorePassword opens security.ssl.rest.keystore.
	SSLRESTKeystorePassword = String("security.ssl.rest.keystore-password", "",
		"Password of security.ssl.rest.keystore: the password of a JKS or PKCS12 file (keytool -storepass; required for "+
			"JKS), which also decrypts its private key when security.ssl.rest.key-password is not set; of a PEM "+
			"keystore, the password of its encrypted private key (a PEM key with 'Proc-Type: 4,ENCRYPTED', as openssl "+
			"writes with -traditional).").WithDefaultDoc("(none): security.ssl.keystore-password").
		WithFallbackKeys(SSLKeystorePassword.Key())
	// SSLRESTKeyPassword decrypts the private key of
	// security.ssl.rest.keystore.
	SSLRESTKeyPassword = String("security.ssl.rest.key-password", "",
		"Password of the private key in security.ssl.rest.keystore (keytool -keypass): a JKS key's, or an encrypted "+
			"PEM key's. A PKCS12 file has one password for the file and its key, security.ssl.rest.keystore-password.").
		WithDefaultDoc("(none): security.ssl.key-password, else security.ssl.rest.keystore-password").
		WithFallbackKeys(SSLKeyPassword.Key())

	// SSLRESTKeystoreType is the format of security.ssl.rest.keystore.
	SSLRESTKeystoreType = Enum("security.ssl.rest.keystore-type", "", []string{"pkcs12", "jks", "pem"},
		"Format of security.ssl.rest.keystore: pkcs12, jks or pem. Unset, it is told from the file's content. As in "+
			"Java since version 9 (keystore.type.compat), pkcs12 and jks each read either binary format, so Flink's "+
			"default (the JVM's, pkcs12) of a JKS file works; pem refuses a binary file and the others a PEM file.").
		WithDefaultDoc("(none): from the file's content")

	// SSLRESTTruststore is the CA certificates REST clients trust.
	SSLRESTTruststore = String("security.ssl.rest.truststore", "",
		"Truststore of the CA certificates a REST client trusts, and with security.ssl.rest.authentication-enabled "+
			"the server's CAs of client certificates: a JKS or PKCS12 file (keytool -importcert; as in Java, a key "+
			"entry's certificate is trusted too, so a keystore of a self-signed certificate serves as its own "+
			"truststore), or a PEM file of certificates.").
		WithDefaultDoc("(none): security.ssl.truststore, else the system's roots").
		WithFallbackKeys(SSLTruststore.Key())

	// SSLRESTTruststorePassword verifies security.ssl.rest.truststore.
	SSLRESTTruststorePassword = String("security.ssl.rest.truststore-password", "",
		"Password of security.ssl.rest.truststore when it is a JKS file (required: it verifies the file's integrity) "+
			"or a PKCS12 file; a PEM truststore has none and ignores it.").WithDefaultDoc("(none): security.ssl.truststore-password").
		WithFallbackKeys(SSLTruststorePassword.Key())

	// SSLRESTTruststoreType is the format of security.ssl.rest.truststore.
	SSLRESTTruststoreType = Enum("security.ssl.rest.truststore-type", "", []string{"pkcs12", "jks", "pem"},
		"Format of security.ssl.rest.truststore: pkcs12, jks or pem; unset, it is told from the file's content "+
			"(see security.ssl.rest.keystore-type).").
		WithDefaultDoc("(none): from the file's content")

	// SSLRESTAuthenticationEnabled requires REST clients to present a
	// certificate.
	SSLRESTAuthenticationEnabled = Bool("security.ssl.rest.authentication-enabled", false,
		"Whether the REST endpoint requires a client certificate signed by a CA of security.ssl.rest.truststore "+
			"(mutual TLS); clients present security.ssl.rest.keystore.")

	// SSLVerifyHostname checks the REST server's host name.
	SSLVerifyHostname = Bool("security.ssl.verify-hostname", true,
		"Whether a REST client checks that the server's certificate names the host it dialled.")

	// SSLInternalEnabled turns mutual TLS on for the internal RPCs.
	SSLInternalEnabled = Bool("security.ssl.internal.enabled", false,
		"Whether every internal connection (TaskManagers and the ResourceManager, JobMasters, blob transfer, "+
			"task deployment, workers' sessions and their data exchange) uses mutual TLS: each peer presents "+
			"security.ssl.internal.keystore and accepts only certificates signed by a CA of "+
			"security.ssl.internal.truststore (host names are not checked, as in Flink's internal SSL). "+
			"security.internal.secret-file is then not used. On YARN it is on by default: unless "+
			"security.ssl.internal.keystore names a keystore on every node, the client generates a CA and certificates for "+
			"each application and ships them as private local resources (mode 600); the CA's key is never written.").
		WithFallbackKeys(SSLEnabled.Key())

	// SSLInternalKeystore is a process's certificate and key for internal
	// connections.
	SSLInternalKeystore = String("security.ssl.internal.keystore", "",
		"Keystore with the private key and certificate (chain) every cluster process presents on internal "+
			"connections: a JKS or PKCS12 file as Flink takes (keytool -genkeypair), or a PEM file of the certificate "+
			"chain and the private key. It must hold exactly one private key (there is no alias option, as in Flink).").
		WithDefaultDoc("(none): security.ssl.keystore").
		WithFallbackKeys(SSLKeystore.Key())

	// SSLInternalKeystorePassword opens security.ssl.internal.keystore.
	SSLInternalKeystorePassword = String("security.ssl.internal.keystore-password", "",
		"Password of security.ssl.internal.keystore: the password of a JKS or PKCS12 file (keytool -storepass; "+
			"required for JKS), which also decrypts its private key when security.ssl.internal.key-password is not set; "+
			"of a PEM keystore, the password of its encrypted private key (a PEM key with 'Proc-Type: 4,ENCRYPTED', as "+
			"openssl writes with -traditional).").WithDefaultDoc("(none): security.ssl.keystore-password").
		WithFallbackKeys(SSLKeystorePassword.Key())
	// SSLInternalKeyPassword decrypts the private key of
	// security.ssl.internal.keystore.
	SSLInternalKeyPassword = String("security.ssl.internal.key-password", "",
		"Password of the private key in security.ssl.internal.keystore (keytool -keypass): a JKS key's, or an "+
			"encrypted PEM key's. A PKCS12 file has one password for the file and its key, "+
			"security.ssl.internal.keystore-password.").
		WithDefaultDoc("(none): security.ssl.key-password, else security.ssl.internal.keystore-password").
		WithFallbackKeys(SSLKeyPassword.Key())

	// SSLInternalKeystoreType is the format of
	// security.ssl.internal.keystore.
	SSLInternalKeystoreType = Enum("security.ssl.internal.keystore-type", "", []string{"pkcs12", "jks", "pem"},
		"Format of security.ssl.internal.keystore: pkcs12, jks or pem; unset, it is told from the file's content "+
			"(see security.ssl.rest.keystore-type).").
		WithDefaultDoc("(none): from the file's content")

	// SSLInternalTruststore is the CA certificates of internal peers.
	SSLInternalTruststore = String("security.ssl.internal.truststore", "",
		"Truststore of the CA certificates whose certificates internal peers must present: a JKS or PKCS12 file "+
			"(as in Java, a key entry's certificate is trusted too: Flink's documented setup names one keystore of a "+
			"self-signed certificate as both keystore and truststore), or a PEM file of certificates.").
		WithDefaultDoc("(none): security.ssl.truststore").
		WithFallbackKeys(SSLTruststore.Key())

	// SSLInternalTruststorePassword verifies
	// security.ssl.internal.truststore.
	SSLInternalTruststorePassword = String("security.ssl.internal.truststore-password", "",
		"Password of security.ssl.internal.truststore when it is a JKS file (required: it verifies the file's "+
			"integrity) or a PKCS12 file; a PEM truststore has none and ignores it.").WithDefaultDoc("(none): security.ssl.truststore-password").
		WithFallbackKeys(SSLTruststorePassword.Key())

	// SSLInternalTruststoreType is the format of
	// security.ssl.internal.truststore.
	SSLInternalTruststoreType = Enum("security.ssl.internal.truststore-type", "", []string{"pkcs12", "jks", "pem"},
		"Format of security.ssl.internal.truststore: pkcs12, jks or pem; unset, it is told from the file's content "+
			"(see security.ssl.rest.keystore-type).").
		WithDefaultDoc("(none): from the file's content")
)

// Flink's shared TLS options: each is read for the internal and the REST
// option of its name where that one is not set (Flink's SSLUtils reads
// them so; its documentation no longer lists them, and encourages
// separate internal and REST settings).
var (
	// SSLEnabled is the fallback of security.ssl.internal.enabled and
	// security.ssl.rest.enabled.
	SSLEnabled = Bool("security.ssl.enabled", false,
		"Deprecated in Flink, read as Flink reads it: the value of security.ssl.internal.enabled and of "+
			"security.ssl.rest.enabled where either is not set. Set those instead.")

	// SSLKeystore is the fallback of security.ssl.internal.keystore and
	// security.ssl.rest.keystore.
	SSLKeystore = String("security.ssl.keystore", "",
		"Keystore of both security.ssl.internal.keystore and security.ssl.rest.keystore where either is not set "+
			"(Flink's shared key).").WithDefaultDoc("(none)")

	// SSLKeystorePassword is the fallback of the internal and REST
	// keystore passwords.
	SSLKeystorePassword = String("security.ssl.keystore-password", "",
		"Password of both security.ssl.internal.keystore-password and security.ssl.rest.keystore-password where "+
			"either is not set (Flink's shared key).").WithDefaultDoc("(none)")

	// SSLKeyPassword is the fallback of the internal and REST key
	// passwords.
	SSLKeyPassword = String("security.ssl.key-password", "",
		"Password of both security.ssl.internal.key-password and security.ssl.rest.key-password where either is "+
			"not set (Flink's shared key).").WithDefaultDoc("(none)")

	// SSLTruststore is the fallback of security.ssl.internal.truststore
	// and security.ssl.rest.truststore.
	SSLTruststore = String("security.ssl.truststore", "",
		"Truststore of both security.ssl.internal.truststore and security.ssl.rest.truststore where either is not "+
			"set (Flink's shared key).").WithDefaultDoc("(none)")

	// SSLTruststorePassword is the fallback of the internal and REST
	// truststore passwords.
	SSLTruststorePassword = String("security.ssl.truststore-password", "",
		"Password of both security.ssl.internal.truststore-password and security.ssl.rest.truststore-password "+
			"where either is not set (Flink's shared key).").WithDefaultDoc("(none)")
)

func securityOptions() []AnyOption {
	return []AnyOption{
		InternalSecretFile, RESTTokenFile,
		SSLRESTEnabled, SSLRESTKeystore, SSLRESTKeystorePassword, SSLRESTKeyPassword, SSLRESTKeystoreType,
		SSLRESTTruststore, SSLRESTTruststorePassword, SSLRESTTruststoreType, SSLRESTAuthenticationEnabled, SSLVerifyHostname,
		SSLInternalEnabled, SSLInternalKeystore, SSLInternalKeystorePassword, SSLInternalKeyPassword, SSLInternalKeystoreType,
		SSLInternalTruststore, SSLInternalTruststorePassword, SSLInternalTruststoreType,
		SSLEnabled, SSLKeystore, SSLKeystorePassword, SSLKeyPassword, SSLTruststore, SSLTruststorePassword,
		KerberosKeytab, KerberosPrincipal, KerberosUseTicketCache, KerberosKrb5ConfPath,
		KerberosAccessHadoopFileSystems, KerberosReloginPeriod, DelegationTokensEnabled,
		DelegationTokensRenewalTimeRatio, DelegationTokensRenewalRetryBackoff,
	}
}
