package io.github.sluice.flinkbench;

/** The output hashes of the queries, exactly as Go's nexmark.Hash2/3/4 (wrapping arithmetic). */
public final class Checksum {
    private Checksum() {}

    private static long fold(long h, long v) {
        return Generator.mix(h ^ (v + Generator.GAMMA));
    }

    public static long hash2(long a, long b) {
        return fold(fold(0, a), b);
    }

    public static long hash3(long a, long b, long c) {
        return fold(hash2(a, b), c);
    }

    public static long hash4(long a, long b, long c, long d) {
        return fold(hash3(a, b, c), d);
    }

    public static long hash5(long a, long b, long c, long d, long e) {
        return fold(hash4(a, b, c, d), e);
    }
}
