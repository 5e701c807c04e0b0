package pipeline

import (
	"context"
	"crypto/tls"
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/decode/protobuf"
	"github.com/etl-project/etl/fields"
	"github.com/etl-project/etl/protoschema"
	"github.com/etl-project/etl/schema"
	"github.com/etl-project/etl/schemaregistry"
	"github.com/etl-project/etl/sink/clickhouse"
)

var _ decode.SchemaPending = (*protoschema.PendingError)(nil)

// protoSchemas is what the Protobuf decoders share: the message of raw
// framing, or the compiled registry schemas of confluent framing.
type protoSchemas struct {
	message  protoreflect.MessageDescriptor // raw framing
	registry *protoschema.Registry          // confluent framing
	src      protoschema.Source             // the decoders' schemas by id (protoRegistrySource)
}

// setupProtobuf loads what the Protobuf decoders share: the local schema
// and its message (raw framing), or the registry client, with the prewarm
// subjects fetched and compiled within fields.PrewarmTimeout (a failure
// is logged: their schemas are then fetched when records need them). The
// registry client goes into p.schemas, which closes it, and the types of
// the message's fields into p.schemas.FieldTypes, for the transform
// chain: the raw message's, or, when the chain reads fields, those of the
// latest schema of each prewarm subject (else each topic's <topic>-value).
func (p *Pipeline) setupProtobuf(ctx context.Context) error {
	pb := p.cfg.Decode.Protobuf
	p.proto = &protoSchemas{}
	p.schemas = &fields.Schemas{}
	if pb.Framing == protobuf.FramingRaw {
		var files *protoschema.Files
		var err error
		if pb.DescriptorSet != "" {
			files, err = protoschema.ReadDescriptorSet(pb.DescriptorSet)
		} else {
			files, err = protoschema.CompileFiles(ctx, pb.ImportPaths, pb.ProtoFiles...)
		}
		if err != nil {
			return &ConfigError{Errs: []error{fmt.Errorf("decode.protobuf: %w", err)}}
		}
		md, err := files.Message(pb.Message)
		if err != nil {
			return &ConfigError{Errs: []error{fmt.Errorf("decode.protobuf.message: %w", err)}}
		}
		p.proto.message = md
		src, err := schema.FromProtobuf(md)
		if err != nil {
			return &ConfigError{Errs: []error{fmt.Errorf("decode.protobuf.message: %w", err)}}
		}
		p.schemas.FieldTypes = src.Fields
		return nil
	}
	r := pb.Registry
	var tc *tls.Config
	if r.TLS != nil && r.TLS.Enabled {
		var err error
		if tc, err = r.TLS.Config("decode.protobuf.registry.tls"); err != nil {
			return err
		}
	}
	password, err := r.Secret()
	if err != nil {
		return fmt.Errorf("decode.protobuf.registry.password_file: %w", err)
	}
	c, err := schemaregistry.New(schemaregistry.Options{
		URL: r.URL.Value(), Username: r.Username, Password: password, TLS: tc,
		PasswordFunc: fields.RereadSecret(r.PasswordFile, r.Secret), NegativeCacheTTL: pb.NegativeCacheTTL.D(),
		Registerer: p.component("decode"), Log: p.log,
	})
	if err != nil {
		return fmt.Errorf("decode.protobuf.registry: %w", err)
	}
	p.schemas.Registry = c
	p.proto.registry = protoschema.NewRegistry(c)
	p.proto.src = protoRegistrySource{r: p.proto.registry, p: p}
	if len(pb.PrewarmSubjects) > 0 {
		pctx, cancel := context.WithTimeout(ctx, fields.PrewarmTimeout)
		defer cancel()
		if err := p.proto.registry.Prewarm(pctx, pb.PrewarmSubjects); err != nil {
			p.log.Warn("could not fetch every prewarm subject; their schemas will be fetched on demand", "err", err)
		}
	}
	if len(p.cfg.Transform) > 0 {
		p.schemas.FieldTypes = p.protobufRegistryTypes(ctx)
	}
	return nil
}

// protobufSubjects are the subjects whose latest schemas type the fields:
// the prewarm subjects, or each listed topic's "<topic>-value".
func protobufSubjects(cfg *config.Config) []string {
	subjects := cfg.Decode.Protobuf.PrewarmSubjects
	if len(subjects) == 0 && cfg.Source.Kafka != nil {
		for _, t := range cfg.Source.Kafka.Topics {
			subjects = append(subjects, t+"-value")
		}
	}
	return subjects
}

