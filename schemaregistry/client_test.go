package schemaregistry_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/schemaregistry"
	"github.com/etl-project/etl/schemaregistry/registrytest"
)

const userSchema = `{"type":"record","name":"User","fields":[{"name":"id","type":"long"}]}`

// newClient returns a client of the fake registry srv over the network,
// closed when the test ends.
func newClient(t *testing.T, o schemaregistry.Options) *schemaregistry.Client {
	t.Helper()
	c, err := schemaregistry.New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// waitClosed fails the test if ch is not closed within d of real time.
func waitClosed(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s: not done after %v", what, d)
	}
}

func TestLookupPendingThenSchema(t *testing.T) {
	srv := registrytest.New(t)
	id := srv.Register("users-value", userSchema)
	reg := prometheus.NewRegistry()
	c := newClient(t, schemaregistry.Options{URL: srv.URL(), Registerer: reg})

	if _, err := c.Lookup(id); !errors.Is(err, schemaregistry.ErrPending) {
		t.Fatalf("first Lookup(%d) error = %v, want ErrPending", id, err)
	}
	waitClosed(t, c.Wait(id), 5*time.Second, "Wait")
	s, err := c.Lookup(id)
	if err != nil {
		t.Fatalf("Lookup(%d) after Wait: %v", id, err)
	}
	if s.ID != id || s.Text != userSchema || s.Type != "AVRO" || len(s.References) != 0 {
		t.Fatalf("Lookup(%d) = %+v", id, s)
	}
	select {
	case <-c.Wait(id):
	default:
		t.Fatal("Wait of a cached id is not closed")
	}
	if n := srv.Requests(); n != 1 {
		t.Fatalf("registry got %d requests, want 1", n)
	}
	if got := fetches(t, reg, "ok"); got != 1 {
		t.Fatalf(`etl_schema_fetches_total{outcome="ok"} = %v, want 1`, got)
	}
	if got := gaugeValue(t, reg, "etl_schema_cache_entries"); got != 1 {
		t.Fatalf("etl_schema_cache_entries = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(reg, "etl_schema_fetch_duration_seconds"); n != 1 {
		t.Fatalf("etl_schema_fetch_duration_seconds series = %d, want 1", n)
	}
}

// Lookup must answer at once while the registry request is in flight, and
// many callers asking for one id must share one request.
func TestLookupNeverBlocksAndSharesOneRequest(t *testing.T) {
	srv := registrytest.New(t)
	id := srv.Register("users-value", userSchema)
	release := srv.Hold()
	defer release()
	c := newClient(t, schemaregistry.Options{URL: srv.URL()})

	const callers = 64
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			_, err := c.Lookup(id)
			errs <- err
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	waitClosed(t, done, 5*time.Second, "Lookups while the registry request is held")
	close(errs)
	for err := range errs {
		if !errors.Is(err, schemaregistry.ErrPending) {
			t.Fatalf("Lookup while the request is held: %v, want ErrPending", err)
		}
	}
	testenv.WaitFor(t, "the held request", 5*time.Second, func() bool { return srv.Requests() == 1 })
	wait := c.Wait(id)
	select {
	case <-wait:
		t.Fatal("Wait closed while the request is held")
	default:
	}

	release()
	waitClosed(t, wait, 5*time.Second, "Wait after release")
	if s, err := c.Lookup(id); err != nil || s.Text != userSchema {
		t.Fatalf("Lookup after release = %v, %v", s, err)
	}
	if n := srv.Requests(); n != 1 {
		t.Fatalf("registry got %d requests for %d concurrent Lookups, want 1", n, callers)
	}
}

func TestUnknownIDCachedForTTL(t *testing.T) {
	srv := registrytest.New(t) // outside the bubble: its listener is real network
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		c, err := schemaregistry.New(schemaregistry.Options{
			URL: srv.URL(), Transport: srv.Transport(), NegativeCacheTTL: time.Minute, Registerer: reg,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()

		const id = 1 // not registered yet
		if _, err := c.Lookup(id); !errors.Is(err, schemaregistry.ErrPending) {
			t.Fatalf("first Lookup error = %v, want ErrPending", err)
		}
		<-c.Wait(id)
		_, err = c.Lookup(id)
		if !errors.Is(err, schemaregistry.ErrUnknownID) || errors.Is(err, schemaregistry.ErrPending) {
			t.Fatalf("Lookup after 404 error = %v, want ErrUnknownID", err)
		}
		if !strings.Contains(err.Error(), "schema id 1") {
			t.Fatalf("error %q does not name the id", err)
		}
		if got := fetches(t, reg, "not_found"); got != 1 {
			t.Fatalf(`fetches{outcome="not_found"} = %v, want 1`, got)
		}

		// The registry learns the id, but the client keeps the answer for
		// the TTL without asking again.
		if got := srv.Register("users-value", userSchema); got != id {
			t.Fatalf("Register = %d, want %d", got, id)
		}
		time.Sleep(time.Minute - time.Millisecond)
		if _, err := c.Lookup(id); !errors.Is(err, schemaregistry.ErrUnknownID) {
			t.Fatalf("Lookup within the TTL error = %v, want ErrUnknownID", err)
		}
		if _, err := c.Fetch(context.Background(), id); !errors.Is(err, schemaregistry.ErrUnknownID) {
			t.Fatalf("Fetch within the TTL error = %v, want ErrUnknownID", err)
		}
		if n := srv.Requests(); n != 1 {
			t.Fatalf("registry got %d requests within the TTL, want 1", n)
		}

		time.Sleep(time.Millisecond)
		if _, err := c.Lookup(id); !errors.Is(err, schemaregistry.ErrPending) {
			t.Fatalf("Lookup after the TTL error = %v, want ErrPending", err)
		}
		<-c.Wait(id)
		s, err := c.Lookup(id)
		if err != nil || s.Text != userSchema {
			t.Fatalf("Lookup after refetch = %v, %v", s, err)
		}
		if n := srv.Requests(); n != 2 {
			t.Fatalf("registry got %d requests, want 2", n)
		}
	})
}

func TestRegistryDownRetriesWithBackoff(t *testing.T) {
	srv := registrytest.New(t)
	id := srv.Register("users-value", userSchema)
	srv.SetDown(true)
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		logs := &recorder{}
		c, err := schemaregistry.New(schemaregistry.Options{
			URL: srv.URL(), Transport: srv.Transport(), Registerer: reg, Log: slog.New(logs),
		})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()

		if _, err := c.Lookup(id); !errors.Is(err, schemaregistry.ErrPending) {
			t.Fatalf("Lookup error = %v, want ErrPending", err)
		}
		wait := c.Wait(id)
		synctest.Wait()
		_, err = c.Lookup(id)
		if !errors.Is(err, schemaregistry.ErrPending) || !strings.Contains(err.Error(), "HTTP 503") ||
			!strings.Contains(err.Error(), srv.URL()+"/schemas/ids/1") {
			t.Fatalf("Lookup while down error = %v, want ErrPending naming the 503 and the URL", err)
		}

		// Backoff 100ms doubling to 30s, +0..20% jitter: attempts at about
		// 0, 0.1, 0.3, 0.7, 1.5, 3.1, 6.3, 12.7, 25.5 and 51.1s (later
		// with jitter, at most 61.3s).
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := srv.Requests(); n < 9 || n > 10 {
			t.Fatalf("registry got %d requests in a minute of outage, want 9 or 10", n)
		}
		if _, err := c.Lookup(id); !errors.Is(err, schemaregistry.ErrPending) {
			t.Fatalf("Lookup while down error = %v, want ErrPending (never unknown)", err)
		}
		select {
		case <-wait:
			t.Fatal("Wait closed while the registry is down")
		default:
		}
		failed := srv.Requests()
		if got := fetches(t, reg, "error"); got != float64(failed) {
			t.Fatalf(`fetches{outcome="error"} = %v, want %d`, got, failed)
		}
		if w := logs.count(slog.LevelWarn); w < 2 || w > 7 {
			t.Fatalf("%d warnings for %d failures in a minute, want 2..7 (rate-limited)", w, failed)
		}

		srv.SetDown(false)
		time.Sleep(30 * time.Second) // the longest backoff
		synctest.Wait()
		select {
		case <-wait:
		default:
			t.Fatal("Wait not closed 30s after the registry came back")
		}
		if s, err := c.Lookup(id); err != nil || s.Text != userSchema {
			t.Fatalf("Lookup after recovery = %v, %v", s, err)
		}
		if n := srv.Requests(); n != failed+1 {
			t.Fatalf("registry got %d requests, want %d", n, failed+1)
		}
		if logs.count(slog.LevelInfo) != 1 {
			t.Fatalf("want one recovery message, got logs %q", logs.messages())
		}
	})
}

