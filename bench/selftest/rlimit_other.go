//go:build !unix

package selftest

func raiseFileLimit() {}
