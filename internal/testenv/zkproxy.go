package testenv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// zkOpMulti is the ZooKeeper protocol's request type of a multi (a
// transaction of several operations).
const zkOpMulti = 14

// ZKProxy is a TCP proxy on 127.0.0.1 between ClickHouse and a ZooKeeper
// server ([ZooKeeperProxy]). It reads the ZooKeeper protocol's frames from
// the client, so a test can cut the connection that carries a block's
// commit (the multi request that creates <table>/blocks/<id>) before
// ZooKeeper sees it: the replica has written the part and cannot know
// whether ZooKeeper registered it, which is how an insert ends with
// UNKNOWN_STATUS_OF_INSERT (319) when ZooKeeper goes away at that moment.
type ZKProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	armed  time.Duration // > 0: cut the next commit, then refuse for this long
	stall  bool          // the armed cut leaves the connection open and silent
	cut    chan string   // receives the cut commit's block path
	downTo time.Time     // connections are refused until then
	closed bool
	wg     sync.WaitGroup
}

// ZooKeeperProxy starts a proxy to target (a ZooKeeper host:port) on a free
// port of 127.0.0.1 and stops it when t finishes. Give ClickHouse its Addr
// as the ZooKeeper.
func ZooKeeperProxy(t testing.TB, target string) *ZKProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: ZooKeeper proxy: %v", err)
	}
	p := &ZKProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's host:port.
func (p *ZKProxy) Addr() string { return p.ln.Addr().String() }

// CutNextCommit arms the proxy: the next multi request that creates a
// block's and a part's znodes (an insert's commit) is dropped, every
// connection is closed, and new connections are refused (accepted and
// closed at once) for outage. The client sees the connection lost at once.
// The returned channel receives the block's path when that happened.
func (p *ZKProxy) CutNextCommit(outage time.Duration) <-chan string {
	return p.arm(outage, false)
}

// StallNextCommit is CutNextCommit, except that the connection carrying
// the commit stays open and nothing more passes on it, as when ZooKeeper
// freezes or the network drops packets: the client gives up on the
// request after its operation timeout (10 s by default) and closes the
// connection itself.
func (p *ZKProxy) StallNextCommit(outage time.Duration) <-chan string {
	return p.arm(outage, true)
}

func (p *ZKProxy) arm(outage time.Duration, stall bool) <-chan string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed, p.stall = max(outage, time.Nanosecond), stall
	p.cut = make(chan string, 1)
	return p.cut
}

func (p *ZKProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.closed || time.Now().Before(p.downTo)
		if !refuse {
			p.conns[c] = struct{}{}
		}
		p.mu.Unlock()
		if refuse {
			_ = c.Close()
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve proxies one client connection.
func (p *ZKProxy) serve(c net.Conn) {
	defer p.wg.Done()
	defer p.drop(c)
	s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = s.Close()
		return
	}
	p.conns[s] = struct{}{}
	p.mu.Unlock()
	defer p.drop(s)
	go func() {
		_, _ = io.Copy(c, s)
		_ = c.Close()
	}()
	var hdr [4]byte
	for first := true; ; first = false {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > 64<<20 {
			return
		}
		frame := make([]byte, n)
		if _, err := io.ReadFull(c, frame); err != nil {
			return
		}
		// Every frame but the first (the session's connect request) starts
		// with the request's xid and type.
		if !first && len(frame) >= 8 && int32(binary.BigEndian.Uint32(frame[4:8])) == zkOpMulti {
			// A commit creates the block's znode and the part's; the
			// block number's allocation before it checks the block's
			// znode and names no part.
			if path, ok := blockPath(frame); ok && bytes.Contains(frame, []byte("/parts/")) {
				if cut, stall := p.takeCut(path); cut {
					if stall {
						_, _ = io.Copy(io.Discard, c)
					}
					return
				}
			}
		}
		if _, err := s.Write(append(hdr[:], frame...)); err != nil {
			return
		}
	}
}

// blockPath finds the path of a block's znode in a multi request: a
// protocol string (a 4-byte length, then the bytes) holding "/blocks/".
func blockPath(frame []byte) (string, bool) {
	i := bytes.Index(frame, []byte("/blocks/"))
	if i < 0 {
		return "", false
	}
	for s := i; s >= 4; s-- {
		n := int(binary.BigEndian.Uint32(frame[s-4 : s]))
		if frame[s] == '/' && n > i-s+len("/blocks/") && s+n <= len(frame) {
			return string(frame[s : s+n]), true
		}
	}
	return "", false
}

// takeCut reports whether the proxy was armed, and if so disarms it and
// refuses connections for the outage. A cut closes every open connection;
// a stall closes none (the stalled one is left for the client to close)
// and reports stall.
func (p *ZKProxy) takeCut(path string) (cut, stall bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.armed == 0 {
		return false, false
	}
	p.downTo = time.Now().Add(p.armed)
	p.armed = 0
	p.cut <- path
	if p.stall {
		return true, true
	}
	for c := range p.conns {
		_ = c.Close()
	}
	return true, false
}

func (p *ZKProxy) drop(c net.Conn) {
	_ = c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *ZKProxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	if err := p.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return
	}
	p.wg.Wait()
}
