package testenv

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildMu  sync.Mutex
	builtBin = map[string]string{}
)

// Build compiles the command package pkg (e.g. "./cmd/etl") of this module
// once per test process and returns the binary's path. It is built without
// the race detector whatever the test binary has, so load tests against it
// run at full speed, and with the etltest build tag, which adds the test
// hooks the production binary lacks (cmd/etl/testhook_etltest.go).
func Build(t testing.TB, pkg string) string {
	t.Helper()
	skipShort(t, "go build of "+pkg)
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := builtBin[pkg]; ok {
		return p
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	dir, err := os.MkdirTemp("", "etl-bin-")
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-tags", "etltest", "-o", out, pkg)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testenv: go build %s: %v\n%s", pkg, err, b)
	}
	builtBin[pkg] = out
	return out
}

// BrokerProcess is a Kafka-protocol broker (cmd/devbroker, franz-go's
// kfake) running as its own process, so that a test can stop and restart
// it and so that its load does not run under the test's race detector.
type BrokerProcess struct {
	*Broker
	bin, dataDir string
	port         int
	topics       string
	partitions   int
	cmd          *exec.Cmd
	log          *os.File
}

// KafkaProcess starts cmd/devbroker on a free port with the given topics,
// each of partitions partitions, keeping its data in a folder of t's so a
// restart keeps records and committed offsets. It is stopped when t ends.
func KafkaProcess(t testing.TB, partitions int, topics ...string) *BrokerProcess {
	t.Helper()
	return KafkaCluster(t, 1, partitions, topics...)
}

// KafkaCluster is KafkaProcess with brokers brokers in the one process,
// each on its own free port; partition leadership is spread over them.
func KafkaCluster(t testing.TB, brokers, partitions int, topics ...string) *BrokerProcess {
	t.Helper()
	bp := &BrokerProcess{
		bin:        Build(t, "./cmd/devbroker"),
		dataDir:    t.TempDir(),
		port:       FreePort(t),
		topics:     strings.Join(topics, ","),
		partitions: partitions,
	}
	addrs := []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(bp.port))}
	for len(addrs) < brokers {
		addrs = append(addrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t))))
	}
	bp.Broker = &Broker{addrs: addrs}
	bp.Start(t)
	t.Cleanup(func() {
		bp.Broker.close()
		bp.stop(syscall.SIGTERM)
	})
	return bp
}

// Start starts the broker process (again, after Stop).
func (bp *BrokerProcess) Start(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(bp.dataDir, "broker.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	bp.log = f
	bp.cmd = exec.Command(bp.bin, "-listen", strings.Join(bp.Addrs(), ","), "-topics", bp.topics,
		"-partitions", strconv.Itoa(bp.partitions), "-data-dir", bp.dataDir)
	bp.cmd.Stdout, bp.cmd.Stderr = f, f
	if err := bp.cmd.Start(); err != nil {
		t.Fatalf("testenv: start devbroker: %v", err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, addr := range bp.Addrs() {
		for {
			c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				b, _ := os.ReadFile(f.Name())
				t.Fatalf("testenv: devbroker did not listen on %s: %v\n%s", addr, err, b)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// Stop stops the broker process with SIGTERM and waits for it.
func (bp *BrokerProcess) Stop(t testing.TB) {
	t.Helper()
	bp.Broker.close()
	bp.stop(syscall.SIGTERM)
}

func (bp *BrokerProcess) stop(sig syscall.Signal) {
	if bp.cmd == nil || bp.cmd.Process == nil {
		return
	}
	_ = bp.cmd.Process.Signal(sig)
	done := make(chan struct{})
	go func() { _ = bp.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = bp.cmd.Process.Kill()
		<-done
	}
	bp.cmd = nil
	if bp.log != nil {
		bp.log.Close()
	}
}
