package cmdutil

import (
	"os"
	"testing"
)

// On Linux the null device is a character device but no terminal: output
// sent there is not drawn for anyone. A pseudo-terminal's master is one.
func TestTheNullDeviceIsNoTerminalAndAPseudoTerminalIs(t *testing.T) {
	t.Parallel()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if IsTerminal(null) {
		t.Fatal("/dev/null is not a terminal")
	}
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer ptmx.Close()
	if !IsTerminal(ptmx) {
		t.Fatal("a pseudo-terminal is a terminal")
	}
}
