package run

import (
	"slices"
	"testing"
)

// The truth: a dual-stack headless Service's answer (each pod under an
// IPv4 and an IPv6 address) counts each agent once: two pods are two
// agents, not four; an IPv6-only one keeps its IPv6 addresses.
func TestADualStackServiceCountsEachAgentOnce(t *testing.T) {
	got := oneFamily([]string{"fd00::2", "10.0.0.9", "fd00::1", "10.0.0.10"})
	if !slices.Equal(got, []string{"10.0.0.10", "10.0.0.9"}) {
		t.Errorf("dual stack: %q, want the two IPv4 addresses", got)
	}
	if got := oneFamily([]string{"fd00::2", "fd00::1"}); !slices.Equal(got, []string{"fd00::1", "fd00::2"}) {
		t.Errorf("IPv6 only: %q", got)
	}
}
