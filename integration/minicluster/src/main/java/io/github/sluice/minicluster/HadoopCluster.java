package io.github.sluice.minicluster;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.util.VersionInfo;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.NodeState;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.nodemanager.NodeManager;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.server.resourcemanager.rmnode.RMNode;
import org.apache.hadoop.yarn.server.webproxy.WebAppProxyServer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One MiniDFSCluster (a NameNode and one DataNode) and one MiniYARNCluster (a ResourceManager and
 * N NodeManagers) in this JVM, every server bound to 127.0.0.1 on an ephemeral port.
 *
 * <p>Lifecycle: {@link #start()} once, then {@link #stop()} (idempotent). {@link #writeClientConf}
 * writes the client-side *-site.xml files with the effective addresses.
 */
final class HadoopCluster {
  private static final Logger LOG = LoggerFactory.getLogger(HadoopCluster.class);

  /** Loopback address every server binds to: tests reach nothing but loopback. */
  static final String HOST = "127.0.0.1";

  /**
   * Host name published in READY and the *-site.xml files. It is what Hadoop itself calls the
   * bound loopback address (ResourceManager and NodeManager ids come out as localhost:port), so
   * every published address names the same host, as Kerberos principals (_HOST) will need.
   */
  static final String PUBLISHED_HOST = "localhost";

  private final Settings settings;
  private final Configuration conf;
  private MiniDFSCluster dfs;
  private HarnessYarnCluster yarn;
  private WebAppProxyServer proxy;
  private boolean stopped;
  private String user;

  /** Knobs of the cluster; every field's default is the one used by the harness scripts. */
  static final class Settings {
    /** Scratch directory for HDFS and NodeManager state; must exist. */
    File workDir;
    /** Number of NodeManagers (default 2). */
    int nodeManagers = 2;
    /** Memory each NodeManager offers to containers, MB (default 4096). */
    int nmMemoryMb = 4096;
    /** Virtual cores each NodeManager offers (default 8). */
    int nmVcores = 8;
    /** Smallest container the scheduler hands out, MB (default 64). */
    int minAllocationMb = 64;
    /** How long to wait for NodeManagers to register and turn RUNNING, ms (default 120000). */
    long nodeWaitMs = 120_000;
    /** The started KDC of the secure mode; null (the default) for a cluster without Kerberos. */
    SecureSetup secure;
  }

  HadoopCluster(Settings settings) {
    this.settings = settings;
    this.conf = baseConf(settings);
  }

  private static YarnConfiguration baseConf(Settings s) {
    YarnConfiguration c = new YarnConfiguration();
    String work = s.workDir.getAbsolutePath();

    // Common.
    c.set("hadoop.tmp.dir", work + "/tmp");
    c.set("hadoop.security.authentication", "simple");

    // HDFS.
    c.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, work + "/dfs");
    c.setBoolean("dfs.permissions.enabled", true);
    c.setInt("dfs.replication", 1);
    c.set("dfs.namenode.rpc-bind-host", HOST);
    c.set("dfs.namenode.http-bind-host", HOST);
    // A nearly full shared disk must not put the NameNode into safe mode.
    c.setLong("dfs.namenode.resource.du.reserved", 16L * 1024 * 1024);
    // Give up faster on a dead client connection; the default waits minutes.
    c.setInt("ipc.client.connect.max.retries", 3);

    // YARN: addresses. Fixed-ports mode makes MiniYARNCluster keep these values, so every server
    // binds to loopback; port 0 still gives each server an ephemeral port, written back into the
    // configuration once it is bound.
    c.setBoolean(YarnConfiguration.YARN_MINICLUSTER_FIXED_PORTS, true);
    c.setBoolean(YarnConfiguration.YARN_MINICLUSTER_USE_RPC, false);
    for (String key :
        new String[] {
          YarnConfiguration.RM_ADDRESS,
          YarnConfiguration.RM_SCHEDULER_ADDRESS,
          YarnConfiguration.RM_RESOURCE_TRACKER_ADDRESS,
          YarnConfiguration.RM_ADMIN_ADDRESS,
          YarnConfiguration.RM_WEBAPP_ADDRESS,
          YarnConfiguration.RM_WEBAPP_HTTPS_ADDRESS,
          YarnConfiguration.NM_ADDRESS,
          YarnConfiguration.NM_LOCALIZER_ADDRESS,
          YarnConfiguration.NM_WEBAPP_ADDRESS,
          YarnConfiguration.NM_WEBAPP_HTTPS_ADDRESS,
          YarnConfiguration.NM_COLLECTOR_SERVICE_ADDRESS,
        }) {
      c.set(key, HOST + ":0");
    }

    // YARN: resources sized for a small shared machine.
    c.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, s.minAllocationMb);
    c.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_VCORES, 1);
    c.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, s.nmMemoryMb);
    c.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_VCORES, s.nmVcores);
    c.setInt(YarnConfiguration.NM_PMEM_MB, s.nmMemoryMb);
    c.setInt(YarnConfiguration.NM_VCORES, s.nmVcores);
    c.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
    c.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
    // CapacityScheduler, as on a stock cluster, with the single queue root.default (the shaded jars
    // ship no capacity-scheduler.xml, so the queue tree is set here).
    c.set("yarn.scheduler.capacity.root.queues", "default");
    c.set("yarn.scheduler.capacity.root.default.capacity", "100");
    c.set("yarn.scheduler.capacity.root.default.maximum-capacity", "100");
    // ApplicationMasters may use half the cluster (default 10%, too little for 2 small NMs).
    c.setFloat("yarn.scheduler.capacity.maximum-am-resource-percent", 0.5f);
    // A busy shared disk must not mark the NodeManagers unhealthy.
    c.setFloat(
        YarnConfiguration.NM_MAX_PER_DISK_UTILIZATION_PERCENTAGE, 99.0f);
    c.setLong(YarnConfiguration.NM_MIN_PER_DISK_FREE_SPACE_MB, 0);
    // Log aggregation on, as on a production cluster: a finished application's container logs go
    // to HDFS (remote-app-log-dir), where `yarn logs -applicationId` (LogsCLI) reads them. The
    // local copies stay too (delete.debug-delay-sec), for tests that read container log dirs.
    c.setBoolean(YarnConfiguration.LOG_AGGREGATION_ENABLED, true);
    c.set(YarnConfiguration.NM_REMOTE_APP_LOG_DIR, "/tmp/logs");
    c.setLong(YarnConfiguration.DEBUG_NM_DELETE_DELAY_SEC, 3 * 3600);
    c.set(
        YarnConfiguration.NM_CONTAINER_EXECUTOR,
        "org.apache.hadoop.yarn.server.nodemanager.DefaultContainerExecutor");
    // Stop quickly: a NodeManager waits for its applications on shutdown for
    // sleep-delay-before-sigkill + process-kill-wait + 1 s (default 6.25 s).
    c.setLong(YarnConfiguration.NM_SLEEP_DELAY_BEFORE_SIGKILL_MS, 250);
    c.setLong(YarnConfiguration.NM_PROCESS_KILL_WAIT_MS, 1000);
    // Keep finished containers' logs where a failing test can read them.
    c.setLong(YarnConfiguration.NM_LOG_RETAIN_SECONDS, 3 * 3600);
    if (s.secure != null) {
      s.secure.configureServers(c);
    }
    return c;
  }

  /**
   * The NodeManager's in-process ContainerLocalizer (DefaultContainerExecutor) reads HDFS with a
   * fresh Configuration, which sees only the class path's site files: without the DataNodes' SASL
   * protection it cannot localize resources from the secure HDFS. An hdfs-site.xml naming it goes
   * on the context class loader, which every server thread started later inherits.
   */
  private void localizerSiteFile() throws IOException {
    File dir = new File(settings.workDir, "localizer-conf");
    Files.createDirectories(dir.toPath());
    Files.writeString(
        new File(dir, "hdfs-site.xml").toPath(),
        "<?xml version=\"1.0\"?>\n<configuration>\n  <property><name>dfs.data.transfer.protection</name>"
            + "<value>"
            + settings.secure.dataTransferProtection()
            + "</value></property>\n"
            + (settings.secure.dataTransferProtection().equals("privacy")
                ? "  <property><name>dfs.encrypt.data.transfer.cipher.suites</name>"
                    + "<value>AES/CTR/NoPadding</value></property>\n"
                : "")
            + "</configuration>\n");
    ClassLoader parent = Thread.currentThread().getContextClassLoader();
    Thread.currentThread()
        .setContextClassLoader(new URLClassLoader(new URL[] {dir.toURI().toURL()}, parent));
  }

  /** Starts HDFS, prepares home directories, then YARN, and waits for the NodeManagers. */
  void start() throws Exception {
    if (settings.secure != null) {
      // The harness acts as the HDFS superuser (the NameNode's own principal) to prepare the
      // directories; clients are the principal SecureSetup.CLIENT.
      UserGroupInformation.setConfiguration(conf);
      UserGroupInformation.loginUserFromKeytab(
          settings.secure.principal("hdfs/" + SecureSetup.HOST),
          settings.secure.serviceKeytab().getAbsolutePath());
      user = SecureSetup.CLIENT;
      localizerSiteFile();
    } else {
      user = UserGroupInformation.getCurrentUser().getShortUserName();
    }

    LOG.info("starting MiniDFSCluster under {}", conf.get(MiniDFSCluster.HDFS_MINIDFS_BASEDIR));
    dfs =
        new MiniDFSCluster.Builder(conf)
            .numDataNodes(1)
            .nameNodePort(0)
            .nameNodeHttpPort(0)
            .format(true)
            .build();
    dfs.waitActive();
    conf.set(FileSystem.FS_DEFAULT_NAME_KEY, dfs.getURI().toString());

    DistributedFileSystem fs = dfs.getFileSystem();
    org.apache.hadoop.fs.Path home = new org.apache.hadoop.fs.Path("/user/" + user);
    fs.mkdirs(home, new FsPermission((short) 0755));
    fs.setOwner(home, user, null);
    org.apache.hadoop.fs.Path tmp = new org.apache.hadoop.fs.Path("/tmp");
    fs.mkdirs(tmp);
    fs.setPermission(tmp, new FsPermission((short) 01777));
    LOG.info("HDFS up at {}; home directory {} owned by {}", dfs.getURI(), home, user);

    // MiniYARNCluster keeps its NodeManager directories under ./target/<name>; the JVM runs with
    // the work directory as its current directory (see Main).
    // YARN's web proxy (/proxy/<application>/, the applications' tracking URLs) runs as a server
    // of its own, as on a production cluster; the ResourceManager builds tracking URLs from its
    // address, so the port is chosen before YARN starts. Not in secure mode (the proxy would need
    // a principal of its own).
    if (settings.secure == null) {
      int proxyPort;
      try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getByName(HOST))) {
        proxyPort = ss.getLocalPort();
      }
      conf.set(YarnConfiguration.PROXY_ADDRESS, HOST + ":" + proxyPort);
    }
    yarn = new HarnessYarnCluster("sluice-minicluster", settings.nodeManagers);
    yarn.init(conf);
    yarn.start();
    waitForNodes();
    int port = yarn.reclaimResourceManagerWebApp();
    LOG.info("ResourceManager web app serving on {}:{}", HOST, port);
    if (settings.secure == null) {
      proxy = new WebAppProxyServer();
      proxy.init(new YarnConfiguration(yarn.getConfig()));
      proxy.start();
      LOG.info("YARN web proxy serving on {}", conf.get(YarnConfiguration.PROXY_ADDRESS));
    }
  }

  private void waitForNodes() throws Exception {
    long deadline = System.nanoTime() + settings.nodeWaitMs * 1_000_000L;
    while (true) {
      ResourceManager rm = yarn.getResourceManager();
      int running = 0;
      List<String> states = new ArrayList<>();
      for (RMNode n : rm.getRMContext().getRMNodes().values()) {
        states.add(n.getNodeID() + "=" + n.getState() + " " + n.getHealthReport());
        if (n.getState() == NodeState.RUNNING) {
          running++;
        }
      }
      if (running >= settings.nodeManagers) {
        LOG.info("{} NodeManagers RUNNING: {}", running, states);
        return;
      }
      if (System.nanoTime() > deadline) {
        throw new IOException(
            "only "
                + running
                + " of "
                + settings.nodeManagers
                + " NodeManagers RUNNING after "
                + settings.nodeWaitMs
                + " ms: "
                + states);
      }
      Thread.sleep(100); // polling the RM's node table; no event to wait on from outside
    }
  }

  /** Effective addresses, as host:port, keyed by the names written to READY. */
  Map<String, String> addresses() {
    Configuration y = yarn.getConfig();
    Map<String, String> m = new LinkedHashMap<>();
    m.put("rm_address", publish(y.get(YarnConfiguration.RM_ADDRESS)));
    m.put("rm_scheduler_address", publish(y.get(YarnConfiguration.RM_SCHEDULER_ADDRESS)));
    m.put(
        "rm_resource_tracker_address",
        publish(y.get(YarnConfiguration.RM_RESOURCE_TRACKER_ADDRESS)));
    m.put("rm_admin_address", publish(y.get(YarnConfiguration.RM_ADMIN_ADDRESS)));
    m.put("rm_webapp_address", publish(y.get(YarnConfiguration.RM_WEBAPP_ADDRESS)));
    if (proxy != null) {
      m.put("web_proxy_address", publish(conf.get(YarnConfiguration.PROXY_ADDRESS)));
    }
    InetSocketAddress nn = dfs.getNameNode().getNameNodeAddress();
    m.put("namenode_address", PUBLISHED_HOST + ":" + nn.getPort());
    InetSocketAddress nnHttp = dfs.getNameNode().getHttpAddress();
    m.put("namenode_http_address", PUBLISHED_HOST + ":" + nnHttp.getPort());
    m.put("fs_default_fs", "hdfs://" + PUBLISHED_HOST + ":" + nn.getPort());
    List<String> nms = new ArrayList<>();
    List<String> nmWeb = new ArrayList<>();
    for (int i = 0; i < settings.nodeManagers; i++) {
      NodeManager nm = yarn.getNodeManager(i);
      NodeId id = nm.getNMContext().getNodeId();
      nms.add(id.getHost() + ":" + id.getPort());
      nmWeb.add(id.getHost() + ":" + nm.getNMContext().getHttpPort());
    }
    m.put("nodemanagers", String.valueOf(settings.nodeManagers));
    m.put("nm_addresses", String.join(",", nms));
    m.put("nm_webapp_addresses", String.join(",", nmWeb));
    m.put("hadoop_version", VersionInfo.getVersion());
    m.put("user", user);
    m.put("work_dir", settings.workDir.getAbsolutePath());
    if (settings.secure != null) {
      m.putAll(settings.secure.fields());
    }
    for (Map.Entry<String, String> e : m.entrySet()) {
      if (e.getValue() == null || e.getValue().isEmpty() || e.getValue().endsWith(":0")) {
        throw new IllegalStateException("effective address unknown for " + e.getKey());
      }
    }
    return m;
  }

  /** Rewrites a bound loopback host:port to PUBLISHED_HOST:port; refuses anything else. */
  static String publish(String hostPort) {
    if (hostPort == null) {
      return null;
    }
    int colon = hostPort.lastIndexOf(':');
    if (colon < 0) {
      throw new IllegalStateException("address without port: " + hostPort);
    }
    String host = hostPort.substring(0, colon);
    if (!host.equals(HOST) && !host.equals(PUBLISHED_HOST)) {
      throw new IllegalStateException("server bound off loopback: " + hostPort);
    }
    return PUBLISHED_HOST + hostPort.substring(colon);
  }

  /** Writes core-site.xml, hdfs-site.xml and yarn-site.xml for clients into dir. */
  void writeClientConf(Path dir) throws IOException {
    Map<String, String> a = addresses();
    Configuration y = yarn.getConfig();

    Configuration core = new Configuration(false);
    core.set("fs.defaultFS", a.get("fs_default_fs"));
    core.set("hadoop.security.authentication", "simple");
    core.set("hadoop.security.authorization", "false");
    if (settings.secure != null) {
      settings.secure.configureCore(core);
    }
    writeXml(core, dir.resolve("core-site.xml"));

    Configuration hdfs = new Configuration(false);
    hdfs.set("dfs.namenode.rpc-address", a.get("namenode_address"));
    hdfs.set("dfs.namenode.http-address", a.get("namenode_http_address"));
    hdfs.set("dfs.replication", "1");
    hdfs.set("dfs.permissions.enabled", "true");
    hdfs.set("dfs.client.use.datanode.hostname", "false");
    if (settings.secure != null) {
      settings.secure.configureHdfs(hdfs);
    }
    writeXml(hdfs, dir.resolve("hdfs-site.xml"));

    Configuration yc = new Configuration(false);
    for (String key :
        new String[] {
          YarnConfiguration.RM_ADDRESS,
          YarnConfiguration.RM_SCHEDULER_ADDRESS,
          YarnConfiguration.RM_RESOURCE_TRACKER_ADDRESS,
          YarnConfiguration.RM_ADMIN_ADDRESS,
          YarnConfiguration.RM_WEBAPP_ADDRESS,
          YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB,
          YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_VCORES,
          YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB,
          YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_VCORES,
          YarnConfiguration.NM_PMEM_MB,
          YarnConfiguration.NM_VCORES,
          YarnConfiguration.NM_PMEM_CHECK_ENABLED,
          YarnConfiguration.NM_VMEM_CHECK_ENABLED,
          YarnConfiguration.LOG_AGGREGATION_ENABLED,
          YarnConfiguration.NM_REMOTE_APP_LOG_DIR,
          YarnConfiguration.RM_AM_MAX_ATTEMPTS,
          YarnConfiguration.IS_MINI_YARN_CLUSTER,
        }) {
      String v = y.get(key);
      if (v != null) {
        yc.set(key, key.endsWith(".address") ? publish(v) : v);
      }
    }
    yc.set("yarn.resourcemanager.hostname", PUBLISHED_HOST);
    if (settings.secure != null) {
      settings.secure.configureYarn(yc);
    }
    writeXml(yc, dir.resolve("yarn-site.xml"));
  }

  private static void writeXml(Configuration c, Path target) throws IOException {
    Path tmp = target.resolveSibling(target.getFileName() + ".tmp");
    try (OutputStream out = Files.newOutputStream(tmp)) {
      c.writeXml(out);
    }
    Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  /**
   * Stops the NodeManagers (in parallel: each may wait ~10 s for its log-deletion scheduler), then
   * the rest of YARN, then HDFS. Safe to call more than once.
   */
  synchronized void stop() {
    if (stopped) {
      return;
    }
    stopped = true;
    if (proxy != null) {
      stopQuietly("WebAppProxyServer", proxy::stop);
    }
    if (yarn != null) {
      List<Thread> stoppers = new ArrayList<>();
      for (int i = 0; i < settings.nodeManagers; i++) {
        NodeManager nm = yarn.getNodeManager(i);
        if (nm == null) {
          continue;
        }
        Thread t = new Thread(() -> stopQuietly("NodeManager " + nm, nm::stop), "stop-nm-" + i);
        t.start();
        stoppers.add(t);
      }
      for (Thread t : stoppers) {
        try {
          t.join();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      stopQuietly("MiniYARNCluster", yarn::stop);
    }
    if (dfs != null) {
      stopQuietly("MiniDFSCluster", () -> dfs.shutdown(true));
    }
    if (settings.secure != null) {
      settings.secure.stop();
    }
  }

  private static void stopQuietly(String what, Runnable stop) {
    try {
      stop.run();
    } catch (RuntimeException e) {
      LOG.warn("stopping {}", what, e);
    }
  }
}
