package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	// chStartAttempts bounds how often ClickHouse picks new ports when
	// another process took one of the free ports first.
	chStartAttempts = 5

	// chScriptTimeout bounds one run of scripts/clickhouse.sh. It covers an
	// apt-get install on a fresh machine (about 10 s measured) plus the
	// script's own 30 s start and 15 s stop timeouts, with room to spare.
	chScriptTimeout = 3 * time.Minute

	// chPortInUseExit is the exit status of scripts/clickhouse.sh when a
	// port it was given is already taken.
	chPortInUseExit = 3

	// chIdleConnTimeout is below the server's keep_alive_timeout (10 s in
	// the config the script writes), so the client never sends a request on
	// a connection the server is closing.
	chIdleConnTimeout = 5 * time.Second

	// chRequestTimeout bounds one HTTP request that has no deadline of its
	// own, so a hung server fails a test instead of hanging it.
	chRequestTimeout = 5 * time.Minute
)

// CH is a private ClickHouse server started by [ClickHouse]. It listens on
// 127.0.0.1 only, with user default and an empty password.
//
// Its methods may be called from several goroutines, but Stop, Start,
// Freeze, Thaw and Kill9 change the server's state and should be called from
// the test goroutine that owns it.
type CH struct {
	script    string
	dir       string
	tcpPort   int
	httpPort  int
	transport *http.Transport
	client    *http.Client

	// Set by ClickHouseWith only (zero for ClickHouse).
	interserverPort int      // 0: none
	securePort      int      // 0: none (CHOptions.TLSCert)
	extraArgs       []string // more arguments for scripts/clickhouse.sh start
	opts            CHOptions
}

// ClickHouse starts a fresh ClickHouse server in a temporary folder of t on
// free ports, with scripts/clickhouse.sh, and stops it when t finishes. The
// script installs clickhouse-server with apt-get when it is missing; when it
// can be neither found nor installed, ClickHouse fails t (it never skips,
// CI must run these tests, but under go test -short, which runs only the
// tests that need no server).
func ClickHouse(t testing.TB) *CH {
	t.Helper()
	skipShort(t, "a ClickHouse server")
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("testenv: start ClickHouse: %v", err)
	}
	// The script resolves symbolic links in the folder, and alive matches
	// the server's command line against it.
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatalf("testenv: start ClickHouse: %v", err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.IdleConnTimeout = chIdleConnTimeout
	ch := &CH{
		script:    filepath.Join(root, "scripts", "clickhouse.sh"),
		dir:       dir,
		transport: transport,
		client:    &http.Client{Transport: transport},
	}
	for attempt := 1; ; attempt++ {
		ch.tcpPort, ch.httpPort = FreePort(t), FreePort(t)
		begin := time.Now()
		out, code, err := ch.runScript("start")
		if err == nil {
			t.Logf("testenv: ClickHouse ready in %v: tcp %s, http %s, dir %s",
				time.Since(begin).Round(time.Millisecond), ch.TCPAddr(), ch.HTTPAddr(), ch.dir)
			break
		}
		if code == chPortInUseExit && attempt < chStartAttempts {
			t.Logf("testenv: ClickHouse ports %d/%d taken, retrying with new ports", ch.tcpPort, ch.httpPort)
			continue
		}
		t.Fatalf("testenv: start ClickHouse with %s: %v\n%s\n"+
			"These tests need a real ClickHouse server: install it with "+
			"`apt-get install clickhouse-server clickhouse-client` (Debian) or run the tests as root so the script can.",
			ch.script, err, out)
	}
	t.Cleanup(func() {
		if err := ch.stop(); err != nil {
			t.Errorf("testenv: stop ClickHouse: %v", err)
		}
	})
	return ch
}

// TCPAddr returns the host:port of the native protocol.
func (ch *CH) TCPAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(ch.tcpPort)) }

// HTTPAddr returns the host:port of the HTTP interface.
func (ch *CH) HTTPAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(ch.httpPort)) }

// Dir returns the folder holding the server's config, data and logs.
func (ch *CH) Dir() string { return ch.dir }

// Stop stops the server with SIGTERM and waits for it to exit (the script
// sends SIGKILL after 15 s). Its data stays in Dir; Start runs it again.
// The server waits for open client connections before it exits, so close
// other clients first for a fast stop (one idle HTTP keep-alive connection
// held it for 5 s).
func (ch *CH) Stop(t testing.TB) {
	t.Helper()
	begin := time.Now()
	if err := ch.stop(); err != nil {
		t.Fatalf("testenv: stop ClickHouse: %v", err)
	}
	t.Logf("testenv: ClickHouse stopped in %v", time.Since(begin).Round(time.Millisecond))
}

func (ch *CH) stop() error {
	// The server waits for open HTTP connections before it exits: close
	// the client's idle ones first (measured: 5 s stop with them, 0.5 s
	// without).
	ch.transport.CloseIdleConnections()
	out, _, err := ch.runScript("stop")
	if err != nil {
		return fmt.Errorf("%w\n%s", err, out)
	}
	return nil
}

// Start starts a stopped (or killed) server again with the same folder and
// ports, so the tables and rows written before are still there. It fails t
// when another process holds one of the ports for 10 s (a port seen in use
// for a moment, as once in CI right after a SIGKILL, is tried again).
func (ch *CH) Start(t testing.TB) {
	t.Helper()
	ch.transport.CloseIdleConnections()
	begin := time.Now()
	out, code, err := ch.runScript("start")
	for err != nil && code == chPortInUseExit && time.Since(begin) < 10*time.Second {
		t.Logf("testenv: restart ClickHouse: a port is in use; trying again\n%s", out)
		time.Sleep(250 * time.Millisecond)
		out, code, err = ch.runScript("start")
	}
	if err != nil {
		if code == chPortInUseExit {
			t.Fatalf("testenv: restart ClickHouse: port %d or %d was taken while it was stopped (and still is 10 s later)\n%s",
				ch.tcpPort, ch.httpPort, out)
		}
		t.Fatalf("testenv: restart ClickHouse: %v\n%s", err, out)
	}
	t.Logf("testenv: ClickHouse restarted in %v", time.Since(begin).Round(time.Millisecond))
}

