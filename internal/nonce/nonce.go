// Package nonce makes the per-run nonce that starts every prompt glmbench
// sends, so that no prefix cache holds a request before the run sends it
// nor carries one run's answers into another. It is a leaf: the load runner
// (bench) and the conformance checks (endpoints/conform), which may not link
// each other, both draw from it.
package nonce

import (
	"crypto/rand"
	"encoding/hex"
)

// New returns 8 random hex characters.
func New() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // since Go 1.24 crypto/rand.Read crashes rather than fail
	return hex.EncodeToString(b[:])
}
