package fields

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/protoschema"
	"github.com/etl-project/etl/schema"
	"github.com/etl-project/etl/schemaregistry"
)

// LocalProtobuf compiles the local schema decode.protobuf names (raw
// framing: proto_files with import_paths, or descriptor_set) and returns
// it with its message (decode.protobuf.message), or an error naming the
// key: a .proto file that does not compile (its file, line and column),
// a message the files lack (with a did-you-mean). Without a local
// schema (confluent framing) it returns nil, nil.
func LocalProtobuf(ctx context.Context, cfg *config.Config) (*protoschema.Files, protoreflect.MessageDescriptor, error) {
	p := cfg.Decode.Protobuf
	var files *protoschema.Files
	var err error
	switch {
	case len(p.ProtoFiles) > 0:
		if files, err = protoschema.CompileFiles(ctx, p.ImportPaths, p.ProtoFiles...); err != nil {
			return nil, nil, fmt.Errorf("decode.protobuf.proto_files: %w", err)
		}
	case p.DescriptorSet != "":
		if files, err = protoschema.ReadDescriptorSet(p.DescriptorSet); err != nil {
			return nil, nil, fmt.Errorf("decode.protobuf.descriptor_set: %w", err)
		}
	default:
		return nil, nil, nil
	}
	if p.Message == "" {
		return nil, nil, fmt.Errorf("decode.protobuf.message is empty: name the message of the records in %s (its full name, with its package); its messages: %v", files, files.Messages())
	}
	md, err := files.Message(p.Message)
	if err != nil {
		return nil, nil, fmt.Errorf("decode.protobuf.message: %w", err)
	}
	return files, md, nil
}

// RegistryMessage is the message of a registry schema's files that the
// tables derive from: decode.protobuf.message when it names one, else
// the first message of the schema's own file (the one Confluent's
// serializers write as message index 0).
func RegistryMessage(cfg *config.Config, files *protoschema.Files) (protoreflect.MessageDescriptor, error) {
	if name := cfg.Decode.Protobuf.Message; name != "" {
		md, err := files.Message(name)
		if err != nil {
			return nil, fmt.Errorf("decode.protobuf.message: %w", err)
		}
		return md, nil
	}
	return files.MessageAt([]int{0})
}

// ProtobufSubjects are the registry subjects whose latest schemas the
// tables derive from: decode.protobuf.prewarm_subjects, or each listed
// topic's "<topic>-value".
func ProtobufSubjects(cfg *config.Config) []string {
	subjects := cfg.Decode.Protobuf.PrewarmSubjects
	if len(subjects) == 0 && cfg.Source.Kafka != nil {
		for _, t := range cfg.Source.Kafka.Topics {
			subjects = append(subjects, t+"-value")
		}
	}
	return subjects
}

// loadProtobuf is LoadSchemas for decode.format protobuf: the local
// schema and its message (raw framing), or the registry client with the
// prewarm subjects fetched (confluent framing); the fields' types for the
// chain from the message, or from the registry's latest schemas.
func loadProtobuf(ctx context.Context, o Options) (*Schemas, error) {
	cfg, log := o.Config, o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := cfg.Decode.Protobuf
	s := &Schemas{}
	if p.Framing != config.ProtobufConfluent {
		files, md, err := LocalProtobuf(ctx, cfg)
		if err != nil {
			return nil, err
		}
		if md == nil {
			return nil, fmt.Errorf("decode.protobuf: raw framing needs a local schema: give proto_files or descriptor_set")
		}
		s.ProtoFiles, s.ProtoMessage = files, md
		src, err := schema.FromProtobuf(md)
		if err != nil {
			return nil, fmt.Errorf("decode.protobuf.message %s: %w", p.Message, err)
		}
		s.FieldTypes = src.Fields
		return s, nil
	}
	r := p.Registry
	if r == nil {
		return nil, fmt.Errorf("decode.protobuf.registry: confluent framing needs the registry's url")
	}
	var tc *tls.Config
	if r.TLS != nil && r.TLS.Enabled {
		var err error
		if tc, err = r.TLS.Config("decode.protobuf.registry.tls"); err != nil {
			return nil, err
		}
	}
	password, err := r.Secret()
	if err != nil {
		return nil, fmt.Errorf("decode.protobuf.registry.password_file: %w", err)
	}
	reg, err := schemaregistry.New(schemaregistry.Options{
		URL: r.URL.Value(), Username: r.Username, Password: password, TLS: tc, PasswordFunc: RereadSecret(r.PasswordFile, r.Secret),
		NegativeCacheTTL: p.NegativeCacheTTL.D(), Registerer: o.Registerer, Log: log,
	})
	if err != nil {
		return nil, fmt.Errorf("decode.protobuf.registry: %w", err)
	}
	s.Registry = reg
	s.ProtoRegistry = protoschema.NewRegistry(reg)
	if len(p.PrewarmSubjects) > 0 {
		pctx, cancel := context.WithTimeout(ctx, PrewarmTimeout)
		defer cancel()
		if err := s.ProtoRegistry.Prewarm(pctx, p.PrewarmSubjects); err != nil {
			// Not fatal: the schemas are fetched when records need them.
			log.Warn("could not fetch every prewarm subject; their schemas will be fetched on demand", "err", err)
		}
	}
	if len(cfg.Transform) > 0 {
		s.FieldTypes = s.protoRegistryFieldTypes(ctx, cfg, log)
	}
	return s, nil
}

