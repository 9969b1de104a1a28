package nonce

import (
	"regexp"
	"testing"
)

func TestANonceIsEightRandomHexCharacters(t *testing.T) {
	hex8 := regexp.MustCompile(`^[0-9a-f]{8}$`)
	seen := map[string]bool{}
	// 16 draws of 32 random bits collide with probability about 3e-8.
	for range 16 {
		n := New()
		if !hex8.MatchString(n) {
			t.Fatalf("nonce %q, want 8 lower-case hex characters", n)
		}
		if seen[n] {
			t.Fatalf("nonce %q drawn twice in 16 draws", n)
		}
		seen[n] = true
	}
}
