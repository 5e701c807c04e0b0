package e2e

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etl-project/etl/internal/testenv"
)

// TestStallWatchdog: with ClickHouse frozen, records stay in flight and no
// commit moves. After checkpoint.stalled_fail_after (10 s here) /healthz
// answers 503 naming the stuck partitions; with checkpoint.exit_on_stall
// the process exits 1 instead of waiting to be killed. Nothing is
// committed that is not in ClickHouse.
func TestStallWatchdog(t *testing.T) {
	for _, exit := range []bool{false, true} {
		t.Run(fmt.Sprintf("exit_on_stall=%v", exit), func(t *testing.T) {
			e := newEnv(t)
			group := fmt.Sprintf("stall-%v", exit)
			addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
			cfg := readFile(t, e.config(group, fmt.Sprintf("checkpoint: {commit_interval: 500ms, drain_timeout: 3s, stalled_fail_after: 10s, exit_on_stall: %v}\n", exit)))
			cfg = strings.Replace(cfg, "checkpoint: {commit_interval: 500ms, drain_timeout: 20s}\n", "", 1)
			cfg = strings.Replace(cfg, `metrics: {listen: "off"}`, fmt.Sprintf(`metrics: {listen: %q}`, addr), 1)
			p := startETL(t, writeConfig(t, cfg))
			e.produce(0, 600)
			waitCommittedEnd(t, e.kb, group, topic, partitions, time.Minute, nil)
			e.ch.Freeze(t)
			defer e.ch.Thaw(t)
			frozen := time.Now()
			e.produce(600, 600)
			if exit {
				code := p.wait(t, time.Minute)
				t.Logf("exited %d after %v frozen", code, time.Since(frozen).Round(time.Millisecond))
				if code != 1 || !strings.Contains(p.logText(), "stalled") {
					t.Fatalf("exit code %d, want 1 with a stall in the log:\n%s", code, p.logText())
				}
			} else {
				var body string
				testenv.Eventually(t, "/healthz 503 after the freeze", time.Minute, func() error {
					code, b := getStatus(addr + "/healthz")
					if code == http.StatusServiceUnavailable {
						body = b
						return nil
					}
					return fmt.Errorf("/healthz %d %q", code, b)
				})
				t.Logf("/healthz 503 after %v frozen: %s", time.Since(frozen).Round(time.Millisecond), body)
				if !regexp.MustCompile(`stalled: .*events/\d`).MatchString(body) {
					t.Fatalf("/healthz does not name the stuck partitions: %q", body)
				}
				if since := time.Since(frozen); since < 10*time.Second {
					t.Fatalf("/healthz failed after %v, before stalled_fail_after", since)
				}
				e.ch.Thaw(t)
				p.stop(t, syscall.SIGTERM, 30*time.Second)
			}
			e.ch.Thaw(t)
			for part, off := range e.kb.CommittedOffsets(t, group, topic) {
				q := fmt.Sprintf("SELECT uniqExact(id) FROM default.events WHERE id %% %d = %d AND intDiv(id, %d) < %d", partitions, part, partitions, off)
				if got := e.ch.Query(t, q); got != fmt.Sprint(off) {
					t.Fatalf("partition %d: committed %d but %s of those records are in ClickHouse", part, off, got)
				}
			}
		})
	}
}

func getStatus(url string) (int, string) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b := make([]byte, 4096)
	n, _ := resp.Body.Read(b)
	return resp.StatusCode, string(b[:n])
}