// protoRegistryFieldTypes is registryFieldTypes for Protobuf: the fields
// of the message of each subject's latest schema, the first subject's
// type winning.
func (s *Schemas) protoRegistryFieldTypes(ctx context.Context, cfg *config.Config, log *slog.Logger) map[string]string {
	ctx, cancel := context.WithTimeout(ctx, PrewarmTimeout)
	defer cancel()
	types := map[string]string{}
	for _, subject := range ProtobufSubjects(cfg) {
		src, _, err := s.latestProtobuf(ctx, cfg, subject)
		if err != nil {
			log.Warn("cannot type the transform's fields from the registry", "subject", subject, "err", err)
			continue
		}
		for f, t := range src.Fields {
			if _, ok := types[f]; !ok {
				types[f] = t
			}
		}
	}
	return types
}

// latestProtobuf reads the fields of the message of subject's latest
// schema (RegistryMessage), with the schema's id.
func (s *Schemas) latestProtobuf(ctx context.Context, cfg *config.Config, subject string) (schema.Source, int32, error) {
	files, id, err := s.ProtoRegistry.Latest(ctx, subject)
	if err != nil {
		return schema.Source{}, 0, err
	}
	md, err := RegistryMessage(cfg, files)
	if err != nil {
		return schema.Source{}, id, fmt.Errorf("schema id %d: %w", id, err)
	}
	src, err := schema.FromProtobuf(md)
	if err != nil {
		return schema.Source{}, id, fmt.Errorf("schema id %d: %w", id, err)
	}
	return src, id, nil
}

// protobufSource is Source for Protobuf: the configured message of the
// local schema, or the message of the latest schema of each of
// ProtobufSubjects (merged, the first subject's type winning).
func (s *Schemas) protobufSource(ctx context.Context, cfg *config.Config) (schema.Source, error) {
	if s == nil {
		return schema.Source{}, fmt.Errorf("decode.protobuf: the Protobuf schemas are not loaded (fields.LoadSchemas)")
	}
	if s.ProtoMessage != nil {
		src, err := schema.FromProtobuf(s.ProtoMessage)
		if err != nil {
			return src, fmt.Errorf("decode.protobuf.message %s: %w", s.ProtoMessage.FullName(), err)
		}
		return src, nil
	}
	if s.ProtoRegistry == nil {
		return schema.Source{}, fmt.Errorf("decode.protobuf: neither a local schema nor a registry is configured")
	}
	subjects := ProtobufSubjects(cfg)
	if len(subjects) == 0 {
		return schema.Source{}, fmt.Errorf("decode.protobuf.prewarm_subjects is empty: under source.kafka.topics_regex the topics, and so their <topic>-value subjects, are not known ahead; name the subjects the tables derive from in decode.protobuf.prewarm_subjects")
	}
	var src schema.Source
	for _, subject := range subjects {
		one, _, err := s.latestProtobuf(ctx, cfg, subject)
		if err != nil {
			return schema.Source{}, fmt.Errorf("decode.protobuf.registry: the latest schema of subject %q: %w", subject, err)
		}
		src = schema.Merge(src, one)
	}
	return src, nil
}
