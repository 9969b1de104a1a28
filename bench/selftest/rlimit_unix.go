//go:build unix

package selftest

import "syscall"

// raiseFileLimit sets the open-files soft limit to the hard one: thousands
// of streams need thousands of sockets. Go already raises its own soft limit
// at start-up, but hands child processes the original one; an explicit
// Setrlimit (even to the value it already has) makes the children — the
// simulated server and the Python httpx client — inherit the raised limit.
func raiseFileLimit() {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}