// protobufRegistryTypes types the fields the chain reads from the first
// message (message indexes [0]) of the latest schema of each of
// protobufSubjects; a field takes the type the first subject gives it. A
// subject that cannot be read types nothing (logged).
func (p *Pipeline) protobufRegistryTypes(ctx context.Context) map[string]string {
	ctx, cancel := context.WithTimeout(ctx, fields.PrewarmTimeout)
	defer cancel()
	types := map[string]string{}
	for _, subject := range protobufSubjects(p.cfg) {
		files, id, err := p.proto.registry.Latest(ctx, subject)
		if err == nil {
			var md protoreflect.MessageDescriptor
			var src schema.Source
			if md, err = p.tableMessage(files); err == nil {
				if src, err = schema.FromProtobuf(md); err == nil {
					for f, t := range src.Fields {
						if _, ok := types[f]; !ok {
							types[f] = t
						}
					}
					continue
				}
			}
		}
		p.log.Warn("cannot type the transform's fields from the registry", "subject", subject, "id", id, "err", err)
	}
	return types
}

// newProtobufDecoder returns one worker's Protobuf decoder for target t.
func (p *Pipeline) newProtobufDecoder(t *clickhouse.Target) (decode.Decoder, error) {
	d, err := protobuf.NewFramed(p.cfg.Decode.Protobuf.Framing, p.proto.message, p.proto.src, t.Schema, protobuf.Options{
		Fields: t.Fields, MaxRecordBytes: int(p.cfg.Decode.MaxRecordBytes), Validate: p.cfg.Decode.ValidateSchema,
		Version: p.serverVersion(), Ranges: p.serverRanges(),
	})
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return d, nil
}

// protoRegistrySource is registrySource for Protobuf: in a run (p set),
// the first time a schema id is served the tables' columns are read again
// (with add_columns, the columns of its new fields added first) before
// any record of it is decoded. Without p (Parts) a schema is served as
// soon as it is compiled.
type protoRegistrySource struct {
	r *protoschema.Registry
	p *Pipeline
}

func (s protoRegistrySource) Lookup(id int32) (*protoschema.Files, error) {
	files, err := s.r.Lookup(id)
	if err == nil && s.p != nil && !s.p.desc.schemaSeen(id) {
		return nil, fmt.Errorf("%w: schema id %d is new: reading the table's columns again", protoschema.ErrPending, id)
	}
	return files, err
}

func (s protoRegistrySource) Wait(id int32) <-chan struct{} {
	if s.p != nil {
		if ch := s.p.desc.schemaDescribed(id); ch != nil {
			return ch
		}
	}
	return s.r.Wait(id)
}

// protobufSchemaSource is the fields of schema id's first message (message
// indexes [0], the message of the records Confluent's serializers write
// for a schema of one message), for add_columns.
func (p *Pipeline) protobufSchemaSource(id int32) (schema.Source, error) {
	files, err := p.proto.registry.Lookup(id)
	if err != nil {
		return schema.Source{}, err
	}
	md, err := p.tableMessage(files)
	if err != nil {
		return schema.Source{}, err
	}
	return schema.FromProtobuf(md)
}

// tableMessage is the message of files the tables are derived from:
// decode.protobuf.message when set, else the first message of the file
// (message indexes [0], the message of the records Confluent's
// serializers write for a schema of one message).
func (p *Pipeline) tableMessage(files *protoschema.Files) (protoreflect.MessageDescriptor, error) {
	if name := p.cfg.Decode.Protobuf.Message; name != "" {
		return files.Message(name)
	}
	return files.MessageAt([]int{0})
}

// protobufTableSource is the fields the tables are derived from: the raw
// message's, or the first message of the latest schema of each of
// protobufSubjects (merged, the first subject's type winning).
func (p *Pipeline) protobufTableSource(ctx context.Context) (schema.Source, error) {
	if p.proto.message != nil {
		return schema.FromProtobuf(p.proto.message)
	}
	subjects := protobufSubjects(p.cfg)
	if len(subjects) == 0 {
		return schema.Source{}, fmt.Errorf("decode.protobuf.prewarm_subjects is empty: under source.kafka.topics_regex the topics, and so their <topic>-value subjects, are not known ahead; name the subjects the tables derive from in decode.protobuf.prewarm_subjects")
	}
	var src schema.Source
	for _, subject := range subjects {
		files, id, err := p.proto.registry.Latest(ctx, subject)
		if err != nil {
			return schema.Source{}, fmt.Errorf("decode.protobuf.registry: the latest schema of subject %q: %w", subject, err)
		}
		md, err := p.tableMessage(files)
		if err != nil {
			return schema.Source{}, fmt.Errorf("decode.protobuf.registry: subject %q schema id %d: %w", subject, id, err)
		}
		one, err := schema.FromProtobuf(md)
		if err != nil {
			return schema.Source{}, fmt.Errorf("decode.protobuf.registry: subject %q schema id %d: %w", subject, id, err)
		}
		src = schema.Merge(src, one)
	}
	return src, nil
}
