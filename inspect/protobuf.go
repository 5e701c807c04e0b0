package inspect

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode/protobuf"
	"github.com/etl-project/etl/fields"
	"github.com/etl-project/etl/pipeline"
	"github.com/etl-project/etl/schema"
	"github.com/etl-project/etl/schemaregistry"
)

// protoTarget is what checkProtobuf checks the messages against: the
// decoders' input (the table's columns, or the chain's staging schema,
// and the field each reads), the servers' ranges and the oldest server's
// version.
type protoTarget struct {
	Schema  *chunk.Schema
	Fields  []string
	Ranges  chunk.ServerRanges
	Version string
}

// checkProtobuf checks that the records' message fills the tables as the
// run's decoders would, under decode.validate_schema: the local schema's
// message (raw framing), or the message of the latest schema of every
// prewarm subject (or, without any, of each topic's "<topic>-value"
// subject; one the registry does not know is then only reported), and
// that every sink.clickhouse.columns entry names a field of the message.
// It reports the fields of the message that fill no column. s is the
// loaded schemas (fields.LoadSchemas).
func checkProtobuf(ctx context.Context, cfg *config.Config, s *fields.Schemas, t protoTarget) (report []string, problems []error) {
	p := cfg.Decode.Protobuf
	check := func(md protoreflect.MessageDescriptor, what string) bool {
		_, err := protobuf.New(md, t.Schema, protobuf.Options{Fields: t.Fields, Validate: cfg.Decode.ValidateSchema, Version: t.Version, Ranges: t.Ranges})
		if err != nil {
			problems = append(problems, &pipeline.ConfigError{Errs: []error{fmt.Errorf("decode.protobuf: %s cannot be decoded into the tables (validate_schema %s): %w",
				what, cfg.Decode.ValidateSchema, err)}})
			return false
		}
		report = append(report, fmt.Sprintf("protobuf: %s fills the tables' columns", what))
		if unread := unreadFields(md, t.Fields); len(unread) > 0 {
			report = append(report, fmt.Sprintf("protobuf: fields of %s that fill no column (skipped): %s", md.FullName(), strings.Join(unread, ", ")))
		}
		return true
	}
	if s.ProtoMessage != nil {
		check(s.ProtoMessage, fmt.Sprintf("message %s of %s", s.ProtoMessage.FullName(), s.ProtoFiles))
		// The columns mapping was checked against the message offline
		// (pipeline.Preflight).
		return report, problems
	}
	if s.ProtoRegistry == nil {
		return report, problems
	}
	configured := len(p.PrewarmSubjects) > 0
	var fieldsOf *fields.Set
	from := ""
	for _, subject := range fields.ProtobufSubjects(cfg) {
		files, id, err := s.ProtoRegistry.Latest(ctx, subject)
		switch {
		case errors.Is(err, schemaregistry.ErrSubjectNotFound) && !configured:
			report = append(report, fmt.Sprintf("protobuf: the registry has no subject %s (records will be checked as they name their schemas)", subject))
			continue
		case errors.Is(err, schemaregistry.ErrSubjectNotFound):
			problems = append(problems, &pipeline.ConfigError{Errs: []error{fmt.Errorf("decode.protobuf.prewarm_subjects: %w", err)}})
			continue
		case err != nil:
			problems = append(problems, fmt.Errorf("decode.protobuf.registry %s: subject %s: %w", p.Registry.URL, subject, err))
			continue
		}
		md, err := fields.RegistryMessage(cfg, files)
		if err != nil {
			problems = append(problems, &pipeline.ConfigError{Errs: []error{fmt.Errorf("subject %s, latest schema id %d: %w", subject, id, err)}})
			continue
		}
		if src, err := schema.FromProtobuf(md); err == nil {
			if fieldsOf == nil {
				fieldsOf = fields.NewSet("")
			}
			fieldsOf.AddAll(fields.FromSource(src, ""))
			from += fmt.Sprintf(", %s (id %d, message %s)", subject, id, md.FullName())
		}
		check(md, fmt.Sprintf("subject %s, latest schema id %d, message %s,", subject, id, md.FullName()))
	}
	if fieldsOf != nil {
		fieldsOf.From = "the latest schema of the registry's subjects " + strings.TrimPrefix(from, ", ")
		if errs := fields.CheckMapped(cfg, fieldsOf); len(errs) > 0 {
			problems = append(problems, &pipeline.ConfigError{Errs: errs})
		}
	}
	return report, problems
}

// unreadFields are md's top-level fields that no decoder field path
// reads (neither the field nor a field of it), in declaration order.
func unreadFields(md protoreflect.MessageDescriptor, paths []string) []string {
	var out []string
	fs := md.Fields()
	for i := 0; i < fs.Len(); i++ {
		name := string(fs.Get(i).Name())
		read := slices.ContainsFunc(paths, func(p string) bool { return p == name || strings.HasPrefix(p, name+".") })
		if paths == nil {
			read = true // every column reads the field of its name
		}
		if !read {
			out = append(out, name)
		}
	}
	return out
}

// oldestVersion is the oldest of the sinks' servers' versions, "" when
// none is known.
func oldestVersion(sinks []pipeline.Sink) string {
	oldest := ""
	for _, s := range sinks {
		for _, r := range s.Replicas {
			if r.Version != "" && (oldest == "" || versionLess(r.Version, oldest)) {
				oldest = r.Version
			}
		}
	}
	return oldest
}

// versionLess compares two dotted versions number by number.
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, _ := strconv.Atoi(as[i])
		y, _ := strconv.Atoi(bs[i])
		if x != y {
			return x < y
		}
	}
	return len(as) < len(bs)
}

// checkProtobufParts is checkProtobuf against what parts bound: the
// schemas parts loaded, or, when they hold no Protobuf schema, the ones
// fields.LoadSchemas loads here.
func checkProtobufParts(ctx context.Context, cfg *config.Config, parts *pipeline.Parts) ([]string, []error) {
	s := parts.Schemas()
	if s == nil || (s.ProtoMessage == nil && s.ProtoRegistry == nil) {
		var err error
		if s, err = fields.LoadSchemas(ctx, fields.Options{Config: cfg}); err != nil {
			return nil, []error{&pipeline.ConfigError{Errs: []error{err}}}
		}
		defer s.Close()
	}
	table, names := parts.DecoderInput()
	return checkProtobuf(ctx, cfg, s, protoTarget{Schema: table, Fields: names, Ranges: parts.ServerRanges(), Version: oldestVersion(parts.Sinks())})
}
