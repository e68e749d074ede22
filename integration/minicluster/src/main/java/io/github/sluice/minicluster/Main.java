package io.github.sluice.minicluster;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.util.ShutdownHookManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import sun.misc.Signal;

/**
 * Entry point of the Sluice Hadoop test harness.
 *
 * <pre>
 * java ... io.github.sluice.minicluster.Main --conf-dir DIR [--work-dir DIR] [--nodemanagers N]
 *     [--nm-memory-mb MB] [--nm-vcores N] [--min-allocation-mb MB] [--secure] [--exit-on-stdin-eof]
 * </pre>
 *
 * With --secure, a MiniKdc starts first (see SecureSetup), KDC_READY is written once it is up with
 * its principals and keytabs, and every server runs with Kerberos authentication.
 *
 * Writes core-site.xml, hdfs-site.xml and yarn-site.xml into the conf dir, then READY (key=value
 * lines) once every NodeManager is RUNNING. Stops on SIGTERM/SIGINT, and also when standard input
 * reaches end-of-file if --exit-on-stdin-eof is given (so a parent that dies takes the cluster with
 * it). Exit status: 0 after a clean stop, 1 if the cluster failed to start, 2 on bad arguments.
 */
public final class Main {
  private static final Logger LOG = LoggerFactory.getLogger(Main.class);

  /** Name of the marker file; present only while the cluster is up. */
  static final String READY = "READY";

  /** Runs before Hadoop's own hooks (FileSystem cache has priority 10). */
  private static final int SHUTDOWN_PRIORITY = 100;

  /** How long the stop hook may take before Hadoop's hook manager gives up on it. */
  private static final long SHUTDOWN_TIMEOUT_SECONDS = 120;

  private Main() {}

  public static void main(String[] args) {
    Args a;
    try {
      a = Args.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("minicluster: " + e.getMessage());
      System.err.println(Args.USAGE);
      System.exit(2);
      return;
    }
    try {
      run(a);
    } catch (Throwable t) {
      LOG.error("minicluster failed to start", t);
      System.err.println("minicluster: failed to start: " + t);
      System.exit(1);
    }
  }

