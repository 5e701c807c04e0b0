package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/offsets"
)

// etlCmd runs the etl binary with args and returns its exit code, stdout
// and stderr.
func etlCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	bin := testenv.Build(t, "./cmd/etl")
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("etl %v: %v", args, err)
	}
	return code, out.String(), errb.String()
}

// TestOffsetsAndResetByTime: etl offsets reports what the broker holds
// (committed offsets, log ends, lag, the group's state and members); a
// reset is refused with exit 2 while the group has a member, changes
// nothing without -execute, and with it moves the group to the first
// record at or after a time, so the next run writes exactly the records
// produced after that time.
func TestOffsetsAndResetByTime(t *testing.T) {
	e := newEnv(t)
	const half = 3000 // per partition: offsets 0..499 before the time, 500..999 after
	e.produce(0, half)
	// Record timestamps are whole milliseconds of this machine's clock,
	// taken when each record is produced: the reset time is the first
	// millisecond after the first half was acknowledged, and the second
	// half is produced once the clock has reached it.
	at := time.Now().UTC().Truncate(time.Millisecond).Add(time.Millisecond)
	testenv.WaitFor(t, "the clock to reach the reset time", time.Second, func() bool { return !time.Now().Before(at) })
	e.produce(half, half)
	const group = "offsets"
	cfg := e.config(group, "")

	p := startETL(t, cfg)
	e.waitRows(2*half, time.Minute, p)
	e.waitCommitted(group, 30*time.Second)

	// While etl runs: one member, holding every partition; a reset is
	// refused and changes nothing.
	code, out, errOut := etlCmd(t, "offsets", "-config", cfg, "-format", "json")
	if code != 0 {
		t.Fatalf("etl offsets: exit %d: %s", code, errOut)
	}
	var r offsets.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("etl offsets -format json: %v\n%s", err, out)
	}
	if r.State != "Stable" || len(r.Members) != 1 || fmt.Sprint(r.Members[0].Assigned[topic]) != "[0 1 2 3 4 5]" {
		t.Fatalf("with etl running: state %q, members %+v", r.State, r.Members)
	}
	code, _, errOut = etlCmd(t, "offsets", "reset", "-config", cfg, "-to", at.Format(time.RFC3339Nano), "-execute")
	if code != 2 || !strings.Contains(errOut, "the group has members") {
		t.Fatalf("reset while running: exit %d, stderr %q; want 2 naming the members", code, errOut)
	}
	if got := e.kb.CommittedOffsets(t, group, topic); fmt.Sprint(got) != fmt.Sprint(map[int32]int64{0: 1000, 1: 1000, 2: 1000, 3: 1000, 4: 1000, 5: 1000}) {
		t.Fatalf("a refused reset moved the offsets: %v", got)
	}
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("etl exited %d", code)
	}

	// Stopped: what etl offsets says is what the broker holds.
	code, out, errOut = etlCmd(t, "offsets", "-config", cfg, "-format", "json")
	if code != 0 {
		t.Fatalf("etl offsets: exit %d: %s", code, errOut)
	}
	r = offsets.Report{}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	committed, ends := e.kb.CommittedOffsets(t, group, topic), e.kb.EndOffsets(t, topic)
	if r.Group != group || r.State != "Empty" || len(r.Members) != 0 || len(r.Partitions) != partitions {
		t.Fatalf("report: group %q state %q members %v, %d partitions", r.Group, r.State, r.Members, len(r.Partitions))
	}
	for _, pt := range r.Partitions {
		if pt.Topic != topic || pt.Committed != committed[pt.Partition] || pt.End != ends[pt.Partition] || pt.Start != 0 || pt.Lag != 0 || len(pt.Pending) != 0 {
			t.Fatalf("partition %+v; the broker has committed %d, end %d", pt, committed[pt.Partition], ends[pt.Partition])
		}
	}
	code, out, _ = etlCmd(t, "offsets", "-config", cfg)
	if code != 0 || !strings.Contains(out, "group offsets: state Empty, 0 member(s)") || !strings.Contains(out, "total lag: 0 records") {
		t.Fatalf("etl offsets (text): exit %d\n%s", code, out)
	}

	// The plan changes nothing.
	code, out, errOut = etlCmd(t, "offsets", "reset", "-config", cfg, "-to", at.Format(time.RFC3339Nano))
	if code != 0 || !strings.Contains(out, "plan (nothing changes") || !strings.Contains(out, "events/3: 1000 -> 500") {
		t.Fatalf("reset plan: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := e.kb.CommittedOffsets(t, group, topic); fmt.Sprint(got) != fmt.Sprint(committed) {
		t.Fatalf("the plan moved the offsets: %v", got)
	}
	code, out, errOut = etlCmd(t, "offsets", "reset", "-config", cfg, "-to", at.Format(time.RFC3339Nano), "-execute")
	if code != 0 || !strings.Contains(out, "moved 6 partition(s)") {
		t.Fatalf("reset -execute: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := e.kb.CommittedOffsets(t, group, topic); fmt.Sprint(got) != fmt.Sprint(map[int32]int64{0: 500, 1: 500, 2: 500, 3: 500, 4: 500, 5: 500}) {
		t.Fatalf("after the reset the group is at %v, want 500 everywhere", got)
	}

	// The replay writes exactly the records produced after the time.
	e.ch.Exec(t, "TRUNCATE TABLE default.events")
	p = startETL(t, cfg)
	e.waitRows(half, time.Minute, p)
	e.waitCommitted(group, 30*time.Second)
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("etl exited %d", code)
	}
	if got, want := e.ch.Query(t, "SELECT count(), uniqExact(id), min(id), max(id) FROM default.events"), fmt.Sprintf("%d\t%d\t%d\t%d", half, half, half, 2*half-1); got != want {
		t.Fatalf("after the replay: count, distinct, min, max = %s, want %s", got, want)
	}
}
