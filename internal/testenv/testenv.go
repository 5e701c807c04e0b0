// Package testenv starts the real servers that integration tests talk to: a
// private ClickHouse server (through scripts/clickhouse.sh) and an in-process
// Kafka broker (franz-go's kfake).
//
// It is meant for tests only, but is a normal package so that tests in any
// package of the module can use it. Every server started here is tied to the
// testing.TB it was started with and is stopped by that test's cleanup.
//
// Under go test -short (make test-short) every helper that starts a server
// process or builds a binary (ClickHouse, ClickHouseWith, ZooKeeper, Build,
// KafkaProcess, KafkaCluster) skips its test instead, so that the short run
// is the tests that need no server, no root and no compiler: the in-process
// Kafka broker of Kafka stays, it is part of the test process.
//
// The ClickHouse helpers need Linux (they read /proc) and either an installed
// /usr/sbin/clickhouse-server or the rights to install it with apt-get.
package testenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// portsMu guards portsGiven.
var portsMu sync.Mutex

// portsGiven holds every port FreePort handed out in this process, so that
// two tests running in parallel are never given the same port.
var portsGiven = map[int]bool{}

// FreePort returns a TCP port on 127.0.0.1 that nothing listened on a moment
// ago and that FreePort has not returned before in this process. Another
// process may still take it before the caller binds it; callers that start a
// server retry with a new port when that happens.
//
// It is safe for concurrent use.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return port
}

func freePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find a free port: %w", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		if err := ln.Close(); err != nil {
			return 0, fmt.Errorf("find a free port: close listener: %w", err)
		}
		if !portsGiven[port] {
			portsGiven[port] = true
			return port, nil
		}
	}
	return 0, errors.New("find a free port: every port the kernel offered was already handed out")
}

// skipShort skips t under go test -short, naming what it would have
// started.
func skipShort(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("testenv: skipped under -short: the test needs %s (run it without -short)", what)
	}
}

// repoRoot walks up from the working directory to the folder holding go.mod.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("find repository root: no go.mod in %s or any parent", wd)
		}
		dir = parent
	}
}
