//go:build unix

package selftest

import "syscall"

// raiseFileLimit lifts the open-files soft limit to the hard one: thousands
// of streams need thousands of sockets.
func raiseFileLimit() {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}
