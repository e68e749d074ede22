// Command kafkajob is the Kafka job the YARN tests run on the secure
// cluster: it reads the records "p:i" of a topic to its end, counts them
// per key in keyed state and writes "key:count" to another topic, exactly
// once (Kafka transactions committed with the checkpoints). With -gssapi
// every Kafka client authenticates with SASL GSSAPI from the job's own
// Kerberos login (security.kerberos.login.*, which on YARN names the keytab
// shipped into the container).
//
// With -slow the job spends that long on each record as it reads it, so
// that it runs long enough for a fault to land while it runs.
//
//	kafkajob -bootstrap HOST:PORT -in TOPIC -out TOPIC -prefix TXN_PREFIX [-keys K] [-gssapi] [-slow D]
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
)

func main() {
	bootstrap := flag.String("bootstrap", "", "Kafka bootstrap address")
	in := flag.String("in", "", "input topic")
	out := flag.String("out", "", "output topic")
	prefix := flag.String("prefix", "", "transactional id prefix")
	keys := flag.Int("keys", 5, "keys")
	gssapi := flag.Bool("gssapi", false, "SASL GSSAPI from the job's Kerberos login")
	slow := flag.Duration("slow", 0, "time spent on each record as it is read")
	flag.Parse()
	if *bootstrap == "" || *in == "" || *out == "" || *prefix == "" {
		fmt.Fprintln(os.Stderr, "kafkajob: -bootstrap, -in, -out and -prefix are required")
		os.Exit(2)
	}
	env := stream.NewEnvironment()
	conn := []kafka.Opt{kafka.BootstrapServers(*bootstrap)}
	if *gssapi {
		conn = append(conn, kafka.SASLGSSAPI(kafka.KerberosFromConfiguration(env.Configuration())))
	}
	srcOpts := []kafka.SourceOpt{kafka.Topics(*in), kafka.Bounded(kafka.Latest())}
	sinkOpts := []kafka.SinkOpt{kafka.Guarantee(kafka.ExactlyOnce), kafka.TransactionalIDPrefix(*prefix), kafka.Checkpointing(env.Configuration())}
	for _, o := range conn {
		srcOpts, sinkOpts = append(srcOpts, o), append(sinkOpts, o)
	}
	src, err := kafka.NewSource(kafka.StringValues(), srcOpts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sink, err := kafka.NewSink(kafka.StringSerializer(*out), sinkOpts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	records := stream.FromSource[string, kafka.PartitionSplit](env, src, stream.NoWatermarks[string](), "in").UID("kafka-in")
	if *slow > 0 {
		// Slow where the records are read, chained to the source: a
		// barrier then waits behind a few records, not behind a backlog
		// in the exchange, and checkpoints complete while the job runs.
		records = stream.Map(records, func(v string) string {
			time.Sleep(*slow)
			return v
		})
	}
	byKey := stream.KeyBy(records, func(v string) string {
		var p, i int
		fmt.Sscanf(v, "%d:%d", &p, &i)
		return fmt.Sprint(i % *keys)
	})
	count := stream.NewValueDescriptor[int64]("count")
	counted := stream.KeyedProcess(byKey, stream.KeyedProcessFuncs[string, string, string]{
		Element: func(ctx *stream.KeyedContext[string], v string, o stream.Collector[string]) error {
			st := stream.Value(ctx, count)
			c, err := st.Value()
			if err != nil {
				return err
			}
			o.Collect(ctx.CurrentKey() + ":" + fmt.Sprint(c+1))
			return st.Update(c + 1)
		}}).UID("counter")
	stream.SinkToCommitting(counted, sink).UID("kafka-out")
	res, err := env.Execute("kafka " + strings.Join([]string{*in, *out}, " → "))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("job %s done: %d restarts, %d checkpoints\n", res.JobID, res.Restarts, res.Checkpoints)
}
