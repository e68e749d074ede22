package io.github.sluice.flinkbench;

import java.lang.management.ManagementFactory;

/**
 * When, and at what process CPU time, the processing began and ended (Go's jobs.span): begin is
 * called for every input record (only the first counts), finish at the end of input before the
 * sinks (the last counts). The local MiniCluster runs every task in this JVM, so plain statics
 * do.
 */
final class Span {
    private Span() {}

    private static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    private static volatile boolean started;
    private static long startNanos;
    private static long startCpu;
    private static long endNanos = Long.MIN_VALUE;
    private static long endCpu;

    static long cpuNanos() {
        return OS.getProcessCpuTime();
    }

    static void begin() {
        if (started) {
            return;
        }
        synchronized (Span.class) {
            if (!started) {
                startNanos = System.nanoTime();
                startCpu = cpuNanos();
                started = true;
            }
        }
    }

    static synchronized void finish() {
        long t = System.nanoTime();
        long cpu = cpuNanos();
        if (t > endNanos) {
            endNanos = t;
            endCpu = cpu;
        }
    }

    /** Milliseconds of processing, or 0 if it did not both begin and end. */
    static synchronized long millis() {
        return started && endNanos != Long.MIN_VALUE ? (endNanos - startNanos) / 1_000_000 : 0;
    }

    static synchronized long cpuMillis() {
        return started && endNanos != Long.MIN_VALUE ? (endCpu - startCpu) / 1_000_000 : 0;
    }
}
