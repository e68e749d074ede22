package delegation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/internal/clock"
)

// ManagerConfig configures a Manager. Every field documents its default.
type ManagerConfig struct {
	// Client obtains and renews the tokens. Required.
	Client *Client
	// NameNodes are the file systems to hold tokens for (fs.defaultFS and
	// security.kerberos.access.hadoopFileSystems). Required, at least one.
	NameNodes []NameNode
	// TimeRatio is the fraction of a token's remaining lifetime after which
	// new tokens are obtained (security.delegation.tokens.renewal.time-ratio).
	// Default 0.75.
	TimeRatio float64
	// RetryBackoff is the pause after a failed attempt
	// (security.delegation.tokens.renewal.retry.backoff). Default 1h, but
	// never later than halfway to the earliest expiry.
	RetryBackoff time.Duration
	// OnTokens receives each new set of tokens, to be handed to the
	// containers (as an HDTS credentials file), with the earliest expiry
	// among them. Called from Run's goroutine; required.
	OnTokens func(creds *hadoop.Credentials, earliestExpiry time.Time)
	// Clock plans the attempts. Default: the wall clock.
	Clock clock.Clock
	// Logger receives obtains, expiries and failures. Default: discard.
	Logger *slog.Logger
}

// Manager keeps a process supplied with fresh HDFS delegation tokens, as
// Flink's DelegationTokenManager: with its Kerberos login (a keytab, so
// that it outlives any token) it obtains tokens, learns their expiry by
// renewing them once, hands them on, and obtains new ones when
// TimeRatio of the earliest token's remaining lifetime has passed. The
// tokens name the login's own principal as renewer, so the Manager can
// renew them.
type Manager struct {
	cfg     ManagerConfig
	obtain  func(ctx context.Context) (*hadoop.Credentials, []time.Time, error)
	metrics ManagerMetrics
}

// ManagerMetrics of a Manager; names are those under which the JobManager
// exports them at GET /metrics (the ApplicationMaster's Manager).
type ManagerMetrics struct {
	// Expiry is the earliest expiry of the current tokens, Unix seconds
	// (gauge sluice_delegation_token_expiry_timestamp_seconds).
	Expiry atomic.Int64
	// Obtained counts successful rounds (counter
	// sluice_delegation_token_obtains_total); Failures failed ones
	// (counter sluice_delegation_token_obtain_failures_total).
	Obtained, Failures atomic.Int64
}

// NewManager checks cfg and returns a Manager; Run starts it.
func NewManager(cfg ManagerConfig) (*Manager, error) {
	var errs []error
	if cfg.Client == nil {
		errs = append(errs, errors.New("delegation: ManagerConfig.Client is required"))
	}
	if len(cfg.NameNodes) == 0 {
		errs = append(errs, errors.New("delegation: ManagerConfig.NameNodes is empty"))
	}
	if cfg.OnTokens == nil {
		errs = append(errs, errors.New("delegation: ManagerConfig.OnTokens is required"))
	}
	if cfg.TimeRatio < 0 || cfg.TimeRatio >= 1 {
		errs = append(errs, fmt.Errorf("delegation: TimeRatio %v is not in (0, 1) (security.delegation.tokens.renewal.time-ratio)", cfg.TimeRatio))
	}
	if cfg.RetryBackoff < 0 {
		errs = append(errs, fmt.Errorf("delegation: RetryBackoff %s is negative", cfg.RetryBackoff))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.TimeRatio == 0 {
		cfg.TimeRatio = 0.75
	}
	if cfg.RetryBackoff == 0 {
		cfg.RetryBackoff = time.Hour
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{cfg: cfg}
	m.obtain = m.obtainAll
	return m, nil
}

// Metrics returns the Manager's gauges and counters.
func (m *Manager) Metrics() *ManagerMetrics { return &m.metrics }

// obtainAll gets one token per NameNode and renews each once to learn its
// expiry.
func (m *Manager) obtainAll(ctx context.Context) (*hadoop.Credentials, []time.Time, error) {
	creds := &hadoop.Credentials{}
	var expiries []time.Time
	renewer := m.cfg.Client.login.Principal()
	for _, nn := range m.cfg.NameNodes {
		tok, err := m.cfg.Client.ObtainHDFS(ctx, nn, renewer)
		if err != nil {
			return nil, nil, err
		}
		exp, err := m.cfg.Client.RenewHDFS(ctx, nn, tok)
		if err != nil {
			return nil, nil, err
		}
		creds.AddToken(tok.Service, tok)
		expiries = append(expiries, exp)
	}
	return creds, expiries, nil
}

// nextObtain is when to obtain new tokens after a success at now: after
// ratio of the time left to the earliest expiry.
func nextObtain(now time.Time, expiries []time.Time, ratio float64) time.Time {
	earliest := slices.MinFunc(expiries, func(a, b time.Time) int { return a.Compare(b) })
	left := earliest.Sub(now)
	if left <= 0 {
		return now
	}
	return now.Add(time.Duration(float64(left) * ratio))
}

// nextRetry is when to try again after a failure at now: after backoff,
// but no later than halfway to the earliest expiry of the tokens in hand
// (zero if none), and no sooner than a second.
func nextRetry(now time.Time, earliest time.Time, backoff time.Duration) time.Time {
	at := now.Add(backoff)
	if !earliest.IsZero() && earliest.After(now) {
		if half := now.Add(earliest.Sub(now) / 2); half.Before(at) {
			at = half
		}
	}
	if floor := now.Add(time.Second); at.Before(floor) {
		at = floor
	}
	return at
}

// Run obtains tokens now and again before they expire, until ctx ends. It
// returns nil when ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	var earliest time.Time
	clk, log := m.cfg.Clock, m.cfg.Logger
	for {
		now := clock.Now(clk)
		creds, expiries, err := m.obtain(ctx)
		var at time.Time
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			m.metrics.Failures.Add(1)
			at = nextRetry(now, earliest, m.cfg.RetryBackoff)
			log.Warn("delegation: obtaining tokens failed", "retryAt", at, "tokensExpire", earliest, "err", err)
		} else {
			earliest = slices.MinFunc(expiries, func(a, b time.Time) int { return a.Compare(b) })
			m.metrics.Obtained.Add(1)
			m.metrics.Expiry.Store(earliest.Unix())
			at = nextObtain(now, expiries, m.cfg.TimeRatio)
			log.Info("delegation: obtained tokens", "tokens", creds.NumTokens(), "expires", earliest, "next", at)
			m.cfg.OnTokens(creds, earliest)
		}
		if d := at.Sub(clock.Now(clk)); d > 0 {
			c, stop := clock.After(clk, d)
			select {
			case <-ctx.Done():
				stop()
				return nil
			case <-c:
			}
		} else if ctx.Err() != nil {
			return nil
		}
	}
}
