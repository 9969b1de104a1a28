package endpoints

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryAfter reads a Retry-After value (StreamResult.RetryAfter,
// Response.RetryAfter) as a wait from now: seconds (RFC 9110 §10.2.3; a
// fraction is taken too, as some gateways send one) or an HTTP date, a past
// date a wait of 0. ok is false when v is empty or neither. A wait past a
// year is a year.
func RetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if sec, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(sec) || sec < 0 {
			return 0, false
		}
		const year = 365 * 24 * time.Hour
		return time.Duration(min(sec, year.Seconds()) * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
