package serve

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// statusClientGone is logged (never sent) for a request whose client disconnected first, as
// nginx does.
const statusClientGone = 499

// route is one endpoint: its method and handler. auth says whether --api-key applies.
type route struct {
	method string
	auth   bool
	handle func(s *Server, w http.ResponseWriter, r *http.Request, rec *record)
}

// routes maps paths to endpoints. GET /v1/models/{id} is matched by prefix in ServeHTTP.
var routes = map[string]route{
	"/v1/chat/completions": {http.MethodPost, true, (*Server).chatCompletions},
	"/v1/completions":      {http.MethodPost, true, (*Server).completions},
	"/v1/models":           {http.MethodGet, true, (*Server).models},
	"/health":              {http.MethodGet, false, (*Server).health},
	// Like /health, /metrics needs no API key (vLLM and llama-server serve it without one):
	// scrapers and load balancers reach it on the same address. It holds counts, never text.
	"/metrics": {http.MethodGet, false, (*Server).metricsHandler},
}

// record collects what the access log reports about one request; handlers fill it in.
type record struct {
	id               string
	start            time.Time
	status           int
	stream           bool
	promptTokens     int
	completionTokens int
	cachedTokens     int
	queue            time.Duration
	ttft             time.Duration
	finish           string
	errMsg           string
}

// statusWriter records the status and whether anything was written. Unwrap lets
// http.ResponseController reach the connection's Flush and deadlines.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ServeHTTP routes a request, applies the API key, recovers from panics and writes one access
// log record when the request is done.
func (s *Server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	rec := &record{id: s.requestID(r), start: time.Now()}
	w := &statusWriter{ResponseWriter: rw}
	w.Header().Set("X-Request-Id", rec.id)
	defer s.accessLog(w, r, rec)
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("panic while serving a request", "request_id", rec.id, "panic", clip(fmt.Sprint(p)), "stack", string(debug.Stack()))
			if w.status == 0 {
				s.writeError(w, rec, newError(http.StatusInternalServerError, typeServer, "internal_error", "internal server error (request %s); the server log has the details", rec.id))
			}
		}
	}()

	rt, ok := routes[r.URL.Path]
	if !ok && strings.HasPrefix(r.URL.Path, "/v1/models/") {
		rt, ok = route{http.MethodGet, true, (*Server).model1}, true
	}
	if !ok {
		s.writeError(w, rec, newError(http.StatusNotFound, typeInvalidRequest, "unknown_url", "invalid URL (%s %s): this server serves POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /health and GET /metrics", r.Method, r.URL.Path))
		return
	}
	if r.Method != rt.method && !(rt.method == http.MethodGet && r.Method == http.MethodHead) {
		w.Header().Set("Allow", rt.method)
		s.writeError(w, rec, newError(http.StatusMethodNotAllowed, typeInvalidRequest, "method_not_allowed", "method %s is not allowed for %s; use %s", r.Method, r.URL.Path, rt.method))
		return
	}
	if rt.auth && s.apiKey != "" && !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="anerun"`)
		msg := "missing API key: send it as the header \"Authorization: Bearer KEY\""
		if r.Header.Get("Authorization") != "" {
			msg = "incorrect API key provided"
		}
		s.writeError(w, rec, newError(http.StatusUnauthorized, typeInvalidRequest, "invalid_api_key", "%s", msg))
		return
	}
	if !s.life.TryRLock() {
		s.unavailable(w, rec)
		return
	}
	defer s.life.RUnlock()
	if s.closed {
		s.unavailable(w, rec)
		return
	}
	rt.handle(s, w, r, rec)
}

func (s *Server) unavailable(w http.ResponseWriter, rec *record) {
	w.Header().Set("Connection", "close")
	e := newError(http.StatusServiceUnavailable, typeServer, "shutting_down", "the server is shutting down")
	e.retryAfter = 1
	s.writeError(w, rec, e)
}

// authorized checks the Bearer token in constant time.
func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return false
	}
	got := strings.TrimSpace(h[len(prefix):])
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.apiKey)) == 1
}

// requestID keeps a client's X-Request-Id when it is short and plain, so a request can be
// followed through proxies; otherwise it makes one.
func (s *Server) requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= 64 && strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == "" {
		return id
	}
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// readBody reads the request body within the size limit and a deadline.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	if r.ContentLength > s.maxBody {
		return nil, tooLarge(s.maxBody)
	}
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(readBodyTimeout))
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	// Clear the deadline: the server's background read, which notices a client that goes away
	// mid-generation, would otherwise hit it and cancel the request.
	rc.SetReadDeadline(time.Time{})
	if err != nil {
		var mb *http.MaxBytesError
		switch {
		case errors.As(err, &mb):
			return nil, tooLarge(s.maxBody)
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, newError(http.StatusRequestTimeout, typeInvalidRequest, "timeout", "the request body took longer than %v to arrive", readBodyTimeout)
		}
		return nil, badRequest("", "", "could not read the request body: %v", err)
	}
	return data, nil
}

func tooLarge(limit int64) *apiError {
	return newError(http.StatusRequestEntityTooLarge, typeInvalidRequest, "request_too_large", "the request body is larger than the server's limit of %d bytes", limit)
}

// marshal encodes v as JSON without escaping <, > and & (model text is full of them).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// writeJSON sends v with status.
func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := marshal(v)
	if err != nil { // our own types always encode; say so loudly if one does not
		s.log.Error("encoding a response", "err", err)
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"internal server error: could not encode the response","type":"server_error","param":null,"code":"internal_error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// writeError sends e and notes it for the access log.
func (s *Server) writeError(w http.ResponseWriter, rec *record, e *apiError) {
	e.Message = clip(e.Message)
	rec.errMsg = e.Message
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	s.writeJSON(w, e.Status, errorBody{e})
}

// accessLog writes the request's one log record.
func (s *Server) accessLog(w *statusWriter, r *http.Request, rec *record) {
	status := rec.status
	if status == 0 {
		status = w.status
	}
	s.stats.requests.Add(1)
	s.metrics.request(r.URL.Path, status, time.Since(rec.start))
	attrs := []slog.Attr{
		slog.String("request_id", rec.id),
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Int("status", status),
		slog.String("remote", r.RemoteAddr),
		slog.Float64("duration_ms", ms(time.Since(rec.start))),
	}
	if rec.promptTokens > 0 || rec.completionTokens > 0 {
		attrs = append(attrs,
			slog.Bool("stream", rec.stream),
			slog.Int("prompt_tokens", rec.promptTokens),
			slog.Int("cached_tokens", rec.cachedTokens),
			slog.Int("completion_tokens", rec.completionTokens),
			slog.Float64("queue_ms", ms(rec.queue)),
			slog.Float64("ttft_ms", ms(rec.ttft)),
			slog.String("finish", rec.finish))
	}
	if rec.errMsg != "" {
		attrs = append(attrs, slog.String("error", clip(rec.errMsg)))
	}
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
	}
	s.log.LogAttrs(r.Context(), level, "request", attrs...)
}

// ms converts a duration to milliseconds with microsecond precision.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
