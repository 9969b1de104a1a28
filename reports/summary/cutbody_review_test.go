package summary_test

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/reports/summary"
)

// A record keeps endpoints.BodyLimit bytes of an error body, redacted
// before the cut: its message is read to where the cut fell. A longer body
// cut short was cut elsewhere (conform's 4 KiB read of a refused stream,
// before redaction), so its message is not read to the cut, which could
// fall inside a key: the text is given from its start instead.
func TestOnlyARecordsCutBodyIsReadToTheCut(t *testing.T) {
	t.Parallel()
	msg := "the key " + strings.Repeat("y", 400)
	body := `{"error":{"message":"` + msg + `"}}`
	record := body[:endpoints.BodyLimit]
	want := msg[:endpoints.BodyLimit-len(`{"error":{"message":"`)]
	if got := summary.ErrorMessage([]byte(record)); got != want {
		t.Errorf("ErrorMessage of a record's %d bytes = %q, want %q", len(record), got, want)
	}
	longer := `{"detail":"` + strings.Repeat("x", 4000) + `","error":{"message":"` + msg
	if got := summary.ErrorMessage([]byte(longer)); got != longer {
		t.Errorf("ErrorMessage of a %d-byte cut body = %q…, want its text", len(longer), got[:min(len(got), 40)])
	}
}
