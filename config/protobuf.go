package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// FormatProtobuf is Protobuf messages (decode.protobuf).
const FormatProtobuf Format = "protobuf"

// The Protobuf framings (decode.protobuf.framing).
const (
	// ProtobufConfluent is Confluent's framing: magic byte 0, the 4-byte
	// registry schema id, the message-index list, the message.
	ProtobufConfluent = "confluent"
	// ProtobufRaw is the message alone, of Message in the local schema
	// (ProtoFiles or DescriptorSet).
	ProtobufRaw = "raw"
)

// Protobuf configures the Protobuf decoder (decode.format: protobuf).
type Protobuf struct {
	// Framing is confluent (the frame names the registry schema and the
	// message in it) or raw (the message alone, of Message).
	Framing string `yaml:"framing"`
	// Message is the full name of the message (package.Name): required
	// with raw framing; with confluent framing the frames name it.
	Message string `yaml:"message"`
	// ProtoFiles are the .proto files of the local schema (raw framing),
	// compiled with ImportPaths; google/protobuf/*.proto need not be
	// given.
	ProtoFiles  []string `yaml:"proto_files,omitempty"`
	ImportPaths []string `yaml:"import_paths,omitempty"`
	// DescriptorSet, instead of ProtoFiles, is a compiled
	// FileDescriptorSet (protoc --descriptor_set_out --include_imports).
	DescriptorSet string `yaml:"descriptor_set"`
	// Registry serves the schemas of confluent framing.
	Registry *Registry `yaml:"registry,omitempty"`
	// PrewarmSubjects are fetched from the registry at startup.
	PrewarmSubjects  []string `yaml:"prewarm_subjects,omitempty"`
	NegativeCacheTTL Duration `yaml:"negative_cache_ttl"`
}

// isProtobuf reports whether the values are Protobuf.
func isProtobuf(c *Config) bool { return c.Decode.Format == FormatProtobuf }

// fileProblem describes why path cannot be read as a schema file, or "".
func fileProblem(path string) string {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return err.Error()
	case st.IsDir():
		return fmt.Sprintf("%s is a directory, not a file", path)
	}
	return ""
}

// protobufRules check decode.protobuf when the values are Protobuf.
var protobufRules = []rule{
	{path: "decode.protobuf.framing", when: isProtobuf, check: func(c *Config) string {
		return oneOf(c.Decode.Protobuf.Framing, ProtobufConfluent, ProtobufRaw)
	}},
	// Confluent framing names schemas by registry id; raw framing carries
	// no id, so the schema is local and the message must be named.
	{path: "decode.protobuf.registry.url", when: func(c *Config) bool { return isProtobuf(c) && c.Decode.Protobuf.Framing == ProtobufConfluent },
		required: func(c *Config) bool { return c.Decode.Protobuf.Registry != nil && c.Decode.Protobuf.Registry.URL != "" }},
	{path: "decode.protobuf.registry.password_file", when: func(c *Config) bool { return isProtobuf(c) && c.Decode.Protobuf.Registry != nil },
		check: func(c *Config) string {
			return secretFileProblem(c.Decode.Protobuf.Registry.Password, c.Decode.Protobuf.Registry.PasswordFile)
		}},
	{path: "decode.protobuf.message", when: func(c *Config) bool { return isProtobuf(c) && c.Decode.Protobuf.Framing == ProtobufRaw },
		required: func(c *Config) bool { return c.Decode.Protobuf.Message != "" }},
	{path: "decode.protobuf.proto_files", when: func(c *Config) bool { return isProtobuf(c) && c.Decode.Protobuf.Framing == ProtobufRaw },
		check: func(c *Config) string {
			pb := c.Decode.Protobuf
			switch {
			case len(pb.ProtoFiles) == 0 && pb.DescriptorSet == "":
				return "raw framing needs the local schema: set proto_files (with import_paths) or descriptor_set"
			case len(pb.ProtoFiles) > 0 && pb.DescriptorSet != "":
				return "set proto_files or descriptor_set, not both"
			}
			for _, f := range pb.ProtoFiles {
				if f == "" {
					return "a file name is empty"
				}
				if p := protoFileProblem(f, pb.ImportPaths); p != "" {
					return p
				}
			}
			return ""
		}},
	{path: "decode.protobuf.import_paths", when: isProtobuf, check: func(c *Config) string {
		for _, d := range c.Decode.Protobuf.ImportPaths {
			st, err := os.Stat(d)
			switch {
			case err != nil:
				return err.Error()
			case !st.IsDir():
				return fmt.Sprintf("%s is not a directory", d)
			}
		}
		return ""
	}},
	{path: "decode.protobuf.descriptor_set", when: func(c *Config) bool { return isProtobuf(c) && c.Decode.Protobuf.DescriptorSet != "" },
		check: func(c *Config) string { return fileProblem(c.Decode.Protobuf.DescriptorSet) }},
	{path: "decode.protobuf.negative_cache_ttl", when: isProtobuf, check: func(c *Config) string {
		return durRange(c.Decode.Protobuf.NegativeCacheTTL, Duration(time.Second), 24*hour)
	}},
}

// protoFileProblem describes why the .proto file f cannot be found: as
// given, or under one of the import paths (which is how the compiler
// looks for it), or "".
func protoFileProblem(f string, importPaths []string) string {
	first := fileProblem(f)
	if first == "" {
		return ""
	}
	for _, d := range importPaths {
		if !filepath.IsAbs(f) && fileProblem(filepath.Join(d, f)) == "" {
			return ""
		}
	}
	if len(importPaths) > 0 {
		return fmt.Sprintf("%s (nor under the import_paths %s)", first, strings.Join(importPaths, ", "))
	}
	return first
}
