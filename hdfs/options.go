package hdfs

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/security/kerberos"
)

// Hadoop configuration keys read here (hdfs-default.xml names).
const (
	KeyNameservices        = "dfs.nameservices"
	KeyHANameNodesPrefix   = "dfs.ha.namenodes."        // + <nameservice>
	KeyNameNodeRPCAddress  = "dfs.namenode.rpc-address" // [.<nameservice>.<namenode id>]
	KeyUseDatanodeHostname = "dfs.client.use.datanode.hostname"
	KeyNameNodePrincipal   = "dfs.namenode.kerberos.principal"
	KeyDataTransferProt    = "dfs.data.transfer.protection"
	KeyEncryptDataTransfer = "dfs.encrypt.data.transfer"
)

// DefaultNameNodePort is the NameNode RPC port used when a URI or
// fs.defaultFS names a host without one.
const DefaultNameNodePort = 8020

// Errors of this package.
var (
	// ErrNoKerberosLogin: the cluster requires Kerberos and no login was
	// given (Config.Kerberos).
	ErrNoKerberosLogin = errors.New("hdfs: the cluster requires Kerberos and there is no Kerberos login (security.kerberos.login.keytab and security.kerberos.login.principal, or a ticket cache)")
	// ErrDataTransferProtection: the cluster protects the DataNodes' data
	// transfer in a way the HDFS client cannot speak.
	ErrDataTransferProtection = errors.New("hdfs: unsupported data transfer protection")
	// ErrNoNameNode: no NameNode address could be determined.
	ErrNoNameNode = errors.New("hdfs: no NameNode address")
)

// Options configures a connection to one HDFS cluster (one nameservice).
type Options struct {
	// Addresses are the NameNode RPC addresses, host:port. With HA, all
	// NameNodes of the nameservice: a standby is skipped and the next one
	// tried. Required.
	Addresses []string
	// User is the user HDFS checks permissions for (SIMPLE
	// authentication). Required; with Kerberos it is only informative
	// (the NameNode takes the user from the authenticated principal).
	User string
	// Kerberos authenticates to a secure cluster. Default nil: SIMPLE.
	// colinmarc/hdfs v2.4.0 cannot authenticate with HDFS delegation
	// tokens, so a process on YARN needs its own login (the shipped
	// keytab) to use this package.
	Kerberos *kerberos.Login
	// NameNodePrincipal is the NameNode's principal, as
	// dfs.namenode.kerberos.principal: service/_HOST@REALM, _HOST standing
	// for each NameNode's host. Required with Kerberos.
	NameNodePrincipal string
	// DataTransferProtection is the SASL protection of DataNode
	// connections (dfs.data.transfer.protection): "", "authentication", or
	// "privacy" with AES (dfs.encrypt.data.transfer.cipher.suites);
	// colinmarc/hdfs v2.4.0 also accepts "integrity" but fails reading
	// blocks under it, so OptionsFor refuses it.
	// Default "": none (a DataNode on a privileged port).
	DataTransferProtection string
	// UseDatanodeHostname connects to DataNodes by host name rather than
	// IP address (dfs.client.use.datanode.hostname). Default false.
	UseDatanodeHostname bool
	// DialTimeout bounds each connection attempt to a NameNode or
	// DataNode. Default 20 s.
	DialTimeout time.Duration
	// CloseRetries is how many times closing a file is retried while the
	// NameNode reports the last block not yet minimally replicated, with a
	// delay starting at CloseBackoff and doubling. Defaults 8 and 50 ms:
	// about 12.7 s in all, as long as the Java client waits (5 retries from
	// 400 ms, dfs.client.block.write.locateFollowingBlock.*), but a small
	// file usually completes after the first, short wait.
	CloseRetries int
	CloseBackoff time.Duration
}

func (o Options) withDefaults() Options {
	if o.DialTimeout == 0 {
		o.DialTimeout = 20 * time.Second
	}
	if o.CloseRetries == 0 {
		o.CloseRetries = 8
	}
	if o.CloseBackoff == 0 {
		o.CloseBackoff = 50 * time.Millisecond
	}
	return o
}

// Validate reports every problem of o at once.
func (o Options) Validate() error {
	var errs []error
	if len(o.Addresses) == 0 {
		errs = append(errs, fmt.Errorf("%w: Options.Addresses is empty", ErrNoNameNode))
	}
	for _, a := range o.Addresses {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			errs = append(errs, fmt.Errorf("hdfs: NameNode address %q is not host:port", a))
		}
	}
	if strings.TrimSpace(o.User) == "" {
		errs = append(errs, errors.New("hdfs: Options.User is empty (set HADOOP_USER_NAME or run as a named user)"))
	}
	if o.Kerberos != nil && o.NameNodePrincipal == "" {
		errs = append(errs, fmt.Errorf("hdfs: Options.NameNodePrincipal is empty: with Kerberos the NameNode's principal is needed (%s, e.g. hdfs/_HOST@REALM)", KeyNameNodePrincipal))
	}
	switch o.DataTransferProtection {
	case "", "authentication", "integrity", "privacy":
	default:
		errs = append(errs, fmt.Errorf("hdfs: data transfer protection %q is not authentication, integrity or privacy (%s)", o.DataTransferProtection, KeyDataTransferProt))
	}
	if o.DialTimeout < 0 || o.CloseRetries < 0 || o.CloseBackoff < 0 {
		errs = append(errs, errors.New("hdfs: Options.DialTimeout, CloseRetries and CloseBackoff must not be negative"))
	}
	return errors.Join(errs...)
}

