package fields

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode/avro"
	"github.com/etl-project/etl/meta"
	"github.com/etl-project/etl/protoschema"
	"github.com/etl-project/etl/schema"
	"github.com/etl-project/etl/schemaregistry"
)

// PrewarmTimeout bounds the fetch of decode.avro.prewarm_subjects at
// startup: a registry that is down or does not answer delays the start by
// at most this much, and never stops it.
const PrewarmTimeout = 10 * time.Second

// Schemas are the schemas the decoders share: for Avro, the writer
// schema of schema_file, the reader schema, the registry client
// (confluent framing); for Protobuf, the local schema and its message, or
// the registry client and its compiled schemas; and the types of the
// fields the transform chain reads.
type Schemas struct {
	// Writer is schema_file's schema (raw and single_object framings).
	Writer string
	// Reader is the reader schema, if any: every record is resolved to
	// it.
	Reader string
	// FieldTypes maps a field to its ClickHouse type, from the reader or
	// the writer schema, or from the registry's latest schemas when the
	// chain reads fields (transform inputs).
	FieldTypes map[string]string
	// Registry is the registry client (confluent framing), nil otherwise.
	// Close closes it.
	Registry *schemaregistry.Client

	// ProtoFiles and ProtoMessage are the local Protobuf schema and the
	// records' message (decode.format protobuf, raw framing).
	ProtoFiles   *protoschema.Files
	ProtoMessage protoreflect.MessageDescriptor
	// ProtoRegistry resolves the registry's Protobuf schemas through
	// Registry (decode.format protobuf, confluent framing).
	ProtoRegistry *protoschema.Registry
}

// Options configures LoadSchemas.
type Options struct {
	Config *config.Config
	Log    *slog.Logger
	// Registerer receives the registry client's metrics; nil registers
	// none.
	Registerer prometheus.Registerer
}

// LoadSchemas reads the schemas decode.avro names (the reader schema,
// schema_file) and builds the registry client for confluent framing,
// fetching the prewarm subjects (within PrewarmTimeout; a failure is
// logged, not returned: the schemas are then fetched when records need
// them). The caller closes the result.
func LoadSchemas(ctx context.Context, o Options) (*Schemas, error) {
	if o.Config.Decode.Format == config.FormatProtobuf {
		return loadProtobuf(ctx, o)
	}
	cfg, log := o.Config, o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Schemas{}
	a := cfg.Decode.Avro
	if rs := a.ReaderSchema; rs != "" {
		if strings.HasPrefix(strings.TrimSpace(rs), "{") {
			s.Reader = rs
		} else {
			b, err := os.ReadFile(rs)
			if err != nil {
				return nil, fmt.Errorf("decode.avro.reader_schema: %w", err)
			}
			s.Reader = string(b)
		}
	}
	if a.Framing != avro.FramingConfluent {
		b, err := os.ReadFile(a.SchemaFile)
		if err != nil {
			return nil, fmt.Errorf("decode.avro.schema_file: %w", err)
		}
		s.Writer = string(b)
	}
	// The fields' types for the transform chain: those of the reader
	// schema, which every record is resolved to, or else of the one
	// writer schema.
	if known := s.Reader; known != "" || s.Writer != "" {
		if known == "" {
			known = s.Writer
		}
		types, err := rowFieldTypes(cfg, known)
		if err != nil {
			return nil, fmt.Errorf("decode.avro: %w", err)
		}
		s.FieldTypes = types
	}
	if a.Framing != avro.FramingConfluent {
		return s, nil
	}
	r := a.Registry
	var tc *tls.Config
	if r.TLS != nil && r.TLS.Enabled {
		var err error
		if tc, err = r.TLS.Config("decode.avro.registry.tls"); err != nil {
			return nil, err
		}
	}
	password, err := r.Secret()
	if err != nil {
		return nil, fmt.Errorf("decode.avro.registry.password_file: %w", err)
	}
	reg, err := schemaregistry.New(schemaregistry.Options{
		URL: r.URL.Value(), Username: r.Username, Password: password, TLS: tc, PasswordFunc: RereadSecret(r.PasswordFile, r.Secret),
		NegativeCacheTTL: a.NegativeCacheTTL.D(), Registerer: o.Registerer, Log: log,
	})
	if err != nil {
		return nil, fmt.Errorf("decode.avro.registry: %w", err)
	}
	s.Registry = reg
	if len(a.PrewarmSubjects) > 0 {
		pctx, cancel := context.WithTimeout(ctx, PrewarmTimeout)
		defer cancel()
		if err := reg.Prewarm(pctx, a.PrewarmSubjects); err != nil {
			// Not fatal: the schemas are fetched when records need them.
			log.Warn("could not fetch every prewarm subject; their schemas will be fetched on demand", "err", err)
		}
	}
	if s.FieldTypes == nil && (len(cfg.Transform) > 0 || cfg.CDC()) {
		s.FieldTypes = s.registryFieldTypes(ctx, cfg, log)
	}
	return s, nil
}

