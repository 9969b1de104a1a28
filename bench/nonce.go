package bench

import "github.com/glmbench/glmbench/internal/nonce"

// NewNonce returns 8 random hex characters, from internal/nonce, which the
// conformance checks draw from too. Every user message of a run starts with
// it, so no prefix cache holds a request before the run sends it. (Its own
// file: the files that take a nonce parameter would shadow the package.)
func NewNonce() string { return nonce.New() }
