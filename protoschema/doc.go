// Package protoschema turns Protobuf schemas into protoreflect descriptors
// for the Protobuf decoder: local schemas (.proto files with their import
// paths, or a compiled FileDescriptorSet) and schemas of a Confluent schema
// registry (PROTOBUF schemas and the schemas they reference), and it reads
// and writes the Confluent Protobuf framing (magic byte, schema id,
// message-index list).
//
// .proto sources are compiled with github.com/bufbuild/protocompile, a
// pure-Go compiler that resolves imports (the well-known types'
// google/protobuf/*.proto among them, without the user shipping them) and
// reports errors with their file, line and column. Descriptor sets are
// read with google.golang.org/protobuf's protodesc.
//
// The result of either is a *Files: the compiled files, every message of
// them and of their imports by full name (Message, with a did-you-mean for
// a name it does not hold), and, for a registry schema, the file its
// records' message indexes point into (Root, MessageAt).
//
// Registry schemas come through a Registry, which caches the compiled
// files per schema id. Its Lookup never waits on the network: while the
// schema or one of its references is being fetched it answers ErrPending,
// and Wait gives the channel to wait on; an id (or a reference) the
// registry denies is ErrUnknown. Fetch is the blocking twin, for startup
// and the operator commands. A Resolver, one per worker, resolves framed
// records to their message through such a Source (a Registry, or the
// pipeline's wrapper of one), caching the message per schema id and
// message-index path, so that a record of a known message allocates
// nothing.
package protoschema
