package badinput

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

type probeErr struct{ status int }

func (e *probeErr) Error() string {
	return fmt.Sprintf("the endpoint rejected the probe (HTTP %d)", e.status)
}

func TestBadInputKeepsItsTextAndWhatItWraps(t *testing.T) {
	t.Parallel()
	err := Errorf("--phase %q: want NAME=N/IN/OUT", "x=1")
	if err.Error() != `--phase "x=1": want NAME=N/IN/OUT` || !Is(err) {
		t.Fatalf("Errorf: %q, bad input %v", err, Is(err))
	}
	// Wrapped once more, by a caller that adds where it happened, it is
	// still bad input.
	if outer := fmt.Errorf("phase a: %w", err); !Is(outer) || outer.Error() != `phase a: --phase "x=1": want NAME=N/IN/OUT` {
		t.Fatalf("wrapped: %q, bad input %v", outer, Is(outer))
	}
	pe := &probeErr{400}
	marked := Wrap(pe)
	var got *probeErr
	if !Is(marked) || !errors.As(marked, &got) || got != pe || marked.Error() != pe.Error() {
		t.Fatalf("Wrap: %q, bad input %v, finds the probe error %v", marked, Is(marked), got == pe)
	}
	if Wrap(marked) != marked || Wrap(nil) != nil {
		t.Fatal("Wrap must leave bad input and nil as they are")
	}
	if inner := Errorf("%s: %w", "report.json", fs.ErrNotExist); !errors.Is(inner, fs.ErrNotExist) {
		t.Fatal("Errorf must keep %w's chain")
	}
	if Is(nil) || Is(errors.New("bad input: connection refused")) {
		t.Fatal("only the type is bad input, not a text that looks like it")
	}
}
