package io.github.sluice.flinksql;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;

/**
 * Runs Flink SQL scripts with Apache Flink's own TableEnvironment in streaming mode, on a local
 * MiniCluster in this JVM, one script after the other, each to its end: the reference that
 * Sluice SQL's outputs are compared with.
 *
 * <pre>
 *   java -cp CP io.github.sluice.flinksql.Run [--parallelism N] SCRIPT...
 * </pre>
 *
 * <p>Each script's statements (split at semicolons outside string literals and comments; an
 * EXECUTE STATEMENT SET BEGIN ... END; is one statement) run in order, {@code SET 'key' =
 * 'value'} setting the TableEnvironment's configuration as Flink's SQL client does; the jobs its INSERTs start
 * are waited for until they finish, which needs bounded sources ('scan.bounded.mode'). A script
 * whose sources are unbounded says when to stop its jobs with a comment line
 *
 * <pre>
 *   -- flinksql: stop-when-idle BOOTSTRAP TOPIC SECONDS
 * </pre>
 *
 * <p>: once TOPIC has records and its end offsets have not moved for SECONDS, the jobs are
 * cancelled (the output has settled). {@code -- flinksql: timeout SECONDS} bounds a script's run
 * (default 300). For every script standard output gets one line, {@code SCRIPT <path> OK <ms>
 * <cpu ms>} (wall and the JVM's CPU time over the script: planning, the MiniCluster, the jobs) or
 * {@code SCRIPT <path> FAILED <Flink's error>}; the stack traces go to standard error. The exit
 * status is 1 when any script failed, 2 for a wrong command line.
 */
public final class Run {
  private static final String DIRECTIVE = "-- flinksql:";
  private static final java.util.regex.Pattern SET =
      java.util.regex.Pattern.compile(
          "(?is)SET\\s+'((?:[^']|'')*)'\\s*=\\s*'((?:[^']|'')*)'");

  private Run() {}

