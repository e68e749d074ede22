package kerberos

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/sluice/sluice/internal/clock"
)

// Source says where a Login's credentials come from.
type Source int

const (
	// FromKeytab: AS exchanges with a key from a keytab; re-login is a new
	// AS exchange, for as long as the keytab's key is valid.
	FromKeytab Source = iota + 1
	// FromTicketCache: a TGT from a ticket cache (kinit); refresh re-reads
	// the cache and renews a renewable TGT, but cannot outlive its
	// renew-till time.
	FromTicketCache
)

func (s Source) String() string {
	switch s {
	case FromKeytab:
		return "keytab"
	case FromTicketCache:
		return "ticket cache"
	}
	return fmt.Sprintf("Source(%d)", int(s))
}

// Option configures New.
type Option func(*Login)

// WithLogger sets the logger for logins, refreshes and expiry. Default:
// discard.
func WithLogger(l *slog.Logger) Option { return func(x *Login) { x.log = l } }

// WithClock sets the clock that plans refreshes and judges expiry.
// Default: the wall clock.
func WithClock(c clock.Clock) Option { return func(x *Login) { x.clock = c } }

// Login is a Kerberos login kept valid by its Run loop. It is safe for
// concurrent use.
type Login struct {
	cfg       Config
	source    Source
	name      string // principal name without realm, e.g. sluice/host
	realm     string
	principal string // name@realm
	krb5      *config.Config
	krb5Path  string
	kt        *keytab.Keytab // FromKeytab only
	ccPath    string         // FromTicketCache only
	log       *slog.Logger
	clock     clock.Clock
	metrics   Metrics

	mu struct {
		sync.Mutex
		cur    *session
		closed bool
		// long is the self-renewing keytab client handed to libraries that
		// keep a *client.Client (GokrbClient), created on first use.
		long *client.Client
		// retired is the client replaced by the last refresh: callers that
		// took it just before may still be using it, so it is destroyed
		// (stopping any goroutine gokrb5 started for cross-realm tickets)
		// only at the next refresh, or at Close.
		retired *client.Client
	}
}

// session is one TGT and the gokrb5 client built around it. A client built
// from a cache runs no renewal goroutine of its own: renewal is ours.
type session struct {
	cred   *tgtCred
	client *client.Client
}

// New logs in as cfg says: from the keytab if one is given, else from the
// ticket cache. It contacts the KDC for a keytab login. The returned Login
// keeps the TGT it got; run its Run method to keep it valid.
func New(cfg Config, opts ...Option) (*Login, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &Login{cfg: cfg, log: slog.New(slog.DiscardHandler), clock: clock.System{}}
	for _, o := range opts {
		o(l)
	}
	if l.cfg.MinRefreshInterval == 0 {
		l.cfg.MinRefreshInterval = time.Minute
	}
	l.krb5Path = cfg.krb5ConfPath()
	k, err := loadKrb5Conf(l.krb5Path)
	if err != nil {
		return nil, err
	}
	l.krb5 = k
	if cfg.Keytab != "" {
		l.source = FromKeytab
		if l.principal, err = l.qualify(cfg.Principal); err != nil {
			return nil, err
		}
		l.name, l.realm, _ = SplitPrincipal(l.principal)
		if err := l.checkRealm(l.realm); err != nil {
			return nil, err
		}
		if l.kt, err = loadKeytab(cfg.Keytab, l.principal); err != nil {
			return nil, err
		}
	} else {
		l.source = FromTicketCache
		if l.ccPath, err = cfg.ticketCachePath(); err != nil {
			return nil, err
		}
	}
	s, err := l.obtain(nil)
	if err != nil {
		return nil, err
	}
	if l.source == FromTicketCache {
		l.principal = s.cred.principal()
		l.name, l.realm = s.cred.client.PrincipalNameString(), s.cred.realm
	}
	l.install(s)
	l.log.Info("kerberos: logged in", "principal", l.principal, "source", l.source.String(),
		"expires", s.cred.times.End, "renewTill", s.cred.times.RenewTill)
	return l, nil
}

