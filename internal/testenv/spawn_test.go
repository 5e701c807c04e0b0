package testenv

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The start scripts check the server's process while they wait for the
// server to answer. Until the forked shell has exec'd the server, that
// process's command line is still the script's: the check must not take it
// for a server that exited during startup. The test holds the fork there:
// the server's output file is a named pipe, and the shell's redirection
// into it blocks until the test opens it for reading. A listener on the
// port the script probes counts the probes: a second probe means the first
// round of the wait, its check of the process included, went by without
// giving up.
func TestStartWhileSpawning(t *testing.T) {
	skipShort(t, "ZooKeeper and ClickHouse servers")
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	newDir := func(t *testing.T) string {
		dir, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return dir
	}
	t.Run("ZooKeeper", func(t *testing.T) {
		zk := &ZK{script: filepath.Join(root, "scripts", "zookeeper.sh"), dir: newDir(t), port: FreePort(t)}
		startWhileSpawning(t, spawnCase{
			dir: zk.dir, pidFile: "zookeeper.pid", output: "zookeeper.log", probed: zk.port,
			start: func() (string, int, error) {
				return zk.runScript("start", "--port", strconv.Itoa(zk.port), "--watch-pid", strconv.Itoa(os.Getpid()))
			},
			stop: func() (string, int, error) { return zk.runScript("stop") },
			check: func() error {
				if got, err := zk.FourLetter(t.Context(), "ruok"); err != nil || got != "imok" {
					return fmt.Errorf("ruok = %q, %v; want imok", got, err)
				}
				return nil
			},
		})
	})
	t.Run("ClickHouse", func(t *testing.T) {
		transport := http.DefaultTransport.(*http.Transport).Clone()
		t.Cleanup(transport.CloseIdleConnections)
		ch := &CH{script: filepath.Join(root, "scripts", "clickhouse.sh"), dir: newDir(t), transport: transport,
			client: &http.Client{Transport: transport}, tcpPort: FreePort(t), httpPort: FreePort(t)}
		startWhileSpawning(t, spawnCase{
			dir: ch.dir, pidFile: "clickhouse.pid", output: "stdout.log", probed: ch.httpPort,
			start: func() (string, int, error) { return ch.runScript("start") },
			stop:  func() (string, int, error) { return ch.runScript("stop") },
			check: func() error {
				if got := ch.Query(t, "SELECT 1"); got != "1" {
					return fmt.Errorf("SELECT 1 = %q", got)
				}
				return nil
			},
		})
	})
}

type spawnCase struct {
	dir     string
	pidFile string // in dir, written right after the fork
	output  string // in dir/log: the server's output, redirected by the forked shell
	probed  int    // the port the script probes while it waits
	start   func() (string, int, error)
	stop    func() (string, int, error)
	check   func() error // the server answers
}

func startWhileSpawning(t *testing.T, c spawnCase) {
	if err := os.MkdirAll(filepath.Join(c.dir, "log"), 0o755); err != nil {
		t.Fatal(err)
	}
	pipe := filepath.Join(c.dir, "log", c.output)
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatal(err)
	}
	type result struct {
		out  string
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		out, code, err := c.start()
		done <- result{out, code, err}
	}()
	fail := func(r result) {
		t.Helper()
		if r.err == nil {
			c.stop()
		}
		t.Fatalf("the start script gave up while the server's process was being spawned (exit %d): %v\n%s", r.code, r.err, r.out)
	}
	// The script checks that the ports are free before it forks, and writes
	// the pid file after: from then on the probed port is the test's.
	var ended *result
	_, ok := poll(time.Minute, func() bool {
		select {
		case r := <-done:
			ended = &r
			return true
		default:
		}
		_, err := os.Stat(filepath.Join(c.dir, c.pidFile))
		return err == nil
	})
	switch {
	case ended != nil:
		fail(*ended)
	case !ok:
		t.Fatal("the start script wrote no pid file in a minute")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(c.probed)))
	if err != nil {
		t.Fatal(err)
	}
	probes := make(chan struct{}, 64)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Close()
			probes <- struct{}{}
		}
	}()
	for range 2 {
		select {
		case <-probes:
		case r := <-done:
			ln.Close()
			fail(r)
		}
	}
	ln.Close()
	// Let the spawn go on; the server's output is read until it stops.
	f, err := os.Open(pipe)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	go io.Copy(io.Discard, f)
	r := <-done
	if r.err != nil {
		t.Fatalf("start: %v\n%s", r.err, r.out)
	}
	t.Cleanup(func() {
		if out, _, err := c.stop(); err != nil {
			t.Errorf("stop: %v\n%s", err, out)
		}
	})
	if err := c.check(); err != nil {
		t.Fatal(err)
	}
}
