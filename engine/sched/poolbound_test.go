package sched

import (
	"strings"
	"testing"
)

// A pool past MaxPoolTokens (--max-total-tokens 9223372036854775807) is
// refused by Validate, naming the flag's key and the bound; the bound itself
// is allowed.
func TestValidateBoundsThePool(t *testing.T) {
	for _, tc := range []struct {
		tokens int
		ok     bool
	}{{MaxPoolTokens, true}, {MaxPoolTokens + 64, false}, {1<<63 - 1, false}} {
		c := Config{MaxTotalTokens: tc.tokens, PageSize: 64}
		c.Defaults()
		err := c.Validate()
		if tc.ok && err != nil {
			t.Errorf("%d tokens: %v, want accepted", tc.tokens, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "max_total_tokens")) {
			t.Errorf("%d tokens: %v, want a max_total_tokens error", tc.tokens, err)
		}
	}
}