  public static void main(String[] args) throws Exception {
    int parallelism = 1;
    List<Path> scripts = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--parallelism") && i + 1 < args.length) {
        parallelism = Integer.parseInt(args[++i]);
      } else if (args[i].startsWith("-")) {
        System.err.println("flinksql: unknown flag " + args[i]);
        System.exit(2);
      } else {
        scripts.add(Path.of(args[i]));
      }
    }
    if (scripts.isEmpty()) {
      System.err.println("usage: Run [--parallelism N] SCRIPT...");
      System.exit(2);
    }
    int failed = 0;
    for (Path script : scripts) {
      long start = System.nanoTime();
      long cpu0 = processCpuNanos();
      try {
        runScript(script, parallelism);
        long ms = (System.nanoTime() - start) / 1_000_000;
        long cpuMs = (processCpuNanos() - cpu0) / 1_000_000;
        System.out.println("SCRIPT " + script + " OK " + ms + " " + cpuMs);
      } catch (Throwable e) {
        failed++;
        System.err.println("flinksql: script " + script + " failed:");
        e.printStackTrace();
        System.out.println("SCRIPT " + script + " FAILED " + oneLine(e));
      }
      System.out.flush();
    }
    // Flink leaves non-daemon threads behind: end the JVM explicitly.
    System.exit(failed == 0 ? 0 : 1);
  }

  /** The CPU time of this JVM, all threads, in nanoseconds. */
  private static long processCpuNanos() {
    var os = java.lang.management.ManagementFactory.getOperatingSystemMXBean();
    if (os instanceof com.sun.management.OperatingSystemMXBean sun) {
      return sun.getProcessCpuTime();
    }
    return 0;
  }

  /** Options of a script given by its directive comments. */
  private static final class Directives {
    String idleBootstrap;
    String idleTopic;
    long idleSeconds;
    long timeoutSeconds = 300;
  }

  private static void runScript(Path script, int parallelism) throws Exception {
    String text = Files.readString(script, StandardCharsets.UTF_8);
    Directives d = directives(text);
    Configuration conf = new Configuration();
    conf.setString("parallelism.default", Integer.toString(parallelism));
    TableEnvironment env =
        TableEnvironment.create(
            EnvironmentSettings.newInstance().inStreamingMode().withConfiguration(conf).build());
    List<JobClient> jobs = new ArrayList<>();
    List<TableResult> results = new ArrayList<>();
    for (String stmt : statements(text)) {
      java.util.regex.Matcher set = SET.matcher(stmt);
      if (set.matches()) {
        // A SQL client statement, not TableEnvironment's: the session's configuration.
        env.getConfig().set(set.group(1).replace("''", "'"), set.group(2).replace("''", "'"));
        continue;
      }
      TableResult r;
      try {
        String u = stmt.toUpperCase();
        if (u.startsWith("EXECUTE STATEMENT SET") || u.startsWith("BEGIN STATEMENT SET")) {
          // TableEnvironment takes one statement: its INSERTs go into a StatementSet (one job).
          int from =
              u.startsWith("BEGIN") ? "BEGIN STATEMENT SET".length() : u.indexOf("BEGIN") + 5;
          String body = stmt.substring(from, u.lastIndexOf("END"));
          var stmts = env.createStatementSet();
          for (String insert : statements(body)) {
            stmts.addInsertSql(insert);
          }
          r = stmts.execute();
        } else {
          r = env.executeSql(stmt);
        }
      } catch (RuntimeException e) {
        throw new IllegalStateException("statement `" + abbreviate(stmt) + "`: " + oneLine(e), e);
      }
      if (r.getJobClient().isPresent()) {
        jobs.add(r.getJobClient().get());
        results.add(r);
      }
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(d.timeoutSeconds);
    try {
      if (d.idleTopic != null) {
        waitIdle(d, jobs, deadline);
        for (JobClient j : jobs) {
          j.cancel().get(1, TimeUnit.MINUTES);
        }
        return;
      }
      for (TableResult r : results) {
        long left = deadline - System.nanoTime();
        r.await(Math.max(left, 1), TimeUnit.NANOSECONDS);
      }
    } catch (TimeoutException e) {
      for (JobClient j : jobs) {
        j.cancel();
      }
      throw new TimeoutException("the script's jobs did not finish within " + d.timeoutSeconds + " s");
    }
  }

  /**
   * Waits until the directive's topic has records and its end offsets stay the same for its
   * seconds, checking that no job failed meanwhile.
   */
  private static void waitIdle(Directives d, List<JobClient> jobs, long deadline) throws Exception {
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, d.idleBootstrap);
    try (Admin admin = Admin.create(p)) {
      long last = -1;
      long since = System.nanoTime();
      while (true) {
        for (JobClient j : jobs) {
          if (j.getJobStatus().get().isGloballyTerminalState()) {
            j.getJobExecutionResult().get(); // throws the job's failure
            throw new IllegalStateException("job " + j.getJobID() + " ended before its output settled");
          }
        }
        long end = endOffsets(admin, d.idleTopic);
        long now = System.nanoTime();
        if (end != last) {
          last = end;
          since = now;
        } else if (end > 0 && now - since >= TimeUnit.SECONDS.toNanos(d.idleSeconds)) {
          return;
        }
        if (now > deadline) {
          throw new TimeoutException("topic " + d.idleTopic + " did not settle");
        }
        Thread.sleep(200);
      }
    }
  }

  /** The sum of the end offsets of topic's partitions (0 while the topic does not exist). */
  private static long endOffsets(Admin admin, String topic) throws Exception {
    Map<String, TopicDescription> desc;
    try {
      desc = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      return 0;
    }
    Map<TopicPartition, OffsetSpec> req = new java.util.HashMap<>();
    desc.get(topic).partitions().forEach(pi -> req.put(new TopicPartition(topic, pi.partition()), OffsetSpec.latest()));
    long sum = 0;
    for (var e : admin.listOffsets(req).all().get(30, TimeUnit.SECONDS).values()) {
      sum += e.offset();
    }
    return sum;
  }

  private static Directives directives(String text) {
    Directives d = new Directives();
    for (String line : text.split("\n")) {
      String l = line.strip();
      if (!l.startsWith(DIRECTIVE)) {
        continue;
      }
      String[] f = l.substring(DIRECTIVE.length()).strip().split("\\s+");
      switch (f[0]) {
        case "stop-when-idle":
          if (f.length != 4) {
            throw new IllegalArgumentException("want `" + DIRECTIVE + " stop-when-idle BOOTSTRAP TOPIC SECONDS`, got `" + l + "`");
          }
          d.idleBootstrap = f[1];
          d.idleTopic = f[2];
          d.idleSeconds = Long.parseLong(f[3]);
          break;
        case "timeout":
          d.timeoutSeconds = Long.parseLong(f[1]);
          break;
        default:
          throw new IllegalArgumentException("unknown directive `" + l + "`");
      }
    }
    return d;
  }

  /**
   * The script's statements: split at semicolons outside single-quoted strings, backquoted
   * identifiers and comments; a statement set (EXECUTE STATEMENT SET BEGIN ... END) is one.
   */
  static List<String> statements(String text) {
    List<String> out = new ArrayList<>();
    StringBuilder cur = new StringBuilder();
    int n = text.length();
    for (int i = 0; i < n; i++) {
      char c = text.charAt(i);
      if (c == '-' && i + 1 < n && text.charAt(i + 1) == '-') {
        int e = text.indexOf('\n', i);
        i = e < 0 ? n : e;
        cur.append('\n');
        continue;
      }
      if (c == '/' && i + 1 < n && text.charAt(i + 1) == '*') {
        int e = text.indexOf("*/", i + 2);
        i = e < 0 ? n : e + 1;
        cur.append(' ');
        continue;
      }
      if (c == '\'' || c == '`') {
        int j = i + 1;
        while (j < n) {
          if (text.charAt(j) == c) {
            if (j + 1 < n && text.charAt(j + 1) == c) {
              j += 2;
              continue;
            }
            break;
          }
          j++;
        }
        cur.append(text, i, Math.min(j + 1, n));
        i = j;
        continue;
      }
      if (c == ';') {
        String s = cur.toString().strip();
        String u = s.toUpperCase();
        boolean openSet =
            (u.startsWith("EXECUTE STATEMENT SET") || u.startsWith("BEGIN STATEMENT SET"))
                && !u.matches("(?s).*[\\s;]END"); // END as a word: not window_end
        if (openSet) {
          cur.append(c);
          continue;
        }
        if (!s.isEmpty()) {
          out.add(s);
        }
        cur.setLength(0);
        continue;
      }
      cur.append(c);
    }
    String s = cur.toString().strip();
    if (!s.isEmpty()) {
      out.add(s);
    }
    return out;
  }

  private static String abbreviate(String s) {
    String one = s.replaceAll("\\s+", " ");
    return one.length() <= 120 ? one : one.substring(0, 117) + "...";
  }

  /** The messages of e and its causes on one line. */
  private static String oneLine(Throwable e) {
    StringBuilder b = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause()) {
      String m = t.getMessage();
      if (m == null) {
        m = t.getClass().getName();
      }
      m = m.replaceAll("\\s+", " ").strip();
      if (b.indexOf(m) >= 0) {
        continue;
      }
      if (b.length() > 0) {
        b.append(": ");
      }
      b.append(m);
      if (t.getCause() == t) {
        break;
      }
    }
    return b.toString();
  }
}
