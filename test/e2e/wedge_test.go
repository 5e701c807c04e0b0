package e2e

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// wedgeConfig is e.config with the metrics listener on a free port
// (returned as a base URL), source.kafka.unreachable_timeout at its
// minimum, 10 s, and topics as the source topics.
func (e *env) wedgeConfig(group, topics, extra string) (path, url string) {
	e.t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(e.t))
	text := readFile(e.t, e.config(group, ""))
	for _, r := range [][2]string{
		{`metrics: {listen: "off"}`, fmt.Sprintf(`metrics: {listen: %q}`, addr)},
		{"    topics: [events]\n", fmt.Sprintf("    topics: [%s]\n    unreachable_timeout: 10s\n%s", topics, extra)},
	} {
		if !strings.Contains(text, r[0]) {
			e.t.Fatalf("the harness's config has no %q", r[0])
		}
		text = strings.Replace(text, r[0], r[1], 1)
	}
	return writeConfig(e.t, text), "http://" + addr
}

// fetchBackoffMax is the poll loop's longest wait after a poll that
// brought only errors (source/kafka/fetcherr.go).
const fetchBackoffMax = 5 * time.Second

// fetchErrors is etl_source_fetch_errors_total as /metrics serves it.
func fetchErrors(t *testing.T, url string) float64 {
	t.Helper()
	code, body, err := probe(url + "/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	m := regexp.MustCompile(`(?m)^etl_source_fetch_errors_total\{[^}]*\} (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("/metrics serves no etl_source_fetch_errors_total")
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRecreatedTopicConsumed: the source topic is deleted and created
// again under a running etl, and 2,000 records are produced into the new
// one: they all reach ClickHouse without a restart, the log says what
// happened, /healthz stays 200, and a SIGTERM afterwards exits 0.
func TestRecreatedTopicConsumed(t *testing.T) {
	e := newEnv(t)
	cfg, url := e.wedgeConfig("recreate", topic, "")
	e.produce(0, 3000)
	p := startETL(t, cfg)
	e.waitRows(3000, time.Minute, p)

	e.kb.DeleteTopic(t, topic)
	e.kb.CreateTopic(t, topic, partitions)
	e.produce(3000, 2000)
	produced := time.Now()
	e.waitRows(5000, 90*time.Second, p)
	t.Logf("the new topic's 2,000 records in ClickHouse %v after they were produced", time.Since(produced).Round(100*time.Millisecond))
	e.checkEachOnce(5000)
	waitLog(t, p, "source topic was deleted and created again", 10*time.Second)
	if code, body, err := probe(url + "/healthz"); err != nil || code != http.StatusOK {
		t.Fatalf("/healthz after the new topic was consumed: %d %q %v", code, body, err)
	}
	e.waitCommitted("recreate", 30*time.Second)
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
}

// TestDeletedTopicUnhealthy: the source topic is deleted under a running
// etl and not created again. Every fetch of its partitions fails; the
// errors are counted at a bounded rate (the poll loop backs off) and
// /healthz answers 503 naming the partitions and the error once they have
// failed for unreachable_timeout (10 s).
func TestDeletedTopicUnhealthy(t *testing.T) {
	e := newEnv(t)
	cfg, url := e.wedgeConfig("deleted", topic, "")
	e.produce(0, 600)
	p := startETL(t, cfg)
	e.waitRows(600, time.Minute, p)

	e.kb.DeleteTopic(t, topic)
	deleted := time.Now()
	waitLog(t, p, `msg="fetch error" topic=events`, 60*time.Second)
	firstErr := time.Since(deleted)
	before := fetchErrors(t, url)
	var body string
	testenv.Eventually(t, "/healthz 503 after the first fetch error", 60*time.Second, func() error {
		code, b, err := probe(url + "/healthz")
		if err == nil && code == http.StatusServiceUnavailable {
			body = b
			return nil
		}
		return fmt.Errorf("/healthz %d %q %v", code, b, err)
	})
	unhealthy := time.Since(deleted)
	errs := fetchErrors(t, url) - before
	window := unhealthy - firstErr
	t.Logf("first fetch error logged %v after the delete; /healthz 503 %v after the delete; %.0f fetch errors in the %v between (%.1f/s)",
		firstErr.Round(100*time.Millisecond), unhealthy.Round(100*time.Millisecond), errs, window.Round(100*time.Millisecond), errs/window.Seconds())
	t.Logf("/healthz: %s", body)
	if !strings.Contains(body, "source.kafka.unreachable_timeout") || !strings.Contains(body, "UNKNOWN_TOPIC_ID") ||
		!regexp.MustCompile(`events/[0-5] has not fetched for 1\ds`).MatchString(body) {
		t.Fatalf("/healthz says %q: want the partition, how long, the error and the key", body)
	}
	// Six partitions, polled at most every 100 ms doubling to 5 s: at
	// most 6 errors per poll and a few polls a second at worst.
	if errs > 6*2*window.Seconds() {
		t.Fatalf("%.0f fetch errors in %v: the poll loop does not back off", errs, window)
	}
	if window < 10*time.Second || window > 10*time.Second+fetchBackoffMax+2*time.Second {
		t.Fatalf("/healthz 503 %v after the first fetch error, want unreachable_timeout (10 s) plus at most one backoff", window)
	}
}

// TestMissingTopicAtStartup: a misspelled source topic stops etl at once
// with exit code 2 and a message naming it, with a did-you-mean. With
// source.kafka.wait_for_topics, etl waits instead: /readyz 503 naming the
// topic, a WARN naming it, /healthz 200; once the topic is created it
// becomes ready and its records reach ClickHouse.
func TestMissingTopicAtStartup(t *testing.T) {
	e := newEnv(t)
	cfg, _ := e.wedgeConfig("missing", "evnets", "")
	start := time.Now()
	p := startETL(t, cfg)
	code := p.wait(t, 30*time.Second)
	took := time.Since(start)
	log := p.logText()
	want := `topic "evnets" does not exist (did you mean "events"?)`
	t.Logf("exit %d after %v:\n%s", code, took.Round(10*time.Millisecond), log)
	if code != 2 || !strings.Contains(log, want) || !strings.Contains(log, "wait_for_topics") {
		t.Fatalf("exit %d, output:\n%s\nwant exit 2 and %q", code, log, want)
	}

	cfg, url := e.wedgeConfig("waiting", "orders", "    wait_for_topics: true\n")
	p = startETL(t, cfg)
	waitLog(t, p, `WARN msg="source topics do not exist: waiting for them`, 30*time.Second)
	if !strings.Contains(p.logText(), "topics=[orders]") {
		t.Fatalf("the WARN does not name the topic:\n%s", p.logText())
	}
	testenv.Eventually(t, "/readyz 503 naming wait_for_topics", 30*time.Second, func() error {
		code, body, err := probe(url + "/readyz")
		if err == nil && code == http.StatusServiceUnavailable && strings.Contains(body, "wait_for_topics") {
			if !strings.Contains(body, "orders") {
				t.Fatalf("/readyz says %q: want the topic named", body)
			}
			return nil
		}
		return fmt.Errorf("/readyz while the topic is missing: %d %q %v", code, body, err)
	})
	if code, body, err := probe(url + "/healthz"); err != nil || code != http.StatusOK {
		t.Fatalf("/healthz while waiting for the topic: %d %q %v", code, body, err)
	}

	e.kb.CreateTopic(t, "orders", 3)
	created := time.Now()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.kb.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if n, err := gen.Produce(ctx, cl, gen.ProduceOptions{Topic: "orders", Seed: seed, Count: 1000, Partitions: 3}); err != nil || n != 1000 {
		t.Fatalf("produce: %d: %v", n, err)
	}
	waitReady(t, url, 30*time.Second)
	e.waitRows(1000, time.Minute, p)
	t.Logf("ready and 1,000 rows written %v after the topic was created", time.Since(created).Round(100*time.Millisecond))
	waitLog(t, p, "source topics exist now", 5*time.Second)
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
}
