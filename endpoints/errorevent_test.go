package endpoints

import (
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

// An error event inside a stream is classed by what it says, as its
// status would be.
func TestAnErrorEventIsClassedByWhatItSays(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want schema.Class
	}{
		// TGI answers a stream it cannot take with a 200 whose one event is
		// its ErrorResponse, {"error": "...", "error_type": "..."}
		// (router/src/server.rs: the concurrency permit and the validation
		// are taken inside the stream): "overloaded" is its 429 Model is
		// overloaded, a rate limit like the 429 a whole answer gets;
		// "validation" is a refusal of this request.
		{`{"error":"Model is overloaded","error_type":"overloaded"}`, schema.RateLimited},
		{`{"error":"Input validation error: ` + "`inputs`" + ` must have less than 1024 tokens. Given: 1501","error_type":"validation"}`, schema.StreamError},
		// An error event whose code is 503 (SGLang's full queue) or 529 (a
		// server shedding load, as Anthropic's overloaded_error) is
		// queue_full inside a stream as it is as a status; another code is
		// a stream_error.
		{`{"error":{"message":"The request queue is full.","type":"SERVICE_UNAVAILABLE","code":503}}`, schema.QueueFull},
		{`{"error":{"message":"Overloaded","type":"overloaded_error","code":529}}`, schema.QueueFull},
		{`{"error":{"message":"boom","type":"server_error","code":500}}`, schema.StreamError},
	} {
		var c Chunk
		if err := ParseChunk([]byte(tc.in), &c); err != nil || !c.Error {
			t.Fatalf("%s: error %v, Error %v", tc.in, err, c.Error)
		}
		if got, detail := classifyErrorEvent(&c); got != tc.want {
			t.Errorf("%s: class %s (%s), want %s", tc.in, got, detail, tc.want)
		}
	}
}
