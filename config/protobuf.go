package config

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
