package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProtobufRules checks decode.protobuf's rules: framing, the registry
// of confluent framing, the local schema and message of raw framing, and
// that avro keys stay with Avro values.
func TestProtobufRules(t *testing.T) {
	dir := t.TempDir()
	proto := filepath.Join(dir, "order.proto")
	if err := os.WriteFile(proto, []byte(`syntax = "proto3"; package shop; message Order { int64 id = 1; }`), 0o600); err != nil {
		t.Fatal(err)
	}
	head := "pipeline: {name: p}\nsource:\n  kafka: {brokers: [b:9092], topics: [t], group_id: g}\ndecode:\n  format: protobuf\n"
	tail := "sink:\n  clickhouse: {addr: [c:9000], table: t}\n"
	for _, c := range []struct {
		name, decode, want string
	}{
		{"confluent", "  protobuf: {registry: {url: 'http://r:8081'}, prewarm_subjects: [t-value]}\n", ""},
		{"confluent without registry", "  protobuf: {framing: confluent}\n", "decode.protobuf.registry.url"},
		{"unknown framing", "  protobuf: {framing: single_object}\n", "decode.protobuf.framing"},
		{"raw with proto file", "  protobuf: {framing: raw, message: shop.Order, proto_files: [" + proto + "]}\n", ""},
		{"raw under an import path", "  protobuf: {framing: raw, message: shop.Order, proto_files: [order.proto], import_paths: [" + dir + "]}\n", ""},
		{"raw without message", "  protobuf: {framing: raw, proto_files: [" + proto + "]}\n", "decode.protobuf.message"},
		{"raw without schema", "  protobuf: {framing: raw, message: shop.Order}\n", "set proto_files (with import_paths) or descriptor_set"},
		{"raw with both schemas", "  protobuf: {framing: raw, message: shop.Order, proto_files: [" + proto + "], descriptor_set: " + proto + "}\n", "not both"},
		{"missing proto file", "  protobuf: {framing: raw, message: shop.Order, proto_files: [nope.proto], import_paths: [" + dir + "]}\n", "nor under the import_paths"},
		{"missing descriptor set", "  protobuf: {framing: raw, message: shop.Order, descriptor_set: " + filepath.Join(dir, "nope.pb") + "}\n", "decode.protobuf.descriptor_set"},
		{"import path not a directory", "  protobuf: {framing: raw, message: shop.Order, proto_files: [" + proto + "], import_paths: [" + proto + "]}\n", "is not a directory"},
		{"negative cache ttl", "  protobuf: {registry: {url: 'http://r:8081'}, negative_cache_ttl: 10ms}\n", "decode.protobuf.negative_cache_ttl"},
		{"json key", "  protobuf: {registry: {url: 'http://r:8081'}}\n  key: {format: json}\n", ""},
		{"avro key", "  protobuf: {registry: {url: 'http://r:8081'}}\n  key: {format: avro}\n", "avro keys are Confluent-framed"},
		{"add_columns", "  protobuf: {registry: {url: 'http://r:8081'}}\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			y := head + c.decode + tail
			if c.name == "add_columns" {
				y = strings.Replace(y, "table: t}", "table: t, schema: {add_columns: true}}", 1)
			}
			cfg, err := Parse([]byte(y), "p.yaml", nil)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if cfg.Decode.Format != FormatProtobuf || cfg.Decode.Protobuf.Framing == "" {
					t.Fatalf("decode = %+v", cfg.Decode)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// TestProtobufIgnoredForOtherFormats checks that decode.protobuf's rules
// apply only to Protobuf values: the defaults (confluent framing, no
// registry) do not fail a JSON configuration.
func TestProtobufIgnoredForOtherFormats(t *testing.T) {
	y := "pipeline: {name: p}\nsource:\n  kafka: {brokers: [b:9092], topics: [t], group_id: g}\nsink:\n  clickhouse: {addr: [c:9000], table: t}\n"
	cfg, err := Parse([]byte(y), "p.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Decode.Protobuf.Framing != ProtobufConfluent {
		t.Fatalf("default framing = %q", cfg.Decode.Protobuf.Framing)
	}
}
