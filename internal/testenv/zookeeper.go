package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

const (
	// zkStartAttempts bounds how often ZooKeeper picks a new port when
	// another process took the free port first.
	zkStartAttempts = 5

	// zkScriptTimeout bounds one run of scripts/zookeeper.sh: an apt-get
	// install on a fresh machine (about 20 s measured), the script's own
	// 60 s start and 15 s stop timeouts, with room to spare.
	zkScriptTimeout = 3 * time.Minute

	// zkPortInUseExit is the exit status of scripts/zookeeper.sh when the
	// port it was given is already taken.
	zkPortInUseExit = 3
)

// ZK is a private standalone ZooKeeper server (Debian's zookeeper package)
// started by [ZooKeeper]. It listens on 127.0.0.1 only, on one client port;
// it has no admin server and no other port.
//
// Stop, Start, Kill9, Freeze and Thaw change the server's state and should
// be called from the test goroutine that owns it.
type ZK struct {
	script string
	dir    string
	port   int
}

// ZooKeeper starts a fresh ZooKeeper server in a temporary folder of t on a
// free port, with scripts/zookeeper.sh, and stops it when t finishes. The
// server is also tied to the test process: should the process die without
// running t's cleanup, a watchdog stops the server within about a second.
// The script installs Debian's zookeeper package with apt-get when it is
// missing; when it can be neither found nor installed, ZooKeeper fails t (it
// never skips, CI must run these tests, but under go test -short).
//
// Start-up takes about 1 s (a JVM); give each test its own server.
func ZooKeeper(t testing.TB) *ZK {
	t.Helper()
	skipShort(t, "a ZooKeeper server")
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("testenv: start ZooKeeper: %v", err)
	}
	// The script resolves symbolic links in the folder, and alive matches
	// the server's command line against it.
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatalf("testenv: start ZooKeeper: %v", err)
	}
	zk := &ZK{script: filepath.Join(root, "scripts", "zookeeper.sh"), dir: dir}
	for attempt := 1; ; attempt++ {
		zk.port = FreePort(t)
		begin := time.Now()
		out, code, err := zk.runScript("start", "--port", strconv.Itoa(zk.port), "--watch-pid", strconv.Itoa(os.Getpid()))
		if err == nil {
			t.Logf("testenv: ZooKeeper ready in %v: %s, dir %s", time.Since(begin).Round(time.Millisecond), zk.Addr(), zk.dir)
			break
		}
		if code == zkPortInUseExit && attempt < zkStartAttempts {
			t.Logf("testenv: ZooKeeper port %d taken, retrying with a new port", zk.port)
			continue
		}
		t.Fatalf("testenv: start ZooKeeper with %s: %v\n%s\n"+
			"These tests need a real ZooKeeper: install it with `apt-get install zookeeper` (Debian) "+
			"or run the tests as root so the script can.", zk.script, err, out)
	}
	t.Cleanup(func() {
		if out, _, err := zk.runScript("stop"); err != nil {
			t.Errorf("testenv: stop ZooKeeper: %v\n%s", err, out)
		}
	})
	return zk
}

// Addr returns the client address, 127.0.0.1:port.
func (zk *ZK) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(zk.port)) }

// Port returns the client port.
func (zk *ZK) Port() int { return zk.port }

// Dir returns the folder holding the server's config (zoo.cfg), data (data/)
// and log (log/zookeeper.log).
func (zk *ZK) Dir() string { return zk.dir }

// Stop stops the server with SIGTERM and waits for it to exit (the script
// sends SIGKILL after 15 s). Its data stays in Dir; Start runs it again.
func (zk *ZK) Stop(t testing.TB) {
	t.Helper()
	begin := time.Now()
	if out, _, err := zk.runScript("stop"); err != nil {
		t.Fatalf("testenv: stop ZooKeeper: %v\n%s", err, out)
	}
	t.Logf("testenv: ZooKeeper stopped in %v", time.Since(begin).Round(time.Millisecond))
}

// Start starts a stopped (or killed) server again with the same folder and
// port, so its znodes (and ClickHouse's sessions' state) are still there. It
// fails t when another process took the port meanwhile.
func (zk *ZK) Start(t testing.TB) {
	t.Helper()
	begin := time.Now()
	out, code, err := zk.runScript("start", "--port", strconv.Itoa(zk.port), "--watch-pid", strconv.Itoa(os.Getpid()))
	if err != nil {
		if code == zkPortInUseExit {
			t.Fatalf("testenv: restart ZooKeeper: port %d was taken while it was stopped\n%s", zk.port, out)
		}
		t.Fatalf("testenv: restart ZooKeeper: %v\n%s", err, out)
	}
	t.Logf("testenv: ZooKeeper restarted in %v", time.Since(begin).Round(time.Millisecond))
}

// Kill9 kills the server with SIGKILL, as in a crash, and waits until it is
// gone. Start runs it again on the same data.
func (zk *ZK) Kill9(t testing.TB) {
	t.Helper()
	pid := zk.signal(t, syscall.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	for zk.alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("testenv: ZooKeeper pid %d still alive 10s after SIGKILL", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Its listening socket can outlive its pid for a moment (see CH.Kill9).
	for !portFree(zk.port) {
		if time.Now().After(deadline) {
			t.Fatalf("testenv: port %d still in use 10s after ZooKeeper (pid %d) was killed", zk.port, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := os.Remove(filepath.Join(zk.dir, "zookeeper.pid")); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("testenv: remove ZooKeeper pid file: %v", err)
	}
}

// Freeze suspends the server with SIGSTOP: connections are accepted by the
// kernel but nothing answers, and ClickHouse's sessions expire after their
// timeout (30 s by default). Thaw resumes it.
func (zk *ZK) Freeze(t testing.TB) {
	t.Helper()
	zk.proc().freeze(t)
}

// Thaw resumes a server suspended by Freeze with SIGCONT.
func (zk *ZK) Thaw(t testing.TB) {
	t.Helper()
	zk.signal(t, syscall.SIGCONT)
}

// FourLetter sends a four-letter command (ruok, srvr, stat, mntr or cons:
// the ones the config allows) and returns the answer.
func (zk *ZK) FourLetter(ctx context.Context, cmd string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", zk.Addr())
	if err != nil {
		return "", fmt.Errorf("zookeeper %s: %w", cmd, err)
	}
	defer c.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(deadline)
	} else {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	}
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", fmt.Errorf("zookeeper %s: %w", cmd, err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		return string(b), fmt.Errorf("zookeeper %s: %w", cmd, err)
	}
	return string(b), nil
}

// proc is the server's process, for its script, pid and signals.
func (zk *ZK) proc() serverProc {
	return serverProc{name: "ZooKeeper", script: zk.script, dir: zk.dir, pidFile: "zookeeper.pid",
		mark: "\x00" + filepath.Join(zk.dir, "zoo.cfg"), timeout: zkScriptTimeout}
}

// runScript runs scripts/zookeeper.sh cmd for this server with args.
func (zk *ZK) runScript(cmd string, args ...string) (string, int, error) {
	return zk.proc().run(cmd, args...)
}

func (zk *ZK) signal(t testing.TB, sig syscall.Signal) int {
	t.Helper()
	return zk.proc().signal(t, sig)
}

func (zk *ZK) pid() (int, error)  { return zk.proc().pid() }
func (zk *ZK) alive(pid int) bool { return zk.proc().alive(pid) }
