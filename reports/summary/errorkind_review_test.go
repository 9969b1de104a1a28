package summary_test

import (
	"strings"
	"testing"
	"unicode"

	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// An error_kinds key quotes the server's message into the report's JSON
// and markdown: a control character in it (an ESC, JSON-escaped \u001b,
// which decoding the message turns into the byte) is shown as "?", in a
// whole body and in a record's cut one.
func TestAnErrorKindHoldsNoControlCharacter(t *testing.T) {
	t.Parallel()
	whole := `{"error":{"message":"bad \u001b[2J model"}}`
	for _, body := range []string{whole, whole[:len(whole)-3]} {
		rec := &schema.Record{Class: schema.HTTP4xx, Status: 400, Body: body}
		got := summary.ErrorKind(rec)
		if got != "HTTP 400: bad ?[2J model" {
			t.Errorf("ErrorKind of %s = %q, want %q", body, got, "HTTP 400: bad ?[2J model")
		}
		if strings.ContainsFunc(got, unicode.IsControl) {
			t.Errorf("ErrorKind = %q: a control character", got)
		}
	}
}
