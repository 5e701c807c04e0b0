package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
)

// codeUnknownStatus is UNKNOWN_STATUS_OF_INSERT: a Replicated*MergeTree
// replica wrote the block's part and lost ZooKeeper while registering it.
// If the registration happened, a retry of the same block is dropped as a
// duplicate. If it did not, the block's id is not in ZooKeeper's /blocks
// and the retry inserts the block again, while the server keeps the part
// it wrote, active and read, though ZooKeeper does not list it: an orphan.
// The server queues the orphan for a check 300 s later that would detach
// it, but 18.16's check thread does not wake up for a delayed part unless
// something else schedules it, and skips a part written less than 300 s
// before the check: the orphan stays until the server restarts, which
// detaches every local part ZooKeeper does not list. Not retrying is no
// way out: the block would be lost at that restart. So the shard retries,
// then looks for orphans and reports them (reportOrphans).
const codeUnknownStatus = 319

// orphanAge is the age from which a part ZooKeeper does not list is an
// orphan rather than an insert finishing its commit (which takes
// milliseconds).
const orphanAge = 5 * time.Second

// maxOrphansSeen bounds the orphans a shard remembers having reported.
const maxOrphansSeen = 10_000

// Part is an active part of a table: its name and its age by the server's
// clock.
type Part struct {
	Name string
	Age  time.Duration
}

// unknownStatus reports whether err is UNKNOWN_STATUS_OF_INSERT.
func unknownStatus(err error) bool {
	code, ok := exceptionCode(err)
	return ok && code == codeUnknownStatus
}

// UnregisteredParts lists the active parts of the client's table that the
// replica's ZooKeeper node does not list, with their ages: parts being
// registered right now, and orphans (parts whose registration was cut,
// UNKNOWN_STATUS_OF_INSERT). It fails while the replica has no ZooKeeper
// session, and for a table that is not replicated (errNotReplicated).
func (c *Client) UnregisteredParts(ctx context.Context) ([]Part, error) {
	replicaPath, err := c.replicaPath(ctx)
	if err != nil {
		return nil, err
	}
	// system.zookeeper needs its path as a constant.
	q := "SELECT name, toUInt32(now()) - toUInt32(modification_time) FROM system.parts WHERE database = ? AND table = ? AND active AND name NOT IN (SELECT name FROM system.zookeeper WHERE path = " +
		quoteString(replicaPath+"/parts") + ") ORDER BY name"
	rows, err := c.conn.Query(ctx, q, c.db, c.opts.Table)
	if err != nil {
		return nil, fmt.Errorf("compare the parts of %s with ZooKeeper's: %w", c.TableName(), err)
	}
	defer rows.Close()
	var parts []Part
	for rows.Next() {
		var n string
		var age int64
		if err := rows.Scan(&n, &age); err != nil {
			return nil, fmt.Errorf("compare the parts of %s with ZooKeeper's: %w", c.TableName(), err)
		}
		parts = append(parts, Part{Name: n, Age: time.Duration(age) * time.Second})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("compare the parts of %s with ZooKeeper's: %w", c.TableName(), err)
	}
	return parts, nil
}

// replicaPath is the table's replica_path in system.replicas.
func (c *Client) replicaPath(ctx context.Context) (string, error) {
	rows, err := c.conn.Query(ctx, "SELECT replica_path FROM system.replicas WHERE database = ? AND table = ?", c.db, c.opts.Table)
	if err != nil {
		return "", fmt.Errorf("read the replica path of %s from system.replicas: %w", c.TableName(), err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return "", fmt.Errorf("read the replica path of %s from system.replicas: %w", c.TableName(), err)
		}
		return "", errNotReplicated
	}
	var path string
	if err := rows.Scan(&path); err != nil {
		return "", fmt.Errorf("read the replica path of %s from system.replicas: %w", c.TableName(), err)
	}
	return path, nil
}

// errNotReplicated: the table has no row in system.replicas.
var errNotReplicated = errors.New("the table is not replicated")

// quoteString quotes s as a ClickHouse string literal.
func quoteString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// partLister lists a replica's unregistered parts (Client.UnregisteredParts).
type partLister func(ctx context.Context) ([]Part, error)

// reportOrphans looks for orphans on a replica: active parts of the table
// that ZooKeeper does not list, orphanAge old or older (a younger one is
// looked at again once it is that old, in case its insert registers it
// meanwhile). Each is counted in etl_sink_orphan_parts_total and named in
// an error, once per shard: its rows read twice if a retry inserted its block again, until
// the replica restarts. when says when the look is made. A failed look is
// logged and ends the report; ctx ending ends it silently.
func (s *Shard) reportOrphans(ctx context.Context, list partLister, replicaName, when string) {
	var orphans []string
	for look := 0; look < 2; look++ {
		parts, err := list(ctx)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errNotReplicated) {
			return
		}
		if err != nil {
			s.log.Warn(when+": cannot compare the replica's parts with ZooKeeper's, so parts it keeps unregistered would go unreported (reading system.parts, system.replicas and system.zookeeper is needed)",
				slog.String("replica", replicaName), slog.Any("error", err))
			return
		}
		young := time.Duration(0)
		orphans = orphans[:0]
		for _, p := range parts {
			if p.Age >= orphanAge {
				orphans = append(orphans, p.Name)
			} else {
				young = max(young, orphanAge-p.Age)
			}
		}
		if young == 0 || look == 1 || !s.sleep(ctx, young) {
			break
		}
	}
	if ctx.Err() != nil {
		return
	}
	// Each orphan once: the inserts that ended with 319 together find
	// the same parts.
	s.orphanMu.Lock()
	orphans = slices.DeleteFunc(orphans, func(name string) bool {
		key := replicaName + " " + name
		if s.orphansSeen[key] || len(s.orphansSeen) >= maxOrphansSeen {
			return true
		}
		if s.orphansSeen == nil {
			s.orphansSeen = map[string]bool{}
		}
		s.orphansSeen[key] = true
		return false
	})
	s.orphanMu.Unlock()
	if len(orphans) == 0 {
		return
	}
	s.m.orphans.Add(float64(len(orphans)))
	s.log.Error(when+": the replica keeps parts that ZooKeeper never registered (an insert that ended with UNKNOWN_STATUS_OF_INSERT): "+
		"their rows read twice if the retry inserted their block again, until the replica restarts and detaches them; "+
		"restart it to fix that now (servers from 19.x: ALTER TABLE ... DETACH PART); see docs/RUNBOOK.md",
		slog.String("replica", replicaName), slog.Any("parts", orphans))
}

// checkFirst reports the orphans of every replica before the shard's
// first insert (a previous run may have left some); the other insert
// goroutines wait for it. It returns false when ctx ends.
func (s *Shard) checkFirst(ctx context.Context) bool {
	s.firstMu.Lock()
	defer s.firstMu.Unlock()
	if s.firstDone {
		return true
	}
	for _, r := range s.replicas {
		s.reportOrphans(ctx, s.lister(r), r.name, "before the first insert")
		if ctx.Err() != nil {
			return false
		}
	}
	s.firstDone = true
	return true
}

// lister lists r's parts that ZooKeeper lacks.
func (s *Shard) lister(r *replica) partLister {
	if s.parts != nil {
		return s.parts(r)
	}
	if l, ok := r.c.(partsLister); ok {
		return l.UnregisteredParts
	}
	return func(context.Context) ([]Part, error) { return nil, errNotReplicated }
}
