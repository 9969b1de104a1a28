package endpoints

import (
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

// A 408 is load shed only when its body says the gateway's admission
// queue timed out; nginx's 408 (client_body_timeout, an HTML page), a bare
// 408 and one with another code stay http_4xx, and the code alone on
// another status changes nothing.
func TestA408IsQueueFullOnlyWithTheAdmissionQueueTimeoutCode(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		want   schema.Class
	}{
		{"the gateway's admission queue timeout", 408, `{"error":{"type":"Request Timeout","code":"admission_queue_timeout","message":"timed out waiting for an admission slot","param":null}}`, schema.QueueFull},
		{"nginx's client_body_timeout page", 408, "<html><head><title>408 Request Time-out</title></head></html>", schema.HTTP4xx},
		{"a bare 408", 408, "", schema.HTTP4xx},
		{"another code", 408, `{"error":{"code":"request_timeout"}}`, schema.HTTP4xx},
		{"a numeric code", 408, `{"error":{"code":408}}`, schema.HTTP4xx},
		{"the code on a 429 stays rate_limited", 429, `{"error":{"code":"admission_queue_timeout"}}`, schema.RateLimited},
	}
	for _, tc := range cases {
		if got, _ := classifyRefusal(tc.status, []byte(tc.body)); got != tc.want {
			t.Errorf("%s: %s; want %s", tc.name, got, tc.want)
		}
	}
}
