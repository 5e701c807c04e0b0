package clickhouse

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// scriptedParts answers each look with the next entry of its script (the
// last one repeats) and counts the looks.
type scriptedParts struct {
	script []partsAnswer
	looks  int
}

type partsAnswer struct {
	parts []Part
	err   error
}

func aged(age time.Duration, names ...string) []Part {
	var ps []Part
	for _, n := range names {
		ps = append(ps, Part{Name: n, Age: age})
	}
	return ps
}

func (p *scriptedParts) list(context.Context) ([]Part, error) {
	a := p.script[min(p.looks, len(p.script)-1)]
	p.looks++
	return slices.Clone(a.parts), a.err
}

func reportShard(t *testing.T) (*Shard, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	s := NewShard(ShardOptions{Name: "0", Log: slog.New(slog.NewTextHandler(&logs, nil))})
	return s, &logs
}

// TestReportOrphans: which parts the replica's answers make orphans, how
// often it looks, and what it says; the real server's side is
// pipeline.TestExactlyOnceUnknownInsertStatus.
func TestReportOrphans(t *testing.T) {
	denied := &clickhouse.Exception{Code: 497, Message: "Not enough privileges"}
	for _, tc := range []struct {
		name    string
		script  []partsAnswer
		looks   int
		orphans float64
		log     string
	}{
		{"none", []partsAnswer{{}}, 1, 0, ""},
		{"an old part", []partsAnswer{{parts: aged(time.Minute, "all_3_3_0")}}, 1, 1, "parts=[all_3_3_0]"},
		{"a young part registers", []partsAnswer{{parts: aged(orphanAge-10*time.Millisecond, "all_4_4_0")}, {}}, 2, 0, ""},
		{"a young part stays", []partsAnswer{
			{parts: append(aged(time.Minute, "all_3_3_0"), aged(orphanAge-10*time.Millisecond, "all_4_4_0")...)},
			{parts: aged(time.Minute, "all_3_3_0", "all_4_4_0")},
		}, 2, 2, "parts=\"[all_3_3_0 all_4_4_0]\""},
		{"parts unreadable", []partsAnswer{{err: denied}}, 1, 0, "cannot compare the replica's parts with ZooKeeper's"},
		{"not replicated", []partsAnswer{{err: errNotReplicated}}, 1, 0, ""},
		{"unreachable", []partsAnswer{{err: io.EOF}}, 1, 0, "cannot compare"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, logs := reportShard(t)
			p := &scriptedParts{script: tc.script}
			s.reportOrphans(context.Background(), p.list, "r1", "after an insert whose status was unknown")
			if p.looks != tc.looks {
				t.Errorf("looked %d times, want %d", p.looks, tc.looks)
			}
			if got := testutil.ToFloat64(s.m.orphans); got != tc.orphans {
				t.Errorf("etl_sink_orphan_parts_total = %v, want %v", got, tc.orphans)
			}
			if !strings.Contains(logs.String(), tc.log) {
				t.Errorf("log lacks %q:\n%s", tc.log, logs)
			}
			if tc.orphans > 0 && !strings.Contains(logs.String(), "the replica keeps parts that ZooKeeper never registered") {
				t.Errorf("orphans not named in the log:\n%s", logs)
			}
		})
	}
}

// TestCheckFirstOncePerShard: the first-insert check looks at every
// replica once; later inserts do not look again; a cancelled context ends
// it with false.
func TestCheckFirstOncePerShard(t *testing.T) {
	s, _ := reportShard(t)
	s.replicas = []*replica{{name: "r1"}, {name: "r2"}}
	looked := map[string]int{}
	s.parts = func(r *replica) partLister {
		return func(context.Context) ([]Part, error) { looked[r.name]++; return nil, nil }
	}
	for range 3 {
		if !s.checkFirst(context.Background()) {
			t.Fatal("checkFirst returned false")
		}
	}
	if looked["r1"] != 1 || looked["r2"] != 1 {
		t.Errorf("looks per replica = %v, want one each", looked)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s2, _ := reportShard(t)
	s2.replicas = []*replica{{name: "r1"}}
	s2.parts = func(*replica) partLister {
		return func(context.Context) ([]Part, error) { return nil, errors.New("unreachable") }
	}
	if s2.checkFirst(ctx) {
		t.Error("checkFirst returned true with a cancelled context")
	}
}

// TestReportOrphansOnce: two inserts that ended with 319 find the same
// orphans; each is counted and named once per shard.
func TestReportOrphansOnce(t *testing.T) {
	s, logs := reportShard(t)
	p := &scriptedParts{script: []partsAnswer{{parts: aged(time.Minute, "all_3_3_0", "all_4_4_0")}}}
	s.reportOrphans(context.Background(), p.list, "r1", "after an insert whose status was unknown")
	s.reportOrphans(context.Background(), p.list, "r1", "after an insert whose status was unknown")
	if got := testutil.ToFloat64(s.m.orphans); got != 2 {
		t.Errorf("etl_sink_orphan_parts_total = %v, want 2", got)
	}
	if n := strings.Count(logs.String(), "never registered"); n != 1 {
		t.Errorf("the orphans were named %d times, want once:\n%s", n, logs)
	}
	// The same part name on another replica is another orphan.
	s.reportOrphans(context.Background(), p.list, "r2", "after an insert whose status was unknown")
	if got := testutil.ToFloat64(s.m.orphans); got != 4 {
		t.Errorf("etl_sink_orphan_parts_total = %v after a second replica, want 4", got)
	}
}
