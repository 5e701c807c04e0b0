package inspect

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/fields"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/pipeline"
	"github.com/etl-project/etl/schemaregistry/registrytest"
)

// protoTable is a decoder input of columns "name type <- field".
func protoTable(t *testing.T, cols ...string) protoTarget {
	t.Helper()
	pt := protoTarget{Schema: &chunk.Schema{}, Version: "18.16"}
	for _, c := range cols {
		def, field, _ := strings.Cut(c, " <- ")
		name, typ, _ := strings.Cut(def, " ")
		ct, err := chunk.ParseType(typ)
		if err != nil {
			t.Fatal(err)
		}
		pt.Schema.Names = append(pt.Schema.Names, name)
		pt.Schema.Types = append(pt.Schema.Types, ct)
		pt.Fields = append(pt.Fields, field)
	}
	return pt
}

func loadSchemas(t *testing.T, cfg *config.Config) *fields.Schemas {
	t.Helper()
	s, err := fields.LoadSchemas(context.Background(), fields.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func joined(report []string) string { return strings.Join(report, "\n") }

// TestCheckProtobufLocal: validate -connect checks the local message
// against the tables as the decoders would, and lists the fields that
// fill no column; under validate_schema names those are refused.
func TestCheckProtobufLocal(t *testing.T) {
	cfg := protoTestConfig(t, "shop.Order", "")
	s := loadSchemas(t, cfg)
	target := protoTable(t, "id Int64 <- id", "customer_id Int64 <- customer.id", "tags Array(String) <- tags", "created_at DateTime <- created_at")
	report, problems := checkProtobuf(context.Background(), cfg, s, target)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	for _, want := range []string{"protobuf: message shop.Order of ", " fills the tables' columns",
		"protobuf: fields of shop.Order that fill no column (skipped): items, counts, status, priority"} {
		if !strings.Contains(joined(report), want) {
			t.Errorf("report lacks %q:\n%s", want, joined(report))
		}
	}

	cfg.Decode.ValidateSchema = "names"
	_, problems = checkProtobuf(context.Background(), cfg, s, target)
	var ce *pipeline.ConfigError
	if len(problems) != 1 || !errors.As(problems[0], &ce) || !strings.Contains(problems[0].Error(), "validate_schema names") || !strings.Contains(problems[0].Error(), "items") {
		t.Errorf("validate_schema names: %v", problems)
	}

	// A column whose type the field cannot go into.
	cfg.Decode.ValidateSchema = "off"
	_, problems = checkProtobuf(context.Background(), cfg, s, protoTable(t, "id Int64 <- id", "tags String <- tags"))
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), "tags") {
		t.Errorf("a repeated field into String: %v", problems)
	}
}

// TestCheckProtobufRegistry: with the registry, the message of each
// subject's latest schema is checked; a default-named subject the
// registry lacks is reported, a prewarm subject it lacks is a problem;
// a column mapped to a field the messages lack is refused with the
// closest.
func TestCheckProtobufRegistry(t *testing.T) {
	srv := registrytest.New(t)
	srv.RegisterSchema("orders-value", registrytest.Schema{Text: shopProto, Type: "PROTOBUF"})
	reg := &config.Registry{URL: config.URL(srv.URL())}
	cfg := protoTestConfig(t, "", "    columns: {cid: id}\n")
	cfg.Source.Kafka.Topics = []string{"orders", "refunds"}
	cfg.Decode.Protobuf = config.Protobuf{Framing: config.ProtobufConfluent, Registry: reg}
	s := loadSchemas(t, cfg)
	// Without decode.protobuf.message: the first message of the file.
	report, problems := checkProtobuf(context.Background(), cfg, s, protoTable(t, "cid Int64 <- id"))
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	for _, want := range []string{"protobuf: subject orders-value, latest schema id 1, message shop.Customer, fills the tables' columns",
		"protobuf: the registry has no subject refunds-value"} {
		if !strings.Contains(joined(report), want) {
			t.Errorf("report lacks %q:\n%s", want, joined(report))
		}
	}

	cfg.Decode.Protobuf.Message = "shop.Order"
	cfg.Decode.Protobuf.PrewarmSubjects = []string{"orders-value", "refunds-value"}
	cfg.Sink.ClickHouse.Columns = map[string]string{"cid": "customer.di"}
	target := protoTable(t, "id Int64 <- id", "cid Int64 <- customer.id")
	report, problems = checkProtobuf(context.Background(), cfg, s, target)
	if !strings.Contains(joined(report), "message shop.Order, fills the tables' columns") {
		t.Errorf("report:\n%s", joined(report))
	}
	all := errors.Join(problems...)
	for _, want := range []string{`decode.protobuf.prewarm_subjects: `, `refunds-value`, `field "customer.di" is not a field of the records: the latest schema of the registry's subjects orders-value (id 1, message shop.Order) has no such field (did you mean "customer.id"?)`} {
		if all == nil || !strings.Contains(all.Error(), want) {
			t.Errorf("problems lack %q: %v", want, all)
		}
	}

	cfg.Decode.Protobuf.Message = "shop.Ordre"
	_, problems = checkProtobuf(context.Background(), cfg, s, target)
	if all := errors.Join(problems...); all == nil || !strings.Contains(all.Error(), `did you mean "shop.Order"?`) {
		t.Errorf("unknown message: %v", all)
	}
}

// TestCheckProtobufConnect: validate -connect against ClickHouse 18.16
// and the brokers checks the local message against the table it reads,
// lists the fields that fill no column, and under validate_schema names
// refuses them as a configuration mistake.
func TestCheckProtobufConnect(t *testing.T) {
	kb := testenv.Kafka(t, kfake.SeedTopics(1, "orders"))
	ch := testenv.ClickHouse(t)
	ch.Exec(t, "CREATE DATABASE shop")
	ch.Exec(t, "CREATE TABLE shop.orders (id Int64, cid Int64, tags Array(String), counts Nested(key String, value Int64), created_at DateTime) ENGINE = MergeTree ORDER BY id")
	cfg := protoTestConfigAt(t, kb.Addr(), ch.TCPAddr(), "shop.Order", "    columns: {cid: customer.id}\n")
	report, err := Check(cfg, 15*time.Second)
	if err != nil {
		t.Fatalf("Check: %v\n%s", err, joined(report))
	}
	for _, want := range []string{"column cid Int64 <- field customer.id (sink.clickhouse.columns)", "protobuf: message shop.Order of ", "fills the tables' columns",
		"protobuf: fields of shop.Order that fill no column (skipped): items, status, priority"} {
		if !strings.Contains(joined(report), want) {
			t.Errorf("report lacks %q:\n%s", want, joined(report))
		}
	}
	cfg.Decode.ValidateSchema = "names"
	report, err = Check(cfg, 15*time.Second)
	var ce *pipeline.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "validate_schema names") || !strings.Contains(err.Error(), `"items"`) {
		t.Errorf("validate_schema names: %v\n%s", err, joined(report))
	}
}
