package testenv

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
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
// can be neither found nor installed, ClickHouse fails t (it never skips:
// CI must run these tests).
func ClickHouse(t testing.TB) *CH {
	t.Helper()
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

// CHOptions configures a server started by [ClickHouseWith]. The zero value
// gives the same server as [ClickHouse] (plus the watchdog).
type CHOptions struct {
	// ZooKeeper is the host:port of a ZooKeeper server ([ZK.Addr]). With it
	// the config gets <zookeeper>, the <macros> below and an
	// interserver_http_port on 127.0.0.1 of its own (replicas fetch parts
	// from each other there), so that Replicated*MergeTree tables work.
	ZooKeeper string

	// ZooKeeperSessionTimeout sets <session_timeout_ms> (30 s when zero):
	// how long the server keeps a ZooKeeper session alive without an
	// answer, e.g. while a test has the ZooKeeper frozen or stopped.
	ZooKeeperSessionTimeout time.Duration

	// Shard and Replica are the {shard} and {replica} macros. With
	// ZooKeeper set, Shard defaults to "01" and Replica to a name unique in
	// the test process ("r1", "r2", ...), so that servers sharing one
	// ZooKeeper never register as the same replica by accident.
	Shard, Replica string

	// Macros holds more macros, by name.
	Macros map[string]string

	// Clusters are the <remote_servers>, by cluster name: what
	// system.clusters shows and what Distributed tables use. SetClusters
	// changes them on a running server (e.g. once every server of a
	// cluster has started and has its ports).
	Clusters map[string][]CHShard

	// TLSCert and TLSKey (PEM, e.g. from [CA.Issue]) make the server
	// serve the native protocol over TLS on a free port of its own
	// (<tcp_port_secure>, [CH.SecureAddr]) with that certificate.
	TLSCert, TLSKey []byte
	// SecureOnly, with TLSCert, removes the plain native port: native
	// connections are taken only over TLS. HTTP stays on, for the tests'
	// own queries.
	SecureOnly bool
	// Users adds users, by name, with these passwords (the default
	// profile and quota, from 127.0.0.1).
	Users map[string]string
	// Timezone sets the server's <timezone> (UTC when empty), the zone
	// of its DateTime columns without one of their own.
	Timezone string
}

// CHShard is one shard of a cluster in [CHOptions.Clusters].
type CHShard struct {
	// Replicas are the native-protocol addresses ([CH.TCPAddr]) of the
	// shard's replicas, as host:port.
	Replicas []string
	// Weight is the shard's weight; 0 leaves the server's default, 1.
	Weight int
	// InternalReplication sets <internal_replication>: a Distributed
	// table writes to one replica and lets replication do the rest.
	InternalReplication bool
}

// replicaSeq numbers the default replica names of ClickHouseWith.
var replicaSeq atomic.Int64

// ClickHouseWith is [ClickHouse] with options: a server that uses a
// ZooKeeper (for Replicated*MergeTree tables), macros and clusters. Like
// ClickHouse it runs in a temporary folder of t on free ports (one more, the
// interserver port, with ZooKeeper set) and is stopped when t finishes. It
// is also tied to the test process: should the process die without running
// t's cleanup, a watchdog stops the server within about a second.
//
// Two servers given the same ZooKeeper, the same Shard and different
// Replica names replicate a table created on both with
// ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/NAME', '{replica}').
func ClickHouseWith(t testing.TB, opts CHOptions) *CH {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("testenv: start ClickHouse: %v", err)
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatalf("testenv: start ClickHouse: %v", err)
	}
	if opts.ZooKeeper != "" {
		if opts.Shard == "" {
			opts.Shard = "01"
		}
		if opts.Replica == "" {
			opts.Replica = fmt.Sprintf("r%d", replicaSeq.Add(1))
		}
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.IdleConnTimeout = chIdleConnTimeout
	ch := &CH{
		script:    filepath.Join(root, "scripts", "clickhouse.sh"),
		dir:       dir,
		transport: transport,
		client:    &http.Client{Transport: transport},
		opts:      opts,
	}
	// The files live outside config.d: the script copies them in on every
	// start, and SetClusters rewrites both copies.
	if err := os.MkdirAll(filepath.Join(dir, "testenv"), 0o755); err != nil {
		t.Fatalf("testenv: start ClickHouse: %v", err)
	}
	var extra []string
	if conf := opts.serverXML(); conf != "" {
		f := filepath.Join(dir, "testenv", "testenv-server.xml")
		if err := os.WriteFile(f, []byte(conf), 0o644); err != nil {
			t.Fatalf("testenv: start ClickHouse: %v", err)
		}
		extra = append(extra, "--extra-config", f)
	}
	if len(opts.Clusters) > 0 {
		f, err := ch.writeClusters(opts.Clusters, false)
		if err != nil {
			t.Fatalf("testenv: start ClickHouse: %v", err)
		}
		extra = append(extra, "--extra-config", f)
	}
	extra = append(extra, "--watch-pid", strconv.Itoa(os.Getpid()))
	if len(opts.Users) > 0 {
		// The server merges users.d next to users.xml into its users.
		if err := os.MkdirAll(filepath.Join(dir, "users.d"), 0o755); err != nil {
			t.Fatalf("testenv: start ClickHouse: %v", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "users.d", "testenv-users.xml"), []byte(usersXML(opts.Users)), 0o644); err != nil {
			t.Fatalf("testenv: start ClickHouse: %v", err)
		}
	}
	for attempt := 1; ; attempt++ {
		ch.tcpPort, ch.httpPort = FreePort(t), FreePort(t)
		ch.extraArgs = extra
		if opts.TLSCert != nil {
			ch.securePort = FreePort(t)
			f, err := ch.writeTLS()
			if err != nil {
				t.Fatalf("testenv: start ClickHouse: %v", err)
			}
			ch.extraArgs = append(slices.Clone(extra), "--extra-config", f)
		}
		if opts.ZooKeeper != "" {
			ch.interserverPort = FreePort(t)
			ch.extraArgs = append([]string{"--interserver-port", strconv.Itoa(ch.interserverPort)}, extra...)
		}
		begin := time.Now()
		out, code, err := ch.runScript("start")
		if err == nil {
			t.Logf("testenv: ClickHouse ready in %v: tcp %s, http %s%s, dir %s",
				time.Since(begin).Round(time.Millisecond), ch.TCPAddr(), ch.HTTPAddr(), ch.replicationLog(), ch.dir)
			break
		}
		if code == chPortInUseExit && attempt < chStartAttempts {
			t.Logf("testenv: ClickHouse ports %d/%d/%d taken, retrying with new ports", ch.tcpPort, ch.httpPort, ch.interserverPort)
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

// SecureAddr is the native protocol's TLS address (CHOptions.TLSCert).
func (ch *CH) SecureAddr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ch.securePort))
}

// writeTLS writes the certificate, its key and the config file that
// serves them on the secure port, and returns the config file's path.
func (ch *CH) writeTLS() (string, error) {
	d := filepath.Join(ch.dir, "testenv")
	cert, key := filepath.Join(d, "server.pem"), filepath.Join(d, "server.key")
	if err := os.WriteFile(cert, ch.opts.TLSCert, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(key, ch.opts.TLSKey, 0o600); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<!-- Written by testenv.ClickHouseWith. -->\n<yandex>\n")
	fmt.Fprintf(&b, "    <tcp_port_secure>%d</tcp_port_secure>\n", ch.securePort)
	if ch.opts.SecureOnly {
		b.WriteString("    <tcp_port remove=\"1\"/>\n")
	}
	fmt.Fprintf(&b, "    <openSSL><server><certificateFile>%s</certificateFile><privateKeyFile>%s</privateKeyFile>"+
		"<verificationMode>none</verificationMode><loadDefaultCAFile>false</loadDefaultCAFile>"+
		"<cacheSessions>true</cacheSessions><disableProtocols>sslv2,sslv3</disableProtocols><preferServerCiphers>true</preferServerCiphers>"+
		"</server></openSSL>\n", xmlText(cert), xmlText(key))
	b.WriteString("</yandex>\n")
	f := filepath.Join(d, "testenv-tls.xml")
	return f, os.WriteFile(f, []byte(b.String()), 0o644)
}

// SetUsers replaces the users of CHOptions.Users (their passwords) and
// waits (at most 30 s) until each one logs in with its new password: the
// server reloads users.d by itself. Connections already open stay logged
// in; new ones need the new password. It works on a server started with
// CHOptions.Users set.
func (ch *CH) SetUsers(t testing.TB, users map[string]string) {
	t.Helper()
	if len(ch.opts.Users) == 0 {
		t.Fatalf("testenv: SetUsers on a server started without CHOptions.Users")
	}
	if err := os.WriteFile(filepath.Join(ch.dir, "users.d", "testenv-users.xml"), []byte(usersXML(users)), 0o644); err != nil {
		t.Fatalf("testenv: set users: %v", err)
	}
	ch.opts.Users = users
	// The server checks its config files every 2 s by their modification
	// time in whole seconds; SYSTEM RELOAD CONFIG reloads them now.
	deadline := time.Now().Add(30 * time.Second)
	for _, name := range slices.Sorted(maps.Keys(users)) {
		for try := 0; ; try++ {
			if try%20 == 0 {
				if _, err := ch.QueryErr("SYSTEM RELOAD CONFIG"); err != nil {
					t.Logf("testenv: SYSTEM RELOAD CONFIG: %v", err)
				}
			}
			err := ch.login(name, users[name])
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("testenv: user %s cannot log in with the new password 30 s after SetUsers: %v", name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// login runs SELECT 1 over HTTP as user with password.
func (ch *CH) login(user, password string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+ch.HTTPAddr()+"/", strings.NewReader("SELECT 1"))
	if err != nil {
		return err
	}
	req.SetBasicAuth(user, password)
	resp, err := ch.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	}
	return nil
}

// usersXML returns the users.d file of CHOptions.Users.
func usersXML(users map[string]string) string {
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<!-- Written by testenv.ClickHouseWith. -->\n<yandex>\n    <users>\n")
	for _, name := range slices.Sorted(maps.Keys(users)) {
		fmt.Fprintf(&b, "        <%s><password>%s</password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks>"+
			"<profile>default</profile><quota>default</quota></%s>\n", name, xmlText(users[name]), name)
	}
	b.WriteString("    </users>\n</yandex>\n")
	return b.String()
}

func (ch *CH) replicationLog() string {
	if ch.opts.ZooKeeper == "" {
		return ""
	}
	return fmt.Sprintf(", interserver %s, zookeeper %s, shard %q replica %q",
		ch.InterserverAddr(), ch.opts.ZooKeeper, ch.opts.Shard, ch.opts.Replica)
}

// InterserverAddr returns the host:port of the interserver HTTP port, or ""
// for a server started without a ZooKeeper.
func (ch *CH) InterserverAddr() string {
	if ch.interserverPort == 0 {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ch.interserverPort))
}

// Shard returns the {shard} macro given to ClickHouseWith ("" if none).
func (ch *CH) Shard() string { return ch.opts.Shard }

// Replica returns the {replica} macro given to ClickHouseWith, or the
// default it chose ("" if none).
func (ch *CH) Replica() string { return ch.opts.Replica }

// SetClusters replaces the server's <remote_servers> with clusters and waits
// (at most 30 s) until system.clusters shows exactly them: the server
// reloads its config by itself (measured: within about 0.5 s). Clusters set
// earlier and missing from clusters are removed. It works on a server from
// ClickHouse too.
func (ch *CH) SetClusters(t testing.TB, clusters map[string][]CHShard) {
	t.Helper()
	old := ch.opts.Clusters
	if _, err := ch.writeClusters(clusters, true); err != nil {
		t.Fatalf("testenv: set clusters: %v", err)
	}
	ch.opts.Clusters = clusters
	names := map[string]bool{}
	for name := range old {
		names[name] = true
	}
	for name := range clusters {
		names[name] = true
	}
	quoted := make([]string, 0, len(names))
	for name := range names {
		quoted = append(quoted, "'"+strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(name)+"'")
	}
	slices.Sort(quoted)
	if len(quoted) == 0 {
		return
	}
	want := clustersTSV(clusters)
	query := "SELECT cluster, shard_num, shard_weight, replica_num, host_name, port FROM system.clusters WHERE cluster IN (" +
		strings.Join(quoted, ", ") + ") ORDER BY cluster, shard_num, replica_num"
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := ch.QueryErr(query)
		if err == nil && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("testenv: system.clusters did not show the new clusters after 30 s (err %v):\ngot:\n%s\nwant:\n%s", err, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writeClusters writes clusters as the <remote_servers> file kept in
// DIR/testenv and, when live, also into DIR/config.d for the running server
// to reload. It returns the first file's path.
func (ch *CH) writeClusters(clusters map[string][]CHShard, live bool) (string, error) {
	conf := clustersXML(clusters)
	if err := os.MkdirAll(filepath.Join(ch.dir, "testenv"), 0o755); err != nil {
		return "", err
	}
	src := filepath.Join(ch.dir, "testenv", "testenv-clusters.xml")
	if err := writeFileAtomic(src, []byte(conf)); err != nil {
		return "", err
	}
	if live {
		if err := os.MkdirAll(filepath.Join(ch.dir, "config.d"), 0o755); err != nil {
			return "", err
		}
		if err := writeFileAtomic(filepath.Join(ch.dir, "config.d", "testenv-clusters.xml"), []byte(conf)); err != nil {
			return "", err
		}
	}
	return src, nil
}

// writeFileAtomic writes b to path through a temporary file (not named
// *.xml, so the server never reads it half-written) and a rename.
func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// serverXML returns the config file for ZooKeeper and macros, or "" when
// there is nothing to set.
func (o CHOptions) serverXML() string {
	macros := map[string]string{}
	for k, v := range o.Macros {
		macros[k] = v
	}
	if o.Shard != "" {
		macros["shard"] = o.Shard
	}
	if o.Replica != "" {
		macros["replica"] = o.Replica
	}
	if o.ZooKeeper == "" && len(macros) == 0 && o.Timezone == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<!-- Written by testenv.ClickHouseWith. -->\n<yandex>\n")
	if o.Timezone != "" {
		fmt.Fprintf(&b, "    <timezone>%s</timezone>\n", xmlText(o.Timezone))
	}
	if o.ZooKeeper != "" {
		host, port, err := net.SplitHostPort(o.ZooKeeper)
		if err != nil {
			host, port = o.ZooKeeper, "2181"
		}
		b.WriteString("    <zookeeper>\n")
		fmt.Fprintf(&b, "        <node index=\"1\"><host>%s</host><port>%s</port></node>\n", xmlText(host), xmlText(port))
		if o.ZooKeeperSessionTimeout > 0 {
			fmt.Fprintf(&b, "        <session_timeout_ms>%d</session_timeout_ms>\n", o.ZooKeeperSessionTimeout.Milliseconds())
		}
		b.WriteString("    </zookeeper>\n")
	}
	if len(macros) > 0 {
		b.WriteString("    <macros>\n")
		for _, k := range slices.Sorted(maps.Keys(macros)) {
			fmt.Fprintf(&b, "        <%s>%s</%s>\n", k, xmlText(macros[k]), k)
		}
		b.WriteString("    </macros>\n")
	}
	b.WriteString("</yandex>\n")
	return b.String()
}

// clustersXML returns the <remote_servers> config file for clusters.
func clustersXML(clusters map[string][]CHShard) string {
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<!-- Written by testenv (ClickHouseWith, SetClusters). -->\n<yandex>\n")
	// replace="replace": clusters set earlier and missing now disappear.
	b.WriteString("    <remote_servers replace=\"replace\">\n")
	for _, name := range slices.Sorted(maps.Keys(clusters)) {
		fmt.Fprintf(&b, "        <%s>\n", name)
		for _, sh := range clusters[name] {
			b.WriteString("            <shard>\n")
			if sh.Weight > 0 {
				fmt.Fprintf(&b, "                <weight>%d</weight>\n", sh.Weight)
			}
			fmt.Fprintf(&b, "                <internal_replication>%t</internal_replication>\n", sh.InternalReplication)
			for _, r := range sh.Replicas {
				host, port := splitHostPortDefault(r)
				fmt.Fprintf(&b, "                <replica><host>%s</host><port>%s</port></replica>\n", xmlText(host), xmlText(port))
			}
			b.WriteString("            </shard>\n")
		}
		fmt.Fprintf(&b, "        </%s>\n", name)
	}
	b.WriteString("    </remote_servers>\n</yandex>\n")
	return b.String()
}

// clustersTSV returns what system.clusters shows for clusters (cluster,
// shard_num, shard_weight, replica_num, host_name, port; TabSeparated,
// sorted like SetClusters's query).
func clustersTSV(clusters map[string][]CHShard) string {
	var lines []string
	for _, name := range slices.Sorted(maps.Keys(clusters)) {
		for i, sh := range clusters[name] {
			w := sh.Weight
			if w == 0 {
				w = 1
			}
			for j, r := range sh.Replicas {
				host, port := splitHostPortDefault(r)
				lines = append(lines, fmt.Sprintf("%s\t%d\t%d\t%d\t%s\t%s", name, i+1, w, j+1, host, port))
			}
		}
	}
	return strings.Join(lines, "\n")
}

// splitHostPortDefault splits host:port; a bare host gets port 9000.
func splitHostPortDefault(addr string) (string, string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, "9000"
	}
	return host, port
}

// xmlText escapes s for XML text.
func xmlText(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// UnescapeTSV undoes ClickHouse's TabSeparated escaping of one value
// (what Query returns is TabSeparated).
func UnescapeTSV(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '0':
			b.WriteByte(0)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