// A 404 without the registry's error code (a wrong URL path, a proxy) is
// not an unknown id: it is retried.
func TestBare404IsNotUnknownID(t *testing.T) {
	hs := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(hs.Close)
	c := newClient(t, schemaregistry.Options{URL: hs.URL + "/wrong-prefix"})
	_, err := c.Fetch(context.Background(), 3)
	if err == nil || errors.Is(err, schemaregistry.ErrUnknownID) {
		t.Fatalf("Fetch error = %v, want a failure that is not ErrUnknownID", err)
	}
	if !strings.Contains(err.Error(), hs.URL+"/wrong-prefix/schemas/ids/3") || !strings.Contains(err.Error(), "HTTP 404") {
		t.Fatalf("error %q does not name the URL and status", err)
	}
	if _, err := c.Lookup(3); !errors.Is(err, schemaregistry.ErrPending) {
		t.Fatalf("Lookup error = %v, want ErrPending", err)
	}
}

func TestBasicAuth(t *testing.T) {
	srv := registrytest.New(t)
	id := srv.Register("users-value", userSchema)
	srv.RequireBasicAuth("etl", "s3cret")

	good := newClient(t, schemaregistry.Options{URL: srv.URL(), Username: "etl", Password: "s3cret"})
	if s, err := good.Fetch(context.Background(), id); err != nil || s.Text != userSchema {
		t.Fatalf("Fetch with credentials = %v, %v", s, err)
	}

	for _, o := range []schemaregistry.Options{
		{URL: srv.URL()},
		{URL: srv.URL(), Username: "etl", Password: "wrong"},
	} {
		bad := newClient(t, o)
		_, err := bad.Fetch(context.Background(), id)
		if err == nil || !strings.Contains(err.Error(), "HTTP 401") || errors.Is(err, schemaregistry.ErrUnknownID) {
			t.Fatalf("Fetch as %q error = %v, want an HTTP 401 failure", o.Username, err)
		}
		if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "wrong") {
			t.Fatalf("error %q shows a password", err)
		}
		if _, err := bad.Lookup(id); !errors.Is(err, schemaregistry.ErrPending) {
			t.Fatalf("Lookup as %q error = %v, want ErrPending (retried, not dead-lettered)", o.Username, err)
		}
	}
}

