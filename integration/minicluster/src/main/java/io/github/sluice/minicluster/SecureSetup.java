package io.github.sluice.minicluster;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.minikdc.MiniKdc;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The secure mode of the harness: a MiniKdc (Apache Kerby) on loopback, the service and client
 * principals with their keytabs, and the Hadoop settings that turn on Kerberos for HDFS and YARN.
 *
 * <p>Principals (realm EXAMPLE.COM, host part {@code localhost}, the name every published address
 * uses): {@code hdfs/localhost} for every server, {@code HTTP/localhost} (SPNEGO of the web UIs)
 * and {@code yarn/localhost} (unused by the servers) in {@code service.keytab}. A Hadoop server
 * accepts SASL under the JVM's login user, which is JVM-wide: in this one JVM the
 * ResourceManager and NodeManagers are hdfs/localhost too, and the client configuration says so
 * (yarn.resourcemanager.principal=hdfs/_HOST@REALM);
 * the client {@code sluice} in {@code sluice.keytab}; the Kafka broker {@code kafka/localhost} in
 * {@code kafka.keytab}. Keytabs and a client krb5.conf go to {@code CONFDIR/kerberos/}.
 */
final class SecureSetup {
  private static final Logger LOG = LoggerFactory.getLogger(SecureSetup.class);

  static final String HOST = HadoopCluster.PUBLISHED_HOST;
  static final String CLIENT = "sluice";

  private final Path dir; // CONFDIR/kerberos
  private final File kdcWork;
  private MiniKdc kdc;
  private String realm;
  private File serviceKeytab;
  private File clientKeytab;
  private File kafkaKeytab;
  private Path krb5Conf;

  private final String dataTransferProtection;

  SecureSetup(Path confDir, File workDir, String dataTransferProtection) {
    this.dir = confDir.resolve("kerberos");
    this.kdcWork = new File(workDir, "kdc");
    this.dataTransferProtection = dataTransferProtection;
  }

  /** Starts the KDC, creates the principals and keytabs and writes krb5.conf. */
  void start() throws Exception {
    Files.createDirectories(dir);
    if (!kdcWork.isDirectory() && !kdcWork.mkdirs()) {
      throw new IOException("cannot create " + kdcWork);
    }
    Properties p = MiniKdc.createConf();
    p.setProperty(MiniKdc.KDC_BIND_ADDRESS, HOST);
    p.setProperty(MiniKdc.KDC_PORT, "0");
    p.setProperty(MiniKdc.TRANSPORT, "TCP");
    // Tickets live 10 hours and renew for a week, as on a stock KDC.
    p.setProperty(MiniKdc.MAX_TICKET_LIFETIME, String.valueOf(10L * 3600 * 1000));
    p.setProperty(MiniKdc.MAX_RENEWABLE_LIFETIME, String.valueOf(7L * 24 * 3600 * 1000));
    kdc = new MiniKdc(p, kdcWork);
    kdc.start();
    realm = kdc.getRealm();
    serviceKeytab = dir.resolve("service.keytab").toFile();
    clientKeytab = dir.resolve(CLIENT + ".keytab").toFile();
    kafkaKeytab = dir.resolve("kafka.keytab").toFile();
    kdc.createPrincipal(serviceKeytab, "hdfs/" + HOST, "yarn/" + HOST, "HTTP/" + HOST);
    kdc.createPrincipal(clientKeytab, CLIENT);
    kdc.createPrincipal(kafkaKeytab, "kafka/" + HOST);
    krb5Conf = dir.resolve("krb5.conf");
    writeAtomically(krb5Conf, krb5Conf());
    // The JVM's own Kerberos (the servers' logins) reads the same file; MiniKdc set the property
    // to its own copy, which names the same KDC.
    System.setProperty(MiniKdc.JAVA_SECURITY_KRB5_CONF, krb5Conf.toString());
    LOG.info("KDC for realm {} on {}:{}; keytabs in {}", realm, HOST, kdc.getPort(), dir);
  }

