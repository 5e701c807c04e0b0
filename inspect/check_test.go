package inspect

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/pipeline"
)

// testConfig is a configuration reading topics events and events2 from kb
// into table events on ch.
func testConfig(t *testing.T, kb *testenv.Broker, ch *testenv.CH, group string) *config.Config {
	t.Helper()
	y := fmt.Sprintf(`pipeline: {name: test, workers: 2}
source:
  kafka: {brokers: [%q], topics: [events, events2], group_id: %s, session_timeout: 6s}
sink:
  clickhouse:
    addr: [%q]
    table: events
    batch: {max_rows: 5000, max_bytes: 4MiB, linger: 100ms}
    retry: {initial_backoff: 50ms, max_backoff: 500ms}
checkpoint: {commit_interval: 200ms, drain_timeout: 20s}
metrics: {listen: "off"}
`, kb.Addr(), group, ch.TCPAddr())
	cfg, err := config.Parse([]byte(y), "test.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// stopAtOnce runs p with a context already cancelled: it stops at once and
// closes what New opened.
func stopAtOnce(t *testing.T, p *pipeline.Pipeline) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// newOrRefused builds a pipeline from o: with want set, New must fail
// with an error containing it; else New must succeed (the pipeline is
// stopped at once).
func newOrRefused(t *testing.T, o pipeline.Options, want string) {
	t.Helper()
	p, err := pipeline.New(context.Background(), o)
	if want != "" {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("New: error = %v, want it to contain %q", err, want)
		}
		return
	}
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	stopAtOnce(t, p)
}

// TestDeadLetterWriteDenied: a principal whose ACLs let it read the topics
// but not write to the dead-letter topic is refused at startup, and by
// validate -connect, with an error naming the topic and the missing WRITE;
// the same configuration with WRITE granted starts.
func TestDeadLetterWriteDenied(t *testing.T) {
	read := func(topic string, op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: topic, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
	}
	group := kfake.ACL{Resource: kmsg.ACLResourceTypeGroup, Name: "dlqacl", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationRead, Allow: true}
	kb := testenv.Kafka(t, kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("PLAIN", "admin", "admin"),
		kfake.SeedTopics(1, "events", "events.dlq"),
		kfake.User("PLAIN", "reader", "pw", read("events", kmsg.ACLOperationRead), read("events", kmsg.ACLOperationDescribe), group,
			read("events.dlq", kmsg.ACLOperationDescribe)),
		kfake.User("PLAIN", "writer", "pw", read("events", kmsg.ACLOperationRead), read("events", kmsg.ACLOperationDescribe), group,
			read("events.dlq", kmsg.ACLOperationWrite)))
	ch := testenv.ClickHouse(t)
	ch.Exec(t, "CREATE TABLE default.events (id UInt64) ENGINE = MergeTree ORDER BY id")
	cfgFor := func(user string) *config.Config {
		cfg := testConfig(t, kb, ch, "dlqacl")
		cfg.Source.Kafka.Topics = []string{"events"}
		cfg.Source.Kafka.SASL = &config.SASL{Mechanism: "PLAIN", Username: user, Password: "pw"}
		cfg.Decode.OnError = "dlq"
		cfg.Decode.DLQ = &config.DLQ{Topic: "events.dlq"}
		return cfg
	}
	const want = `decode.dlq.topic: topic events.dlq: the brokers do not let this client write to it (its ACLs give this client's principal no WRITE)`

	_, err := pipeline.New(context.Background(), pipeline.Options{Config: cfgFor("reader"), Log: testenv.Logger(t)})
	var ce *pipeline.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), want) {
		t.Fatalf("New without WRITE on the dead-letter topic: %v", err)
	}
	if _, err := Check(cfgFor("reader"), 10*time.Second); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("validate -connect without WRITE on the dead-letter topic: %v", err)
	}

	p, err := pipeline.New(context.Background(), pipeline.Options{Config: cfgFor("writer"), Log: testenv.Logger(t)})
	if err != nil {
		t.Fatalf("New with WRITE on the dead-letter topic: %v", err)
	}
	stopAtOnce(t, p)
	if _, err := Check(cfgFor("writer"), 10*time.Second); err != nil {
		t.Fatalf("validate -connect with WRITE on the dead-letter topic: %v", err)
	}
}