// portFree reports whether port can be bound on 127.0.0.1 now.
func portFree(port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// Freeze suspends the server with SIGSTOP: connections are still accepted
// by the kernel but nothing answers, as with a hung server. Thaw resumes it.
func (ch *CH) Freeze(t testing.TB) {
	t.Helper()
	ch.proc().freeze(t)
}

// Thaw resumes a server suspended by Freeze with SIGCONT.
func (ch *CH) Thaw(t testing.TB) {
	t.Helper()
	ch.signal(t, syscall.SIGCONT)
}

// Kill9 kills the server with SIGKILL, as in a crash, and waits until it is
// gone. Start runs it again on the same data.
func (ch *CH) Kill9(t testing.TB) {
	t.Helper()
	pid := ch.signal(t, syscall.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	for ch.alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("testenv: ClickHouse pid %d still alive 10s after SIGKILL", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The killed server's listening sockets can outlive its pid for a
	// moment (seen in CI: a restart right after found its port in use):
	// wait until its ports can be bound again.
	for _, port := range []int{ch.tcpPort, ch.httpPort} {
		for !portFree(port) {
			if time.Now().After(deadline) {
				t.Fatalf("testenv: port %d still in use 10s after ClickHouse (pid %d) was killed", port, pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	ch.transport.CloseIdleConnections()
	if err := os.Remove(filepath.Join(ch.dir, "clickhouse.pid")); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("testenv: remove ClickHouse pid file: %v", err)
	}
}

// Exec runs a statement over HTTP and fails t with the server's error text
// when it does not succeed.
func (ch *CH) Exec(t testing.TB, query string) {
	t.Helper()
	if _, err := ch.QueryErr(query); err != nil {
		t.Fatalf("testenv: %v", err)
	}
}

// Query runs a query over HTTP and returns its result without the trailing
// newline. The HTTP interface answers in TabSeparated unless the query names
// another FORMAT. It fails t when the query does not succeed.
func (ch *CH) Query(t testing.TB, query string) string {
	t.Helper()
	out, err := ch.QueryErr(query)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return out
}

// QueryErr is Query returning its error instead of failing a test. Requests
// give up after 5 minutes; use QueryContext for a shorter deadline.
func (ch *CH) QueryErr(query string) (string, error) {
	return ch.QueryContext(context.Background(), query)
}

// QueryContext is QueryErr with a context bounding the request.
func (ch *CH) QueryContext(ctx context.Context, query string) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, chRequestTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+ch.HTTPAddr()+"/", strings.NewReader(query))
	if err != nil {
		return "", fmt.Errorf("clickhouse query %s: %w", shorten(query), err)
	}
	resp, err := ch.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("clickhouse query %s: %w", shorten(query), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("clickhouse query %s: read response: %w", shorten(query), err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("clickhouse query %s: HTTP %d: %s",
			shorten(query), resp.StatusCode, bytes.TrimSpace(body))
	}
	return strings.TrimRight(string(body), "\r\n"), nil
}

// Count returns the number of rows in table (a name, optionally db.name).
func (ch *CH) Count(t testing.TB, table string) uint64 {
	t.Helper()
	out := ch.Query(t, "SELECT count() FROM "+table)
	n, err := strconv.ParseUint(out, 10, 64)
	if err != nil {
		t.Fatalf("testenv: count rows of %s: parse %q: %v", table, out, err)
	}
	return n
}

// proc is the server's process, for its script, pid and signals.
func (ch *CH) proc() serverProc {
	return serverProc{name: "clickhouse-server", script: ch.script, dir: ch.dir, pidFile: "clickhouse.pid",
		mark: "--config-file=" + filepath.Join(ch.dir, "config.xml"), timeout: chScriptTimeout}
}

// runScript runs scripts/clickhouse.sh with cmd for this server, on its
// ports (and, to start it, with its extra arguments).
func (ch *CH) runScript(cmd string) (string, int, error) {
	args := []string{"--tcp-port", strconv.Itoa(ch.tcpPort), "--http-port", strconv.Itoa(ch.httpPort)}
	if cmd == "start" {
		args = append(args, ch.extraArgs...)
	}
	return ch.proc().run(cmd, args...)
}

func (ch *CH) signal(t testing.TB, sig syscall.Signal) int {
	t.Helper()
	return ch.proc().signal(t, sig)
}

func (ch *CH) pid() (int, error)  { return ch.proc().pid() }
func (ch *CH) alive(pid int) bool { return ch.proc().alive(pid) }

// shorten returns the start of query for error messages.
func shorten(query string) string {
	const limit = 120
	query = strings.Join(strings.Fields(query), " ")
	if len(query) > limit {
		return strconv.Quote(query[:limit] + "...")
	}
	return strconv.Quote(query)
}

// QueryStream runs query over HTTP and returns the response body for the
// caller to read and close; for results too large to hold as one string.
func (ch *CH) QueryStream(ctx context.Context, query string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+ch.HTTPAddr()+"/", strings.NewReader(query))
	if err != nil {
		return nil, fmt.Errorf("clickhouse query %s: %w", shorten(query), err)
	}
	resp, err := ch.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("clickhouse query %s: %w", shorten(query), err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("clickhouse query %s: HTTP %d: %s", shorten(query), resp.StatusCode, bytes.TrimSpace(body))
	}
	return resp.Body, nil
}
