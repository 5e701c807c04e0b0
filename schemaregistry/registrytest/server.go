// Package registrytest is an in-process Confluent Schema Registry for tests:
// enough of the REST API for the schemaregistry client and for tests that
// produce Confluent-framed records.
package registrytest

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Server is a fake schema registry on 127.0.0.1. It serves
//
//	GET  /schemas/ids/{id}
//	GET  /subjects/{subject}/versions/latest
//	GET  /subjects/{subject}/versions/{version}
//	POST /subjects/{subject}/versions
//
// with the registry's JSON bodies and error codes (40401 unknown subject,
// 40402 unknown version, 40403 unknown schema id, 42202 a version that is
// not a number). Schemas of every type are served (AVRO, PROTOBUF, JSON),
// with their references. Unlike a real registry it does not check that a
// schema's references exist, so a test can serve a schema whose reference
// is missing, or references that form a cycle. It is safe for concurrent
// use.
type Server struct {
	srv     *httptest.Server
	handler http.Handler

	mu       sync.Mutex
	schemas  []schema           // schema id i+1 is schemas[i]
	byText   map[string]int32   // schema key (type, text, references) -> id, as the registry dedups
	subjects map[string][]int32 // subject -> ids of its versions, oldest first
	down     bool
	held     chan struct{} // requests wait on it while not nil
	requests int
	user     string // basic auth required when not empty
	pass     string
}

type schema struct {
	text       string
	schemaType string
	references []Reference
}

// key identifies a schema as the registry dedups them: the same text with
// another type or other references is another schema.
func (sc schema) key() string {
	k := sc.schemaType
	if k == "" {
		k = "AVRO"
	}
	k += "\x00" + sc.text
	for _, r := range sc.references {
		k += "\x00" + r.Name + "\x00" + r.Subject + "\x00" + strconv.Itoa(r.Version)
	}
	return k
}

// Reference names a schema that another imports: for Protobuf, Name is
// the import path and Subject and Version the referenced schema.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// Schema is a schema to register: its text, its type (AVRO when empty,
// PROTOBUF, JSON) and its references.
type Schema struct {
	Text       string
	Type       string
	References []Reference
}

// New starts a server; it is closed when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := newServer()
	s.srv = httptest.NewServer(s.handler)
	t.Cleanup(s.srv.Close)
	return s
}

// NewTLS starts a server that serves HTTPS with cert (a certificate for
// 127.0.0.1, e.g. from testenv's CA); it is closed when the test ends.
// URL then starts with https://.
func NewTLS(t testing.TB, cert tls.Certificate) *Server {
	t.Helper()
	s := newServer()
	s.srv = httptest.NewUnstartedServer(s.handler)
	s.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	return s
}

// Listen starts a server on addr (host:port, the host 127.0.0.1 or
// localhost; port 0 picks a free one) outside a test, as devbroker serves
// it for benchmarks and demos. Close stops it.
func Listen(addr string) (*Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("registrytest: listen %q: %w", addr, err)
	}
	if host != "127.0.0.1" && host != "localhost" {
		return nil, fmt.Errorf("registrytest: listen %q: only 127.0.0.1 is served", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("registrytest: %w", err)
	}
	s := newServer()
	s.srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}}
	s.srv.Start()
	return s, nil
}

// Close stops a server Listen started (New's stops with its test).
func (s *Server) Close() { s.srv.Close() }

func newServer() *Server {
	s := &Server{byText: map[string]int32{}, subjects: map[string][]int32{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /schemas/ids/{id}", s.getByID)
	mux.HandleFunc("GET /subjects/{subject}/versions/latest", s.getLatest)
	mux.HandleFunc("GET /subjects/{subject}/versions/{version}", s.getVersion)
	mux.HandleFunc("POST /subjects/{subject}/versions", s.register)
	s.handler = s.gate(mux)
	return s
}

// URL is the server's base URL.
func (s *Server) URL() string { return s.srv.URL }

// Transport returns a RoundTripper that serves requests by calling the
// server's handler in memory, whatever host they name. Requests through it
// behave, and are counted, like requests over the network; it suits tests
// that run in a testing/synctest bubble, where real network I/O would keep
// the bubble's clock from advancing.
func (s *Server) Transport() http.RoundTripper { return inMemory{s.handler} }

// Register registers schema (Avro) under subject, as POST
// /subjects/{subject}/versions does, and returns its id: a schema text
// already registered under any subject keeps its id.
func (s *Server) Register(subject, schemaText string) int32 {
	id, _ := s.add(subject, schema{text: schemaText})
	return id
}

// RegisterSchema registers sc under subject, as POST
// /subjects/{subject}/versions does, and returns its id and its version
// under subject (the version a reference to it names). A schema already
// registered (the same type, text and references) keeps its id, and its
// version if subject already has it.
func (s *Server) RegisterSchema(subject string, sc Schema) (id int32, version int) {
	return s.add(subject, schema{text: sc.Text, schemaType: sc.Type, references: sc.References})
}

// SetDown makes the server answer every request with 503 while down is
// true.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// Hold makes requests wait, once counted, until release is called (or the
// request is cancelled), so a test can look at a client while its request
// is in flight. release is idempotent.
func (s *Server) Hold() (release func()) {
	held := make(chan struct{})
	s.mu.Lock()
	s.held = held
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			if s.held == held {
				s.held = nil
			}
			s.mu.Unlock()
			close(held)
		})
	}
}

