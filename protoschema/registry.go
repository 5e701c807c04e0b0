package protoschema

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/etl-project/etl/schemaregistry"
)

// Errors of registry schemas.
var (
	// ErrPending means the schema, or a schema it references, is being
	// fetched (or the registry is unreachable and the fetch is retried):
	// try again once Registry.Wait's channel is closed.
	ErrPending = errors.New("protoschema: schema not available yet")
	// ErrUnknown means the registry denies the schema id, or a subject or
	// version one of its references names. Like the registry client's
	// negative cache, it is not permanent: the registry is asked again
	// after schemaregistry.Options.NegativeCacheTTL.
	ErrUnknown = errors.New("protoschema: unknown schema")
	// ErrInvalid means the registry serves the schema but it cannot be
	// used: not a PROTOBUF schema, references that form a cycle or
	// contradict each other, or sources that do not compile. Schema ids
	// and versions never change, so it is permanent.
	ErrInvalid = errors.New("protoschema: invalid schema")
)

// Bounds of a schema's references, against a registry that serves absurd
// ones: no real schema imports more files or more deeply.
const (
	maxReferenceDepth = 64
	maxReferences     = 1024
)

// Registry resolves the PROTOBUF schemas of a Confluent schema registry by
// id: the schema and the schemas its references name, recursively, each
// reference's name being the path the importing file imports it by,
// compiled together. The compiled files, or the reason they cannot be, are
// cached per id for the Registry's life. It is safe for concurrent use; a
// cached id is served without a lock.
type Registry struct {
	c *schemaregistry.Client

	// cache maps an id to its files or its permanent error; copied on
	// write, under mu.
	cache atomic.Pointer[map[int32]*entry]
	// mu is held while an id is compiled, so that it is compiled once.
	mu sync.Mutex
}

type entry struct {
	files *Files
	err   error // wraps ErrInvalid
}

// NewRegistry returns a Registry that fetches schemas through c. Closing c
// is the caller's business.
func NewRegistry(c *schemaregistry.Client) *Registry {
	r := &Registry{c: c}
	empty := map[int32]*entry{}
	r.cache.Store(&empty)
	return r
}

// Lookup returns the compiled files of schema id, never waiting on the
// network. While the schema or a reference is being fetched it starts
// the fetch if none is running and returns an error wrapping ErrPending
// (Wait gives the channel to wait on); a denial by the registry gives one
// wrapping ErrUnknown, a schema that cannot be used one wrapping
// ErrInvalid. When everything has been fetched, the first Lookup compiles
// the files, on the caller's goroutine (one compile per id, whatever the
// callers).
func (r *Registry) Lookup(id int32) (*Files, error) {
	if e := (*r.cache.Load())[id]; e != nil {
		return e.files, e.err
	}
	return r.resolve(context.Background(), id, &lookups{c: r.c})
}

// Wait returns a channel closed when what Lookup(id) waits for has been
// fetched (or denied, or the client closed); already closed when Lookup
// would not answer ErrPending. The caller then calls Lookup again: a
// schema with several references may need several waits.
func (r *Registry) Wait(id int32) <-chan struct{} {
	if (*r.cache.Load())[id] != nil {
		return closedChan
	}
	l := &lookups{c: r.c}
	if _, err := collect(context.Background(), id, l); err != nil && l.wait != nil {
		return l.wait
	}
	return closedChan
}

var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// Fetch returns the compiled files of schema id, fetching what is not
// cached now, one request at a time, bounded by ctx (each request also by
// the client's timeout). It does not retry: a failed request's error is
// returned. Fetch is for startup, the operator commands and tests; the
// record path uses Lookup.
func (r *Registry) Fetch(ctx context.Context, id int32) (*Files, error) {
	if e := (*r.cache.Load())[id]; e != nil {
		return e.files, e.err
	}
	return r.resolve(ctx, id, fetches{c: r.c})
}

// Latest fetches the latest version of subject and returns its compiled
// files and its schema id (see Fetch).
func (r *Registry) Latest(ctx context.Context, subject string) (*Files, int32, error) {
	s, err := r.c.Latest(ctx, subject)
	if err != nil {
		return nil, 0, err
	}
	f, err := r.Fetch(ctx, s.ID)
	return f, s.ID, err
}