// Close closes the registry client, if any.
func (s *Schemas) Close() {
	if s != nil && s.Registry != nil {
		s.Registry.Close()
	}
}

// registryFieldTypes types the fields the transform chain reads from the
// latest schema of each of Subjects: a field takes the type the first
// subject gives it. Subjects the registry does not have, or a registry
// that does not answer within PrewarmTimeout, type nothing: those fields
// must then be declared in decode.fields, and the error saying so names
// the registry's failure.
func (s *Schemas) registryFieldTypes(ctx context.Context, cfg *config.Config, log *slog.Logger) map[string]string {
	ctx, cancel := context.WithTimeout(ctx, PrewarmTimeout)
	defer cancel()
	types := map[string]string{}
	for _, subject := range Subjects(cfg) {
		sc, err := s.Registry.Latest(ctx, subject)
		if err != nil {
			log.Warn("cannot type the transform's fields from the registry", "subject", subject, "err", err)
			continue
		}
		ft, err := rowFieldTypes(cfg, sc.Text)
		if err != nil {
			log.Warn("cannot type the transform's fields from the registry", "subject", subject, "id", sc.ID, "err", err)
			continue
		}
		for f, t := range ft {
			if _, ok := types[f]; !ok {
				types[f] = t
			}
		}
	}
	return types
}

// Subjects are the registry subjects whose latest schemas type the
// fields: the prewarm subjects, or each listed topic's "<topic>-value"
// (the default naming; none under source.kafka.topics_regex).
func Subjects(cfg *config.Config) []string {
	subjects := cfg.Decode.Avro.PrewarmSubjects
	if len(subjects) == 0 {
		for _, t := range cfg.Source.Kafka.Topics {
			subjects = append(subjects, t+"-value")
		}
	}
	return subjects
}

// Source returns the fields the configured pipeline reads, for deriving
// its tables: the reader schema when there is one (every record is
// resolved to it), else schema_file, else the latest schema of each of
// Subjects in the registry (merged, the first subject's type winning);
// for Protobuf, the message of the local schema, or of the latest schema
// of each of ProtobufSubjects (RegistryMessage; merged likewise); for
// JSON, decode.fields; for raw records, none (their columns are all
// metadata). s is nil for JSON and raw.
func (s *Schemas) Source(ctx context.Context, cfg *config.Config) (schema.Source, error) {
	if cfg.Decode.Format == config.FormatRaw {
		return schema.Source{}, nil
	}
	if cfg.Decode.Format == config.FormatProtobuf {
		return s.protobufSource(ctx, cfg)
	}
	if cfg.Decode.Format != config.FormatAvro {
		if len(cfg.Decode.Fields) == 0 {
			return schema.Source{}, fmt.Errorf("decode.fields is empty: JSON records carry no types, so the table's columns cannot be derived; declare each field's ClickHouse type in decode.fields")
		}
		return schema.FromFields(cfg.Decode.Fields, cfg.Decode.FieldOrder), nil
	}
	src, err := s.valueSource(ctx, cfg)
	if err != nil {
		return src, err
	}
	return s.keySource(ctx, cfg, src)
}

