package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etl-project/etl/internal/testenv"
)

// startupConfig is e.config for group with the metrics listener on a free
// port (returned as a base URL), a 1 s dial timeout so that an attempt on
// a frozen server gives up after 2 s, and table as the target.
func (e *env) startupConfig(group, table string) (path, url string) {
	e.t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(e.t))
	text := readFile(e.t, e.config(group, ""))
	for _, r := range [][2]string{
		{`metrics: {listen: "off"}`, fmt.Sprintf(`metrics: {listen: %q}`, addr)},
		{"    table: events\n", fmt.Sprintf("    table: %s\n    dial_timeout: 1s\n", table)},
	} {
		if !strings.Contains(text, r[0]) {
			e.t.Fatalf("the harness's config has no %q", r[0])
		}
		text = strings.Replace(text, r[0], r[1], 1)
	}
	return writeConfig(e.t, text), "http://" + addr
}

// probe fetches an endpoint of etl's metrics listener; err when it does
// not answer (yet).
func probe(url string) (int, string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), err
}

// waitLog waits until etl's log holds s.
func waitLog(t *testing.T, p *proc, s string, timeout time.Duration) {
	t.Helper()
	testenv.WaitFor(t, fmt.Sprintf("etl to log %q", s), timeout, func() bool {
		if strings.Contains(p.logText(), s) {
			return true
		}
		if !p.running() {
			t.Fatalf("etl exited (%v) before logging %q", p.err, s)
		}
		return false
	})
}

// checkWaiting checks what the probes and /metrics answer while etl waits
// for ClickHouse: /healthz 200, /readyz 503 naming ClickHouse, the state
// gauge at starting.
func checkWaiting(t *testing.T, url string) {
	t.Helper()
	if code, body, err := probe(url + "/healthz"); err != nil || code != http.StatusOK || !strings.Contains(body, "waiting for ClickHouse") {
		t.Fatalf("/healthz while waiting: %d %q %v", code, body, err)
	}
	if code, body, err := probe(url + "/readyz"); err != nil || code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "waiting for ClickHouse: sink default: no replica answered") {
		t.Fatalf("/readyz while waiting: %d %q %v", code, body, err)
	}
	if code, body, err := probe(url + "/metrics"); err != nil || code != http.StatusOK || !strings.Contains(body, `etl_pipeline_state{component="pipeline",pipeline="e2e",state="starting"} 1`) {
		t.Fatalf("/metrics while waiting: %d %v:\n%s", code, err, body)
	}
}

// waitReady waits until /readyz answers 200.
func waitReady(t *testing.T, url string, timeout time.Duration) {
	t.Helper()
	testenv.Eventually(t, "/readyz 200", timeout, func() error {
		code, body, err := probe(url + "/readyz")
		if err == nil && code == http.StatusOK {
			return nil
		}
		return fmt.Errorf("%d %q %v", code, body, err)
	})
}

// checkEachOnce checks that every record [0, n) is in the table exactly
// once and that nothing else is.
func (e *env) checkEachOnce(n uint64) {
	e.t.Helper()
	counts, outside := e.idCounts(n)
	for id, c := range counts {
		if c != 1 {
			e.t.Fatalf("id %d is in the table %d times", id, c)
		}
	}
	if outside != 0 {
		e.t.Fatalf("%d rows with unexpected ids", outside)
	}
}

// TestStartWhileClickHouseFrozen: etl started while its ClickHouse is
// frozen (the kernel accepts connections, nothing answers) keeps running
// and trying, each attempt bounded by the dial timeout; meanwhile /healthz
// answers 200, /readyz 503 naming ClickHouse. Once the server is thawed,
// every record arrives once.
func TestStartWhileClickHouseFrozen(t *testing.T) {
	const n = 50_000
	e := newEnv(t)
	e.produce(0, n)
	e.ch.Freeze(t)
	thawed := false
	defer func() {
		if !thawed {
			e.ch.Thaw(t)
		}
	}()
	cfg, url := e.startupConfig("frozen-start", "events")
	p := startETL(t, cfg)
	waitLog(t, p, "cannot reach ClickHouse: waiting before starting again\" attempt=2", 30*time.Second)
	checkWaiting(t, url)
	if log := p.logText(); !strings.Contains(log, "i/o timeout") {
		t.Fatalf("the attempts did not end on the dial timeout:\n%s", log)
	}

	e.ch.Thaw(t)
	thawed = true
	e.waitRows(n, 2*time.Minute, p)
	waitReady(t, url, 30*time.Second)
	e.waitCommitted("frozen-start", time.Minute)
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if !strings.Contains(p.logText(), "ClickHouse answered: pipeline built") {
		t.Fatal("the log does not say when ClickHouse answered")
	}
	e.checkEachOnce(n)
}

// TestStartWhileClickHouseStopped: with ClickHouse stopped (nothing listens
// on its port), a member stopped by SIGTERM while it waits exits 0 at once;
// another keeps trying and, once the server is started, writes every
// record once.
func TestStartWhileClickHouseStopped(t *testing.T) {
	const n = 50_000
	e := newEnv(t)
	e.produce(0, n)
	e.ch.Stop(t)
	cfg, url := e.startupConfig("stopped-start", "events")

	first := startETL(t, cfg)
	waitLog(t, first, "cannot reach ClickHouse", 30*time.Second)
	checkWaiting(t, url)
	begin := time.Now()
	if code := first.stop(t, syscall.SIGTERM, 10*time.Second); code != 0 {
		t.Fatalf("SIGTERM while waiting: exit code %d, want 0", code)
	}
	if took := time.Since(begin); took > 2*time.Second {
		t.Fatalf("SIGTERM while waiting: exited after %v, want at once", took)
	}
	if log := first.logText(); !strings.Contains(log, "stopped before the pipeline started") || !strings.Contains(log, "connection refused") {
		t.Fatalf("log of the member stopped while waiting:\n%s", log)
	}

	p := startETL(t, cfg)
	waitLog(t, p, "cannot reach ClickHouse: waiting before starting again\" attempt=2", 30*time.Second)
	checkWaiting(t, url)
	e.ch.Start(t)
	e.waitRows(n, 2*time.Minute, p)
	waitReady(t, url, 30*time.Second)
	e.waitCommitted("stopped-start", time.Minute)
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	e.checkEachOnce(n)
}

// TestStartMissingTable: an error the server answers with (the table does
// not exist) is not waited out: etl exits 1 at once, saying why.
func TestStartMissingTable(t *testing.T) {
	e := newEnv(t)
	cfg, _ := e.startupConfig("missing-table", "nosuch")
	begin := time.Now()
	p := startETL(t, cfg)
	if code := p.wait(t, 30*time.Second); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	if took := time.Since(begin); took > 10*time.Second {
		t.Fatalf("exited after %v, want at once", took)
	}
	log := p.logText()
	if !strings.Contains(log, "cannot start the pipeline") || !strings.Contains(log, "table default.nosuch does not exist") {
		t.Fatalf("log lacks the reason:\n%s", log)
	}
	if strings.Contains(log, "cannot reach ClickHouse") {
		t.Fatalf("a missing table was retried:\n%s", log)
	}
}