  private String krb5Conf() {
    return "# Written by the Sluice test harness: the MiniKdc of realm "
        + realm
        + ".\n"
        + "[libdefaults]\n"
        + "  default_realm = "
        + realm
        + "\n"
        + "  dns_lookup_kdc = false\n"
        + "  dns_lookup_realm = false\n"
        + "  udp_preference_limit = 1\n"
        + "  rdns = false\n"
        + "  ticket_lifetime = 10h\n"
        + "  renew_lifetime = 7d\n"
        + "  forwardable = true\n"
        + "  default_tkt_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96\n"
        + "  default_tgs_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96\n"
        + "  permitted_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96\n"
        + "[realms]\n"
        + "  "
        + realm
        + " = {\n"
        + "    kdc = "
        + HOST
        + ":"
        + kdc.getPort()
        + "\n"
        + "  }\n"
        + "[domain_realm]\n"
        + "  "
        + HOST
        + " = "
        + realm
        + "\n";
  }

  String dataTransferProtection() {
    return dataTransferProtection;
  }

  String realm() {
    return realm;
  }

  String principal(String name) {
    return name + "@" + realm;
  }

  File serviceKeytab() {
    return serviceKeytab;
  }

  /** auth_to_local: one- and two-component principals of our realm map to their first part. */
  String authToLocal() {
    String r = realm.replace(".", "\\.");
    return "RULE:[1:$1@$0](.*@" + r + ")s/@.*//\n"
        + "RULE:[2:$1@$0](.*@" + r + ")s/@.*//\n"
        + "DEFAULT";
  }

  /** Server-side settings: Kerberos for every HDFS and YARN server of this JVM. */
  void configureServers(Configuration c) {
    String hdfs = principal("hdfs/" + HOST);
    // One JVM, one login user: the YARN servers are hdfs/localhost too (see the class comment).
    String yarn = hdfs;
    String http = principal("HTTP/" + HOST);
    String kt = serviceKeytab.getAbsolutePath();
    c.set("hadoop.security.authentication", "kerberos");
    c.set("hadoop.security.authorization", "false");
    c.set("hadoop.rpc.protection", "authentication,integrity,privacy");
    c.set("hadoop.security.auth_to_local", authToLocal());
    c.set("dfs.namenode.kerberos.principal", hdfs);
    c.set("dfs.namenode.keytab.file", kt);
    c.set("dfs.namenode.kerberos.internal.spnego.principal", http);
    c.set("dfs.secondary.namenode.kerberos.principal", hdfs);
    c.set("dfs.secondary.namenode.keytab.file", kt);
    c.set("dfs.datanode.kerberos.principal", hdfs);
    c.set("dfs.datanode.keytab.file", kt);
    c.set("dfs.web.authentication.kerberos.principal", http);
    c.set("dfs.web.authentication.kerberos.keytab", kt);
    c.setBoolean("dfs.block.access.token.enable", true);
    // SASL on the DataNode's data transfer port instead of privileged ports (which need root and
    // jsvc); HTTPS_ONLY would need a keystore, hence the testing switch Hadoop's own tests use.
    // The protection is --data-transfer-protection (default privacy, encrypted with AES: what
    // colinmarc/hdfs v2.4.0 reads; it fails under integrity and under SASL's own ciphers).
    c.set("dfs.data.transfer.protection", dataTransferProtection);
    if (dataTransferProtection.equals("privacy")) {
      c.set("dfs.encrypt.data.transfer.cipher.suites", "AES/CTR/NoPadding");
    }
    c.setBoolean("ignore.secure.ports.for.testing", true);
    c.set("dfs.http.policy", "HTTP_ONLY");
    c.set("yarn.resourcemanager.principal", yarn);
    c.set("yarn.resourcemanager.keytab", kt);
    c.set("yarn.nodemanager.principal", yarn);
    c.set("yarn.nodemanager.keytab", kt);
    c.set("yarn.resourcemanager.webapp.spnego-principal", http);
    c.set("yarn.resourcemanager.webapp.spnego-keytab-file", kt);
    c.set("yarn.nodemanager.webapp.spnego-principal", http);
    c.set("yarn.nodemanager.webapp.spnego-keytab-file", kt);
    c.setBoolean("yarn.timeline-service.enabled", false);
    configureShortLifetimes(c);
  }

  // Credential lifetimes of the secure cluster, deliberately short so that a test running for a
  // few minutes outlives its first HDFS delegation tokens and sees the ResourceManager roll its
  // AMRMToken and NMToken master keys (a production cluster: 1 day renewal, 7 days lifetime,
  // daily roll-overs). Kerberos tickets are as short as the client asks for (ticket_lifetime in
  // its krb5.conf); the harness's own krb5.conf asks for 10 hours.
  static final long TOKEN_RENEW_INTERVAL_MS = 40_000;
  static final long TOKEN_MAX_LIFETIME_MS = 100_000;
  // A master key roll-over must exceed twice 1.5 times the matching liveness expiry: hence the
  // shorter AM and NodeManager expiry intervals.
  static final long MASTER_KEY_ROLLING_INTERVAL_S = 100;
  static final long LIVENESS_EXPIRY_MS = 30_000;