// qualify returns p with its realm: krb5.conf's default_realm for a
// principal given without one.
func (l *Login) qualify(p string) (string, error) {
	name, realm, err := SplitPrincipal(p)
	if err != nil {
		return "", err
	}
	if realm == "" {
		if realm = l.krb5.LibDefaults.DefaultRealm; realm == "" {
			return "", newError(ErrConfig, "parse principal", "", l.krb5Path, nil,
				fmt.Sprintf("principal %q has no realm and krb5.conf sets no default_realm in [libdefaults]: give name@REALM (security.kerberos.login.principal) or set default_realm", p))
		}
	}
	return name + "@" + realm, nil
}

// Principal is the logged-in principal, name@REALM.
func (l *Login) Principal() string { return l.principal }

// Realm is the principal's realm.
func (l *Login) Realm() string { return l.realm }

// Source tells where the credentials come from.
func (l *Login) Source() Source { return l.source }

// Krb5Conf is the parsed krb5.conf; Krb5ConfPath where it was read from.
func (l *Login) Krb5Conf() *config.Config { return l.krb5 }

// Krb5ConfPath is the path krb5.conf was read from.
func (l *Login) Krb5ConfPath() string { return l.krb5Path }

// Metrics returns the login's gauges and counters.
func (l *Login) Metrics() *Metrics { return &l.metrics }

// Status returns the login's principal and metrics now.
func (l *Login) Status() Status { return l.metrics.Status(l.principal) }

// Times returns the current TGT's validity times.
func (l *Login) Times() Times {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.cur == nil {
		return Times{}
	}
	return l.mu.cur.cred.times
}

// Close ends the login: later calls fail with ErrClosed and the gokrb5
// clients' goroutines (if any) stop. Run returns once its ctx ends.
func (l *Login) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return nil
	}
	l.mu.closed = true
	for _, c := range []*client.Client{l.mu.long, l.mu.retired} {
		if c != nil {
			c.Destroy()
		}
	}
	if l.mu.cur != nil {
		l.mu.cur.client.Destroy()
	}
	return nil
}

// current returns the session in force, or an error if the login is closed
// or its TGT has expired.
func (l *Login) current() (*session, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return nil, ErrClosed
	}
	s := l.mu.cur
	if now := clock.Now(l.clock); !now.Before(s.cred.times.End) {
		return nil, &Error{Kind: ErrTicketExpired, Op: "use TGT", Principal: l.principal,
			Hint: fmt.Sprintf("the TGT expired at %s and was not renewed (see earlier re-login errors); %s",
				s.cred.times.End.UTC().Format(time.RFC3339), hints[ErrTicketExpired])}
	}
	return s, nil
}

func (l *Login) install(s *session) {
	l.mu.Lock()
	gone := l.mu.retired
	l.mu.retired = nil
	if l.mu.cur != nil {
		l.mu.retired = l.mu.cur.client
	}
	l.mu.cur = s
	closed := l.mu.closed
	l.mu.Unlock()
	if gone != nil {
		gone.Destroy()
	}
	if closed {
		s.client.Destroy()
	}
	l.metrics.TGTExpiry.Store(s.cred.times.End.Unix())
	var renewTill int64
	if !s.cred.times.RenewTill.IsZero() {
		renewTill = s.cred.times.RenewTill.Unix()
	}
	l.metrics.TGTRenewTill.Store(renewTill)
}

// ServiceTicket returns a ticket for spn (service/host, without realm:
// the realm is resolved from krb5.conf's domain_realm, as for any service)
// and its session key.
func (l *Login) ServiceTicket(spn string) (messages.Ticket, types.EncryptionKey, error) {
	s, err := l.current()
	if err != nil {
		return messages.Ticket{}, types.EncryptionKey{}, err
	}
	tkt, key, err := s.client.GetServiceTicket(spn)
	if err != nil {
		e := classify(err, "get service ticket", l.principal, spn, ErrKDC)
		if errors.Is(e, ErrServerPrincipal) {
			e.Hint = fmt.Sprintf("the KDC has no principal %s: %s", spn, hints[ErrServerPrincipal])
		}
		return messages.Ticket{}, types.EncryptionKey{}, e
	}
	return tkt, key, nil
}

