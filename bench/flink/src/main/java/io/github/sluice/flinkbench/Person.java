package io.github.sluice.flinkbench;

/** A new user of the auction site (a Flink POJO). Mirrors nexmark.Person in Go. */
public class Person {
    public long id;
    public String name;
    public String city;
    public String state;
    /** Event time, epoch ms. */
    public long dateTime;

    public Person() {}

    public Person(long id, String name, String city, String state, long dateTime) {
        this.id = id;
        this.name = name;
        this.city = city;
        this.state = state;
        this.dateTime = dateTime;
    }

    /** The record's line in the test vector (Go's Person.String). */
    @Override
    public String toString() {
        return id + "," + name + "," + city + "," + state + "," + dateTime;
    }
}
