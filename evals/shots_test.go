package evals

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/badinput"
)

func triviaJob(t *testing.T, set *TriviaSet) Job {
	t.Helper()
	e, ok := Lookup("triviaqa")
	if !ok {
		t.Fatal("no triviaqa eval")
	}
	return Job{Eval: e, In: Input{Data: set}}
}

func TestTriviaShotsComeFromTheShotsFileFirstFive(t *testing.T) {
	t.Parallel()
	var lines []string
	for _, q := range []string{"q1", "q2", "q3", "q4", "q5", "q6", "q7"} {
		lines = append(lines, `{"question": "`+q+`", "answer": "a`+q+`"}`)
	}
	path := filepath.Join(t.TempDir(), "shots.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A set of one question is scored whole when the shots come from a file.
	jobs := []Job{triviaJob(t, &TriviaSet{From: "one.jsonl", Items: []TriviaItem{{Question: "only"}}})}
	if err := SetTriviaShots(jobs, path); err != nil {
		t.Fatal(err)
	}
	sh := jobs[0].In.Shots
	if sh == nil || sh.Len() != TriviaShots || sh.Items[0].Question != "q1" || sh.Items[TriviaShots-1].Answer != "aq5" {
		t.Fatalf("shots %+v, want the file's first %d", sh, TriviaShots)
	}
}

func TestTriviaShotRulesRefuseAsBadInput(t *testing.T) {
	t.Parallel()
	ppl, _ := Lookup("ppl")
	five := &TriviaSet{From: "five.jsonl", Items: make([]TriviaItem, TriviaShots)}
	for _, tc := range []struct {
		name  string
		jobs  []Job
		shots string
		want  string
	}{
		{"--shots with no triviaqa to run", []Job{{Eval: ppl, In: Input{Data: SampleDocs()}}}, "s.json", "--shots is for triviaqa only"},
		{"a shots file that is not there", []Job{triviaJob(t, SampleTriviaQA())}, filepath.Join(t.TempDir(), "none.json"), "triviaqa --shots data set: "},
		{"a set that is all shots", []Job{triviaJob(t, five)}, "", "triviaqa data set five.jsonl: 5 questions, all needed as shots; give more, or --shots"},
	} {
		err := SetTriviaShots(tc.jobs, tc.shots)
		if !badinput.Is(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want bad input saying %q", tc.name, err, tc.want)
		}
	}
	// The sample set has more questions than shots: it needs no file.
	if err := SetTriviaShots([]Job{triviaJob(t, SampleTriviaQA())}, ""); err != nil {
		t.Errorf("the sample set without --shots: %v", err)
	}
}
