package testenv

// The tests here check the ZooKeeper and replicated-ClickHouse helpers, and
// document, against the real ClickHouse 18.16 of Debian, the facts that
// exactly-once delivery (issue 6) depends on: how ReplicatedMergeTree
// deduplicates a re-inserted block when it is inserted the way
// sink/clickhouse/insert.go inserts (clickhouse-go/v2, native protocol,
// PrepareBatch, whole column slices appended, Send).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

func TestZooKeeper(t *testing.T) {
	zk := ZooKeeper(t)
	ctx := context.Background()
	if got, err := zk.FourLetter(ctx, "ruok"); err != nil || got != "imok" {
		t.Fatalf("ruok = %q, %v; want imok", got, err)
	}
	srvr, err := zk.FourLetter(ctx, "srvr")
	if err != nil || !strings.Contains(srvr, "Mode: standalone") {
		t.Fatalf("srvr = %q, %v; want standalone mode", srvr, err)
	}
	t.Logf("srvr: %s", strings.SplitN(srvr, "\n", 2)[0])

	// Only the client port, on 127.0.0.1: no admin server (8080), no JMX port.
	pid, err := zk.pid()
	if err != nil {
		t.Fatal(err)
	}
	if ports := listeningPorts(t, pid); len(ports) != 1 || ports[0] != fmt.Sprintf("127.0.0.1:%d", zk.Port()) {
		t.Fatalf("ZooKeeper pid %d listens on %v, want only 127.0.0.1:%d", pid, ports, zk.Port())
	}

	t.Run("ClickHouse", func(t *testing.T) {
		srv := ClickHouseWith(t, CHOptions{ZooKeeper: zk.Addr(), ZooKeeperSessionTimeout: 5 * time.Second,
			Macros: map[string]string{"layer": "l1"}})
		if got := srv.Query(t, "SELECT macro, substitution FROM system.macros ORDER BY macro"); got != "layer\tl1\nreplica\t"+srv.Replica()+"\nshard\t01" {
			t.Fatalf("system.macros = %q", got)
		}
		if got := srv.Query(t, "SELECT count() FROM system.zookeeper WHERE path = '/' AND name = 'zookeeper'"); got != "1" {
			t.Fatalf("system.zookeeper at / has no zookeeper node: %q", got)
		}
		if srv.InterserverAddr() == "" || srv.Replica() == "" {
			t.Fatalf("InterserverAddr %q, Replica %q", srv.InterserverAddr(), srv.Replica())
		}
	})

	t.Run("StopStart", func(t *testing.T) {
		zk.Stop(t)
		if _, err := zk.FourLetter(ctx, "ruok"); err == nil {
			t.Fatal("ruok answered by a stopped server")
		}
		zk.Start(t)
		if got, err := zk.FourLetter(ctx, "ruok"); err != nil || got != "imok" {
			t.Fatalf("ruok after restart = %q, %v", got, err)
		}
	})
	t.Run("Kill9Start", func(t *testing.T) {
		zk.Kill9(t)
		if _, err := zk.FourLetter(ctx, "ruok"); err == nil {
			t.Fatal("ruok answered by a killed server")
		}
		zk.Start(t)
		if got, err := zk.FourLetter(ctx, "ruok"); err != nil || got != "imok" {
			t.Fatalf("ruok after restart = %q, %v", got, err)
		}
	})
}

// TestWatchdog checks that a server started with --watch-pid stops when the
// watched process exits without stopping it (as a test binary that panics
// or is killed).
func TestWatchdog(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	owner := exec.Command("sleep", "600")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = owner.Process.Kill(); _ = owner.Wait() }()
	ownerPID := strconv.Itoa(owner.Process.Pid)

	zkDir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	chDir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	zk := &ZK{script: filepath.Join(root, "scripts", "zookeeper.sh"), dir: zkDir, port: FreePort(t)}
	if out, _, err := zk.runScript("start", "--port", strconv.Itoa(zk.port), "--watch-pid", ownerPID); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Cleanup(func() { _, _, _ = zk.runScript("stop") })
	srv := &CH{script: filepath.Join(root, "scripts", "clickhouse.sh"), dir: chDir,
		tcpPort: FreePort(t), httpPort: FreePort(t), extraArgs: []string{"--watch-pid", ownerPID}}
	if out, _, err := srv.runScript("start"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Cleanup(func() { _, _, _ = srv.runScript("stop") })
	zkPID, err := zk.pid()
	if err != nil {
		t.Fatal(err)
	}
	chPID, err := srv.pid()
	if err != nil {
		t.Fatal(err)
	}

	begin := time.Now()
	_ = owner.Process.Kill()
	_ = owner.Wait()
	Eventually(t, "both servers gone after the watched process died", 20*time.Second, func() error {
		if zkAlive, chAlive := zk.alive(zkPID), srv.alive(chPID); zkAlive || chAlive {
			return fmt.Errorf("ZooKeeper alive %v, ClickHouse alive %v", zkAlive, chAlive)
		}
		return nil
	})
	t.Logf("both servers gone %v after the watched process died", time.Since(begin).Round(time.Millisecond))
}

