package io.github.sluice.flinkbench;

/** The intermediate and output records of the jobs (Flink POJOs). */
public final class Types {
    private Types() {}

    /** q2's output. */
    public static class AuctionPrice {
        public long auction;
        public long price;

        public AuctionPrice() {}

        public AuctionPrice(long auction, long price) {
            this.auction = auction;
            this.price = price;
        }
    }

    /** q5: an auction's bids in the sliding window ending at end. */
    public static class AuctionCount {
        public long end;
        public long auction;
        public long count;

        public AuctionCount() {}

        public AuctionCount(long end, long auction, long count) {
            this.end = end;
            this.auction = auction;
            this.count = count;
        }
    }

    /** q7: the highest bid of an auction (then of all) in the tumbling window ending at end. */
    public static class HighestBid {
        public long end;
        public long auction;
        public long bidder;
        public long price;

        public HighestBid() {}

        public HighestBid(long end, long auction, long bidder, long price) {
            this.end = end;
            this.auction = auction;
            this.bidder = bidder;
            this.price = price;
        }
    }

    /** q3's output: an auction and its seller. */
    public static class SellerAuction {
        public long auction;
        public long seller;

        public SellerAuction() {}

        public SellerAuction(long auction, long seller) {
            this.auction = auction;
            this.seller = seller;
        }
    }

    /** q8's output: a person who opened an auction in the window they were created in. */
    public static class NewSeller {
        public long person;
        public long start;

        public NewSeller() {}

        public NewSeller(long person, long start) {
            this.person = person;
            this.start = start;
        }
    }

    /** q11: a bidder's session [start, end) and its bids. */
    public static class BidderSession {
        public long bidder;
        public long start;
        public long end;
        public long count;

        public BidderSession() {}

        public BidderSession(long bidder, long start, long end, long count) {
            this.bidder = bidder;
            this.start = start;
            this.end = end;
            this.count = count;
        }
    }

    /** q19's accumulator: the highest bids so far, best first (price, bidder, time per rank). */
    public static class TopBids {
        public int n;
        public long[] price = new long[Generator.Q19_N];
        public long[] bidder = new long[Generator.Q19_N];
        public long[] dateTime = new long[Generator.Q19_N];

        public TopBids() {}

        /** Inserts a bid at its rank, dropping what falls below the last. */
        public void add(long p, long b, long t) {
            int i = n;
            while (i > 0 && q19Better(p, b, t, price[i - 1], bidder[i - 1], dateTime[i - 1])) {
                i--;
            }
            if (i >= Generator.Q19_N) {
                return;
            }
            for (int j = Math.min(n, Generator.Q19_N - 1); j > i; j--) {
                price[j] = price[j - 1];
                bidder[j] = bidder[j - 1];
                dateTime[j] = dateTime[j - 1];
            }
            price[i] = p;
            bidder[i] = b;
            dateTime[i] = t;
            n = Math.min(n + 1, Generator.Q19_N);
        }
    }

    /** q19's output: the bid of a rank (1 the highest) of an auction in the window ending at end. */
    public static class RankedBid {
        public long end;
        public long auction;
        public long rank;
        public long bidder;
        public long price;

        public RankedBid() {}

        public RankedBid(long end, long auction, long rank, long bidder, long price) {
            this.end = end;
            this.auction = auction;
            this.rank = rank;
            this.bidder = bidder;
            this.price = price;
        }
    }

    /** q19's order: higher price, then lower bidder, then earlier. */
    public static boolean q19Better(long ap, long ab, long at, long bp, long bb, long bt) {
        if (ap != bp) {
            return ap > bp;
        }
        if (ab != bb) {
            return ab < bb;
        }
        return at < bt;
    }

    /** The Kafka pipeline's keyed state and output. */
    public static class AuctionTotals {
        public long auction;
        public long count;
        public long maxPrice;

        public AuctionTotals() {}
    }

    /** q5's order: more bids, then the lower auction. */
    public static boolean q5Better(long a, long ac, long b, long bc) {
        if (ac != bc) {
            return ac > bc;
        }
        return a < b;
    }

    /** q7's order: higher price, then lower auction, then lower bidder. */
    public static boolean q7Better(long aa, long abidder, long aprice, long ba, long bbidder, long bprice) {
        if (aprice != bprice) {
            return aprice > bprice;
        }
        if (aa != ba) {
            return aa < ba;
        }
        return abidder < bbidder;
    }
}
