package io.github.sluice.flinkbench;

/** An item put up for sale by a person (a Flink POJO). Mirrors nexmark.Auction in Go. */
public class Auction {
    public long id;
    /** A Person's id. */
    public long seller;
    public long category;
    /** Event time, epoch ms. */
    public long dateTime;

    public Auction() {}

    public Auction(long id, long seller, long category, long dateTime) {
        this.id = id;
        this.seller = seller;
        this.category = category;
        this.dateTime = dateTime;
    }

    /** The record's line in the test vector (Go's Auction.String). */
    @Override
    public String toString() {
        return id + "," + seller + "," + category + "," + dateTime;
    }
}
