package cmdutil

import (
	"bytes"
	"io"
	"os"
	"testing"
)

func TestOnlyATerminalOrAWriterMadeOneIsATerminal(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if IsTerminal(&buf) || IsTerminal(io.Discard) {
		t.Fatal("a buffer is not a terminal")
	}
	tty := TTY(&buf)
	if !IsTerminal(tty) || !(&IOStreams{Out: tty}).OutTTY() {
		t.Fatal("TTY(w) is a terminal for IsTerminal")
	}
	if _, err := io.WriteString(tty, "x"); err != nil || buf.String() != "x" {
		t.Fatalf("TTY(w) must write to w: %q, %v", buf.String(), err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if IsTerminal(w) {
		t.Fatal("a pipe (stdout piped to less or a file) is not a terminal")
	}
}
