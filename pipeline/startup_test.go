package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/fields"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/schemaregistry"
	"github.com/etl-project/etl/schemaregistry/registrytest"
)

// TestUnavailableClassification: only the mark put on "no replica
// answered" makes an error Unavailable; it survives wrapping and changes
// neither the text nor what errors.Is and errors.As find beneath it.
func TestUnavailableClassification(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	down := unavailable(fmt.Errorf("no replica answered: %w", errors.Join(refused, io.EOF)))
	wrapped := fmt.Errorf("sink default: %w", down)
	if !Unavailable(down) || !Unavailable(wrapped) || !errors.Is(wrapped, ErrUnavailable) {
		t.Fatalf("a marked error is not Unavailable: %v", wrapped)
	}
	if got, want := wrapped.Error(), "sink default: no replica answered: "+refused.Error()+"\n"+io.EOF.Error(); got != want {
		t.Fatalf("text %q, want %q", got, want)
	}
	var ne net.Error
	if !errors.As(wrapped, &ne) || !errors.Is(wrapped, syscall.ECONNREFUSED) || !errors.Is(wrapped, io.EOF) {
		t.Fatalf("the causes are hidden by the mark: %v", wrapped)
	}
	for _, err := range []error{
		nil,
		refused, // unmarked: only the sink decides what reaching no replica means
		context.DeadlineExceeded,
		fmt.Errorf("table default.nosuch does not exist: %w", &ch.Exception{Code: 60, Name: "DB::Exception", Message: "Table default.nosuch doesn't exist."}),
		errors.New("delivery: exactly_once needs a table that drops a block it already has"),
		errors.New("decode: column x (IPv4) cannot be filled"),
	} {
		if Unavailable(err) {
			t.Errorf("Unavailable(%v) = true", err)
		}
	}
}

// startConfig is testConfig with a short dial timeout, sink address addr
// and table table.
func startConfig(t *testing.T, kb *testenv.Broker, srv *testenv.CH, addr, table string) *config.Config {
	cfg := testConfig(t, kb, srv, "startup")
	cfg.Sink.ClickHouse.Addr = []string{addr}
	cfg.Sink.ClickHouse.Table = table
	cfg.Sink.ClickHouse.DialTimeout = config.Duration(time.Second)
	return cfg
}

// TestNewUnavailable: New against a ClickHouse that cannot be reached (no
// listener on the port) or does not answer (frozen: the kernel accepts the
// connection, nothing answers) fails in bounded time with an Unavailable
// error, and leaves no goroutine behind; against a server that answers
// that the table does not exist it fails with an error that is not
// Unavailable. Each New registers on a fresh registry (New registers its
// metrics before it connects: the caller that retries must do the same).
func TestNewUnavailable(t *testing.T) {
	kb, srv := setup(t)
	nobody := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	newErr := func(cfg *config.Config) (time.Duration, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), StartTimeout(cfg))
		defer cancel()
		begin := time.Now()
		p, err := New(ctx, Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
		if err == nil {
			p.closeSinks()
			t.Fatal("New succeeded")
		}
		return time.Since(begin), err
	}
	// The leak check at the end compares goroutine ids, not counts: a
	// goroutine of the servers still on its way out now cannot hide one
	// that a failed New leaves behind.
	before := testenv.Goroutines()

	for range 3 {
		took, err := newErr(startConfig(t, kb, srv, nobody, "events"))
		t.Logf("nothing listening: New gave up after %v", took.Round(time.Millisecond))
		if !Unavailable(err) || !strings.Contains(err.Error(), "no replica answered") || took > 2*time.Second {
			t.Fatalf("nothing listening: New took %v: Unavailable=%v: %v", took, Unavailable(err), err)
		}
	}

	srv.Freeze(t)
	thawed := false
	defer func() {
		if !thawed {
			srv.Thaw(t)
		}
	}()
	cfg := startConfig(t, kb, srv, srv.TCPAddr(), "events")
	took, err := newErr(cfg)
	if !Unavailable(err) || took > StartTimeout(cfg) {
		t.Fatalf("frozen: New took %v (bound %v): Unavailable=%v: %v", took, StartTimeout(cfg), Unavailable(err), err)
	}
	t.Logf("frozen server: New gave up after %v: %v", took.Round(time.Millisecond), err)
	srv.Thaw(t)
	thawed = true

	_, err = newErr(startConfig(t, kb, srv, srv.TCPAddr(), "nosuch"))
	if Unavailable(err) || !strings.Contains(err.Error(), "default.nosuch does not exist") {
		t.Fatalf("missing table: Unavailable=%v: %v", Unavailable(err), err)
	}

	testenv.Eventually(t, "the failed attempts' goroutines to end", 10*time.Second, func() error {
		var left []string
		for _, g := range testenv.GoroutinesSince(before) {
			if !driverCloseHang(g) {
				left = append(left, g)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("%d goroutines started by the attempts are still running:\n%s", len(left), strings.Join(left, "\n\n"))
		}
		return nil
	})
}