// Prewarm resolves the latest version of each subject (see Latest), so
// that the records written with them decode without waiting. It tries
// every subject until ctx is done and returns the failures joined.
func (r *Registry) Prewarm(ctx context.Context, subjects []string) error {
	var errs []error
	for _, subject := range subjects {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("protoschema: prewarm stopped before subject %q: %w", subject, err))
			break
		}
		if _, _, err := r.Latest(ctx, subject); err != nil {
			errs = append(errs, fmt.Errorf("protoschema: prewarm subject %q: %w", subject, err))
		}
	}
	return errors.Join(errs...)
}

// resolve collects id's sources through g and compiles them, caching the
// outcome when it is final.
func (r *Registry) resolve(ctx context.Context, id int32, g getter) (*Files, error) {
	set, err := collect(ctx, id, g)
	if err != nil {
		if errors.Is(err, ErrInvalid) {
			r.mu.Lock()
			r.storeLocked(id, &entry{err: err})
			r.mu.Unlock()
		}
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := (*r.cache.Load())[id]; e != nil { // compiled meanwhile
		return e.files, e.err
	}
	files, err := CompileSources(ctx, fmt.Sprintf("schema id %d", id), set.sources, set.root)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err // cancelled, not the schema's fault
		}
		err = fmt.Errorf("%w: schema id %d: %w", ErrInvalid, id, err)
	}
	r.storeLocked(id, &entry{files: files, err: err})
	return files, err
}

// storeLocked caches e under id. r.mu must be held.
func (r *Registry) storeLocked(id int32, e *entry) {
	old := *r.cache.Load()
	if _, ok := old[id]; ok {
		return
	}
	next := make(map[int32]*entry, len(old)+1)
	maps.Copy(next, old)
	next[id] = e
	r.cache.Store(&next)
}

// sourceSet is what compiles a registry schema: the text of every file by
// the path it is imported by, and the root file's name.
type sourceSet struct {
	root    string
	sources map[string]string
}

// getter fetches registry schemas for collect: without waiting (lookups)
// or with one request each (fetches).
type getter interface {
	byID(ctx context.Context, id int32) (*schemaregistry.Schema, error)
	byVersion(ctx context.Context, subject string, version int) (*schemaregistry.Schema, error)
}

// lookups asks the client's caches, which start background fetches; wait
// is the channel of the first fetch it found pending.
type lookups struct {
	c    *schemaregistry.Client
	wait <-chan struct{}
}

func (l *lookups) byID(_ context.Context, id int32) (*schemaregistry.Schema, error) {
	s, err := l.c.Lookup(id)
	switch {
	case err == nil:
		return s, nil
	case errors.Is(err, schemaregistry.ErrUnknownID):
		return nil, fmt.Errorf("%w: %w", ErrUnknown, err)
	}
	if l.wait == nil {
		l.wait = l.c.Wait(id)
	}
	return nil, fmt.Errorf("%w: %w", ErrPending, err)
}

func (l *lookups) byVersion(_ context.Context, subject string, version int) (*schemaregistry.Schema, error) {
	s, err := l.c.LookupVersion(subject, version)
	switch {
	case err == nil:
		return s, nil
	case errors.Is(err, schemaregistry.ErrSubjectNotFound) || errors.Is(err, schemaregistry.ErrVersionNotFound):
		return nil, fmt.Errorf("%w: %w", ErrUnknown, err)
	}
	if l.wait == nil {
		l.wait = l.c.WaitVersion(subject, version)
	}
	return nil, fmt.Errorf("%w: %w", ErrPending, err)
}

// fetches makes one request for what the client has not cached.
type fetches struct{ c *schemaregistry.Client }

func (f fetches) byID(ctx context.Context, id int32) (*schemaregistry.Schema, error) {
	s, err := f.c.Fetch(ctx, id)
	if errors.Is(err, schemaregistry.ErrUnknownID) {
		return nil, fmt.Errorf("%w: %w", ErrUnknown, err)
	}
	return s, err
}

