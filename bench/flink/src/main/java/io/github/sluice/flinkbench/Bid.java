package io.github.sluice.flinkbench;

/** One bid of the Nexmark auction model (a Flink POJO). Mirrors nexmark.Bid in Go. */
public class Bid {
    public long auction;
    public long bidder;
    /** In cents. */
    public long price;
    public String channel;
    public String url;
    /** Event time, epoch ms. */
    public long dateTime;

    public Bid() {}

    public Bid(long auction, long bidder, long price, String channel, String url, long dateTime) {
        this.auction = auction;
        this.bidder = bidder;
        this.price = price;
        this.channel = channel;
        this.url = url;
        this.dateTime = dateTime;
    }

    /** The record's line in the test vector (Go's Bid.String). */
    @Override
    public String toString() {
        return auction + "," + bidder + "," + price + "," + channel + "," + url + "," + dateTime;
    }
}
