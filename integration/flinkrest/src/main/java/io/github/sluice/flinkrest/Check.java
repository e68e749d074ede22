package io.github.sluice.flinkrest;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.apache.flink.runtime.rest.util.RestMapperUtils;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Parses REST responses of a live Sluice cluster with Flink's own message classes and Flink's
 * strict object mapper (unknown and missing required fields fail), as Flink's CLI and REST
 * client do.
 *
 * <p>Usage: Check BASE_URL PATH=CLASS... ; prints one line per response, "ok PATH" or "FAIL PATH:
 * reason", and exits 1 if any failed.
 */
public final class Check {
  public static void main(String[] args) throws Exception {
    if (args.length < 2) {
      System.err.println("usage: Check BASE_URL PATH=CLASS...");
      System.exit(2);
    }
    ObjectMapper strict = RestMapperUtils.getStrictObjectMapper();
    HttpClient http = HttpClient.newHttpClient();
    int failed = 0;
    for (int i = 1; i < args.length; i++) {
      int eq = args[i].lastIndexOf('=');
      String path = args[i].substring(0, eq);
      String cls = args[i].substring(eq + 1);
      try {
        HttpResponse<String> r =
            http.send(
                HttpRequest.newBuilder(URI.create(args[0] + path)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
          throw new IllegalStateException("HTTP " + r.statusCode() + ": " + r.body());
        }
        strict.readValue(r.body(), Class.forName(cls));
        System.out.println("ok " + path);
      } catch (Exception e) {
        failed++;
        String msg = String.valueOf(e.getMessage()).replace('\n', ' ');
        System.out.println("FAIL " + path + " (" + cls + "): " + e.getClass().getSimpleName() + ": " + msg);
      }
    }
    System.exit(failed == 0 ? 0 : 1);
  }
}