// listeningPorts returns the 127.0.0.1 (or other) host:port pairs pid
// listens on, from /proc/net/tcp{,6} and the process's socket inodes.
func listeningPorts(t *testing.T, pid int) []string {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var out []string
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			// local_address rem_address st ... inode (field 9); 0A = LISTEN.
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
				continue
			}
			out = append(out, decodeProcAddr(f[1]))
		}
	}
	return out
}

// decodeProcAddr turns /proc/net/tcp's HEXIP:HEXPORT into ip:port, for
// IPv4 and IPv4-mapped IPv6 addresses (others are returned as they are).
func decodeProcAddr(s string) string {
	hexIP, hexPort, _ := strings.Cut(s, ":")
	port, _ := strconv.ParseUint(hexPort, 16, 16)
	if len(hexIP) == 32 && strings.HasPrefix(hexIP, "0000000000000000FFFF0000") {
		hexIP = hexIP[24:]
	}
	if len(hexIP) != 8 {
		return s
	}
	v, _ := strconv.ParseUint(hexIP, 16, 32)
	// The kernel prints the address in host (little-endian) order.
	return fmt.Sprintf("%d.%d.%d.%d:%d", v&0xff, v>>8&0xff, v>>16&0xff, v>>24, port)
}

// TestClickHouseWithClusters checks CHOptions.Clusters and SetClusters
// against system.clusters (what distributed_check reads).
func TestClickHouseWithClusters(t *testing.T) {
	a := ClickHouseWith(t, CHOptions{Clusters: map[string][]CHShard{
		"single": {{Replicas: []string{"127.0.0.1:9"}}},
	}})
	b := ClickHouse(t)
	if got := a.Query(t, "SELECT cluster, shard_num, replica_num, host_name, port FROM system.clusters WHERE cluster = 'single'"); got != "single\t1\t1\t127.0.0.1\t9" {
		t.Fatalf("system.clusters at start = %q", got)
	}
	two := map[string][]CHShard{"two": {
		{Replicas: []string{a.TCPAddr(), b.TCPAddr()}, Weight: 2, InternalReplication: true},
		{Replicas: []string{"localhost:9000"}},
	}}
	begin := time.Now()
	a.SetClusters(t, two)
	t.Logf("cluster config reloaded in %v", time.Since(begin).Round(time.Millisecond))
	t.Logf("system.clusters:\n%s", a.Query(t, "SELECT cluster, shard_num, shard_weight, replica_num, host_name, host_address, port, is_local FROM system.clusters WHERE cluster = 'two' FORMAT TSVWithNames"))
	if got := a.Query(t, "SELECT count() FROM system.clusters WHERE cluster = 'single'"); got != "0" {
		t.Fatalf("cluster single still there after SetClusters: %s rows", got)
	}
	// A restart keeps the clusters last set.
	a.Stop(t)
	a.Start(t)
	if got := a.Query(t, "SELECT count() FROM system.clusters WHERE cluster = 'two'"); got != "3" {
		t.Fatalf("cluster two after restart: %s rows, want 3", got)
	}
	// It works on a server from ClickHouse too.
	b.SetClusters(t, two)
}

// rows is one insert chunk: columns id UInt64, name String, val Float64.
type rows struct {
	ids   []uint64
	names []string
	vals  []float64
}

// makeRows returns n rows with ids first, first+1, ...
func makeRows(first uint64, n int) rows {
	r := rows{ids: make([]uint64, n), names: make([]string, n), vals: make([]float64, n)}
	for i := range n {
		id := first + uint64(i)
		r.ids[i] = id
		r.names[i] = "name-" + strconv.FormatUint(id, 10)
		r.vals[i] = float64(id) / 4
	}
	return r
}

// split cuts r into chunks of the given sizes (the rest in a last chunk).
func (r rows) split(sizes ...int) []rows {
	var out []rows
	at := 0
	for _, n := range sizes {
		out = append(out, rows{r.ids[at : at+n], r.names[at : at+n], r.vals[at : at+n]})
		at += n
	}
	if at < len(r.ids) {
		out = append(out, rows{r.ids[at:], r.names[at:], r.vals[at:]})
	}
	return out
}

