package io.github.sluice.flinkbench;

import java.io.Serializable;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;

/**
 * A sink whose writers hash every record into a checksum of their own (count and wrapping sum,
 * as Go's nexmark.Checksum), add it to the process-wide totals when they close, and end the Span
 * at the end of their input. The local
 * MiniCluster runs the writers in this JVM, so the totals are plain statics read by the main
 * method after the job.
 */
public final class DigestSink<T> implements Sink<T> {
    private static final long serialVersionUID = 1L;

    /** Hashes one output record. */
    public interface Hash<T> extends Serializable {
        long hash(T v);
    }

    static final AtomicLong COUNT = new AtomicLong();
    static final AtomicLong SUM = new AtomicLong();

    private final Hash<T> hash;

    public DigestSink(Hash<T> hash) {
        this.hash = hash;
    }

    @Override
    public SinkWriter<T> createWriter(WriterInitContext context) {
        return new Writer<>(hash);
    }

    private static final class Writer<T> implements SinkWriter<T> {
        private final Hash<T> hash;
        private long count;
        private long sum;

        Writer(Hash<T> hash) {
            this.hash = hash;
        }

        @Override
        public void write(T element, Context context) {
            count++;
            sum += hash.hash(element);
        }

        @Override
        public void flush(boolean endOfInput) {
            if (endOfInput) {
                Span.finish();
            }
        }

        @Override
        public void close() {
            COUNT.addAndGet(count);
            SUM.addAndGet(sum);
            count = 0;
            sum = 0;
        }
    }
}
