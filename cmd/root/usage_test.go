package root

import (
	"context"
	"strings"
	"testing"
)

// TestAWrongCommandLineExitsTwoInOneLine: whatever is wrong with the command
// line itself (a command, an argument or a flag that does not exist, in our
// commands or in cobra's own) is bad usage, exit 2, said in one line before
// anything runs; a command line that only asks for help is not.
func TestAWrongCommandLineExitsTwoInOneLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"an unknown command", []string{"frobnicate"}, 2, `glmbench: unknown command "frobnicate" for "glmbench"`},
		{"an argument to a command that takes none", []string{"version", "extra"}, 2, `glmbench: unknown command "extra" for "glmbench version"`},
		{"an argument to gate", []string{"gate", "a.json"}, 2, `glmbench: unknown command "a.json" for "glmbench gate"`},
		{"an argument to cobra's own completion command", []string{"completion", "bash", "extra"}, 2, `glmbench: unknown command "extra" for "glmbench completion bash"`},
		{"an unknown flag", []string{"report", "--bogus"}, 2, "glmbench: glmbench report: unknown flag: --bogus (see glmbench report --help)"},
		{"eval without its eval", []string{"eval"}, 2, "glmbench: eval takes one of "},
		{"a missing report", []string{"report", "/nonexistent/report.json"}, 2, "glmbench: /nonexistent/report.json: no such file or folder"},
		{"help", []string{"--help"}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := execute(t, context.Background(), tc.args...)
			if code != tc.code || !strings.HasPrefix(stderr, tc.want) || (tc.want != "" && strings.Count(stderr, "\n") != 1) {
				t.Fatalf("exit %d, stderr %q; want exit %d and one line starting %q", code, stderr, tc.code, tc.want)
			}
		})
	}
}
