package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"syscall"
)

// ClusterShard is one shard of a cluster in system.clusters.
type ClusterShard struct {
	Num      uint32
	Weight   uint32
	Replicas []string // host_name:port and host_address:port of each replica
}

// ClusterShards reads the shards of cluster name from system.clusters, in
// shard order.
func (c *Client) ClusterShards(ctx context.Context, name string) ([]ClusterShard, error) {
	rows, err := c.conn.Query(ctx, "SELECT shard_num, shard_weight, host_name, host_address, port FROM system.clusters WHERE cluster = ? ORDER BY shard_num, replica_num", name)
	if err != nil {
		return nil, fmt.Errorf("read system.clusters: %w", err)
	}
	defer rows.Close()
	var out []ClusterShard
	for rows.Next() {
		var num, weight uint32
		var host, addr string
		var port uint16
		if err := rows.Scan(&num, &weight, &host, &addr, &port); err != nil {
			return nil, fmt.Errorf("read system.clusters: %w", err)
		}
		if len(out) == 0 || out[len(out)-1].Num != num {
			out = append(out, ClusterShard{Num: num, Weight: weight})
		}
		p := strconv.Itoa(int(port))
		last := &out[len(out)-1]
		last.Replicas = append(last.Replicas, net.JoinHostPort(host, p), net.JoinHostPort(addr, p))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read system.clusters: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no cluster named %q in system.clusters", name)
	}
	return out, nil
}

// ServerAnswered reports whether err came from a server that answered (an
// exception, or a problem found in its answer) rather than from failing to
// reach it.
func ServerAnswered(err error) bool {
	if _, ok := exceptionCode(err); ok {
		return true
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return false
	}
	return true
}

// Engine is the table engine of the client's table, as system.tables names
// it (e.g. ReplicatedMergeTree).
func (c *Client) Engine(ctx context.Context) (string, error) {
	var engine string
	if err := c.conn.QueryRow(ctx, "SELECT engine FROM system.tables WHERE database = ? AND name = ?", c.db, c.opts.Table).Scan(&engine); err != nil {
		return "", fmt.Errorf("read the engine of %s: %w", c.TableName(), err)
	}
	return engine, nil
}

// dedupWindowRE finds replicated_deduplication_window in the SETTINGS of a
// CREATE TABLE statement.
var dedupWindowRE = regexp.MustCompile(`(?i)\bSETTINGS\b.*\breplicated_deduplication_window\s*=\s*(\d+)`)

// DedupWindow is replicated_deduplication_window for the client's table:
// how many of the latest blocks inserted into a Replicated*MergeTree table
// it remembers, to drop a block identical to one of them. The table's own
// SETTINGS win over the server's merge_tree default.
func (c *Client) DedupWindow(ctx context.Context) (int64, error) {
	var create string
	if err := c.conn.QueryRow(ctx, "SHOW CREATE TABLE "+quoteIdent(c.db)+"."+quoteIdent(c.opts.Table)).Scan(&create); err != nil {
		return 0, fmt.Errorf("read the definition of %s: %w", c.TableName(), err)
	}
	if m := dedupWindowRE.FindStringSubmatch(create); m != nil {
		return strconv.ParseInt(m[1], 10, 64)
	}
	var v string
	if err := c.conn.QueryRow(ctx, "SELECT value FROM system.merge_tree_settings WHERE name = 'replicated_deduplication_window'").Scan(&v); err != nil {
		return 0, fmt.Errorf("read replicated_deduplication_window from system.merge_tree_settings: %w", err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("system.merge_tree_settings: replicated_deduplication_window = %q: %w", v, err)
	}
	return n, nil
}
