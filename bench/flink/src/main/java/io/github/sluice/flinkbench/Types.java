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
