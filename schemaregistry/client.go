// Package schemaregistry is a Confluent Schema Registry client for decoding
// Confluent-framed records: the magic byte 0, a 4-byte big-endian schema id,
// then the datum.
//
// The client is built so that nothing on the record path ever waits on the
// registry. Lookup answers from a cache; on a miss it starts one background
// fetch for the id and returns ErrPending, and the caller retries the record
// later (Wait gives a channel to reschedule on). Schema ids are immutable, so
// a fetched schema is cached for the life of the client. An id the registry
// answers 404 (error code 40403) for is remembered as missing for
// Options.NegativeCacheTTL and reported as ErrUnknownID. Any other failure —
// the registry unreachable, a 5xx, a timeout, an unexpected answer — is
// retried in the background with capped exponential backoff while Lookup
// keeps answering ErrPending: such a record waits, it is never reported as
// unknown.
//
// The schemas a Protobuf schema references are named by subject and
// version: LookupVersion, WaitVersion and FetchVersion serve them with the
// same cache, negative cache and background retries (version.go).
package schemaregistry

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults for the zero values of Options.
const (
	DefaultTimeout          = 10 * time.Second
	DefaultNegativeCacheTTL = time.Minute
)

// Retry and logging policy of background fetches.
const (
	backoffMin = 100 * time.Millisecond
	backoffMax = 30 * time.Second
	// maxConcurrentFetches bounds the requests background fetches have in
	// flight at once, so a burst of distinct ids (or garbage ids) cannot
	// flood the registry.
	maxConcurrentFetches = 4
	// unreachableLogEvery rate-limits the "registry unreachable" warning.
	unreachableLogEvery = 10 * time.Second
	// missingSweepAt is the size of the negative cache above which expired
	// entries are swept when a new one is added.
	missingSweepAt = 1024
)

var (
	// ErrPending means the schema is not cached yet and a background fetch
	// is under way (or retrying after a failure, in which case the returned
	// error also describes the last failure). The caller retries the record
	// later, for instance when Wait's channel is closed.
	ErrPending = errors.New("schemaregistry: schema fetch pending")
	// ErrUnknownID means the registry answered that the schema id does not
	// exist (HTTP 404, error code 40403). Lookup keeps answering it for
	// Options.NegativeCacheTTL, then asks the registry again.
	ErrUnknownID = errors.New("schemaregistry: unknown schema id")
	// ErrClosed means the client was closed.
	ErrClosed = errors.New("schemaregistry: client closed")
)

// Options configure a Client.
type Options struct {
	// URL is the registry's base URL, e.g. https://registry:8081; a path
	// prefix is kept. Credentials belong in Username and Password, not in
	// the URL.
	URL string
	// Username and Password are sent as HTTP basic auth when Username is
	// not empty.
	Username, Password string
	// PasswordFunc, when set, gives the password for each request instead
	// of Password (a password_file read again, so that a rotated secret is
	// picked up). When it fails, the last password it gave is used.
	PasswordFunc func() (string, error)
	// TLS configures HTTPS; nil uses the defaults. It must be nil when
	// Transport is set.
	TLS *tls.Config
	// Transport carries the requests; nil builds one from
	// http.DefaultTransport and TLS. Tests use it to serve requests in
	// memory (see registrytest.Server.Transport).
	Transport http.RoundTripper
	// Timeout bounds each request; 0 means DefaultTimeout.
	Timeout time.Duration
	// NegativeCacheTTL is how long an id the registry reported unknown
	// keeps being reported as ErrUnknownID without asking again; 0 means
	// DefaultNegativeCacheTTL.
	NegativeCacheTTL time.Duration
	// Registerer receives the client's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Log receives the client's warnings; nil discards them.
	Log *slog.Logger
}

// Schema is a schema as the registry stores it. A *Schema returned by the
// client is shared by every caller and must not be modified.
type Schema struct {
	ID int32
	// Text is the schema definition, e.g. the Avro schema's JSON.
	Text string
	// Type is the schema type: AVRO (what the registry means when it omits
	// the type), JSON or PROTOBUF; other values are passed through.
	Type string
	// References are the schemas this one imports, as the registry lists
	// them; the client does not resolve them.
	References []Reference
}