func TestPrewarm(t *testing.T) {
	srv := registrytest.New(t)
	users := srv.Register("users-value", userSchema)
	orders := srv.Register("orders-value", `{"type":"record","name":"Order","fields":[]}`)
	ordersV2 := srv.Register("orders-value", `{"type":"record","name":"Order","fields":[{"name":"n","type":"int"}]}`)
	c := newClient(t, schemaregistry.Options{URL: srv.URL()})

	err := c.Prewarm(context.Background(), []string{"users-value", "no-such-subject", "orders-value"})
	if err == nil || !strings.Contains(err.Error(), `"no-such-subject"`) || !strings.Contains(err.Error(), "40401") {
		t.Fatalf("Prewarm error = %v, want one naming the missing subject", err)
	}
	if strings.Contains(err.Error(), "users-value") || strings.Contains(err.Error(), "orders-value") {
		t.Fatalf("Prewarm error %q names subjects that succeeded", err)
	}
	before := srv.Requests()
	for _, id := range []int32{users, ordersV2} {
		if s, err := c.Lookup(id); err != nil || s.ID != id {
			t.Fatalf("Lookup(%d) after Prewarm = %v, %v; want a cache hit", id, s, err)
		}
	}
	if n := srv.Requests(); n != before {
		t.Fatalf("Lookups after Prewarm made %d requests, want 0", n-before)
	}
	// Only the latest version is prewarmed.
	if _, err := c.Lookup(orders); !errors.Is(err, schemaregistry.ErrPending) {
		t.Fatalf("Lookup(%d) of an older version error = %v, want ErrPending", orders, err)
	}
}