func (f fetches) byVersion(ctx context.Context, subject string, version int) (*schemaregistry.Schema, error) {
	s, err := f.c.FetchVersion(ctx, subject, version)
	if errors.Is(err, schemaregistry.ErrSubjectNotFound) || errors.Is(err, schemaregistry.ErrVersionNotFound) {
		return nil, fmt.Errorf("%w: %w", ErrUnknown, err)
	}
	return s, err
}

// collect gathers the sources of schema id: its text and, depth first,
// the text of each schema its references name, by the reference's name.
// It stops at the first schema it cannot have (g's error: pending,
// unknown, or a failed request) and refuses, wrapping ErrInvalid, what
// cannot compile: a schema that is not PROTOBUF, a cycle of references,
// one import name given to two schemas, too many or too deep references.
func collect(ctx context.Context, id int32, g getter) (*sourceSet, error) {
	root, err := g.byID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("schema id %d: %w", id, err)
	}
	if root.Type != "PROTOBUF" {
		return nil, fmt.Errorf("%w: schema id %d is of type %s, not PROTOBUF", ErrInvalid, id, root.Type)
	}
	set := &sourceSet{root: fmt.Sprintf("schema-%d.proto", id), sources: map[string]string{}}
	set.sources[set.root] = root.Text
	type key struct {
		subject string
		version int
	}
	byName := map[string]key{}                         // import name -> the schema it names
	onPath := map[key]bool{}                           // the references being walked, for cycles
	chain := []string{fmt.Sprintf("schema id %d", id)} // the same, in order, for the errors
	var walk func(refs []schemaregistry.Reference) error
	walk = func(refs []schemaregistry.Reference) error {
		if len(chain) > maxReferenceDepth {
			return fmt.Errorf("%w: schema id %d: references nest deeper than %d: %s", ErrInvalid, id, maxReferenceDepth, strings.Join(chain, " -> "))
		}
		for _, ref := range refs {
			k := key{ref.Subject, ref.Version}
			what := fmt.Sprintf("%q (subject %q version %d)", ref.Name, ref.Subject, ref.Version)
			switch {
			case ref.Name == "" || ref.Subject == "":
				return fmt.Errorf("%w: schema id %d: a reference without a name or a subject: %+v", ErrInvalid, id, ref)
			case ref.Name == set.root:
				return fmt.Errorf("%w: schema id %d: reference %s takes the name of the schema's own file", ErrInvalid, id, what)
			case onPath[k]:
				return fmt.Errorf("%w: schema id %d: references form a cycle: %s -> %s", ErrInvalid, id, strings.Join(chain, " -> "), what)
			}
			if prev, ok := byName[ref.Name]; ok {
				if prev != k {
					return fmt.Errorf("%w: schema id %d: import %q names both subject %q version %d and subject %q version %d",
						ErrInvalid, id, ref.Name, prev.subject, prev.version, ref.Subject, ref.Version)
				}
				continue // walked already
			}
			if len(byName) >= maxReferences {
				return fmt.Errorf("%w: schema id %d: more than %d references", ErrInvalid, id, maxReferences)
			}
			s, err := g.byVersion(ctx, ref.Subject, ref.Version)
			if err != nil {
				return fmt.Errorf("schema id %d: reference %s: %w", id, what, err)
			}
			switch {
			case s.Type != "PROTOBUF":
				return fmt.Errorf("%w: schema id %d: reference %s is of type %s, not PROTOBUF", ErrInvalid, id, what, s.Type)
			case s.ID == id:
				return fmt.Errorf("%w: schema id %d: references form a cycle: %s -> %s, which is schema id %d itself",
					ErrInvalid, id, strings.Join(chain, " -> "), what, id)
			}
			byName[ref.Name] = k
			set.sources[ref.Name] = s.Text
			onPath[k] = true
			chain = append(chain, what)
			if err := walk(s.References); err != nil {
				return err
			}
			chain = chain[:len(chain)-1]
			delete(onPath, k)
		}
		return nil
	}
	if err := walk(root.References); err != nil {
		return nil, err
	}
	return set, nil
}
