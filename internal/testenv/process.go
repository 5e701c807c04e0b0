package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serverProc is what the servers started by a script (ClickHouse,
// ZooKeeper) have in common: the script, the folder it runs the server
// in, the pid file it writes there, and a mark that tells the server's
// process apart from any other process that reuses its pid.
type serverProc struct {
	name    string // for messages
	script  string // the scripts/*.sh that starts and stops it
	dir     string
	pidFile string        // in dir
	mark    string        // what the server's /proc/PID/cmdline contains
	timeout time.Duration // for one run of the script
}

// run runs `script cmd --dir dir args...`. It returns the script's
// combined output and its exit status (-1 when it did not run to an exit).
func (s serverProc) run(cmd string, args ...string) (string, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", append([]string{s.script, cmd, "--dir", s.dir}, args...)...)
	// The server and its watchdog write their output to files, so the pipes
	// close when the script exits; WaitDelay only guards against a script
	// that misbehaves.
	c.WaitDelay = 5 * time.Second
	out, err := c.CombinedOutput()
	if err != nil {
		code := -1
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			code = exitErr.ExitCode()
		}
		return string(out), code, fmt.Errorf("%s %s: %w", filepath.Base(s.script), cmd, err)
	}
	return string(out), 0, nil
}

// signal sends sig to the running server and returns its pid.
func (s serverProc) signal(t testing.TB, sig syscall.Signal) int {
	t.Helper()
	pid, err := s.pid()
	if err != nil {
		t.Fatalf("testenv: send %v to %s: %v", sig, s.name, err)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("testenv: send %v to %s pid %d: %v", sig, s.name, pid, err)
	}
	return pid
}

// freeze suspends the server with SIGSTOP and waits until every one of its
// threads is stopped. kill(2) returns before that: the kernel wakes one
// thread to start the group stop, and until it runs, the others (an HTTP
// handler, say) go on answering. On a busy machine that takes
// milliseconds, long enough for a query sent right after the signal to be
// answered by a server that should be frozen.
func (s serverProc) freeze(t testing.TB) {
	t.Helper()
	pid := s.signal(t, syscall.SIGSTOP)
	deadline := time.Now().Add(10 * time.Second)
	for {
		stopped, err := allThreadsStopped(pid)
		if err != nil {
			t.Fatalf("testenv: freeze %s pid %d: %v", s.name, pid, err)
		}
		if stopped {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("testenv: freeze %s pid %d: threads still running 10s after SIGSTOP", s.name, pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// allThreadsStopped reports whether every thread of pid is in the stopped
// state ('T', or 't' when traced).
func allThreadsStopped(pid int) (bool, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return false, fmt.Errorf("list threads: %w", err)
	}
	for _, task := range tasks {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // the thread exited
			}
			return false, fmt.Errorf("read thread state: %w", err)
		}
		if state, ok := procState(stat); !ok || (state != 'T' && state != 't') {
			return false, nil
		}
	}
	return true, nil
}

// procState returns the state field of a /proc/.../stat line.
func procState(stat []byte) (byte, bool) {
	// The state follows the command name, which is in parentheses.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return 0, false
	}
	return stat[i+2], true
}

// pid returns the pid of the running server.
func (s serverProc) pid() (int, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, s.pidFile))
	if err != nil {
		return 0, fmt.Errorf("read pid file (is the server running?): %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("parse pid file: %w", err)
	}
	if !s.alive(pid) {
		return 0, fmt.Errorf("pid %d is not a running %s for %s", pid, s.name, s.dir)
	}
	return pid, nil
}

// alive reports whether pid is this server and has not exited. An exited
// server can linger as a zombie when its new parent does not reap it, so
// the state is checked.
func (s serverProc) alive(pid int) bool {
	if !procRunning(pid) {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return bytes.Contains(cmdline, []byte(s.mark))
}

// procRunning reports whether pid exists and is neither a zombie nor dead.
func procRunning(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	state, ok := procState(stat)
	return ok && state != 'Z' && state != 'X'
}