// valueSource is Source for Avro values.
func (s *Schemas) valueSource(ctx context.Context, cfg *config.Config) (schema.Source, error) {
	if text := s.Reader; text != "" {
		return avroSource(cfg, text, "decode.avro.reader_schema")
	}
	if s.Writer != "" {
		return avroSource(cfg, s.Writer, "decode.avro.schema_file")
	}
	subjects := Subjects(cfg)
	if len(subjects) == 0 && cfg.Source.Kafka != nil && cfg.Source.Kafka.TopicsRegex != "" {
		return schema.Source{}, fmt.Errorf("decode.avro.prewarm_subjects is empty: under source.kafka.topics_regex the topics, and so their <topic>-value subjects, are not known ahead; name the subjects the tables derive from in decode.avro.prewarm_subjects, or give decode.avro.reader_schema")
	}
	var src schema.Source
	for _, subject := range subjects {
		sc, err := s.Registry.Latest(ctx, subject)
		if err != nil {
			return schema.Source{}, fmt.Errorf("decode.avro.registry: the latest schema of subject %q: %w", subject, err)
		}
		one, err := RowSource(cfg, sc.Text)
		if err != nil {
			return schema.Source{}, fmt.Errorf("decode.avro.registry: subject %q schema id %d: %w", subject, sc.ID, err)
		}
		src = schema.Merge(src, one)
	}
	return src, nil
}

// keySource adds to src the types of the key's fields (_key.NAME) from
// the latest schema of each listed topic's "<topic>-key" subject, when
// keys are Avro and a column or an expression reads one of their fields.
// Under topics_regex the subjects are not known ahead: the fields stay
// untyped (String).
func (s *Schemas) keySource(ctx context.Context, cfg *config.Config, src schema.Source) (schema.Source, error) {
	if cfg.KeyFormat() != config.KeyAvro || s.Registry == nil || !readsKeyFields(cfg) || cfg.Source.Kafka == nil {
		return src, nil
	}
	for _, t := range cfg.Source.Kafka.Topics {
		subject := t + "-key"
		sc, err := s.Registry.Latest(ctx, subject)
		if err != nil {
			return schema.Source{}, fmt.Errorf("decode.key.format avro: the latest schema of subject %q, which types the key's fields: %w", subject, err)
		}
		one, err := schema.FromAvro(sc.Text)
		if err != nil {
			return schema.Source{}, fmt.Errorf("decode.key.format avro: subject %q schema id %d: %w", subject, sc.ID, err)
		}
		if src.Fields == nil {
			src.Fields = map[string]string{}
		}
		for f, typ := range one.Fields {
			if _, ok := src.Fields[meta.KeyPrefix+f]; !ok {
				src.Fields[meta.KeyPrefix+f] = typ
			}
		}
	}
	return src, nil
}

// readsKeyFields reports whether a sink's columns or the transform's
// expressions read a field of the key.
func readsKeyFields(cfg *config.Config) bool {
	if len(cfg.ExprKeyFields()) > 0 {
		return true
	}
	for _, ns := range cfg.SinkList() {
		if ns.ClickHouse == nil {
			continue
		}
		for _, src := range ns.ClickHouse.Columns {
			if meta.IsKeyField(src) {
				return true
			}
		}
	}
	return false
}

// avroSource reads the fields of an Avro schema; where names its key.
func avroSource(cfg *config.Config, text, where string) (schema.Source, error) {
	s, err := RowSource(cfg, text)
	if err != nil {
		return s, fmt.Errorf("%s: %w", where, err)
	}
	return s, nil
}

// RowSource is the fields of the rows of Avro writer schema text: its
// own, or under decode.envelope debezium the fields of its row record
// (the Value record of after, avro.DebeziumValue), whatever the
// envelope's other fields.
func RowSource(cfg *config.Config, text string) (schema.Source, error) {
	if cfg.CDC() {
		v, err := avro.DebeziumValue(text)
		if err != nil {
			return schema.Source{}, err
		}
		text = v
	}
	return schema.FromAvro(text)
}

// rowFieldTypes is avro.FieldTypes of the rows' fields (RowSource).
func rowFieldTypes(cfg *config.Config, text string) (map[string]string, error) {
	if cfg.CDC() {
		v, err := avro.DebeziumValue(text)
		if err != nil {
			return nil, err
		}
		text = v
	}
	return avro.FieldTypes(text)
}

// RereadSecret returns read when a password_file is set (file), so the
// client reads the file again where it logs in anew and a rotated secret
// is picked up; nil when the password is given in the configuration.
func RereadSecret(file string, read func() (string, error)) func() (string, error) {
	if file == "" {
		return nil
	}
	return read
}

// Types is FieldTypes, nil for a nil s.
func (s *Schemas) Types() map[string]string {
	if s == nil {
		return nil
	}
	return s.FieldTypes
}

// Client is Registry, nil for a nil s.
func (s *Schemas) Client() *schemaregistry.Client {
	if s == nil {
		return nil
	}
	return s.Registry
}