// TestExactlyOnceComputedColumns: exactly_once refuses, at startup and in
// validate -connect (Check), a ReplicatedMergeTree table that computes a
// stored column with a function whose value differs when a block is
// inserted again (MATERIALIZED now(); DEFAULT now() left to the server by
// exclude_columns), naming the table, the column and its expression; it
// accepts a column computed from the inserted ones (cityHash64(id)), and a
// DEFAULT now() that etl inserts (a record without the field gets the
// type's zero value, the same at every replay).
func TestExactlyOnceComputedColumns(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 3)
	kb.CreateTopic(t, "events2", 3)
	zk := testenv.ZooKeeper(t)
	ch := testenv.ClickHouseWith(t, testenv.CHOptions{ZooKeeper: zk.Addr()})
	for i, tc := range []struct {
		name, column string
		exclude      []string
		err          []string // what the refusal says; nil: accepted
	}{
		{"materialized now", "ingested DateTime MATERIALIZED now()", nil,
			[]string{"table default.events (sink default)", "column ingested MATERIALIZED now() calls now() (the time of the insert)", "delivery: at_least_once"}},
		{"default now excluded", "ingested DateTime DEFAULT now()", []string{"ingested"},
			[]string{"table default.events (sink default)", "column ingested DEFAULT now() calls now()", "exclude_columns"}},
		{"materialized rand via alias", "r UInt32 ALIAS rand(), picked UInt32 MATERIALIZED r % 10", nil,
			[]string{"column picked MATERIALIZED ", "refers to column r, which calls rand() (a random value)"}},
		{"materialized hash", "h UInt64 MATERIALIZED cityHash64(id)", nil, nil},
		{"default now inserted", "ingested DateTime DEFAULT now()", nil, nil},
		{"literal", "note2 String DEFAULT 'now()'", []string{"note2"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch.Exec(t, "DROP TABLE IF EXISTS default.events")
			ddl := strings.Replace(gen.TableDDL("default", "events"), ") ENGINE = MergeTree",
				fmt.Sprintf(", %s) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/computed_%d', '{replica}')", tc.column, i), 1)
			ch.Exec(t, ddl+" SETTINGS replicated_deduplication_window = 1000")
			cfg := testConfig(t, kb, ch, "eo-computed")
			cfg.Delivery = "exactly_once"
			cfg.Sink.ClickHouse.ExcludeColumns = tc.exclude
			// validate -connect.
			_, err := Check(cfg, 20*time.Second)
			var ce *pipeline.ConfigError
			if tc.err == nil {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
			} else if err == nil || !errors.As(err, &ce) {
				t.Fatalf("Check: error = %v, want a configuration error", err)
			}
			for _, want := range tc.err {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Check: error lacks %q:\n%v", want, err)
				}
			}
			// Startup: New refuses before the source is built, so before
			// any record is read.
			if tc.err == nil {
				newOrRefused(t, pipeline.Options{Config: cfg, Log: testenv.Logger(t)}, "")
				return
			}
			_, err = pipeline.New(context.Background(), pipeline.Options{Config: cfg, Log: testenv.Logger(t)})
			if !errors.As(err, &ce) {
				t.Fatalf("New: error = %v, want a configuration error", err)
			}
			for _, want := range tc.err {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("New: error lacks %q:\n%v", want, err)
				}
			}
		})
	}
}

// TestKafkaACLs: a principal without READ on the group or the topic gets,
// from validate -connect (Check) and from New, a ConfigError naming the
// resource and the operation.
func TestKafkaACLs(t *testing.T) {
	ch := testenv.ClickHouse(t)
	ch.Exec(t, gen.TableDDL("default", "events"))
	const password = "kafka-pass-Zq9"
	pwFile := filepath.Join(t.TempDir(), "kafka-password")
	if err := os.WriteFile(pwFile, []byte(password), 0o600); err != nil {
		t.Fatal(err)
	}
	topics := kfake.SeedTopics(3, "events", "events.dlq")

	acl := func(res kmsg.ACLResourceType, name string, op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: res, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
	}
	for _, c := range []struct {
		name string
		acls []kfake.ACL
		want []string
	}{
		{"no READ on the group", []kfake.ACL{acl(kmsg.ACLResourceTypeTopic, "events", kmsg.ACLOperationRead),
			acl(kmsg.ACLResourceTypeTopic, "events", kmsg.ACLOperationDescribe)}, []string{"group", "sec-acl-group", "READ"}},
		{"no READ on the topic", []kfake.ACL{acl(kmsg.ACLResourceTypeTopic, "events", kmsg.ACLOperationDescribe),
			acl(kmsg.ACLResourceTypeGroup, "sec-acl-topic", kmsg.ACLOperationRead)}, []string{"topic", "events", "READ"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			group := "sec-acl-group"
			if strings.Contains(c.name, "topic") {
				group = "sec-acl-topic"
			}
			kb := testenv.Kafka(t, kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("PLAIN", "admin", "admin"),
				kfake.User("PLAIN", "etl", password, c.acls...), topics)
			cfg := testConfig(t, kb, ch, group)
			cfg.Source.Kafka.Topics = []string{"events"}
			cfg.Source.Kafka.SASL = &config.SASL{Mechanism: "PLAIN", Username: "etl", PasswordFile: pwFile}
			_, cerr := Check(cfg, 15*time.Second) // validate -connect
			_, nerr := pipeline.New(context.Background(), pipeline.Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
			for _, err := range []error{cerr, nerr} {
				var ce *pipeline.ConfigError
				if !errors.As(err, &ce) {
					t.Fatalf("%v (%T), want a ConfigError", err, err)
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not name %q", err, w)
					}
				}
			}
			t.Log(nerr)
		})
	}
}
