package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// apiError is an error answered to a client: its HTTP status and the
// OpenAI-shaped body {"error": {"message", "type", "param", "code"}}.
type apiError struct {
	Status  int
	Message string
	// Param names the request field at fault, when one is.
	Param string
	// Type overrides the type derived from Status.
	Type string
}

func (e *apiError) Error() string { return e.Message }

// errorType is the OpenAI "type" of a status. The names are vLLM's (the
// OpenAI SDK's exception classes), except 503, which carries SGLang's
// HTTPStatus name because that is what its queue-overflow stream event says.
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "BadRequestError"
	case http.StatusNotFound:
		return "NotFoundError"
	case http.StatusMethodNotAllowed:
		return "MethodNotAllowedError"
	case http.StatusRequestTimeout:
		return "RequestTimeoutError"
	case http.StatusRequestEntityTooLarge:
		return "RequestEntityTooLargeError"
	case http.StatusTooManyRequests:
		return "RateLimitError"
	case http.StatusServiceUnavailable:
		return "SERVICE_UNAVAILABLE"
	default:
		return "InternalServerError"
	}
}

// errorBody is the JSON of an error, for a response body or a stream event.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Object  string  `json:"object"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

func (e *apiError) body() errorBody {
	t := e.Type
	if t == "" {
		t = errorType(e.Status)
	}
	var param *string
	if e.Param != "" {
		param = &e.Param
	}
	return errorBody{Error: errorDetail{Object: "error", Message: e.Message, Type: t, Param: param, Code: e.Status}}
}

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Param: param, Message: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusNotFound, Message: fmt.Sprintf(format, args...)}
}

// unavailable is a 503. SGLang answers queue overflow with 503, not 429;
// shutdown gets the same status, so a client retries elsewhere.
func unavailable(msg string) *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Message: msg}
}

// writeError answers e as JSON. The body is always {"error": {...}} as
// DESIGN.md asks, also for the non-streaming queue-full 503, where SGLang
// sends its bare {"object": "error", ...}: the values (503, "The request
// queue is full.") are SGLang's, the envelope is OpenAI's.
func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.Status, e.body())
}

// writeJSON answers v with status. HTML characters stay unescaped: the
// model's text is full of <think> and <tool_call>.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = marshal((&apiError{Status: status, Message: "response encoding failed: " + err.Error()}).body())
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// marshal is json.Marshal without HTML escaping, with a trailing newline.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// body is a request body read whole, and the share of the server's body
// budget (Options.MaxBufferedBytes) its buffer holds until release.
type body struct {
	data    []byte
	srv     *Server
	charged int64
}

// release gives the body's bytes back to the budget; the data is not to
// be used after. It is safe to call more than once.
func (b *body) release() {
	if b.charged > 0 {
		b.srv.buffered.Add(-b.charged)
		b.charged = 0
	}
	b.data = nil
}

// charge takes n bytes of the body budget, or reports that it is spent.
func (b *body) charge(n int64) bool {
	if b.srv.buffered.Add(n) > b.srv.opts.MaxBufferedBytes {
		b.srv.buffered.Add(-n)
		return false
	}
	b.charged += n
	return true
}

// readBody reads r's body whole, within the server's size limit, body
// budget and body deadline, turning every failure into a client error:
// 413 past the limit (MaxBytesReader also stops reading there and closes
// the connection after the answer), 408 when the body is late, 400 when it
// breaks off, 503 when the bodies being read hold the whole budget. The
// buffer grows with the bytes that arrive, never with a declared length.
//
// The deadline is the connection's read deadline, set here so that it
// holds under any http.Server the handler is mounted on (httptest, or a
// program embedding the engine) and counts from the end of the headers.
// net/http clears it once the body is read, before the read that watches a
// stream's connection for its client going away, so a long stream is never
// cut by it; it is cleared here too for a body refused before its end.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) (*body, *apiError) {
	if r.ContentLength > s.maxBody { // declared too large: refused before a byte is read
		return nil, &apiError{Status: http.StatusRequestEntityTooLarge,
			Message: fmt.Sprintf("The request body is larger than %d bytes.", s.maxBody)}
	}
	if d := s.opts.BodyTimeout; d > 0 {
		rc := http.NewResponseController(w)
		if rc.SetReadDeadline(time.Now().Add(d)) == nil {
			defer rc.SetReadDeadline(time.Time{})
		}
	}
	b := &body{srv: s}
	busy := func() *apiError {
		b.release()
		s.metrics.rejected("body_budget")
		w.Header().Set("Retry-After", "1")
		return unavailable("The server is reading too many request bodies at once; retry after 1 s.")
	}
	const first = 16 << 10
	if !b.charge(first) {
		return nil, busy()
	}
	buf := make([]byte, 0, first)
	src := http.MaxBytesReader(w, r.Body, s.maxBody)
	for {
		if len(buf) == cap(buf) {
			grown := min(2*int64(cap(buf)), s.maxBody+1)
			if !b.charge(grown - int64(cap(buf))) {
				return nil, busy()
			}
			buf = append(make([]byte, 0, grown), buf...)
		}
		n, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			b.release()
			var tooBig *http.MaxBytesError
			switch {
			case errors.As(err, &tooBig):
				return nil, &apiError{Status: http.StatusRequestEntityTooLarge,
					Message: fmt.Sprintf("The request body is larger than %d bytes.", tooBig.Limit)}
			case errors.Is(err, os.ErrDeadlineExceeded):
				return nil, &apiError{Status: http.StatusRequestTimeout,
					Message: fmt.Sprintf("The request body did not arrive within %s.", s.opts.BodyTimeout)}
			}
			return nil, badRequest("", "Could not read the request body: %v", err)
		}
	}
	if len(bytes.TrimSpace(buf)) == 0 {
		b.release()
		return nil, badRequest("", "The request body is empty; expected a JSON object.")
	}
	b.data = buf
	return b, nil
}

func decodeJSON(body []byte, dst any) *apiError {
	err := json.Unmarshal(body, dst)
	if err == nil {
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var own *apiError
	switch {
	case errors.As(err, &own): // a field's own decoder refused it (a bound)
		return own
	case errors.As(err, &syn):
		return badRequest("", "Malformed JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return badRequest("", "The request body must be a JSON object, not %s.", typ.Value)
		}
		// encoding/json names an embedded struct in the path; the client
		// never saw it.
		field := strings.ReplaceAll(typ.Field, "commonRequest.", "")
		return badRequest(field, "Invalid type for `%s`: expected %s, got %s.", field, jsonKind(typ.Type), typ.Value)
	default:
		return badRequest("", "Malformed JSON: %v", err)
	}
}

// jsonKind names a Go type as the JSON a client should have sent.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a value"
}