// ClientPrincipal is the client's principal name (without realm) as a
// gokrb5 PrincipalName, for authenticators.
func (l *Login) ClientPrincipal() types.PrincipalName {
	return types.NewPrincipalName(nametype.KRB_NT_PRINCIPAL, l.name)
}

// CurrentClient returns the gokrb5 client of the current TGT, for a
// library that authenticates once per connection and can ask again for
// the next one (franz-go's kerberos.AuthFn). It must not be kept: it is
// destroyed at the refresh after the one that replaces it.
func (l *Login) CurrentClient() (*client.Client, error) {
	s, err := l.current()
	if err != nil {
		return nil, err
	}
	return s.client, nil
}

// GokrbClient returns a gokrb5 client for a library that keeps one for its
// whole life (colinmarc/hdfs). For a keytab login it is a keytab client
// that renews itself (gokrb5's own renewal, stopped by Close); for a ticket
// cache login it is the current client, which cannot outlive the cache's
// TGT.
func (l *Login) GokrbClient() (*client.Client, error) {
	if l.source != FromKeytab {
		return l.CurrentClient()
	}
	l.mu.Lock()
	c, closed := l.mu.long, l.mu.closed
	l.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if c != nil {
		return c, nil
	}
	// Log in outside the lock: it is a round trip to the KDC.
	c = client.NewWithKeytab(l.name, l.realm, l.kt, l.krb5, client.DisablePAFXFAST(l.cfg.DisableFAST))
	if err := c.Login(); err != nil {
		c.Destroy()
		return nil, l.loginError(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed || l.mu.long != nil {
		// Closed meanwhile, or another caller won the race.
		c.Destroy()
		if l.mu.closed {
			return nil, ErrClosed
		}
		return l.mu.long, nil
	}
	l.mu.long = c
	return c, nil
}

// obtain gets a new TGT: an AS exchange for a keytab login; for a ticket
// cache, the cache's TGT if newer than prev's, else a renewal of prev.
func (l *Login) obtain(prev *session) (*session, error) {
	if l.source == FromKeytab {
		return l.asLogin()
	}
	s, err := l.cacheLogin()
	if err != nil {
		return nil, err
	}
	if prev != nil && !s.cred.times.End.After(prev.cred.times.End) {
		s.client.Destroy()
		return l.renew(prev)
	}
	return s, nil
}

func (l *Login) asLogin() (*session, error) {
	cl := client.NewWithKeytab(l.name, l.realm, l.kt, l.krb5, client.DisablePAFXFAST(l.cfg.DisableFAST))
	req, err := messages.NewASReqForTGT(l.realm, l.krb5, types.NewPrincipalName(nametype.KRB_NT_PRINCIPAL, l.name))
	if err != nil {
		return nil, newError(ErrConfig, "login from keytab", l.principal, l.krb5Path, err, "")
	}
	rep, err := cl.ASExchange(l.realm, req, 0)
	if err != nil {
		return nil, l.loginError(err)
	}
	tkt, err := rep.Ticket.Marshal()
	if err != nil {
		return nil, newError(ErrKDC, "login from keytab", l.principal, "", err, "encoding the TGT")
	}
	p := rep.DecryptedEncPart
	start := p.StartTime
	if start.IsZero() {
		start = p.AuthTime
	}
	cred := &tgtCred{
		client: rep.CName, realm: rep.CRealm, ticket: tkt, key: p.Key,
		times: Times{Auth: p.AuthTime, Start: start, End: p.EndTime, RenewTill: p.RenewTill},
		flags: p.Flags.Bytes,
	}
	return l.sessionOf(cred, "login from keytab")
}

func (l *Login) loginError(err error) *Error {
	e := classify(err, "login from keytab", l.principal, "", ErrKDC)
	e.Path = l.cfg.Keytab
	switch {
	case errors.Is(e, ErrWrongPrincipal):
		e.Hint = fmt.Sprintf("the KDC of realm %s does not know %s: %s", l.realm, l.principal, hints[ErrWrongPrincipal])
	case errors.Is(e, ErrKDCUnreachable):
		e.Hint = fmt.Sprintf("no KDC of realm %s answered (krb5.conf %s): %s", l.realm, l.krb5Path, hints[ErrKDCUnreachable])
	}
	return e
}

// sessionOf builds a gokrb5 client holding cred through an in-memory
// ticket cache.
func (l *Login) sessionOf(cred *tgtCred, op string) (*session, error) {
	cc, err := decodeCCache(encodeCCache(cred))
	if err != nil {
		return nil, newError(ErrKDC, op, l.principal, "", err, "re-reading the TGT")
	}
	cl, err := client.NewFromCCache(cc, l.krb5, client.DisablePAFXFAST(l.cfg.DisableFAST))
	if err != nil {
		return nil, newError(ErrKDC, op, l.principal, "", err, "re-reading the TGT")
	}
	return &session{cred: cred, client: cl}, nil
}

func (l *Login) cacheLogin() (*session, error) {
	const op = "login from ticket cache"
	b, err := os.ReadFile(l.ccPath)
	if err != nil {
		hint := hints[ErrTicketCache]
		if errors.Is(err, fs.ErrPermission) {
			hint = fmt.Sprintf("the ticket cache is not readable by uid %d", os.Getuid())
		}
		return nil, newError(ErrTicketCache, op, l.cfg.Principal, l.ccPath, err, hint)
	}
	cred, ok, err := decodeCCacheTGT(b)
	if err != nil {
		return nil, newError(ErrTicketCache, op, l.cfg.Principal, l.ccPath, err, "not an MIT ticket cache of the FILE type")
	}
	if !ok {
		return nil, newError(ErrTicketCache, op, l.cfg.Principal, l.ccPath, nil,
			"the cache holds no TGT of its default principal: run kinit")
	}
	want := l.cfg.Principal
	if want != "" {
		if want, err = l.qualify(want); err != nil {
			return nil, err
		}
	}
	if want != "" && want != cred.principal() {
		return nil, newError(ErrWrongPrincipal, op, want, l.ccPath, nil,
			fmt.Sprintf("the ticket cache holds tickets of %s, not of security.kerberos.login.principal %s", cred.principal(), want))
	}
	if err := l.checkRealm(cred.realm); err != nil {
		return nil, err
	}
	if now := clock.Now(l.clock); !now.Before(cred.times.End) {
		return nil, &Error{Kind: ErrTicketExpired, Op: op, Principal: cred.principal(), Path: l.ccPath,
			Hint: fmt.Sprintf("the cache's TGT expired at %s: run kinit again, or log in from a keytab", cred.times.End.UTC().Format(time.RFC3339))}
	}
	return l.sessionOf(cred, op)
}

// renew renews a renewable TGT with a TGS exchange (RFC 4120 3.3.3).
func (l *Login) renew(prev *session) (*session, error) {
	const op = "renew TGT"
	c := prev.cred
	now := clock.Now(l.clock)
	if !renewable(c) || !now.Before(c.times.RenewTill) {
		return nil, &Error{Kind: ErrTicketExpired, Op: op, Principal: c.principal(), Path: l.ccPath,
			Hint: fmt.Sprintf("the TGT (expiring %s) is not renewable past %s and the ticket cache holds no newer one: run kinit again, or log in from a keytab",
				c.times.End.UTC().Format(time.RFC3339), c.times.RenewTill.UTC().Format(time.RFC3339))}
	}
	var tgt messages.Ticket
	if err := tgt.Unmarshal(c.ticket); err != nil {
		return nil, newError(ErrTicketCache, op, c.principal(), l.ccPath, err, "the TGT does not decode")
	}
	spn := types.PrincipalName{NameType: nametype.KRB_NT_SRV_INST, NameString: []string{"krbtgt", c.realm}}
	_, rep, err := prev.client.TGSREQGenerateAndExchange(spn, c.realm, tgt, c.key, true)
	if err != nil {
		return nil, classify(err, op, c.principal(), "", ErrKDC)
	}
	tkt, err := rep.Ticket.Marshal()
	if err != nil {
		return nil, newError(ErrKDC, op, c.principal(), "", err, "encoding the TGT")
	}
	p := rep.DecryptedEncPart
	start := p.StartTime
	if start.IsZero() {
		start = p.AuthTime
	}
	return l.sessionOf(&tgtCred{
		client: c.client, realm: c.realm, ticket: tkt, key: p.Key,
		times: Times{Auth: p.AuthTime, Start: start, End: p.EndTime, RenewTill: p.RenewTill},
		flags: p.Flags.Bytes,
	}, op)
}

func renewable(c *tgtCred) bool {
	// RFC 4120 TicketFlags: bit 8 is renewable (big-endian bit numbering).
	if len(c.flags) < 2 {
		return false
	}
	return c.flags[flags.Renewable/8]&(0x80>>(flags.Renewable%8)) != 0
}

func loadKrb5Conf(path string) (*config.Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		hint := "set security.kerberos.krb5-conf.path or $KRB5_CONFIG to the cluster's krb5.conf"
		if errors.Is(err, fs.ErrPermission) {
			hint = fmt.Sprintf("krb5.conf is not readable by uid %d", os.Getuid())
		}
		return nil, newError(ErrConfig, "read krb5.conf", "", path, err, hint)
	}
	c, err := config.NewFromString(string(b))
	if err != nil {
		// gokrb5 reports unsupported settings (e.g. enctypes it lacks) as
		// an error while still returning a usable configuration.
		var uv config.UnsupportedDirective
		if !errors.As(err, &uv) {
			return nil, newError(ErrConfig, "parse krb5.conf", "", path, err, "")
		}
	}
	return c, nil
}

// checkRealm makes sure krb5.conf can find a KDC for realm.
func (l *Login) checkRealm(realm string) error {
	if _, kdcs, err := l.krb5.GetKDCs(realm, true); err != nil || len(kdcs) == 0 {
		var known []string
		for _, r := range l.krb5.Realms {
			known = append(known, r.Realm)
		}
		return newError(ErrUnknownRealm, "find KDC", l.cfg.Principal, l.krb5Path, err,
			fmt.Sprintf("krb5.conf has no kdc for realm %s (its realms: %s) and DNS lookup of KDCs is off or found none: %s",
				realm, strings.Join(known, ", "), hints[ErrUnknownRealm]))
	}
	return nil
}

func loadKeytab(path, principal string) (*keytab.Keytab, error) {
	const op = "load keytab"
	b, err := os.ReadFile(path)
	if err != nil {
		hint := "check security.kerberos.login.keytab: the file does not exist"
		switch {
		case errors.Is(err, fs.ErrPermission):
			hint = fmt.Sprintf("the keytab is not readable by uid %d: check its owner and mode", os.Getuid())
		case !errors.Is(err, fs.ErrNotExist):
			hint = hints[ErrKeytab]
		}
		return nil, newError(ErrKeytab, op, principal, path, err, hint)
	}
	kt, err := decodeKeytab(b)
	if err != nil {
		return nil, newError(ErrKeytab, op, principal, path, err, "the file is not a keytab")
	}
	var have []string
	for _, e := range kt.Entries {
		p := e.Principal.String()
		if p == principal {
			return kt, nil
		}
		if !slices.Contains(have, p) {
			have = append(have, p)
		}
	}
	return nil, newError(ErrKeytab, op, principal, path, nil,
		fmt.Sprintf("the keytab holds no key of %s (it holds: %s): check security.kerberos.login.principal or use the principal's keytab",
			principal, strings.Join(have, ", ")))
}

// decodeCCache parses a ticket cache that encodeCCache wrote (gokrb5's
// parser trusts its input: files from disk go through decodeCCacheTGT).
func decodeCCache(b []byte) (cc *credentials.CCache, err error) {
	defer func() {
		if r := recover(); r != nil {
			cc, err = nil, fmt.Errorf("corrupt ticket cache (%v)", r)
		}
	}()
	cc = new(credentials.CCache)
	if err := cc.Unmarshal(b); err != nil {
		return nil, err
	}
	return cc, nil
}

// decodeKeytab parses a keytab, turning a panic of gokrb5's parser on a
// corrupt file into an error.
func decodeKeytab(b []byte) (kt *keytab.Keytab, err error) {
	defer func() {
		if r := recover(); r != nil {
			kt, err = nil, fmt.Errorf("corrupt keytab (%v)", r)
		}
	}()
	kt = keytab.New()
	if err := kt.Unmarshal(b); err != nil {
		return nil, err
	}
	return kt, nil
}
