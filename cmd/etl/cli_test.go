package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// cliConfig writes a pipeline file reading topic events of the brokers at
// kafka (with sasl, a flow mapping or "") into default.events at chAddr.
func cliConfig(t *testing.T, kafka, sasl, chAddr, extra string) string {
	t.Helper()
	if sasl != "" {
		sasl = "\n    sasl: " + sasl
	}
	return writeFile(t, "pipeline.yaml", fmt.Sprintf(`pipeline: {name: cli}
source:
  kafka:
    brokers: [%q]
    topics: [events]
    group_id: cli%s
sink:
  clickhouse:
    addr: [%q]
    table: events
    dial_timeout: 2s
metrics: {listen: "off"}
%s`, kafka, sasl, chAddr, extra))
}

// runCLI runs etl with args and returns its exit code, stdout, stderr and
// how long it took.
func runCLI(t *testing.T, args ...string) (int, string, string, time.Duration) {
	t.Helper()
	var out, errb bytes.Buffer
	start := time.Now()
	code := run(args, &out, &errb)
	took := time.Since(start)
	t.Logf("etl %s: exit %d in %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, took.Round(time.Millisecond), out.String(), errb.String())
	return code, out.String(), errb.String(), took
}

// saslBroker is a broker that takes SCRAM-SHA-256 logins of user etl with
// password "right", with the topic events of 2 partitions.
func saslBroker(t *testing.T) *testenv.Broker {
	return testenv.Kafka(t, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "etl", "right"), kfake.SeedTopics(2, "events"))
}

const wrongPassword = "{mechanism: SCRAM-SHA-256, username: etl, password: wrong}"

// TestOffsetsWrongPassword: etl offsets with a wrong SASL password says
// within seconds that the brokers refused the login of the user, and
// exits 2 (the configuration must change).
func TestOffsetsWrongPassword(t *testing.T) {
	kb := saslBroker(t)
	cfg := cliConfig(t, kb.Addr(), wrongPassword, "127.0.0.1:1", "")
	code, _, errOut, took := runCLI(t, "offsets", "-config", cfg)
	if code != exitUsage || !strings.HasPrefix(errOut, `etl offsets: source.kafka.sasl: the brokers refused the SASL authentication of user "etl"`) {
		t.Fatalf("exit %d, stderr %q; want 2 naming the refused login first", code, errOut)
	}
	if took > 5*time.Second {
		t.Fatalf("took %v to name the refused login", took)
	}
	code, _, errOut, _ = runCLI(t, "offsets", "reset", "-config", cfg, "-to", "earliest")
	if code != exitUsage || !strings.Contains(errOut, "refused the SASL authentication") {
		t.Fatalf("offsets reset: exit %d, stderr %q", code, errOut)
	}
}

// TestOffsetsUnreachable: etl offsets against a port nothing listens on
// fails within its -timeout naming the refused connection.
func TestOffsetsUnreachable(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	cfg := cliConfig(t, addr, "", "127.0.0.1:1", "")
	code, _, errOut, took := runCLI(t, "offsets", "-config", cfg, "-timeout", "3s")
	if code != exitFailed || !strings.Contains(errOut, "etl offsets: source.kafka.brokers "+addr+": cannot connect: ") ||
		!strings.Contains(errOut, "connection refused (nothing listens on that address") {
		t.Fatalf("exit %d, stderr %q; want 1 naming the refused connection", code, errOut)
	}
	if took > 10*time.Second {
		t.Fatalf("took %v with -timeout 3s", took)
	}
}

// TestValidateConnectRefusals: validate -connect names a refused SASL
// login at once and first, and a ClickHouse address that is the HTTP
// port as such, each within seconds; a missing dead-letter topic is
// reported once.
func TestValidateConnectRefusals(t *testing.T) {
	ch := testenv.ClickHouse(t)
	ch.Exec(t, gen.TableDDL("default", "events"))
	kb := saslBroker(t)

	cfg := cliConfig(t, kb.Addr(), wrongPassword, ch.TCPAddr(), "")
	code, _, errOut, took := runCLI(t, "validate", "-connect", "-config", cfg)
	if code != exitUsage || !strings.HasPrefix(errOut, `source.kafka.sasl: the brokers refused the SASL authentication of user "etl"`) || strings.Contains(errOut, "is SASL enabled on this listener") {
		t.Fatalf("wrong password: exit %d, stderr %q; want 2 naming the refused login first", code, errOut)
	}
	if took > 5*time.Second {
		t.Fatalf("wrong password: took %v", took)
	}

	right := "{mechanism: SCRAM-SHA-256, username: etl, password: right}"
	cfg = cliConfig(t, kb.Addr(), right, ch.HTTPAddr(), "")
	code, _, errOut, took = runCLI(t, "validate", "-connect", "-config", cfg)
	if code != exitFailed || !strings.HasPrefix(errOut, "sink default: "+ch.HTTPAddr()+" answers HTTP like ClickHouse's HTTP interface: sink.clickhouse.addr takes the native protocol port") {
		t.Fatalf("HTTP port: exit %d, stderr %q; want 1 with the HTTP-port hint", code, errOut)
	}
	if took > 3*time.Second {
		t.Fatalf("HTTP port: took %v", took)
	}

	cfg = cliConfig(t, kb.Addr(), right, ch.TCPAddr(), "decode: {format: json, on_error: dlq, dlq: {topic: events.dlq}}\n")
	code, _, errOut, _ = runCLI(t, "validate", "-connect", "-config", cfg)
	if n := strings.Count(errOut, `"events.dlq" does not exist`); code != exitUsage || n != 1 {
		t.Fatalf("missing dead-letter topic: exit %d, named %d times in stderr %q; want 2 and once", code, n, errOut)
	}
}

// TestOffsetsResetLiveMembers: offsets reset -execute while the group has
// a member refuses with exit 2 naming the members, before printing any
// plan, and moves nothing.
func TestOffsetsResetLiveMembers(t *testing.T) {
	kb := testenv.Kafka(t, kfake.SeedTopics(2, "events"))
	cfg := cliConfig(t, kb.Addr(), "", "127.0.0.1:1", "")
	member := kb.Client(t, kgo.ConsumerGroup("cli"), kgo.ConsumeTopics("events"))
	adm := kadm.NewClient(kb.Client(t))
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		member.PollFetches(ctx) // joins the group
		cancel()
		ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
		groups, err := adm.DescribeGroups(ctx, "cli")
		cancel()
		if err == nil && len(groups["cli"].Members) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the member did not join within 30s: %v", err)
		}
	}
	code, out, errOut, _ := runCLI(t, "offsets", "reset", "-config", cfg, "-to", "earliest", "-execute")
	if code != exitUsage || out != "" || !strings.Contains(errOut, "the group has members (state Stable:") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 2, nothing on stdout, the members named", code, out, errOut)
	}
}
