package schemaregistry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Registry error codes of GET /subjects/{subject}/versions/{version}.
const (
	codeSubjectNotFound = 40401
	codeVersionNotFound = 40402
)

// ErrVersionNotFound is the registry's answer for a version its subject
// does not have (HTTP 404, error code 40402).
var ErrVersionNotFound = errors.New("version not found")

// versionKey names one version of one subject.
type versionKey struct {
	subject string
	version int
}

func (k versionKey) String() string {
	return fmt.Sprintf("subject %q version %d", k.subject, k.version)
}

// missingVersion is a version the registry denied: until when it is
// reported so without asking again, and the sentinel of its answer
// (ErrSubjectNotFound or ErrVersionNotFound).
type missingVersion struct {
	until time.Time
	err   error
}

// LookupVersion returns the schema registered as version of subject (a
// reference of a Protobuf schema names its import so) if it is cached.
// Otherwise it makes sure one background fetch of it is running and
// returns an error wrapping ErrPending; the caller retries later
// (WaitVersion tells it when). A subject or version the registry denied
// gives an error wrapping ErrSubjectNotFound or ErrVersionNotFound until
// Options.NegativeCacheTTL has passed; a version below 1, which the
// registry never assigns, gives ErrVersionNotFound at once. After Close, a
// version not cached gives ErrClosed. LookupVersion never waits on the
// network. A version's schema never changes, so it is cached for the
// client's life, and under its id too (Lookup then finds it).
func (c *Client) LookupVersion(subject string, version int) (*Schema, error) {
	k := versionKey{subject, version}
	if version < 1 {
		return nil, fmt.Errorf("schemaregistry: %v: %w: a version number is 1 or more", k, ErrVersionNotFound)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.versions[k]; s != nil {
		return s, nil
	}
	if err := c.missingVersionLocked(k); err != nil {
		return nil, err
	}
	if f := c.pendingVersions[k]; f != nil {
		return nil, f.err
	}
	if c.closed {
		return nil, fmt.Errorf("%v: %w", k, ErrClosed)
	}
	f := &fetch{done: make(chan struct{}), err: fmt.Errorf("%w: %v", ErrPending, k)}
	c.pendingVersions[k] = f
	c.wg.Add(1)
	go c.background(f,
		func() bool { return c.cachedVersion(k) },
		func(ctx context.Context) error { _, err := c.fetchVersion(ctx, k); return err },
		func(err error) bool {
			return errors.Is(err, ErrSubjectNotFound) || errors.Is(err, ErrVersionNotFound)
		},
		func() { c.completeVersion(k, f) })
	return nil, f.err
}

// WaitVersion returns a channel that is closed when the background fetch
// of subject's version completes (see Wait); already closed when none is
// pending.
func (c *Client) WaitVersion(subject string, version int) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.pendingVersions[versionKey{subject, version}]; f != nil {
		return f.done
	}
	return closedChan
}

// FetchVersion returns the schema registered as version of subject, from
// the cache or with one request to the registry made now, bounded by ctx
// and Options.Timeout. It does not retry. A denial gives an error wrapping
// ErrSubjectNotFound or ErrVersionNotFound and is remembered like
// LookupVersion's. FetchVersion is meant for startup, the operator
// commands and tests; the record path uses LookupVersion.
func (c *Client) FetchVersion(ctx context.Context, subject string, version int) (*Schema, error) {
	k := versionKey{subject, version}
	if version < 1 {
		return nil, fmt.Errorf("schemaregistry: %v: %w: a version number is 1 or more", k, ErrVersionNotFound)
	}
	c.mu.Lock()
	s := c.versions[k]
	err := c.missingVersionLocked(k)
	closed := c.closed
	c.mu.Unlock()
	switch {
	case s != nil:
		return s, nil
	case err != nil:
		return nil, err
	case closed:
		return nil, fmt.Errorf("%v: %w", k, ErrClosed)
	}
	return c.fetchVersion(ctx, k)
}

// fetchVersion makes one request for k and caches what it learns: the
// schema (under k and under its id), or that the registry denies k.
func (c *Client) fetchVersion(ctx context.Context, k versionKey) (*Schema, error) {
	target := c.base + "/subjects/" + url.PathEscape(k.subject) + "/versions/" + strconv.Itoa(k.version)
	var r schemaResponse
	err := c.get(ctx, target, &r)
	if err == nil && (r.ID == nil || r.Schema == "") {
		err = errors.New("answer has no id or no schema")
	}
	if err != nil {
		var ae *apiError
		switch {
		case ctx.Err() != nil: // cancelled by the caller or by Close
		case errors.As(err, &ae) && ae.Status == http.StatusNotFound &&
			(ae.Code == codeSubjectNotFound || ae.Code == codeVersionNotFound):
			// The registry answered that k does not exist. A bare 404 (a
			// wrong URL path, a proxy) is a failure to reach it, retried.
			sentinel := ErrSubjectNotFound
			if ae.Code == codeVersionNotFound {
				sentinel = ErrVersionNotFound
			}
			c.m.fetchNotFound.Inc()
			c.noteResult(target, nil)
			c.storeMissingVersion(k, sentinel)
			err = fmt.Errorf("%w: %w", sentinel, err)
		default:
			c.m.fetchError.Inc()
			c.noteResult(target, err)
		}
		return nil, fmt.Errorf("schemaregistry: %v: GET %s: %w", k, target, err)
	}
	c.m.fetchOK.Inc()
	c.noteResult(target, nil)
	s := r.toSchema(*r.ID)
	c.store(s)
	c.mu.Lock()
	if c.versions[k] == nil {
		c.versions[k] = s
	} else {
		s = c.versions[k]
	}
	c.mu.Unlock()
	return s, nil
}

// cachedVersion reports whether k's schema is cached.
func (c *Client) cachedVersion(k versionKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.versions[k] != nil
}

// missingVersionLocked returns the denial of k if it is still remembered,
// and forgets it once its time is up. c.mu must be held.
func (c *Client) missingVersionLocked(k versionKey) error {
	m, ok := c.missingVersions[k]
	if !ok {
		return nil
	}
	if time.Now().Before(m.until) {
		return fmt.Errorf("schemaregistry: %v: %w (registry %s answered 404)", k, m.err, c.base)
	}
	delete(c.missingVersions, k)
	return nil
}

// storeMissingVersion remembers that the registry denies k.
func (c *Client) storeMissingVersion(k versionKey, sentinel error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if len(c.missingVersions) >= missingSweepAt {
		for key, m := range c.missingVersions {
			if !now.Before(m.until) {
				delete(c.missingVersions, key)
			}
		}
	}
	c.missingVersions[k] = missingVersion{until: now.Add(c.negTTL), err: sentinel}
}

// completeVersion ends the background fetch f of k and wakes its waiters.
func (c *Client) completeVersion(k versionKey, f *fetch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pendingVersions[k] == f {
		delete(c.pendingVersions, k)
	}
	close(f.done)
}