  private static void configureShortLifetimes(Configuration c) {
    c.setLong("dfs.namenode.delegation.token.renew-interval", TOKEN_RENEW_INTERVAL_MS);
    c.setLong("dfs.namenode.delegation.token.max-lifetime", TOKEN_MAX_LIFETIME_MS);
    c.setLong("dfs.namenode.delegation.key.update-interval", TOKEN_RENEW_INTERVAL_MS);
    c.setLong("yarn.am.liveness-monitor.expiry-interval-ms", LIVENESS_EXPIRY_MS);
    c.setLong("yarn.nm.liveness-monitor.expiry-interval-ms", LIVENESS_EXPIRY_MS);
    c.setLong("yarn.resourcemanager.am-rm-tokens.master-key-rolling-interval-secs", MASTER_KEY_ROLLING_INTERVAL_S);
    c.setLong("yarn.resourcemanager.nm-tokens.master-key-rolling-interval-secs", MASTER_KEY_ROLLING_INTERVAL_S);
  }

  /** Client-side settings written to the *-site.xml files (server principals with _HOST). */
  void configureCore(Configuration core) {
    core.set("hadoop.security.authentication", "kerberos");
    core.set("hadoop.rpc.protection", "authentication,integrity,privacy");
    core.set("hadoop.security.auth_to_local", authToLocal());
  }

  void configureHdfs(Configuration hdfs) {
    hdfs.set("dfs.namenode.kerberos.principal", "hdfs/_HOST@" + realm);
    hdfs.set("dfs.datanode.kerberos.principal", "hdfs/_HOST@" + realm);
    hdfs.setBoolean("dfs.block.access.token.enable", true);
    hdfs.set("dfs.data.transfer.protection", dataTransferProtection);
    if (dataTransferProtection.equals("privacy")) {
      hdfs.set("dfs.encrypt.data.transfer.cipher.suites", "AES/CTR/NoPadding");
    }
  }

  void configureYarn(Configuration yarn) {
    yarn.set("yarn.resourcemanager.principal", "hdfs/_HOST@" + realm);
    yarn.set("yarn.nodemanager.principal", "hdfs/_HOST@" + realm);
  }

  /** key=value lines for READY and KDC_READY. */
  Map<String, String> fields() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("secure", "true");
    m.put("realm", realm);
    m.put("kdc_address", HOST + ":" + kdc.getPort());
    m.put("krb5_conf", krb5Conf.toString());
    m.put("client_principal", principal(CLIENT));
    m.put("client_keytab", clientKeytab.getAbsolutePath());
    m.put("service_keytab", serviceKeytab.getAbsolutePath());
    m.put("namenode_principal", principal("hdfs/" + HOST));
    m.put("resourcemanager_principal", principal("hdfs/" + HOST));
    m.put("kafka_principal", principal("kafka/" + HOST));
    m.put("kafka_keytab", kafkaKeytab.getAbsolutePath());
    m.put("delegation_token_renew_interval_ms", String.valueOf(TOKEN_RENEW_INTERVAL_MS));
    m.put("delegation_token_max_lifetime_ms", String.valueOf(TOKEN_MAX_LIFETIME_MS));
    m.put("master_key_rolling_interval_s", String.valueOf(MASTER_KEY_ROLLING_INTERVAL_S));
    m.put("data_transfer_protection", dataTransferProtection);
    return m;
  }

  /** Writes KDC_READY: the KDC and keytabs can be used before the Hadoop servers are up. */
  void writeKdcReady(Path confDir) throws IOException {
    StringBuilder b = new StringBuilder();
    for (Map.Entry<String, String> e : fields().entrySet()) {
      b.append(e.getKey()).append('=').append(e.getValue()).append('\n');
    }
    writeAtomically(confDir.resolve("KDC_READY"), b.toString());
  }

  void stop() {
    if (kdc != null) {
      try {
        kdc.stop();
      } catch (RuntimeException e) {
        LOG.warn("stopping the KDC", e);
      }
    }
  }

  private static void writeAtomically(Path target, String content) throws IOException {
    Path tmp = target.resolveSibling(target.getFileName() + ".tmp");
    Files.write(tmp, content.getBytes(StandardCharsets.UTF_8));
    Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }
}
