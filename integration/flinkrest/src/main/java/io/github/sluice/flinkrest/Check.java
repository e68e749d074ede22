package io.github.sluice.flinkrest;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Field;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.runtime.client.JobCancellationException;
import org.apache.flink.runtime.client.JobExecutionException;
import org.apache.flink.runtime.jobmaster.JobResult;
import org.apache.flink.runtime.rest.messages.job.JobExecutionResultResponseBody;
import org.apache.flink.runtime.rest.util.RestMapperUtils;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.util.InstantiationUtil;
import org.apache.flink.util.OptionalFailure;
import org.apache.flink.util.SerializedThrowable;

/**
 * Parses REST responses of a live Sluice cluster with Flink's own message classes and Flink's
 * strict object mapper (unknown and missing required fields fail), as Flink's CLI and REST
 * client do.
 *
 * <p>Usage:
 *
 * <ul>
 *   <li>{@code Check BASE_URL PATH=CLASS...}: prints one line per response, "ok PATH" or "FAIL
 *       PATH: reason", and exits 1 if any failed.
 *   <li>{@code Check --job-result BASE_URL PATH}: parses a JobExecutionResultResponseBody and turns
 *       it into Flink's JobExecutionResult, as Flink's REST client does, deserialising every
 *       accumulator and the failure cause with Java serialisation; prints "accumulator NAME=VALUE
 *       (CLASS)" lines, then "succeeded", "cancelled" or "failed CLASS: MESSAGE".
 *   <li>{@code Check --java-serialize}: reads test cases from standard input, one a line, "NAME
 *       KIND ARG..." (tab-separated, arguments base64 of UTF-8), and prints "NAME BASE64" with the
 *       Java serialisation of each: KIND throwable (class, message, stack trace) is a Flink
 *       SerializedThrowable as Sluice describes a Go error; long, string: an accumulator value,
 *       Flink's OptionalFailure of a Long or String. Sluice's rest package keeps these as test
 *       vectors for its own writer (go test ./rest -rewrite-java). Needs --add-opens
 *       java.base/java.lang=ALL-UNNAMED.
 * </ul>
 */
public final class Check {
  public static void main(String[] args) throws Exception {
    if (args.length >= 1 && args[0].equals("--java-serialize")) {
      javaSerialize();
      return;
    }
    if (args.length == 3 && args[0].equals("--job-result")) {
      System.exit(jobResult(args[1], args[2]));
    }
    if (args.length < 2) {
      System.err.println("usage: Check BASE_URL PATH=CLASS... | --job-result BASE_URL PATH | --java-serialize");
      System.exit(2);
    }
    ObjectMapper strict = RestMapperUtils.getStrictObjectMapper();
    int failed = 0;
    for (int i = 1; i < args.length; i++) {
      int eq = args[i].lastIndexOf('=');
      String path = args[i].substring(0, eq);
      String cls = args[i].substring(eq + 1);
      try {
        strict.readValue(get(args[0] + path), Class.forName(cls));
        System.out.println("ok " + path);
      } catch (Exception e) {
        failed++;
        String msg = String.valueOf(e.getMessage()).replace('\n', ' ');
        System.out.println("FAIL " + path + " (" + cls + "): " + e.getClass().getSimpleName() + ": " + msg);
      }
    }
    System.exit(failed == 0 ? 0 : 1);
  }

  private static String get(String url) throws Exception {
    HttpResponse<String> r =
        HttpClient.newHttpClient()
            .send(HttpRequest.newBuilder(URI.create(url)).GET().build(), HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 200) {
      throw new IllegalStateException("HTTP " + r.statusCode() + ": " + r.body());
    }
    return r.body();
  }

  private static int jobResult(String base, String path) throws Exception {
    JobExecutionResultResponseBody body =
        RestMapperUtils.getStrictObjectMapper().readValue(get(base + path), JobExecutionResultResponseBody.class);
    JobResult res = body.getJobExecutionResult();
    if (res == null) {
      System.out.println("FAIL " + path + ": no job-execution-result (status " + body.getStatus().getId() + ")");
      return 1;
    }
    ClassLoader loader = Check.class.getClassLoader();
    Map<String, Object> accs = new TreeMap<>();
    res.getAccumulatorResults()
        .forEach(
            (k, v) -> {
              try {
                accs.put(k, v.deserializeValue(loader).getUnchecked());
              } catch (Exception e) {
                throw new IllegalStateException("accumulator " + k + ": " + e, e);
              }
            });
    accs.forEach((k, v) -> System.out.println("accumulator " + k + "=" + v + " (" + v.getClass().getName() + ")"));
    try {
      JobExecutionResult r = res.toJobExecutionResult(loader);
      System.out.println("succeeded net-runtime=" + r.getNetRuntime());
    } catch (JobCancellationException e) {
      System.out.println("cancelled");
    } catch (JobExecutionException e) {
      Throwable cause = e.getCause();
      if (!(cause instanceof SerializedThrowable)) {
        System.out.println("failed (no SerializedThrowable: " + cause + ")");
        return 1;
      }
      SerializedThrowable st = (SerializedThrowable) cause;
      System.out.println(
          "failed " + st.getOriginalErrorClassName() + ": " + st.getFullStringifiedStackTrace().replace('\n', ' '));
    }
    return 0;
  }

  /** A Go error as Sluice describes it: no Java class, no Java stack. */
  private static final class GoError extends Exception {
    GoError(String message) {
      super(message, null, true, false);
    }
  }

  private static void javaSerialize() throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      if (line.isEmpty()) {
        continue;
      }
      String[] f = line.split("\t", -1);
      String[] a = new String[f.length - 2];
      for (int i = 0; i < a.length; i++) {
        a[i] = new String(Base64.getDecoder().decode(f[i + 2]), StandardCharsets.UTF_8);
      }
      Object v;
      switch (f[1]) {
        case "throwable":
          v = throwable(a[0], a[1], a[2]);
          break;
        case "long":
          v = OptionalFailure.of(Long.valueOf(a[0]));
          break;
        case "string":
          v = OptionalFailure.of(a[0]);
          break;
        default:
          throw new IllegalArgumentException("unknown kind " + f[1]);
      }
      System.out.println(f[0] + "\t" + Base64.getEncoder().encodeToString(InstantiationUtil.serializeObject(v)));
    }
  }

  /**
   * A SerializedThrowable of a failure that is no Java exception: no serialised original (its
   * client stands it in), the class name and text Sluice gives, no stack frames, no cause.
   */
  private static SerializedThrowable throwable(String cls, String message, String trace) throws Exception {
    SerializedThrowable t = new SerializedThrowable(new GoError(message));
    set(SerializedThrowable.class, t, "serializedException", null);
    set(SerializedThrowable.class, t, "originalErrorClassName", cls);
    set(SerializedThrowable.class, t, "fullStringifiedStackTrace", trace);
    set(Throwable.class, t, "detailMessage", cls + ": " + message);
    return t;
  }

  private static void set(Class<?> c, Object o, String field, Object v) throws Exception {
    Field f = c.getDeclaredField(field);
    f.setAccessible(true);
    f.set(o, v);
  }
}
