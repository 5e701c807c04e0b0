package clickhouse

import (
	"context"
	"fmt"
	"strings"

	ch "github.com/ClickHouse/clickhouse-go/v2"
)

// TableExists reports whether the client's table exists on its server.
func (c *Client) TableExists(ctx context.Context) (bool, error) {
	var n uint8
	q := "EXISTS TABLE " + quoteIdent(c.db) + "." + quoteIdent(c.opts.Table)
	if err := c.conn.QueryRow(ctx, q).Scan(&n); err != nil {
		return false, fmt.Errorf("clickhouse %v: %s: %w", c.opts.Addr, q, err)
	}
	return n == 1, nil
}

// Exec runs a statement (DDL) with the given query settings.
func (c *Client) Exec(ctx context.Context, query string, settings map[string]any) error {
	if len(settings) > 0 {
		ctx = ch.Context(ctx, ch.WithSettings(ch.Settings(settings)))
	}
	if err := c.conn.Exec(ctx, query); err != nil {
		return fmt.Errorf("clickhouse %v: %w", c.opts.Addr, err)
	}
	return nil
}

// codeIllegalColumn is the server's ILLEGAL_COLUMN, which an ALTER TABLE
// ADD COLUMN of an existing column answers.
const codeIllegalColumn = 44

// ColumnExists reports an ADD COLUMN refused because the column exists
// (a replicated table's other replica, or another etl, added it first).
func ColumnExists(err error) bool {
	code, ok := exceptionCode(err)
	return ok && code == codeIllegalColumn && strings.Contains(err.Error(), "already exists")
}

// Version is the server's version: the one read at connection, or else
// (a replica that did not answer then) asked now.
func (c *Client) Version(ctx context.Context) (string, error) {
	if c.version != "" {
		return c.version, nil
	}
	var v string
	if err := c.conn.QueryRow(ctx, "SELECT version()").Scan(&v); err != nil {
		return "", fmt.Errorf("clickhouse %v: SELECT version(): %w", c.opts.Addr, err)
	}
	return v, nil
}