  private static void run(Args a) throws Exception {
    Path confDir = a.confDir.toAbsolutePath();
    Files.createDirectories(confDir);
    Path ready = confDir.resolve(READY);
    Path kdcReady = confDir.resolve("KDC_READY");
    Files.deleteIfExists(ready);
    Files.deleteIfExists(kdcReady);

    HadoopCluster.Settings s = new HadoopCluster.Settings();
    s.workDir = a.workDir.toAbsolutePath().toFile();
    s.nodeManagers = a.nodeManagers;
    s.nmMemoryMb = a.nmMemoryMb;
    s.nmVcores = a.nmVcores;
    s.minAllocationMb = a.minAllocationMb;
    if (!s.workDir.isDirectory() && !s.workDir.mkdirs()) {
      throw new IOException("cannot create work dir " + s.workDir);
    }
    // MiniYARNCluster resolves its directories against the current directory.
    File cwd = new File("").getAbsoluteFile();
    if (!cwd.equals(s.workDir.getAbsoluteFile())) {
      LOG.warn("current directory {} is not the work dir {}; NodeManager dirs go under {}/target",
          cwd, s.workDir, cwd);
    }

    if (a.secure) {
      SecureSetup sec = new SecureSetup(confDir, s.workDir, a.dataTransferProtection);
      try {
        sec.start();
        sec.writeKdcReady(confDir);
      } catch (Exception | Error e) {
        sec.stop();
        throw e;
      }
      s.secure = sec;
    }
    HadoopCluster cluster = new HadoopCluster(s);
    Runnable stop =
        () -> {
          try {
            Files.deleteIfExists(ready);
            Files.deleteIfExists(kdcReady);
          } catch (IOException e) {
            LOG.warn("removing {}", ready, e);
          }
          LOG.info("stopping minicluster");
          cluster.stop();
          LOG.info("minicluster stopped");
        };
    // Stop on a signal outside the JVM's shutdown phase, so that the servers' own stop code may
    // still add and remove shutdown hooks; then exit, which runs Hadoop's hooks.
    for (String name : new String[] {"TERM", "INT", "HUP"}) {
      Signal.handle(
          new Signal(name),
          sig -> {
            LOG.info("SIG{} received", sig.getName());
            stopAndExit(stop, 0);
          });
    }
    // Fallback for any other exit path (System.exit after a failed start, for one).
    ShutdownHookManager.get()
        .addShutdownHook(stop, SHUTDOWN_PRIORITY, SHUTDOWN_TIMEOUT_SECONDS, TimeUnit.SECONDS);

    if (a.exitOnStdinEof) {
      Thread watcher =
          new Thread(
              () -> {
                waitForStdinEof();
                stopAndExit(stop, 0);
              },
              "stdin-eof-watcher");
      watcher.setDaemon(true);
      watcher.start();
    }

    long t0 = System.nanoTime();
    try {
      cluster.start();
      cluster.writeClientConf(confDir);
    } catch (Exception | Error e) {
      // Stop what did start now, outside the JVM's shutdown phase, so the servers' stop code can
      // still remove its shutdown hooks.
      cluster.stop();
      throw e;
    }

    StringBuilder b = new StringBuilder();
    for (Map.Entry<String, String> e : cluster.addresses().entrySet()) {
      b.append(e.getKey()).append('=').append(e.getValue()).append('\n');
    }
    b.append("conf_dir=").append(confDir).append('\n');
    b.append("pid=").append(ProcessHandle.current().pid()).append('\n');
    b.append("startup_ms=").append((System.nanoTime() - t0) / 1_000_000).append('\n');
    Path tmp = confDir.resolve(READY + ".tmp");
    Files.write(tmp, b.toString().getBytes(StandardCharsets.UTF_8));
    Files.move(tmp, ready, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    LOG.info("minicluster READY in {}:\n{}", ready, b);
    // main returns; the servers' non-daemon threads keep the JVM alive until a stop request.
  }

  private static final Object EXIT_LOCK = new Object();

  /** Runs stop once (later callers wait for the first), then exits the JVM with status. */
  private static void stopAndExit(Runnable stop, int status) {
    synchronized (EXIT_LOCK) {
      stop.run();
      System.exit(status);
    }
  }

  private static void waitForStdinEof() {
    InputStream in = System.in;
    byte[] buf = new byte[256];
    try {
      while (in.read(buf) >= 0) {
        // discard: stdin carries no commands, only the parent's liveness
      }
    } catch (IOException e) {
      LOG.warn("reading stdin", e);
    }
    LOG.info("stdin closed: shutting down");
  }

  /** Command-line arguments. */
  static final class Args {
    static final String USAGE =
        "usage: Main --conf-dir DIR [--work-dir DIR] [--nodemanagers N] [--nm-memory-mb MB]"
            + " [--nm-vcores N] [--min-allocation-mb MB] [--secure] [--data-transfer-protection P] [--exit-on-stdin-eof]";

    Path confDir;
    Path workDir;
    int nodeManagers = 2;
    int nmMemoryMb = 4096;
    int nmVcores = 8;
    int minAllocationMb = 64;
    boolean exitOnStdinEof;
    boolean secure;
    String dataTransferProtection = "privacy";

    static Args parse(String[] argv) {
      Args a = new Args();
      for (int i = 0; i < argv.length; i++) {
        String k = argv[i];
        if (k.equals("--exit-on-stdin-eof")) {
          a.exitOnStdinEof = true;
          continue;
        }
        if (k.equals("--secure")) {
          a.secure = true;
          continue;
        }
        if (i + 1 >= argv.length) {
          throw new IllegalArgumentException("missing value after " + k);
        }
        String v = argv[++i];
        switch (k) {
          case "--conf-dir":
            a.confDir = Paths.get(v);
            break;
          case "--work-dir":
            a.workDir = Paths.get(v);
            break;
          case "--nodemanagers":
            a.nodeManagers = positive(k, v);
            break;
          case "--nm-memory-mb":
            a.nmMemoryMb = positive(k, v);
            break;
          case "--nm-vcores":
            a.nmVcores = positive(k, v);
            break;
          case "--min-allocation-mb":
            a.minAllocationMb = positive(k, v);
            break;
          case "--data-transfer-protection":
            if (!v.equals("authentication") && !v.equals("integrity") && !v.equals("privacy")) {
              throw new IllegalArgumentException(
                  "--data-transfer-protection " + v + ": want authentication, integrity or privacy");
            }
            a.dataTransferProtection = v;
            break;
          default:
            throw new IllegalArgumentException("unknown argument " + k);
        }
      }
      if (a.confDir == null) {
        throw new IllegalArgumentException("--conf-dir is required");
      }
      if (a.workDir == null) {
        a.workDir = Paths.get("").toAbsolutePath();
      }
      if (a.minAllocationMb > a.nmMemoryMb) {
        throw new IllegalArgumentException(
            "--min-allocation-mb " + a.minAllocationMb + " exceeds --nm-memory-mb " + a.nmMemoryMb);
      }
      return a;
    }

    private static int positive(String k, String v) {
      int n;
      try {
        n = Integer.parseInt(v);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(k + " wants a positive integer, got \"" + v + "\"");
      }
      if (n <= 0) {
        throw new IllegalArgumentException(k + " wants a positive integer, got " + n);
      }
      return n;
    }
  }
}
