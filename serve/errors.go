package serve

import (
	"fmt"
	"net/http"
	"unicode/utf8"
)

// apiError is an error answered to the client in OpenAI's shape:
//
//	{"error": {"message": "...", "type": "invalid_request_error", "param": "temperature", "code": null}}
//
// Clients (the openai packages among them) pick their exception class from the HTTP status and
// show message, so message says what was wrong and what was expected.
type apiError struct {
	Status  int     `json:"-"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
	// retryAfter, in seconds, is sent as the Retry-After header when positive (429, 503).
	retryAfter int
}

func (e *apiError) Error() string { return e.Message }

// The error types we send. OpenAI uses invalid_request_error for every 4xx it attributes to
// the request (401 included) and server_error for its own failures.
const (
	typeInvalidRequest = "invalid_request_error"
	typeRateLimit      = "rate_limit_error"
	typeServer         = "server_error"
	typeTimeout        = "timeout_error"
)

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// badRequest is a 400 about one request field (param may be empty) with an optional code.
func badRequest(param, code, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: typeInvalidRequest,
		Message: fmt.Sprintf(format, args...), Param: strp(param), Code: strp(code)}
}

// newError builds an error of any status.
func newError(status int, typ, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Type: typ, Message: fmt.Sprintf(format, args...), Code: strp(code)}
}

// errorBody is the JSON document of an error response (and of an error event in a stream).
type errorBody struct {
	Error *apiError `json:"error"`
}

// modelNotFound is the answer for a model the server does not serve: 404 model_not_found, as
// OpenAI and vLLM give it.
func modelNotFound(name, served string) *apiError {
	e := newError(http.StatusNotFound, typeInvalidRequest, "model_not_found", "the model %q does not exist on this server; it serves %q", name, served)
	e.Param = strp("model")
	return e
}

// maxMessage bounds an error message in an answer or a log line, in bytes. Messages can carry
// text from the request or the bundle (a chat template's raise_exception, a schema's pointer);
// uncut, an 8 MB exception made every request answer and log 8 MB.
const maxMessage = 1 << 10

// clip cuts s to maxMessage bytes, at a character boundary, and says how much was cut.
func clip(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	n := maxMessage
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s… (%d more bytes)", s[:n], len(s)-n)
}