func TestSchemaTypeAndReferences(t *testing.T) {
	srv := registrytest.New(t)
	body := `{"schemaType":"PROTOBUF","schema":"syntax = \"proto3\";","references":[{"name":"a.proto","subject":"a","version":2}]}`
	resp, err := http.Post(srv.URL()+"/subjects/p/versions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("register: HTTP %d", resp.StatusCode)
	}
	c := newClient(t, schemaregistry.Options{URL: srv.URL()})
	s, err := c.Fetch(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	want := schemaregistry.Reference{Name: "a.proto", Subject: "a", Version: 2}
	if s.Type != "PROTOBUF" || len(s.References) != 1 || s.References[0] != want {
		t.Fatalf("Fetch = %+v", s)
	}
}

func TestFetchTimeout(t *testing.T) {
	srv := registrytest.New(t)
	id := srv.Register("users-value", userSchema)
	release := srv.Hold()
	defer release()
	c := newClient(t, schemaregistry.Options{URL: srv.URL(), Timeout: 50 * time.Millisecond})
	start := time.Now()
	_, err := c.Fetch(context.Background(), id)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Fetch error = %v, want a deadline exceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Fetch took %v with a 50ms timeout", d)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Fetch(ctx, id); !errors.Is(err, context.Canceled) {
		t.Fatalf("Fetch with a cancelled context error = %v, want context.Canceled", err)
	}
}

// Close must stop background fetches, whether they are waiting out a
// backoff or have a request in flight, and close their Wait channels.
func TestCloseStopsBackgroundFetches(t *testing.T) {
	srv := registrytest.New(t)
	for i := range 5 {
		srv.Register("s", strings.Repeat(" ", i)+userSchema)
	}
	settle := func() int {
		runtime.GC()
		return runtime.NumGoroutine()
	}
	baseline := settle()

	c, err := schemaregistry.New(schemaregistry.Options{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetDown(true)
	var waits []<-chan struct{}
	for id := int32(1); id <= 4; id++ {
		if _, err := c.Lookup(id); !errors.Is(err, schemaregistry.ErrPending) {
			t.Fatalf("Lookup(%d) error = %v", id, err)
		}
		waits = append(waits, c.Wait(id))
	}
	testenv.WaitFor(t, "first attempts", 5*time.Second, func() bool { return srv.Requests() >= 4 })
	// One more, with its request held in flight.
	release := srv.Hold()
	defer release()
	srv.SetDown(false)
	if _, err := c.Lookup(5); !errors.Is(err, schemaregistry.ErrPending) {
		t.Fatalf("Lookup(5) error = %v", err)
	}
	waits = append(waits, c.Wait(5))
	testenv.WaitFor(t, "the held request", 5*time.Second, func() bool { return srv.Requests() >= 5 })

	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	waitClosed(t, closed, 5*time.Second, "Close")
	for i, w := range waits {
		waitClosed(t, w, time.Second, "Wait after Close")
		if _, err := c.Lookup(int32(i + 1)); !errors.Is(err, schemaregistry.ErrClosed) {
			t.Fatalf("Lookup(%d) after Close error = %v, want ErrClosed", i+1, err)
		}
	}
	c.Close() // idempotent

	testenv.Eventually(t, "the client's goroutines to end after Close", 5*time.Second, func() error {
		if n := settle(); n > baseline {
			buf := make([]byte, 1<<20)
			return fmt.Errorf("%d goroutines after Close, %d before:\n%s", n, baseline, buf[:runtime.Stack(buf, true)])
		}
		return nil
	})
}

// In a synctest bubble, synctest.Test itself fails if Close leaves a
// goroutine of the client behind.
func TestCloseLeavesNoGoroutineInBubble(t *testing.T) {
	srv := registrytest.New(t)
	srv.SetDown(true)
	synctest.Test(t, func(t *testing.T) {
		c, err := schemaregistry.New(schemaregistry.Options{URL: srv.URL(), Transport: srv.Transport()})
		if err != nil {
			t.Fatal(err)
		}
		for id := int32(1); id <= 20; id++ {
			_, _ = c.Lookup(id)
		}
		time.Sleep(5 * time.Second)
		c.Close()
		// Cached entries outlive Close; the rest answer ErrClosed.
		if _, err := c.Lookup(1); !errors.Is(err, schemaregistry.ErrClosed) {
			t.Fatalf("Lookup after Close error = %v, want ErrClosed", err)
		}
		if _, err := c.Fetch(context.Background(), 1); !errors.Is(err, schemaregistry.ErrClosed) {
			t.Fatalf("Fetch after Close error = %v, want ErrClosed", err)
		}
	})
}

func TestNegativeIDIsUnknownWithoutRequest(t *testing.T) {
	srv := registrytest.New(t)
	c := newClient(t, schemaregistry.Options{URL: srv.URL()})
	if _, err := c.Lookup(-5); !errors.Is(err, schemaregistry.ErrUnknownID) {
		t.Fatalf("Lookup(-5) error = %v, want ErrUnknownID", err)
	}
	if n := srv.Requests(); n != 0 {
		t.Fatalf("registry got %d requests, want 0", n)
	}
}

func TestNewValidates(t *testing.T) {
	for _, o := range []schemaregistry.Options{
		{},
		{URL: "registry:8081"},
		{URL: "ftp://registry"},
		{URL: "http://"},
		{URL: "http://user:pw@registry:8081"},
		{URL: "http://user:pw@[::1"}, // does not parse
		{URL: "http://registry:8081?x=1"},
		{URL: "http://registry:8081", Password: "pw"},
		{URL: "http://registry:8081", Timeout: -time.Second},
	} {
		if c, err := schemaregistry.New(o); err == nil {
			c.Close()
			t.Errorf("New(%+v) succeeded, want an error", o)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("New error %q shows the password", err)
		}
	}
}

// Two clients may share one registry (their series are shared); a
// conflicting collector is reported, not panicked on.
func TestMetricsRegistration(t *testing.T) {
	reg := prometheus.NewRegistry()
	for range 2 {
		c, err := schemaregistry.New(schemaregistry.Options{URL: "http://127.0.0.1:1", Registerer: reg})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		c.Close()
	}
	reg = prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "etl_schema_cache_entries", Help: "other"}))
	if _, err := schemaregistry.New(schemaregistry.Options{URL: "http://127.0.0.1:1", Registerer: reg}); err == nil {
		t.Fatal("New with a conflicting collector succeeded")
	}
}

