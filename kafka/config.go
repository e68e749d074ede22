package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Options follow franz-go's style: a Source takes SourceOpts, a Sink takes
// SinkOpts, and the connection options (Opt) are accepted by both and by
// the transaction tools. Each option's comment states its default.

// SourceOpt configures a Source.
type SourceOpt interface{ applySource(*sourceConfig) }

// SinkOpt configures a Sink.
type SinkOpt interface{ applySink(*sinkConfig) }

// Opt configures the connection to Kafka: brokers, client id, TLS, SASL,
// logging. It is accepted wherever a SourceOpt or SinkOpt is.
type Opt interface {
	SourceOpt
	SinkOpt
	applyClient(*clientConfig)
}

type clientOpt struct{ fn func(*clientConfig) }

func (o clientOpt) applyClient(c *clientConfig) { o.fn(c) }
func (o clientOpt) applySource(c *sourceConfig) { o.fn(&c.client) }
func (o clientOpt) applySink(c *sinkConfig)     { o.fn(&c.client) }

type sourceOpt struct{ fn func(*sourceConfig) }

func (o sourceOpt) applySource(c *sourceConfig) { o.fn(c) }

type sinkOpt struct{ fn func(*sinkConfig) }

func (o sinkOpt) applySink(c *sinkConfig) { o.fn(c) }

// DefaultClientID is the client id sent to the brokers unless ClientID is given.
const DefaultClientID = "sluice"

// clientConfig is the connection part of every configuration.
type clientConfig struct {
	brokers  []string
	clientID string
	tls      *TLSConfig
	sasl     []saslConfig // more than one is a configuration error
	log      *slog.Logger
}

func defaultClientConfig() clientConfig {
	return clientConfig{clientID: DefaultClientID, log: slog.New(slog.DiscardHandler)}
}

// BootstrapServers sets the brokers to bootstrap from, as host:port; each
// argument may also be a comma-separated list (Flink's bootstrap.servers).
// Required; there is no default.
func BootstrapServers(addrs ...string) Opt {
	return clientOpt{func(c *clientConfig) {
		for _, a := range addrs {
			for _, s := range strings.Split(a, ",") {
				if s = strings.TrimSpace(s); s != "" {
					c.brokers = append(c.brokers, s)
				}
			}
		}
	}}
}

// ClientID sets the client id the brokers see in logs and quotas. Default
// DefaultClientID ("sluice").
func ClientID(id string) Opt { return clientOpt{func(c *clientConfig) { c.clientID = id }} }

// WithLogger sets the logger of the connector and of the Kafka client
// (whose messages are logged at Warn and above, or Info and above when the
// logger is enabled for Debug). Default: logs are discarded.
func WithLogger(l *slog.Logger) Opt {
	return clientOpt{func(c *clientConfig) {
		if l != nil {
			c.log = l
		}
	}}
}

func (c *clientConfig) validate(add func(format string, args ...any)) {
	if len(c.brokers) == 0 {
		add("no bootstrap servers: use kafka.BootstrapServers(\"host:port\")")
	}
	for _, b := range c.brokers {
		host, port, err := net.SplitHostPort(b)
		if err != nil || host == "" {
			add("bootstrap server %q is not host:port", b)
			continue
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			add("bootstrap server %q has an invalid port", b)
		}
	}
	if c.clientID == "" {
		add("empty client id")
	}
	if c.tls != nil {
		c.tls.validate(add)
	}
	if len(c.sasl) > 1 {
		names := make([]string, len(c.sasl))
		for i, s := range c.sasl {
			names[i] = s.name
		}
		add("more than one SASL mechanism configured (%s); choose one", strings.Join(names, ", "))
	}
	for _, s := range c.sasl {
		s.validate(add)
	}
}

// String describes the connection without secrets.
func (c *clientConfig) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bootstrap=%s client.id=%s", strings.Join(c.brokers, ","), c.clientID)
	if c.tls != nil {
		fmt.Fprintf(&b, " tls=%s", c.tls)
	}
	for _, s := range c.sasl {
		fmt.Fprintf(&b, " sasl=%s", s)
	}
	return b.String()
}

// kgoOpts builds the franz-go options of a client: secrets and TLS files
// are read here, so errors name the file or variable at fault.
func (c *clientConfig) kgoOpts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.brokers...),
		kgo.ClientID(c.clientID),
		kgo.WithLogger(kgoLogger{c.log}),
	}
	if c.tls != nil {
		tc, err := c.tls.build()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	for _, s := range c.sasl {
		m, err := s.mechanism()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// newClient creates a franz-go client with the connection options and extra.
func (c *clientConfig) newClient(extra ...kgo.Opt) (*kgo.Client, error) {
	opts, err := c.kgoOpts()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka: creating client: %w", err)
	}
	return cl, nil
}

// kgoLogger routes franz-go's log lines to slog.
type kgoLogger struct{ l *slog.Logger }

func (k kgoLogger) Level() kgo.LogLevel {
	switch {
	case k.l.Enabled(context.Background(), slog.LevelDebug):
		return kgo.LogLevelInfo
	case k.l.Enabled(context.Background(), slog.LevelWarn):
		return kgo.LogLevelWarn
	}
	return kgo.LogLevelNone
}

func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	var l slog.Level
	switch level {
	case kgo.LogLevelError:
		l = slog.LevelError
	case kgo.LogLevelWarn:
		l = slog.LevelWarn
	case kgo.LogLevelInfo:
		l = slog.LevelInfo
	default:
		l = slog.LevelDebug
	}
	k.l.Log(context.Background(), l, "kafka client: "+msg, keyvals...)
}

// problems collects configuration problems.
type problems struct{ list []string }

func (p *problems) add(format string, args ...any) {
	p.list = append(p.list, fmt.Sprintf(format, args...))
}

func (p *problems) err(what string) error {
	if len(p.list) == 0 {
		return nil
	}
	return &ConfigError{What: what, Problems: p.list}
}
