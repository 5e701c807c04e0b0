package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/internal/testenv"
)

// TestUnreachableBrokerIsLoud: a pipeline whose brokers cannot be reached
// (nothing listens on the address; TLS enabled against a plaintext
// listener) says so: a WARN naming the broker and the likely cause,
// etl_source_connection_errors_total counting, and /healthz unhealthy once
// source.kafka.unreachable_timeout has passed without an answer.
func TestUnreachableBrokerIsLoud(t *testing.T) {
	ch := testenv.ClickHouse(t)
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 1)
	dead := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	for _, tc := range []struct {
		name, addr string
		tls        bool
		hint       string
	}{
		{"refused", dead, false, "nothing listens on that address"},
		{"tls-to-plaintext", kb.Addr(), true, "TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch.Exec(t, "CREATE TABLE IF NOT EXISTS default.events (id UInt64) ENGINE = MergeTree ORDER BY id")
			cfg := testConfig(t, kb, ch, "loud-"+tc.name)
			cfg.Source.Kafka.Brokers = []string{tc.addr}
			cfg.Source.Kafka.Topics = []string{"events"}
			cfg.Source.Kafka.UnreachableTimeout = config.Duration(3 * time.Second)
			cfg.Log.StatusInterval = config.Duration(time.Second)
			if tc.tls {
				cfg.Source.Kafka.TLS = &config.TLS{Enabled: true, InsecureSkipVerify: true}
			}
			var logs syncBuffer
			reg := prometheus.NewRegistry()
			p, err := New(context.Background(), Options{Config: cfg, Registerer: reg,
				Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- p.Run(ctx) }()
			defer func() {
				cancel()
				<-done
			}()
			if ok, msg := p.Health(); !ok {
				t.Fatalf("unhealthy at once: %s", msg)
			}
			testenv.WaitFor(t, "a WARN about the broker", 20*time.Second, func() bool {
				return strings.Contains(logs.String(), "cannot reach a Kafka broker")
			})
			log := logs.String()
			if !strings.Contains(log, tc.addr) || !strings.Contains(log, tc.hint) {
				t.Errorf("log lacks the broker %s or the hint %q:\n%s", tc.addr, tc.hint, log)
			}
			errs, err := testutil.GatherAndCount(reg, "etl_source_connection_errors_total")
			if err != nil || errs == 0 {
				t.Errorf("etl_source_connection_errors_total not reported: %d series, %v", errs, err)
			}
			testenv.WaitFor(t, "/healthz unhealthy", 20*time.Second, func() bool { ok, _ := p.Health(); return !ok })
			_, msg := p.Health()
			t.Logf("health: %s", msg)
			t.Logf("log: %.600s", log[strings.Index(log, "cannot reach"):])
			if !strings.Contains(msg, "no Kafka broker has answered") || !strings.Contains(msg, tc.addr) {
				t.Errorf("health message %q", msg)
			}
			// The status line does not claim a lag of 0: no assignment
			// came, and the connection error is named.
			testenv.WaitFor(t, "a status line", 10*time.Second, func() bool {
				return strings.Contains(logs.String(), `lag="unknown (waiting for a partition assignment from the group; the last broker connection error: `)
			})
		})
	}
}