// nativeConn opens a clickhouse-go/v2 native connection like sink/clickhouse
// does by default (LZ4).
func nativeConn(t *testing.T, srv *CH) driver.Conn {
	t.Helper()
	conn, err := ch.Open(&ch.Options{
		Protocol:    ch.Native,
		Addr:        []string{srv.TCPAddr()},
		Auth:        ch.Auth{Database: "default", Username: "default"},
		DialTimeout: 10 * time.Second,
		Compression: &ch.Compression{Method: ch.CompressionLZ4},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	return conn
}

// insertOpts changes how insertChunks sends a batch.
type insertOpts struct {
	columns  string      // column list; default "id, name, val"
	settings ch.Settings // per-query settings
	flush    bool        // Flush after each chunk: one Data packet per chunk
}

// insertChunks inserts chunks as one INSERT the way sink/clickhouse/insert.go
// does: PrepareBatch, then for each column every chunk's slice appended
// whole, then Send.
func insertChunks(ctx context.Context, conn driver.Conn, table string, chunks []rows, o insertOpts) error {
	cols := o.columns
	if cols == "" {
		cols = "id, name, val"
	}
	if o.settings != nil {
		ctx = ch.Context(ctx, ch.WithSettings(o.settings))
	}
	batch, err := conn.PrepareBatch(ctx, "INSERT INTO "+table+" ("+cols+")")
	if err != nil {
		return err
	}
	colData := func(name string, r rows) any {
		switch name {
		case "id":
			return r.ids
		case "name":
			return r.names
		}
		return r.vals
	}
	names := strings.Split(strings.ReplaceAll(cols, " ", ""), ",")
	if o.flush {
		// One Data packet per chunk (Flush sends what is buffered).
		for _, c := range chunks {
			for i, name := range names {
				if err := batch.Column(i).Append(colData(name, c)); err != nil {
					_ = batch.Abort()
					return err
				}
			}
			if err := batch.Flush(); err != nil {
				_ = batch.Abort()
				return err
			}
		}
		return batch.Send()
	}
	for i, name := range names {
		for _, c := range chunks {
			if err := batch.Column(i).Append(colData(name, c)); err != nil {
				_ = batch.Abort()
				return err
			}
		}
	}
	return batch.Send()
}

// replicatedTable creates table name on each server as a ReplicatedMergeTree
// (or the engine given) with ZooKeeper path /clickhouse/tables/{shard}/name
// and returns the path with the shard macro of the first server filled in.
func replicatedTable(t *testing.T, name, engine, extra string, servers ...*CH) string {
	t.Helper()
	if engine == "" {
		engine = "ReplicatedMergeTree"
	}
	for _, srv := range servers {
		srv.Exec(t, fmt.Sprintf("CREATE TABLE %s (id UInt64, name String, val Float64) ENGINE = %s('/clickhouse/tables/{shard}/%s', '{replica}') ORDER BY id %s",
			name, engine, name, extra))
	}
	return "/clickhouse/tables/" + servers[0].Shard() + "/" + name
}

// blockIDs returns how many deduplication block ids ZooKeeper holds for the
// table at zkPath: one per block (per partition) inserted and kept.
func blockIDs(t *testing.T, srv *CH, zkPath string) int {
	t.Helper()
	n, err := strconv.Atoi(srv.Query(t, "SELECT count() FROM system.zookeeper WHERE path = '"+zkPath+"/blocks'"))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mustCount(t *testing.T, srv *CH, table string, want uint64, what string) {
	t.Helper()
	if got := srv.Count(t, table); got != want {
		t.Fatalf("%s: count() = %d, want %d", what, got, want)
	}
}

// TestReplicatedDedup documents the deduplication facts of ClickHouse 18.16
// that exactly-once delivery depends on. Each subtest logs what it found.
func TestReplicatedDedup(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and two ClickHouse servers")
	}
	begin := time.Now()
	zk := ZooKeeper(t)
	t.Logf("ZooKeeper started in %v", time.Since(begin).Round(time.Millisecond))
	begin = time.Now()
	r1 := ClickHouseWith(t, CHOptions{ZooKeeper: zk.Addr(), Shard: "01", Replica: "r1"})
	t.Logf("replica r1 started in %v", time.Since(begin).Round(time.Millisecond))
	begin = time.Now()
	r2 := ClickHouseWith(t, CHOptions{ZooKeeper: zk.Addr(), Shard: "01", Replica: "r2"})
	t.Logf("replica r2 started in %v", time.Since(begin).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c1 := nativeConn(t, r1)
	c2 := nativeConn(t, r2)
	if got := r1.Query(t, "SELECT version()"); !strings.HasPrefix(got, "18.16") {
		t.Logf("note: server version %s, these facts were written for 18.16", got)
	}
	if got := r1.Query(t, "SELECT substitution FROM system.macros WHERE macro = 'replica'"); got != "r1" {
		t.Fatalf("replica macro = %q", got)
	}

	t.Run("SameBlockTwice", func(t *testing.T) {
		begin := time.Now()
		path := replicatedTable(t, "same", "", "", r1)
		t.Logf("CREATE TABLE ReplicatedMergeTree took %v", time.Since(begin).Round(time.Millisecond))
		block := makeRows(1, 1000).split(300, 300)
		for i := range 3 {
			if err := insertChunks(ctx, c1, "same", block, insertOpts{}); err != nil {
				t.Fatalf("insert %d: %v", i+1, err)
			}
		}
		mustCount(t, r1, "same", 1000, "the same 1000-row block inserted 3 times")
		if n := blockIDs(t, r1, path); n != 1 {
			t.Fatalf("block ids in ZooKeeper = %d, want 1", n)
		}

		// One value differs: a new block, kept whole.
		changed := makeRows(1, 1000)
		changed.vals[999] = -1
		if err := insertChunks(ctx, c1, "same", []rows{changed}, insertOpts{}); err != nil {
			t.Fatal(err)
		}
		mustCount(t, r1, "same", 2000, "a block differing in one value")

		// added inserts chunks into table and returns how many rows that
		// added, checking it against want.
		added := func(table string, chunks []rows, o insertOpts, want uint64, what string) {
			t.Helper()
			before := r1.Count(t, table)
			if err := insertChunks(ctx, c1, table, chunks, o); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			got := r1.Count(t, table) - before
			t.Logf("%s: %d rows added", what, got)
			if got != want {
				t.Errorf("%s: %d rows added, want %d", what, got, want)
			}
		}
		shuffle := func(r rows) rows {
			rand.New(rand.NewPCG(1, 2)).Shuffle(len(r.ids), func(i, j int) {
				r.ids[i], r.ids[j] = r.ids[j], r.ids[i]
				r.names[i], r.names[j] = r.names[j], r.names[i]
				r.vals[i], r.vals[j] = r.vals[j], r.vals[i]
			})
			return r
		}

		// The same rows in another order, in a table ordered by a unique
		// id: the part is sorted by the ORDER BY key before its checksums
		// (the block id) are taken, so it is the same block.
		added("same", []rows{shuffle(makeRows(1, 1000))}, insertOpts{}, 0, "the block's rows shuffled (ORDER BY id, ids unique)")
		// With ties in the sorting key the (stable) sort keeps the
		// insertion order: another block.
		r1.Exec(t, "CREATE TABLE ties (id UInt64, name String, val Float64) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/ties', '{replica}') ORDER BY tuple()")
		added("ties", []rows{makeRows(1, 1000)}, insertOpts{}, 1000, "ORDER BY tuple(): a block")
		added("ties", []rows{makeRows(1, 1000)}, insertOpts{}, 0, "ORDER BY tuple(): the same block again")
		added("ties", []rows{shuffle(makeRows(1, 1000))}, insertOpts{}, 1000, "ORDER BY tuple(): the block's rows shuffled")

		// The same rows with the INSERT's columns in another order.
		added("same", block, insertOpts{columns: "val, id, name"}, 0, "the block with the INSERT's column list reordered")

		// The same rows through another client and protocol (HTTP,
		// TabSeparated): the block id depends on the part's data only.
		before := r1.Count(t, "same")
		r1.Exec(t, "INSERT INTO same (id, name, val) FORMAT TabSeparated\n"+tsv(makeRows(1, 1000)))
		t.Logf("the block's rows over HTTP as TabSeparated: %d rows added", r1.Count(t, "same")-before)
		if got := r1.Count(t, "same") - before; got != 0 {
			t.Errorf("the block's rows over HTTP: %d rows added, want 0", got)
		}

		// A subset and a superset of an inserted block are new blocks.
		added("same", []rows{makeRows(1, 999)}, insertOpts{}, 999, "the block's first 999 rows")
		added("same", []rows{makeRows(1, 1001)}, insertOpts{}, 1001, "the block plus one row")

		// The same rows as two INSERTs are two other blocks.
		before = r1.Count(t, "same")
		for _, half := range makeRows(1, 1000).split(500) {
			if err := insertChunks(ctx, c1, "same", []rows{half}, insertOpts{}); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("the block's rows as two INSERTs of 500: %d rows added", r1.Count(t, "same")-before)
		if r1.Count(t, "same")-before != 1000 {
			t.Fatalf("two halves of an inserted block: want both kept")
		}

		// insert_deduplicate = 0 turns it off.
		added("same", block, insertOpts{settings: ch.Settings{"insert_deduplicate": 0}}, 1000, "the block with insert_deduplicate=0")

		// A block spanning partitions is one block id per partition; the
		// re-insert is dropped in each.
		path = replicatedTable(t, "parts", "", "PARTITION BY id % 4", r1)
		added("parts", block, insertOpts{}, 1000, "a block over 4 partitions")
		added("parts", block, insertOpts{}, 0, "the block over 4 partitions again")
		if n := blockIDs(t, r1, path); n != 4 {
			t.Errorf("block ids of a block over 4 partitions = %d, want 4", n)
		}
	})

	t.Run("Settings", func(t *testing.T) {
		t.Logf("system.merge_tree_settings:\n%s", r1.Query(t,
			"SELECT name, value, changed FROM system.merge_tree_settings WHERE name LIKE '%dedup%' OR name LIKE 'cleanup_delay%' ORDER BY name"))
		t.Logf("system.settings:\n%s", r1.Query(t,
			"SELECT name, value, changed FROM system.settings WHERE name LIKE '%dedup%' OR name LIKE '%insert_block_size%' OR name = 'insert_quorum' ORDER BY name"))
		if got := r1.Query(t, "SELECT value FROM system.merge_tree_settings WHERE name = 'replicated_deduplication_window'"); got != "100" {
			t.Errorf("replicated_deduplication_window = %s", got)
		}
		if got := r1.Query(t, "SELECT value FROM system.settings WHERE name = 'insert_deduplicate'"); got != "1" {
			t.Errorf("insert_deduplicate = %q, want 1", got)
		}
		for _, name := range []string{"insert_deduplication_token", "non_replicated_deduplication_window", "async_insert"} {
			t.Logf("%s in system.settings/merge_tree_settings: %s", name, r1.Query(t,
				"SELECT count() FROM system.settings WHERE name = '"+name+"'")+"/"+r1.Query(t,
				"SELECT count() FROM system.merge_tree_settings WHERE name = '"+name+"'"))
		}

		// insert_deduplication_token through the native protocol (an int
		// value: this server takes no string settings from clickhouse-go).
		replicatedTable(t, "tok", "", "", r1)
		err := insertChunks(ctx, c1, "tok", []rows{makeRows(1, 3)}, insertOpts{settings: ch.Settings{"insert_deduplication_token": 1}})
		t.Logf("native INSERT with insert_deduplication_token=1: %v", err)
		if err == nil {
			t.Errorf("insert_deduplication_token accepted")
		}
		var exc *ch.Exception
		if errors.As(err, &exc) {
			t.Logf("  exception code %d name %q message %q", exc.Code, exc.Name, exc.Message)
		}
		// ... and as a string over HTTP.
		_, err = r1.QueryErr("INSERT INTO tok (id, name, val) SETTINGS insert_deduplication_token = 'a' VALUES (1, 'a', 1)")
		t.Logf("HTTP INSERT ... SETTINGS insert_deduplication_token = 'a': %v", err)
		// Through the URL (settings as HTTP parameters).
		_, err = r1.queryURL("insert_deduplication_token=a", "INSERT INTO tok (id, name, val) VALUES (1, 'a', 1)")
		t.Logf("HTTP ?insert_deduplication_token=a: %v", err)
		if err == nil {
			t.Errorf("insert_deduplication_token accepted over HTTP")
		}

		_, err = r1.QueryErr("CREATE TABLE nrdw (id UInt64) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 100")
		t.Logf("MergeTree SETTINGS non_replicated_deduplication_window = 100: %v", err)
		if err == nil {
			t.Errorf("non_replicated_deduplication_window accepted")
		}
	})

	t.Run("Window", func(t *testing.T) {
		// Only the last replicated_deduplication_window blocks are
		// remembered; older ids are removed by a cleanup thread that runs
		// every cleanup_delay_period (+ random add) seconds.
		path := replicatedTable(t, "win", "", "SETTINGS replicated_deduplication_window = 3, cleanup_delay_period = 1, cleanup_delay_period_random_add = 0", r1)
		first := []rows{makeRows(1, 10)}
		if err := insertChunks(ctx, c1, "win", first, insertOpts{}); err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			if err := insertChunks(ctx, c1, "win", []rows{makeRows(uint64(100*(i+1)), 10)}, insertOpts{}); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("block ids right after 5 blocks with window 3: %d", blockIDs(t, r1, path))
		WaitFor(t, "the cleanup down to the window's 3 block ids", 30*time.Second, func() bool { return blockIDs(t, r1, path) <= 3 })
		t.Logf("block ids after cleanup: %d", blockIDs(t, r1, path))
		if err := insertChunks(ctx, c1, "win", first, insertOpts{}); err != nil {
			t.Fatal(err)
		}
		t.Logf("first block re-inserted after 4 newer blocks (window 3): count %d (60 = a duplicate was written)", r1.Count(t, "win"))
		mustCount(t, r1, "win", 60, "re-insert beyond the window")
	})

	t.Run("LargeBlocks", func(t *testing.T) {
		path := replicatedTable(t, "big", "", "", r1)
		all := makeRows(1, 200_000)
		same := all.split(50_000, 50_000, 50_000)
		if err := insertChunks(ctx, c1, "big", same, insertOpts{}); err != nil {
			t.Fatal(err)
		}
		if err := insertChunks(ctx, c1, "big", same, insertOpts{}); err != nil {
			t.Fatal(err)
		}
		mustCount(t, r1, "big", 200_000, "a 200k-row batch of 4 chunks inserted twice")
		// Other chunk boundaries, one batch: the same block on the wire.
		if err := insertChunks(ctx, c1, "big", all.split(70_000, 70_000), insertOpts{}); err != nil {
			t.Fatal(err)
		}
		mustCount(t, r1, "big", 200_000, "the 200k rows re-inserted as 3 other chunks in one batch")
		// One Data packet per chunk in the one INSERT: squashed back into
		// one block by the server (min_insert_block_size_rows 1048576).
		if err := insertChunks(ctx, c1, "big", same, insertOpts{flush: true}); err != nil {
			t.Fatal(err)
		}
		t.Logf("the 200k rows re-inserted with Flush after each 50k chunk (4 Data packets, one INSERT): count %d", r1.Count(t, "big"))
		mustCount(t, r1, "big", 200_000, "the 200k rows re-inserted as 4 Data packets in one INSERT")
		if n := blockIDs(t, r1, path); n != 1 {
			t.Errorf("block ids = %d, want 1", n)
		}

		r1.Exec(t, "DROP TABLE big")

		// Above max_insert_block_size, shown with the setting lowered to
		// 100000 so that the test stays fast (the 1.2M-row run with the
		// default 1048576, below, gives the same results).
		path = replicatedTable(t, "big2", "", "", r1)
		small := ch.Settings{"max_insert_block_size": 100_000}
		for i := range 2 {
			if err := insertChunks(ctx, c1, "big2", same, insertOpts{settings: small}); err != nil {
				t.Fatal(err)
			}
			if ids := blockIDs(t, r1, path); ids != 1 {
				t.Errorf("200k-row native batch %d with max_insert_block_size 100000: %d block ids, want 1 (native blocks are not cut)", i+1, ids)
			}
		}
		mustCount(t, r1, "big2", 200_000, "200k-row native batch with max_insert_block_size 100000, twice")
		// A format the server parses (here TabSeparated over HTTP) is cut
		// into blocks of max_insert_block_size rows, which are then
		// squashed again up to min_insert_block_size_rows (1048576): with
		// only max_insert_block_size lowered the 200k rows stay one block,
		// with both lowered they make 2 blocks.
		for _, c := range []struct {
			table, params string
			ids           int
		}{
			{"big3a", "max_insert_block_size=100000", 1},
			{"big3b", "max_insert_block_size=100000&min_insert_block_size_rows=100000", 2},
		} {
			path = replicatedTable(t, c.table, "", "", r1)
			body := "INSERT INTO " + c.table + " (id, name, val) FORMAT TabSeparated\n" + tsv(all)
			for range 2 {
				if _, err := r1.queryURL(c.params, body); err != nil {
					t.Fatal(err)
				}
			}
			ids := blockIDs(t, r1, path)
			t.Logf("200k rows as HTTP TabSeparated with %s, twice: %d block ids, count %d", c.params, ids, r1.Count(t, c.table))
			if ids != c.ids {
				t.Errorf("200k rows as HTTP TabSeparated with %s: %d block ids, want %d", c.params, ids, c.ids)
			}
			mustCount(t, r1, c.table, 200_000, "200k rows as HTTP TabSeparated, twice")
		}
		// Several Data packets in one INSERT are squashed up to
		// min_insert_block_size_rows: with it lowered to 100000, 4 packets
		// of 50k make 2 blocks of 100k, which are not the 200k block.
		path = replicatedTable(t, "big4", "", "", r1)
		if err := insertChunks(ctx, c1, "big4", same, insertOpts{}); err != nil {
			t.Fatal(err)
		}
		squash := ch.Settings{"min_insert_block_size_rows": 100_000}
		for range 2 {
			if err := insertChunks(ctx, c1, "big4", same, insertOpts{flush: true, settings: squash}); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("200k rows as one block, then twice as 4 Data packets of 50k with min_insert_block_size_rows 100000: count %d, block ids %d",
			r1.Count(t, "big4"), blockIDs(t, r1, path))
		mustCount(t, r1, "big4", 400_000, "one 200k block, then 2 blocks of 100k twice")
		for _, tbl := range []string{"big2", "big3a", "big3b", "big4"} {
			r1.Exec(t, "DROP TABLE "+tbl)
		}

		if os.Getenv("ETL_TEST_LARGE") == "" {
			t.Log("set ETL_TEST_LARGE=1 to run the 1.2M-row checks with the default max_insert_block_size (about 15 s, 60 s with -race)")
			return
		}
		// Above max_insert_block_size (1048576) through the native protocol.
		path = replicatedTable(t, "big5", "", "", r1)
		huge := makeRows(1, 1_200_000)
		begin := time.Now()
		if err := insertChunks(ctx, c1, "big5", huge.split(400_000, 400_000), insertOpts{}); err != nil {
			t.Fatal(err)
		}
		ids := blockIDs(t, r1, path)
		t.Logf("1.2M-row native batch: inserted in %v, %d block id(s)", time.Since(begin).Round(time.Millisecond), ids)
		if ids != 1 {
			t.Errorf("1.2M-row native batch: %d block ids, want 1 (the server does not cut native blocks)", ids)
		}
		if err := insertChunks(ctx, c1, "big5", huge.split(400_000, 400_000), insertOpts{}); err != nil {
			t.Fatal(err)
		}
		t.Logf("1.2M-row native batch re-inserted: count %d", r1.Count(t, "big5"))
		mustCount(t, r1, "big5", 1_200_000, "1.2M-row native batch inserted twice")
		if err := insertChunks(ctx, c1, "big5", huge.split(300_000, 300_000, 300_000), insertOpts{flush: true}); err != nil {
			t.Fatal(err)
		}
		t.Logf("1.2M rows re-inserted as 4 Data packets of 300k in one INSERT: count %d, block ids %d", r1.Count(t, "big5"), blockIDs(t, r1, path))
		mustCount(t, r1, "big5", 1_200_000, "1.2M rows re-inserted as 4 Data packets of 300k")

		// Through a format the server parses (HTTP TabSeparated), the
		// server cuts blocks of max_insert_block_size rows.
		path = replicatedTable(t, "big6", "", "", r1)
		body := "INSERT INTO big6 (id, name, val) FORMAT TabSeparated\n" + tsv(huge)
		r1.Exec(t, body)
		ids1 := blockIDs(t, r1, path)
		r1.Exec(t, body)
		t.Logf("1.2M rows as HTTP TabSeparated: %d block id(s); inserted twice: count %d", ids1, r1.Count(t, "big6"))
		if ids1 != 2 {
			t.Errorf("1.2M rows as HTTP TabSeparated: %d block ids, want 2 (1048576 + 151424 rows)", ids1)
		}
		mustCount(t, r1, "big6", 1_200_000, "1.2M rows as HTTP TabSeparated inserted twice")
		for _, tbl := range []string{"big5", "big6"} {
			r1.Exec(t, "DROP TABLE "+tbl)
		}
	})

	t.Run("TwoReplicas", func(t *testing.T) {
		replicatedTable(t, "rep", "", "", r1, r2)
		block := makeRows(1, 5000).split(2500)
		if err := insertChunks(ctx, c1, "rep", block, insertOpts{}); err != nil {
			t.Fatal(err)
		}
		if err := insertChunks(ctx, c2, "rep", block, insertOpts{}); err != nil {
			t.Fatal(err)
		}
		begin := time.Now()
		r1.Exec(t, "SYSTEM SYNC REPLICA rep")
		r2.Exec(t, "SYSTEM SYNC REPLICA rep")
		t.Logf("SYSTEM SYNC REPLICA on both took %v", time.Since(begin).Round(time.Millisecond))
		mustCount(t, r1, "rep", 5000, "replica r1 after the block went to r1 then r2")
		mustCount(t, r2, "rep", 5000, "replica r2 after the block went to r1 then r2")
		if log := grepLog(t, r2, "already exists; ignoring it"); log != "" {
			t.Logf("r2 server log: %s", log)
		}

		// The same block inserted on both replicas at the same instant,
		// several times: one copy each time.
		for i := range 5 {
			blk := []rows{makeRows(uint64(100_000*(i+1)), 3000)}
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for j, c := range []driver.Conn{c1, c2} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[j] = insertChunks(ctx, c, "rep", blk, insertOpts{})
				}()
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatalf("concurrent insert %d: %v", i, err)
			}
		}
		r1.Exec(t, "SYSTEM SYNC REPLICA rep")
		r2.Exec(t, "SYSTEM SYNC REPLICA rep")
		mustCount(t, r1, "rep", 5000+5*3000, "r1 after 5 blocks inserted on both replicas at once")
		mustCount(t, r2, "rep", 5000+5*3000, "r2 after 5 blocks inserted on both replicas at once")
	})

	t.Run("Restarts", func(t *testing.T) {
		path := replicatedTable(t, "rst", "", "", r1)
		block := []rows{makeRows(1, 1000)}
		if err := insertChunks(ctx, c1, "rst", block, insertOpts{}); err != nil {
			t.Fatal(err)
		}
		// ClickHouse killed and restarted: the block ids are in ZooKeeper.
		r1.Kill9(t)
		r1.Start(t)
		c := nativeConn(t, r1)
		if err := insertChunks(ctx, c, "rst", block, insertOpts{}); err != nil {
			t.Fatalf("insert after ClickHouse restart: %v", err)
		}
		mustCount(t, r1, "rst", 1000, "re-insert after kill -9 and restart of ClickHouse")

		// ZooKeeper stopped: an insert fails; started again: the server
		// reconnects and the re-insert is still dropped.
		zk.Stop(t)
		err := insertChunks(ctx, c, "rst", block, insertOpts{})
		t.Logf("insert while ZooKeeper is stopped: %v", err)
		var exc *ch.Exception
		if errors.As(err, &exc) {
			t.Logf("  exception code %d name %q", exc.Code, exc.Name)
		}
		if err == nil {
			t.Errorf("insert succeeded with ZooKeeper stopped")
		}
		zk.Start(t)
		begin := time.Now()
		seen := map[string]bool{}
		Eventually(t, "an insert after ZooKeeper restarted", 60*time.Second, func() error {
			err := insertChunks(ctx, c, "rst", block, insertOpts{})
			if err != nil && !seen[err.Error()] {
				seen[err.Error()] = true
				t.Logf("insert %v after ZooKeeper restarted: %v", time.Since(begin).Round(time.Millisecond), err)
			}
			return err
		})
		t.Logf("insert succeeded %v after ZooKeeper restarted", time.Since(begin).Round(time.Millisecond))
		mustCount(t, r1, "rst", 1000, "re-insert after ZooKeeper restart")
		if n := blockIDs(t, r1, path); n != 1 {
			t.Fatalf("block ids = %d, want 1", n)
		}
	})

	t.Run("PlainMergeTreeAndEngines", func(t *testing.T) {
		r1.Exec(t, "CREATE TABLE plain (id UInt64, name String, val Float64) ENGINE = MergeTree ORDER BY id")
		block := []rows{makeRows(1, 1000)}
		for range 2 {
			if err := insertChunks(ctx, c1, "plain", block, insertOpts{}); err != nil {
				t.Fatal(err)
			}
		}
		mustCount(t, r1, "plain", 2000, "plain MergeTree, the same block twice")

		r1.SetClusters(t, map[string][]CHShard{"c": {{Replicas: []string{r1.TCPAddr(), r2.TCPAddr()}, InternalReplication: true}}})

		for _, q := range []string{
			"CREATE TABLE e_rrep (id UInt64, v UInt64) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/e_rrep', '{replica}') ORDER BY id",
			"CREATE TABLE e_rsum (id UInt64, v UInt64) ENGINE = ReplicatedSummingMergeTree('/clickhouse/tables/{shard}/e_rsum', '{replica}') ORDER BY id",
			"CREATE TABLE e_ragg (id UInt64, v AggregateFunction(sum, UInt64)) ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/e_ragg', '{replica}') ORDER BY id",
			"CREATE TABLE e_rcol (id UInt64, sign Int8) ENGINE = ReplicatedCollapsingMergeTree('/clickhouse/tables/{shard}/e_rcol', '{replica}', sign) ORDER BY id",
			"CREATE TABLE e_rvcol (id UInt64, sign Int8, ver UInt64) ENGINE = ReplicatedVersionedCollapsingMergeTree('/clickhouse/tables/{shard}/e_rvcol', '{replica}', sign, ver) ORDER BY id",
			// The old syntax: date column, primary key tuple, granularity.
			"CREATE TABLE e_rold (d Date, id UInt64) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/e_rold', '{replica}', d, (id), 8192)",
			"CREATE TABLE e_rep (id UInt64) ENGINE = ReplacingMergeTree ORDER BY id",
			"CREATE TABLE e_dist (id UInt64, name String, val Float64) ENGINE = Distributed('c', default, plain)",
			"CREATE TABLE e_buf (id UInt64, name String, val Float64) ENGINE = Buffer(default, plain, 1, 10, 100, 10000, 1000000, 10000000, 100000000)",
			"CREATE MATERIALIZED VIEW e_mv ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/e_mv', '{replica}') ORDER BY id AS SELECT id FROM plain",
			"CREATE TABLE e_mem (id UInt64) ENGINE = Memory",
			"CREATE TABLE e_log (id UInt64) ENGINE = Log",
		} {
			r1.Exec(t, q)
		}
		t.Logf("system.tables:\n%s", r1.Query(t,
			"SELECT name, engine, engine_full FROM system.tables WHERE database = currentDatabase() ORDER BY name FORMAT TSVWithNames"))
		// The rule the pipeline can use: engine LIKE 'Replicated%MergeTree'.
		got := r1.Query(t, "SELECT groupArray(name) FROM (SELECT name FROM system.tables WHERE database = currentDatabase() AND engine LIKE 'Replicated%MergeTree' ORDER BY name)")
		t.Logf("tables with engine LIKE 'Replicated%%MergeTree': %s", got)
	})
}

// tsv returns r as TabSeparated rows.
func tsv(r rows) string {
	var b strings.Builder
	for i := range r.ids {
		b.WriteString(strconv.FormatUint(r.ids[i], 10))
		b.WriteByte('\t')
		b.WriteString(r.names[i])
		b.WriteByte('\t')
		b.WriteString(strconv.FormatFloat(r.vals[i], 'g', -1, 64))
		b.WriteByte('\n')
	}
	return b.String()
}

// queryURL runs query over HTTP with extra URL parameters (settings).
func (ch *CH) queryURL(params, query string) (string, error) {
	req, err := http.NewRequest(http.MethodPost, "http://"+ch.HTTPAddr()+"/?"+params, strings.NewReader(query))
	if err != nil {
		return "", err
	}
	resp, err := ch.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return string(body), nil
}

// grepLog returns the first line of the server's log containing s.
func grepLog(t *testing.T, srv *CH, s string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(srv.Dir(), "log", "clickhouse-server.log"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}
