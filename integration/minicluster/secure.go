package minicluster

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/integration/internal/harness"
)

// EnvSecureConfDir names the environment variable that points tests at an already running secure
// cluster (integration/scripts/minicluster.sh start DIR --secure).
const EnvSecureConfDir = "SLUICE_HADOOP_SECURE_CONF_DIR"

// READY keys of a secure cluster.
const (
	KeySecure                   = "secure"
	KeyRealm                    = "realm"
	KeyKDCAddress               = "kdc_address"
	KeyKrb5Conf                 = "krb5_conf"
	KeyClientPrincipal          = "client_principal"
	KeyClientKeytab             = "client_keytab"
	KeyServiceKeytab            = "service_keytab"
	KeyNameNodePrincipal        = "namenode_principal"
	KeyResourceManagerPrincipal = "resourcemanager_principal"
	KeyKafkaPrincipal           = "kafka_principal"
	KeyKafkaKeytab              = "kafka_keytab"
	KeyTokenRenewInterval       = "delegation_token_renew_interval_ms"
	KeyTokenMaxLifetime         = "delegation_token_max_lifetime_ms"
	KeyMasterKeyRolling         = "master_key_rolling_interval_s"
	KeyDataTransferProtection   = "data_transfer_protection"
)

var secureKeys = []string{KeyRealm, KeyKDCAddress, KeyKrb5Conf, KeyClientPrincipal, KeyClientKeytab,
	KeyServiceKeytab, KeyNameNodePrincipal, KeyResourceManagerPrincipal, KeyKafkaPrincipal, KeyKafkaKeytab}

// Kerberos is what a secure cluster's clients need: the KDC's krb5.conf, the client principal
// with its keytab, and the servers' principals. Every server runs with
// hadoop.security.authentication=kerberos, hadoop.rpc.protection=authentication,integrity,privacy
// (a client may choose any) and dfs.data.transfer.protection=privacy with AES; the conf dir's
// *-site.xml files name the server principals with _HOST (hdfs/_HOST@REALM, yarn/_HOST@REALM).
type Kerberos struct {
	Realm     string // EXAMPLE.COM
	KDC       string // host:port of the KDC (TCP)
	Krb5Conf  string // path of a krb5.conf naming the KDC
	Principal string // the client principal, sluice@REALM (short name sluice, home /user/sluice)
	Keytab    string // the client principal's keytab
	ServiceKT string // keytab of hdfs/localhost, yarn/localhost and HTTP/localhost
	NameNode  string // the NameNode's principal, hdfs/localhost@REALM
	RM        string // the ResourceManager's principal: hdfs/localhost@REALM (one JVM, one Kerberos identity)
	Kafka     string // a principal for a Kafka broker, kafka/localhost@REALM
	KafkaKT   string // its keytab

	// The cluster's deliberately short credential lifetimes: HDFS
	// delegation tokens must be renewed every TokenRenewInterval and die
	// after TokenMaxLifetime; the ResourceManager rolls its AMRMToken and
	// NMToken master keys every MasterKeyRolling.
	TokenRenewInterval, TokenMaxLifetime, MasterKeyRolling time.Duration
	// DataTransferProtection is the DataNodes' dfs.data.transfer.protection
	// (privacy, encrypted with AES, unless the harness was started with
	// another --data-transfer-protection).
	DataTransferProtection string
}

func kerberosFromReady(f map[string]string) *Kerberos {
	if f[KeySecure] != "true" {
		return nil
	}
	return &Kerberos{
		Realm: f[KeyRealm], KDC: f[KeyKDCAddress], Krb5Conf: f[KeyKrb5Conf],
		Principal: f[KeyClientPrincipal], Keytab: f[KeyClientKeytab], ServiceKT: f[KeyServiceKeytab],
		NameNode: f[KeyNameNodePrincipal], RM: f[KeyResourceManagerPrincipal],
		Kafka: f[KeyKafkaPrincipal], KafkaKT: f[KeyKafkaKeytab],
		TokenRenewInterval:     readyDuration(f[KeyTokenRenewInterval], time.Millisecond),
		TokenMaxLifetime:       readyDuration(f[KeyTokenMaxLifetime], time.Millisecond),
		MasterKeyRolling:       readyDuration(f[KeyMasterKeyRolling], time.Second),
		DataTransferProtection: f[KeyDataTransferProtection],
	}
}

// readyDuration reads a READY number in unit; 0 when absent or not a
// number.
func readyDuration(v string, unit time.Duration) time.Duration {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0
	}
	return time.Duration(n) * unit
}

var sharedSecure struct {
	once    sync.Once
	cluster *Cluster
	err     error
}

// SharedSecure is [Shared] for the secure cluster: the one named by $SLUICE_HADOOP_SECURE_CONF_DIR,
// or one started (with one NodeManager) on first use and stopped by [RunMain]. A cluster that
// cannot be had, or one that is not secure, fails the test.
func SharedSecure(t testing.TB) *Cluster {
	t.Helper()
	if !harness.InMain() {
		t.Fatal("minicluster: " + harness.NeedMainMessage)
	}
	sharedSecure.once.Do(func() {
		if dir := os.Getenv(EnvSecureConfDir); dir != "" {
			c, err := Load(dir)
			if err == nil && c.Kerberos == nil {
				err = fmt.Errorf("its READY does not say secure=true")
			}
			if err != nil {
				sharedSecure.err = fmt.Errorf("%s=%s: %w", EnvSecureConfDir, dir, err)
			}
			sharedSecure.cluster = c
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), sharedStartTimeout)
		defer cancel()
		c, err := Start(ctx, Options{NodeManagers: 1, Secure: true, Logf: stderrLogf})
		if err != nil {
			sharedSecure.err = err
			return
		}
		sharedSecure.cluster = c
		harness.AtExit("minicluster (secure)", func(keep bool) error {
			err := c.proc.stop(keep)
			if keep && err == nil {
				fmt.Fprintf(os.Stderr, "minicluster: a test failed; secure cluster files (logs, keytabs) kept in %s\n", c.proc.root)
			}
			return err
		})
	})
	if sharedSecure.err != nil {
		t.Fatalf("minicluster: no secure Hadoop cluster for this test: %v", sharedSecure.err)
	}
	return sharedSecure.cluster
}