// Config is what Register and OptionsFor need to reach HDFS.
type Config struct {
	// Hadoop is the Hadoop client configuration (core-site.xml,
	// hdfs-site.xml), e.g. from hadoop.LoadFromEnvironment. Nil means an
	// empty configuration: every hdfs:// URI must then name its NameNode.
	Hadoop *hadoop.Configuration
	// Getenv reads the environment (HADOOP_USER_NAME); nil means none.
	Getenv func(string) string
	// User overrides the user; "" takes it from hadoop.CurrentUser.
	User string
	// Tune is applied to the Options built for each cluster, to set
	// timeouts and retries; nil leaves the defaults.
	Tune func(*Options)
	// Kerberos is the login for clusters with
	// hadoop.security.authentication=kerberos. Default nil: such clusters
	// are refused with ErrNoKerberosLogin.
	Kerberos *kerberos.Login
}

// OptionsFor returns the options to reach the cluster that authority (the
// host[:port] of an hdfs:// URI; "" for hdfs:///path, meaning
// fs.defaultFS) names, per NameNodes.
func OptionsFor(c Config, authority string) (Options, error) {
	conf := c.Hadoop
	if conf == nil {
		conf = hadoop.NewConfiguration(c.Getenv)
	}
	auth, err := conf.SecurityAuthentication()
	if err != nil {
		return Options{}, err
	}
	var o Options
	if auth == hadoop.AuthKerberos {
		if c.Kerberos == nil {
			return Options{}, fmt.Errorf("%w (%s=kerberos in %s)", ErrNoKerberosLogin, hadoop.KeySecurityAuthentication, sourceOf(conf, hadoop.KeySecurityAuthentication))
		}
		o.Kerberos = c.Kerberos
		if o.NameNodePrincipal = conf.Get(KeyNameNodePrincipal, ""); o.NameNodePrincipal == "" {
			return Options{}, fmt.Errorf("hdfs: the cluster requires Kerberos but %s is not set: the NameNode's principal is needed (e.g. hdfs/_HOST@REALM)", KeyNameNodePrincipal)
		}
		if o.DataTransferProtection, err = dataTransferProtection(conf); err != nil {
			return Options{}, err
		}
	}
	addrs, err := NameNodes(conf, authority)
	if err != nil {
		return Options{}, err
	}
	user := c.User
	if user == "" && c.Kerberos != nil && auth == hadoop.AuthKerberos {
		// The NameNode knows the caller by the principal's short name.
		user, _, _ = strings.Cut(c.Kerberos.Principal(), "@")
		user, _, _ = strings.Cut(user, "/")
	}
	if user == "" {
		if user, err = hadoop.CurrentUser(c.Getenv); err != nil {
			return Options{}, err
		}
	}
	byHost, err := conf.Bool(KeyUseDatanodeHostname, false)
	if err != nil {
		return Options{}, err
	}
	o.Addresses, o.User, o.UseDatanodeHostname = addrs, user, byHost
	if c.Tune != nil {
		c.Tune(&o)
	}
	return o, nil
}

// KeyCipherSuites names the ciphers the DataNodes encrypt data transfer
// with under privacy.
const KeyCipherSuites = "dfs.encrypt.data.transfer.cipher.suites"

// cipherAES is the cipher suite colinmarc/hdfs negotiates under privacy.
const cipherAES = "AES/CTR/NoPadding"