// RequireBasicAuth makes the server answer 401 to requests without these
// basic-auth credentials.
func (s *Server) RequireBasicAuth(username, password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.user, s.pass = username, password
}

// Requests returns how many requests the server has received, whatever
// their answer.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

func (s *Server) add(subject string, sc schema) (id int32, version int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := sc.key()
	id, ok := s.byText[key]
	if !ok {
		s.schemas = append(s.schemas, sc)
		id = int32(len(s.schemas))
		s.byText[key] = id
	}
	versions := s.subjects[subject]
	for i, v := range versions {
		if v == id {
			return id, i + 1
		}
	}
	s.subjects[subject] = append(versions, id)
	return id, len(versions) + 1
}

// gate counts requests and answers for a down server or missing
// credentials before h sees the request.
func (s *Server) gate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests++
		down, held, user, pass := s.down, s.held, s.user, s.pass
		s.mu.Unlock()
		if held != nil {
			select {
			case <-held:
			case <-r.Context().Done():
				return
			}
		}
		if down {
			writeError(w, http.StatusServiceUnavailable, 50003, "registry is down")
			return
		}
		if user != "" {
			u, p, ok := r.BasicAuth()
			if !ok || u != user || p != pass {
				writeError(w, http.StatusUnauthorized, 401, "Unauthorized")
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) getByID(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
	if err != nil {
		writeError(w, http.StatusNotFound, 404, "HTTP 404 Not Found")
		return
	}
	s.mu.Lock()
	var sc schema
	ok := id >= 1 && id <= int64(len(s.schemas))
	if ok {
		sc = s.schemas[id-1]
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, 40403, "Schema "+strconv.FormatInt(id, 10)+" not found")
		return
	}
	body := map[string]any{"schema": sc.text}
	if sc.schemaType != "" && sc.schemaType != "AVRO" { // the registry omits AVRO
		body["schemaType"] = sc.schemaType
	}
	if len(sc.references) > 0 {
		body["references"] = sc.references
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) getLatest(w http.ResponseWriter, r *http.Request) {
	s.serveVersion(w, r.PathValue("subject"), -1)
}

// getVersion serves one version of a subject; -1 is the latest, as the
// registry takes it.
func (s *Server) getVersion(w http.ResponseWriter, r *http.Request) {
	v, err := strconv.Atoi(r.PathValue("version"))
	if err != nil || v == 0 || v < -1 {
		writeError(w, http.StatusUnprocessableEntity, 42202,
			"The specified version '"+r.PathValue("version")+"' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"")
		return
	}
	s.serveVersion(w, r.PathValue("subject"), v)
}

// serveVersion answers with version v of subject (-1: the latest).
func (s *Server) serveVersion(w http.ResponseWriter, subject string, v int) {
	s.mu.Lock()
	versions := s.subjects[subject]
	if v == -1 {
		v = len(versions)
	}
	var (
		id int32
		sc schema
	)
	ok := len(versions) > 0 && v >= 1 && v <= len(versions)
	if ok {
		id = versions[v-1]
		sc = s.schemas[id-1]
	}
	s.mu.Unlock()
	switch {
	case len(versions) == 0:
		writeError(w, http.StatusNotFound, 40401, "Subject '"+subject+"' not found.")
		return
	case !ok:
		writeError(w, http.StatusNotFound, 40402, "Version "+strconv.Itoa(v)+" not found.")
		return
	}
	body := map[string]any{"subject": subject, "version": v, "id": id, "schema": sc.text}
	if sc.schemaType != "" && sc.schemaType != "AVRO" {
		body["schemaType"] = sc.schemaType
	}
	if len(sc.references) > 0 {
		body["references"] = sc.references
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Schema     string      `json:"schema"`
		SchemaType string      `json:"schemaType"`
		References []Reference `json:"references"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<20)).Decode(&req); err != nil || req.Schema == "" {
		writeError(w, http.StatusUnprocessableEntity, 42201, "Invalid schema")
		return
	}
	id, _ := s.add(r.PathValue("subject"), schema{text: req.Schema, schemaType: req.SchemaType, references: req.References})
	writeJSON(w, http.StatusOK, map[string]any{"id": id})
}

func writeError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"error_code": code, "message": msg})
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body) // a failed write is the client's problem
}

// inMemory is an http.RoundTripper that calls a handler directly.
type inMemory struct{ h http.Handler }

func (t inMemory) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	if req.Body != nil {
		_ = req.Body.Close() // a RoundTripper must close the body
	}
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}