// driverCloseHang reports whether a goroutine's stack is one of the two
// that clickhouse-go's pool leaves when its Close deadlocks (issue 1990):
// Close waits, holding the pool's lock, for the drain goroutine, which a
// tick has just sent for that lock. Client.Close gives up on it after
// driverCloseTimeout and logs it; a pool never closed has its drain
// goroutine in its select instead, and is still reported.
func driverCloseHang(stack string) bool {
	const pool = "clickhouse-go/v2.(*connPool)."
	return strings.Contains(stack, pool+"Close(") ||
		(strings.Contains(stack, pool+"runDrainPool(") && strings.Contains(stack, "sync.(*Mutex).Lock"))
}

// TestNewRegistryDown: with Confluent Avro and prewarm_subjects, a schema
// registry that refuses connections or does not answer at all delays New
// by at most fields.PrewarmTimeout and never fails it (a warning is logged); once
// the registry answers, records are decoded and written.
func TestNewRegistryDown(t *testing.T) {
	kb, srv := setup(t)
	reg := registrytest.New(t)
	id := reg.Register("events-value", eventSchema)
	schema := avro.MustParse(eventSchema)
	const n = 300
	raw := map[uint64][]byte{}
	for i := uint64(0); i < n; i++ {
		payload, err := avro.Marshal(schema, gen.Make(seed, i).Avro())
		if err != nil {
			t.Fatal(err)
		}
		raw[i] = schemaregistry.AppendFrame(nil, id, payload)
	}
	produce(t, kb, 0, n, raw)

	avroConfig := func(url string) *config.Config {
		cfg := testConfig(t, kb, srv, "registry-down")
		cfg.Source.Kafka.Topics = []string{"events"}
		cfg.Decode.Format = "avro"
		cfg.Decode.Avro = config.Avro{Framing: "confluent", Registry: &config.Registry{URL: config.URL(url)},
			PrewarmSubjects: []string{"events-value"}}
		return cfg
	}
	start := func(cfg *config.Config) (*Pipeline, time.Duration) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), StartTimeout(cfg))
		defer cancel()
		begin := time.Now()
		p, err := New(ctx, Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
		if err != nil {
			t.Fatalf("New with the registry down: %v", err)
		}
		return p, time.Since(begin)
	}

	// Nothing listens: New does not wait.
	p, took := start(avroConfig(fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t))))
	if took > 5*time.Second {
		t.Fatalf("New took %v with nothing listening at the registry's address", took)
	}
	if err := p.Run(canceled()); err != nil {
		t.Fatalf("Run: %v", err)
	}

	// No answer: New waits for the prewarm's bound, then starts.
	release := reg.Hold()
	defer release()
	p, took = start(avroConfig(reg.URL()))
	if took < fields.PrewarmTimeout-time.Second || took > fields.PrewarmTimeout+5*time.Second {
		t.Fatalf("New took %v with a registry that does not answer, want about %v", took, fields.PrewarmTimeout)
	}
	release()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	testenv.WaitFor(t, "rows", time.Minute, func() bool { return srv.Count(t, "default.events") >= n })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := srv.Query(t, "SELECT count(), uniqExact(id) FROM default.events"); got != fmt.Sprintf("%d\t%d", n, n) {
		t.Fatalf("count, distinct = %s, want %d once each", got, n)
	}
}

// canceled is a cancelled context: Run with it stops at once and releases
// what New opened.
func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