// Reference names a schema referenced by another.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// Client fetches and caches schemas from a Confluent Schema Registry. It is
// safe for concurrent use. Close stops its background fetches.
type Client struct {
	base     string // URL without a trailing slash
	username string
	password string
	pwFunc   func() (string, error)
	pwMu     sync.Mutex // guards password when pwFunc is set
	timeout  time.Duration
	negTTL   time.Duration
	http     *http.Client
	ownTrans *http.Transport // built by New, so Close may drop its idle connections
	m        *metrics
	log      *slog.Logger

	// cache maps id to schema. It is copied on write (rare: once per id)
	// so that Lookup's hit path takes no lock.
	cache atomic.Pointer[map[int32]*Schema]

	ctx    context.Context // cancelled by Close; parent of background requests
	cancel context.CancelFunc
	wg     sync.WaitGroup
	sem    chan struct{} // bounds background requests in flight

	mu      sync.Mutex
	closed  bool
	missing map[int32]time.Time // id -> when it stops being known-missing
	pending map[int32]*fetch
	// The schemas fetched by subject and version (the references of
	// Protobuf schemas), those the registry denied and those being
	// fetched. Read once per schema id that references them, so a lock
	// is cheap enough.
	versions        map[versionKey]*Schema
	missingVersions map[versionKey]missingVersion
	pendingVersions map[versionKey]*fetch

	logMu         sync.Mutex
	lastLog       time.Time
	suppressed    int
	failingSince  time.Time // zero while the registry answers
	failingStreak int
}

// fetch is one background fetch of one id, or of one subject's version.
type fetch struct {
	done chan struct{} // closed when the fetch completes
	err  error         // Lookup's answer while pending; guarded by Client.mu
}