// dataTransferProtection reads dfs.data.transfer.protection (and
// dfs.encrypt.data.transfer). colinmarc/hdfs v2.4.0 speaks SASL to the
// DataNodes and works under "authentication", and under "privacy" when the
// DataNodes encrypt with AES (dfs.encrypt.data.transfer.cipher.suites =
// AES/CTR/NoPadding); it fails reading blocks under "integrity" and under
// privacy with SASL's own ciphers, and refuses DataNodes that offer several
// protections. Anything it cannot read is refused here with an error that
// says so, rather than failing on the first read.
func dataTransferProtection(conf *hadoop.Configuration) (string, error) {
	enc, err := conf.Bool(KeyEncryptDataTransfer, false)
	if err != nil {
		return "", err
	}
	if enc {
		return "", fmt.Errorf("%w: %s=true (from %s): encrypted data transfer with NameNode keys is not supported by Sluice's HDFS client (colinmarc/hdfs v2.4.0); use %s=privacy with %s=%s",
			ErrDataTransferProtection, KeyEncryptDataTransfer, sourceOf(conf, KeyEncryptDataTransfer), KeyDataTransferProt, KeyCipherSuites, cipherAES)
	}
	vals, err := conf.Strings(KeyDataTransferProt)
	if err != nil {
		return "", err
	}
	if len(vals) == 0 {
		return "", nil
	}
	if len(vals) == 1 {
		switch strings.ToLower(vals[0]) {
		case "authentication":
			return "authentication", nil
		case "privacy":
			suites, err := conf.Strings(KeyCipherSuites)
			if err != nil {
				return "", err
			}
			for _, s := range suites {
				if strings.EqualFold(s, cipherAES) {
					return "privacy", nil
				}
			}
			return "", fmt.Errorf("%w: %s=privacy (from %s) without %s=%s: Sluice's HDFS client (colinmarc/hdfs v2.4.0) reads under privacy only when the DataNodes encrypt with AES; set %s=%s on the cluster and in the client's hdfs-site.xml",
				ErrDataTransferProtection, KeyDataTransferProt, sourceOf(conf, KeyDataTransferProt), KeyCipherSuites, cipherAES, KeyCipherSuites, cipherAES)
		}
	}
	return "", fmt.Errorf("%w: %s=%q (from %s): Sluice's HDFS client (colinmarc/hdfs v2.4.0) supports \"authentication\", or \"privacy\" with %s=%s, on the DataNodes' data transfer; integrity, or a list of several, is not supported",
		ErrDataTransferProtection, KeyDataTransferProt, conf.Get(KeyDataTransferProt, ""), sourceOf(conf, KeyDataTransferProt), KeyCipherSuites, cipherAES)
}

// NameNodes returns the NameNode RPC addresses for authority, the
// host[:port] part of an hdfs:// URI:
//
//   - "" (hdfs:///path) stands for the authority of fs.defaultFS, which
//     must then be an hdfs:// URI;
//   - a name without a port that is an HA nameservice (listed in
//     dfs.nameservices, or having dfs.ha.namenodes.<name>) gives
//     dfs.namenode.rpc-address.<name>.<id> for each id of
//     dfs.ha.namenodes.<name>, in that order;
//   - otherwise host:port, the port defaulting to 8020.
func NameNodes(conf *hadoop.Configuration, authority string) ([]string, error) {
	if authority == "" {
		def := conf.DefaultFS()
		u, err := url.Parse(def)
		if err != nil || !strings.EqualFold(u.Scheme, "hdfs") || u.Host == "" {
			return nil, fmt.Errorf("%w: an hdfs:/// URI without a NameNode needs %s to name one (hdfs://host:port or hdfs://nameservice), but it is %q (from %s)",
				ErrNoNameNode, hadoop.KeyDefaultFS, def, sourceOf(conf, hadoop.KeyDefaultFS))
		}
		authority = u.Host
	}
	host, port := authority, ""
	if h, p, err := net.SplitHostPort(authority); err == nil {
		host, port = h, p
	}
	if host == "" {
		return nil, fmt.Errorf("%w: %q has no host", ErrNoNameNode, authority)
	}
	if port == "" {
		ids, isNS, err := nameservice(conf, host)
		if err != nil {
			return nil, err
		}
		if isNS {
			addrs := make([]string, 0, len(ids))
			for _, id := range ids {
				key := KeyNameNodeRPCAddress + "." + host + "." + id
				a := conf.Get(key, "")
				if a == "" {
					return nil, fmt.Errorf("%w: nameservice %q lists NameNode %q but %s is not set", ErrNoNameNode, host, id, key)
				}
				if _, p, err := net.SplitHostPort(a); err != nil || p == "" {
					return nil, fmt.Errorf("%w: %s=%q (from %s) is not host:port", hadoop.ErrBadConfig, key, a, sourceOf(conf, key))
				}
				addrs = append(addrs, a)
			}
			return addrs, nil
		}
		port = strconv.Itoa(DefaultNameNodePort)
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return nil, fmt.Errorf("%w: %q has a bad port", ErrNoNameNode, authority)
	}
	return []string{net.JoinHostPort(host, port)}, nil
}

// nameservice reports whether name is an HA nameservice and its NameNode IDs.
func nameservice(conf *hadoop.Configuration, name string) ([]string, bool, error) {
	nss, err := conf.Strings(KeyNameservices)
	if err != nil {
		return nil, false, err
	}
	ids, err := conf.Strings(KeyHANameNodesPrefix + name)
	if err != nil {
		return nil, false, err
	}
	listed := slices.Contains(nss, name)
	if !listed && len(ids) == 0 {
		return nil, false, nil
	}
	if len(ids) == 0 {
		return nil, false, fmt.Errorf("%w: %s lists nameservice %q but %s%s names no NameNode", ErrNoNameNode, KeyNameservices, name, KeyHANameNodesPrefix, name)
	}
	return ids, true, nil
}

func sourceOf(conf *hadoop.Configuration, key string) string {
	if s := conf.Source(key); s != "" {
		return s
	}
	return "defaults"
}
