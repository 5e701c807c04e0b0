package schemaregistry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

const (
	acceptHeader = "application/vnd.schemaregistry.v1+json, application/json"
	// maxBody bounds a response body read into memory.
	maxBody = 16 << 20
	// codeSchemaNotFound is the registry's error code for an unknown id.
	codeSchemaNotFound = 40403
)

// schemaResponse is the body of GET /schemas/ids/{id} and, with its other
// fields, of GET /subjects/{subject}/versions/{version} (and .../latest).
type schemaResponse struct {
	Subject    string      `json:"subject"`
	Version    int         `json:"version"`
	ID         *int32      `json:"id"`
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType"`
	References []Reference `json:"references"`
}

// apiError is a registry answer other than 200.
type apiError struct {
	Status  int
	Code    int    // the body's error_code, 0 if none
	Message string // the body's message, or the start of a non-JSON body
}

func (e *apiError) Error() string {
	s := "HTTP " + strconv.Itoa(e.Status)
	if e.Code != 0 {
		s += ", error code " + strconv.Itoa(e.Code)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// fetchID makes one request for schema id and caches what it learns: the
// schema, or that the registry does not know the id (ErrUnknownID).
func (c *Client) fetchID(ctx context.Context, id int32) (*Schema, error) {
	target := c.base + "/schemas/ids/" + strconv.FormatInt(int64(id), 10)
	var r schemaResponse
	err := c.get(ctx, target, &r)
	var ae *apiError
	switch {
	case err == nil:
	case errors.As(err, &ae) && ae.Status == http.StatusNotFound && ae.Code == codeSchemaNotFound:
		// Only a 404 carrying the registry's own code means the id is
		// unknown: a bare 404 (a wrong URL path, a proxy) is a failure
		// to reach the registry, retried like any other.
		c.m.fetchNotFound.Inc()
		c.noteResult(target, nil)
		c.storeMissing(id)
		return nil, fmt.Errorf("%w: schema id %d: GET %s: %w", ErrUnknownID, id, target, err)
	case ctx.Err() != nil:
		// Cancelled by the caller or by Close: not the registry's failure,
		// so neither counted nor logged.
		return nil, fmt.Errorf("schemaregistry: schema id %d: GET %s: %w", id, target, err)
	default:
		c.m.fetchError.Inc()
		c.noteResult(target, err)
		return nil, fmt.Errorf("schemaregistry: schema id %d: GET %s: %w", id, target, err)
	}
	if r.Schema == "" {
		err := errors.New("answer has no schema")
		c.m.fetchError.Inc()
		c.noteResult(target, err)
		return nil, fmt.Errorf("schemaregistry: schema id %d: GET %s: %w", id, target, err)
	}
	c.m.fetchOK.Inc()
	c.noteResult(target, nil)
	s := r.toSchema(id)
	c.store(s)
	return s, nil
}

// Latest fetches the latest version of subject (one request, no retry)
// and caches its schema under its id. A subject the registry does not know
// is an error wrapping ErrSubjectNotFound.
func (c *Client) Latest(ctx context.Context, subject string) (*Schema, error) {
	return c.fetchLatest(ctx, subject)
}

// ErrSubjectNotFound is the registry's answer for a subject it does not
// know.
var ErrSubjectNotFound = errors.New("subject not found")

// fetchLatest makes one request for the latest version of subject and
// caches its schema under its id.
func (c *Client) fetchLatest(ctx context.Context, subject string) (*Schema, error) {
	target := c.base + "/subjects/" + url.PathEscape(subject) + "/versions/latest"
	var r schemaResponse
	err := c.get(ctx, target, &r)
	if err == nil && (r.ID == nil || r.Schema == "") {
		err = errors.New("answer has no id or no schema")
	}
	if err != nil {
		var ae *apiError
		switch {
		case ctx.Err() != nil: // cancelled by the caller
		case errors.As(err, &ae) && ae.Status == http.StatusNotFound && ae.Code != 0:
			// The registry answered: the subject (or its versions) is
			// unknown. Not a reachability problem.
			c.m.fetchNotFound.Inc()
			c.noteResult(target, nil)
			err = fmt.Errorf("%w: %w", ErrSubjectNotFound, err)
		default:
			c.m.fetchError.Inc()
			c.noteResult(target, err)
		}
		return nil, fmt.Errorf("schemaregistry: subject %q: GET %s: %w", subject, target, err)
	}
	c.m.fetchOK.Inc()
	c.noteResult(target, nil)
	s := r.toSchema(*r.ID)
	c.store(s)
	return s, nil
}

func (r *schemaResponse) toSchema(id int32) *Schema {
	s := &Schema{ID: id, Text: r.Schema, Type: r.SchemaType, References: r.References}
	if s.Type == "" {
		s.Type = "AVRO"
	}
	return s
}

// get makes one GET of target, bounded by ctx and the client's timeout, and
// decodes a 200 answer's JSON body into out. Any other status gives an
// *apiError. The error does not name target; callers add it.
func (c *Client) get(ctx context.Context, target string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", acceptHeader)
	if c.username != "" {
		req.SetBasicAuth(c.username, c.currentPassword())
	}
	start := time.Now()
	defer func() { c.m.fetchDuration.Observe(time.Since(start).Seconds()) }()
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the caller names the URL
		}
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return fmt.Errorf("reading the answer (HTTP %d): %w", resp.StatusCode, err)
	}
	if len(body) > maxBody {
		return fmt.Errorf("answer (HTTP %d) is over %d bytes", resp.StatusCode, maxBody)
	}
	if resp.StatusCode != http.StatusOK {
		ae := &apiError{Status: resp.StatusCode}
		var e struct {
			Code    int    `json:"error_code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(body, &e) == nil {
			ae.Code, ae.Message = e.Code, e.Message
		} else {
			ae.Message = snippet(body)
		}
		return ae
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decoding the answer: %w", err)
	}
	return nil
}

// snippet returns the start of a non-JSON body, for an error message.
func snippet(b []byte) string {
	const n = 200
	if len(b) > n {
		return strconv.Quote(string(b[:n])) + "..."
	}
	if len(b) == 0 {
		return ""
	}
	return strconv.Quote(string(b))
}

// currentPassword is the password for a request: PasswordFunc's answer
// when it is set (the last good one when it fails), else Password.
func (c *Client) currentPassword() string {
	if c.pwFunc == nil {
		return c.password
	}
	pw, err := c.pwFunc()
	c.pwMu.Lock()
	defer c.pwMu.Unlock()
	if err != nil {
		if c.log != nil {
			c.log.Warn("schema registry password file cannot be read: using the last password read", "err", err)
		}
		return c.password
	}
	c.password = pw
	return pw
}