// New checks o and returns a client. It makes no request: use Prewarm or
// Fetch at startup to fail fast on a wrong URL or credentials.
func New(o Options) (*Client, error) {
	if o.URL == "" {
		return nil, errors.New("schemaregistry: no URL")
	}
	u, err := url.Parse(o.URL)
	if err != nil {
		// url.Error quotes the whole URL, password included: give its
		// reason only.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("schemaregistry: invalid URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("schemaregistry: URL %q: scheme must be http or https", u.Redacted())
	}
	if u.Host == "" {
		return nil, fmt.Errorf("schemaregistry: URL %q: no host", u.Redacted())
	}
	if u.User != nil {
		return nil, fmt.Errorf("schemaregistry: URL %q: put credentials in Username and Password, not in the URL", u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("schemaregistry: URL %q: a base URL takes no query or fragment", o.URL)
	}
	if o.Password != "" && o.Username == "" {
		return nil, fmt.Errorf("schemaregistry: URL %q: a password without a username", o.URL)
	}
	if o.Transport != nil && o.TLS != nil {
		return nil, fmt.Errorf("schemaregistry: URL %q: set TLS on the Transport, not in Options.TLS, when Transport is given", o.URL)
	}
	if o.Timeout < 0 || o.NegativeCacheTTL < 0 {
		return nil, fmt.Errorf("schemaregistry: URL %q: negative Timeout or NegativeCacheTTL", o.URL)
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	c := &Client{
		base:     strings.TrimRight(u.String(), "/"),
		username: o.Username,
		password: o.Password,
		pwFunc:   o.PasswordFunc,
		timeout:  o.Timeout,
		negTTL:   o.NegativeCacheTTL,
		m:        m,
		log:      o.Log,
		sem:      make(chan struct{}, maxConcurrentFetches),
		missing:  make(map[int32]time.Time),
		pending:  make(map[int32]*fetch),

		versions:        make(map[versionKey]*Schema),
		missingVersions: make(map[versionKey]missingVersion),
		pendingVersions: make(map[versionKey]*fetch),
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if c.negTTL == 0 {
		c.negTTL = DefaultNegativeCacheTTL
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	rt := o.Transport
	if rt == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		if o.TLS != nil {
			t.TLSClientConfig = o.TLS.Clone()
		}
		c.ownTrans = t
		rt = t
	}
	c.http = &http.Client{
		Transport: rt,
		// A redirect would re-send basic auth to wherever it points; the
		// registry does not redirect, so treat one as an error.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	empty := map[int32]*Schema{}
	c.cache.Store(&empty)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// Lookup returns the schema for id if it is cached. Otherwise it makes sure
// one background fetch for id is running and returns an error wrapping
// ErrPending; the caller retries later (Wait tells it when). An id the
// registry reported unknown gives an error wrapping ErrUnknownID until
// Options.NegativeCacheTTL has passed; a negative id, which the registry
// never assigns, gives one at once. After Close, an id not cached gives
// ErrClosed. Lookup never waits on the network.
func (c *Client) Lookup(id int32) (*Schema, error) {
	if s := (*c.cache.Load())[id]; s != nil {
		return s, nil
	}
	if id < 0 {
		return nil, fmt.Errorf("%w: schema id %d is negative", ErrUnknownID, id)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := (*c.cache.Load())[id]; s != nil { // stored since the first look
		return s, nil
	}
	if err := c.missingLocked(id); err != nil {
		return nil, err
	}
	if f := c.pending[id]; f != nil {
		return nil, f.err
	}
	if c.closed {
		return nil, fmt.Errorf("schema id %d: %w", id, ErrClosed)
	}
	f := &fetch{done: make(chan struct{}), err: fmt.Errorf("%w: schema id %d", ErrPending, id)}
	c.pending[id] = f
	c.wg.Add(1)
	go c.background(f,
		func() bool { return (*c.cache.Load())[id] != nil }, // Fetch or Prewarm got it meanwhile
		func(ctx context.Context) error { _, err := c.fetchID(ctx, id); return err },
		func(err error) bool { return errors.Is(err, ErrUnknownID) },
		func() { c.complete(id, f) })
	return nil, f.err
}

// Wait returns a channel that is closed when the background fetch of id
// completes: the schema is cached, the registry reported the id unknown, or
// the client was closed. Failed attempts that are being retried do not
// complete the fetch. When no fetch of id is pending (it already completed,
// or none was started) the channel is already closed; either way the caller
// then calls Lookup again.
func (c *Client) Wait(id int32) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.pending[id]; f != nil {
		return f.done
	}
	return closedChan
}

var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// Fetch returns the schema for id, from the cache or with one request to the
// registry made now, bounded by ctx and Options.Timeout. It does not retry:
// the error of a failed request is returned. A 404 gives an error wrapping
// ErrUnknownID and is remembered like Lookup's. Fetch is meant for startup
// and tests; the record path uses Lookup.
func (c *Client) Fetch(ctx context.Context, id int32) (*Schema, error) {
	if s := (*c.cache.Load())[id]; s != nil {
		return s, nil
	}
	if id < 0 {
		return nil, fmt.Errorf("%w: schema id %d is negative", ErrUnknownID, id)
	}
	c.mu.Lock()
	err := c.missingLocked(id)
	closed := c.closed
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if closed {
		return nil, fmt.Errorf("schema id %d: %w", id, ErrClosed)
	}
	return c.fetchID(ctx, id)
}

// Prewarm fetches the latest version of each subject and caches its schema
// under its id, so that records written with those schemas decode without
// waiting. It tries every subject (until ctx is done) and returns the
// failures joined, each naming its subject. It makes one request per
// subject and does not retry.
func (c *Client) Prewarm(ctx context.Context, subjects []string) error {
	var errs []error
	for _, subject := range subjects {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("schemaregistry: prewarm stopped before subject %q: %w", subject, err))
			break
		}
		if _, err := c.fetchLatest(ctx, subject); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close stops the background fetches and waits for them to return; their
// Wait channels are closed. Cached schemas stay available to Lookup. Close
// is idempotent.
func (c *Client) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	if c.ownTrans != nil {
		c.ownTrans.CloseIdleConnections()
	}
	c.m.cacheEntries.Sub(float64(len(*c.cache.Load())))
}

// missingLocked returns ErrUnknownID (wrapped) if id is known to be missing,
// and forgets it once its time is up. c.mu must be held.
func (c *Client) missingLocked(id int32) error {
	until, ok := c.missing[id]
	if !ok {
		return nil
	}
	if time.Now().Before(until) {
		return fmt.Errorf("%w: schema id %d (registry %s answered 404)", ErrUnknownID, id, c.base)
	}
	delete(c.missing, id)
	return nil
}

// background runs get until it succeeds, fails with an error final
// reports as the registry's answer (the schema does not exist), or the
// client is closed, backing off between failed attempts; then done ends
// the fetch. have reports that another call cached the schema meanwhile.
// f.err describes the last failure while attempts go on.
func (c *Client) background(f *fetch, have func() bool, get func(context.Context) error, final func(error) bool, done func()) {
	defer c.wg.Done()
	defer done()
	for attempt := 0; ; attempt++ {
		if have() {
			return
		}
		select {
		case c.sem <- struct{}{}:
		case <-c.ctx.Done():
			return
		}
		err := get(c.ctx)
		<-c.sem
		if err == nil || final(err) || c.ctx.Err() != nil {
			return
		}
		c.mu.Lock()
		f.err = fmt.Errorf("%w, retrying: %w", ErrPending, err)
		c.mu.Unlock()
		t := time.NewTimer(backoff(attempt))
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return
		}
	}
}

// complete ends the background fetch f of id and wakes its waiters. The
// outcome is already in the cache or the negative cache, so a woken waiter
// finds it.
func (c *Client) complete(id int32, f *fetch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[id] == f {
		delete(c.pending, id)
	}
	close(f.done)
}

// backoff returns the pause after failed attempt n (0-based): 100ms doubling
// to 30s, plus up to 20% jitter so that fetches failing together do not
// retry together, never above 30s.
func backoff(n int) time.Duration {
	d := backoffMax
	if n < 20 {
		d = min(backoffMin<<n, backoffMax)
	}
	d += rand.N(d/5 + 1)
	return min(d, backoffMax)
}

// store caches s under its id.
func (c *Client) store(s *Schema) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := *c.cache.Load()
	if _, ok := old[s.ID]; ok {
		return
	}
	next := make(map[int32]*Schema, len(old)+1)
	maps.Copy(next, old)
	next[s.ID] = s
	c.cache.Store(&next)
	if !c.closed { // Close has already taken this client's entries off the gauge
		c.m.cacheEntries.Inc()
	}
}

// storeMissing remembers that the registry does not know id.
func (c *Client) storeMissing(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if len(c.missing) >= missingSweepAt {
		for k, until := range c.missing {
			if !now.Before(until) {
				delete(c.missing, k)
			}
		}
	}
	c.missing[id] = now.Add(c.negTTL)
}

// noteResult records the registry's health for the rate-limited
// "registry unreachable" warning: err is nil after a request the registry
// answered (with a schema or a 404).
func (c *Client) noteResult(target string, err error) {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	now := time.Now()
	if err == nil {
		if !c.failingSince.IsZero() {
			c.log.Info("schema registry reachable again",
				"url", c.base, "failed_requests", c.failingStreak, "after", now.Sub(c.failingSince).Round(time.Millisecond))
			c.failingSince, c.failingStreak, c.suppressed = time.Time{}, 0, 0
		}
		return
	}
	if c.failingSince.IsZero() {
		c.failingSince = now
	}
	c.failingStreak++
	if !c.lastLog.IsZero() && now.Sub(c.lastLog) < unreachableLogEvery {
		c.suppressed++
		return
	}
	c.log.Warn("schema registry unreachable; records needing a schema wait and are retried",
		"url", c.base, "request", target, "error", err, "suppressed", c.suppressed)
	c.lastLog, c.suppressed = now, 0
}
