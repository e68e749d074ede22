package io.github.sluice.flinkbench;

/**
 * The benchmark's deterministic bid generator, defined exactly as Go's nexmark.Generator: record
 * i is a pure function of the seed and i, each field drawing from SplitMix64 at position 4i+k.
 * See bench/flinkcmp/nexmark/nexmark.go for the definition; testdata/vector.txt there holds the
 * first records of the default seed, which both implementations are tested against.
 */
public final class Generator implements java.io.Serializable {
    private static final long serialVersionUID = 1L;

    public static final long DEFAULT_SEED = 42;
    /** 2026-01-01T00:00:00Z in epoch milliseconds. */
    public static final long EPOCH = 1767225600000L;
    public static final long RECORDS_PER_MILLI = 10;
    public static final long MAX_JITTER = 500;
    /** The jobs' bounded out-of-orderness; exceeds MAX_JITTER, so no record is ever late. */
    public static final long WATERMARK_DELAY_MS = 1000;
    public static final long Q5_SIZE_MS = 10_000;
    public static final long Q5_SLIDE_MS = 2_000;
    public static final long Q7_SIZE_MS = 10_000;
    public static final long Q11_GAP_MS = 10_000;
    public static final long Q19_SIZE_MS = 10_000;
    public static final int Q19_N = 3;
    public static final long Q2_MODULUS = 123;

    static final long GAMMA = 0x9E3779B97F4A7C15L;

    private static final String[] CHANNELS = {"Google", "Facebook", "Baidu", "Apple"};
    private static final String[] URLS = new String[16];

    static {
        for (int n = 0; n < URLS.length; n++) {
            URLS[n] = "https://www.nexmark.com/item.htm?query=1&channel_id=" + (1000 + n * 37);
        }
    }

    private final long seed;

    public Generator(long seed) {
        this.seed = seed;
    }

    /** SplitMix64's finaliser. */
    public static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    private long draw(long i, long k) {
        return mix(seed + (i * 4 + k + 1) * GAMMA);
    }

    /** Bid i (see Go's Generator.Bid). */
    public Bid bid(long i) {
        long r0 = draw(i, 0);
        long auction;
        if ((r0 & 0xff) < 64) {
            auction = 1000 + (r0 >>> 11) % 100;
        } else {
            auction = 1000 + (r0 >>> 11) % 100_000;
        }
        long r1 = draw(i, 1);
        long r2 = draw(i, 2);
        long r3 = draw(i, 3);
        return new Bid(
                auction,
                2000 + (r1 >>> 11) % 50_000,
                100 + (r2 >>> 11) % 99_900,
                CHANNELS[(int) (r2 & 3)],
                URLS[(int) ((r2 >>> 2) & 15)],
                EPOCH + i / RECORDS_PER_MILLI - (r3 >>> 11) % MAX_JITTER);
    }

    private static final String[] NAMES = {"Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi",
        "Ivan", "Judy", "Mallory", "Niaj", "Olivia", "Peggy", "Rupert", "Sybil"};
    private static final String[] CITIES = {"Portland", "Boise", "San Francisco", "Seattle", "Phoenix", "New York",
        "Bend", "Los Angeles"};
    private static final String[] STATES = {"OR", "ID", "CA", "WA", "AZ", "NY"};
    private static final long PERSON_SALT = 0x50455253L;
    private static final long AUCTION_SALT = 0x41554354L;

    public static final long Q3_CATEGORY = 10;
    public static final long Q8_SIZE_MS = 10_000;

    /** q3's states. */
    public static boolean q3State(String s) {
        return s.equals("OR") || s.equals("ID") || s.equals("CA");
    }

    /** Of n events of the join queries, n/4 are persons and the rest auctions. */
    public static long personsOf(long n) {
        return n / 4;
    }

    public static long auctionsOf(long n) {
        return n - n / 4;
    }

    private long drawSalted(long salt, long i, long k) {
        return mix((seed ^ salt) + (i * 4 + k + 1) * GAMMA);
    }

    /** Person j (see Go's Generator.Person). */
    public Person person(long j) {
        long r0 = drawSalted(PERSON_SALT, j, 0) >>> 11;
        long r1 = drawSalted(PERSON_SALT, j, 1) >>> 11;
        return new Person(
                2000 + j,
                NAMES[(int) (r0 % 16)],
                CITIES[(int) ((r0 >>> 4) % 8)],
                STATES[(int) ((r0 >>> 7) % 6)],
                EPOCH + j * 4 / RECORDS_PER_MILLI - r1 % MAX_JITTER);
    }

    /** Auction k (see Go's Generator.Auction). */
    public Auction auction(long k) {
        long r0 = drawSalted(AUCTION_SALT, k, 0) >>> 11;
        long r1 = drawSalted(AUCTION_SALT, k, 1) >>> 11;
        long r2 = drawSalted(AUCTION_SALT, k, 2) >>> 11;
        return new Auction(
                1000 + k,
                2000 + Math.max(0, k / 3 - r0 % 20),
                10 + r1 % 5,
                EPOCH + k * 4 / (3 * RECORDS_PER_MILLI) - r2 % MAX_JITTER);
    }

    /** q1's currency conversion (dollars to euros at 0.908, whole cents, rounding down). */
    public static long q1Price(long cents) {
        return cents * 908 / 1000;
    }

    /** Prints the test vector: java ... Generator [seed [records]]. */
    public static void main(String[] args) {
        long seed = args.length > 0 ? Long.parseLong(args[0]) : DEFAULT_SEED;
        long n = args.length > 1 ? Long.parseLong(args[1]) : 200;
        Generator g = new Generator(seed);
        StringBuilder b = new StringBuilder();
        b.append("# seed=").append(seed).append(" records=").append(n).append('\n');
        for (long i = 0; i < n; i++) {
            b.append(i).append(',').append(g.bid(i)).append('\n');
        }
        for (long j = 0; j < n / 4; j++) {
            b.append('p').append(j).append(',').append(g.person(j)).append('\n');
        }
        for (long k = 0; k < n / 4; k++) {
            b.append('a').append(k).append(',').append(g.auction(k)).append('\n');
        }
        System.out.print(b);
    }
}