// fetches returns etl_schema_fetches_total{outcome=outcome} from reg.
func fetches(t *testing.T, reg *prometheus.Registry, outcome string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "etl_schema_fetches_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no etl_schema_fetches_total{outcome=%q}", outcome)
	return 0
}

func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// recorder is a slog.Handler keeping the records it gets.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

func (r *recorder) count(level slog.Level) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, rec := range r.records {
		if rec.Level == level {
			n++
		}
	}
	return n
}

func (r *recorder) messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.records {
		out = append(out, rec.Message)
	}
	return out
}

// TestPasswordFunc: with PasswordFunc each request takes the password it
// gives (a rotated password is used at once), and when it fails the last
// password it gave is used.
func TestPasswordFunc(t *testing.T) {
	srv := registrytest.New(t)
	id1 := srv.Register("users-value", userSchema)
	id2 := srv.Register("users-value", userSchema+" ")
	id3 := srv.Register("users-value", userSchema+"  ")
	srv.RequireBasicAuth("etl", "first")
	pw, fail := "first", false
	c := newClient(t, schemaregistry.Options{URL: srv.URL(), Username: "etl", PasswordFunc: func() (string, error) {
		if fail {
			return "", errors.New("file gone")
		}
		return pw, nil
	}})
	if _, err := c.Fetch(context.Background(), id1); err != nil {
		t.Fatalf("Fetch with the first password: %v", err)
	}
	srv.RequireBasicAuth("etl", "second")
	pw = "second"
	if _, err := c.Fetch(context.Background(), id2); err != nil {
		t.Fatalf("Fetch after the rotation: %v", err)
	}
	fail = true
	if _, err := c.Fetch(context.Background(), id3); err != nil {
		t.Fatalf("Fetch with the password file unreadable (the last password): %v", err)
	}
}
