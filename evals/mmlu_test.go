package evals

import (
	"math"
	"strings"
	"testing"
)

func TestMMLUPromptIsLMEvalsExactly(t *testing.T) {
	t.Parallel()
	shot := MMLUQuestion{Question: "What is 1+1?", Choices: [4]string{"1", "2", "3", "4"}, Answer: 1}
	q := MMLUQuestion{Question: "  What is 2+2?\n", Choices: [4]string{"3", "4", "5", "6"}, Answer: 1}
	got := MMLUPrompt("high_school_mathematics", []MMLUQuestion{shot, shot}, q)
	want := "The following are multiple choice questions (with answers) about high school mathematics.\n\n" +
		"What is 1+1?\nA. 1\nB. 2\nC. 3\nD. 4\nAnswer: B\n\n" +
		"What is 1+1?\nA. 1\nB. 2\nC. 3\nD. 4\nAnswer: B\n\n" +
		"What is 2+2?\nA. 3\nB. 4\nC. 5\nD. 6\nAnswer:"
	if got != want {
		t.Fatalf("prompt\n%q\nwant\n%q", got, want)
	}
}

func TestSubjectsFallInLMEvalsCategories(t *testing.T) {
	t.Parallel()
	for subject, want := range map[string]string{
		"anatomy": STEM, "machine_learning": STEM, "philosophy": Humanities, "professional_law": Humanities,
		"econometrics": SocialSciences, "us_foreign_policy": SocialSciences, "virology": Other, "nutrition": Other,
		"my_own_subject": Other, "Formal Logic": Humanities, "High School  Biology": STEM,
	} {
		if got := Category(subject); got != want {
			t.Errorf("%s: %s, want %s", subject, got, want)
		}
	}
	n := map[string]int{}
	for _, c := range mmluCategory {
		n[c]++
	}
	if n[STEM] != 19 || n[Humanities] != 13 || n[SocialSciences] != 12 || n[Other] != 13 {
		t.Errorf("subjects per category %v, want lm-eval's 19/13/12/13", n)
	}
}

func TestLetterScoresReadTheTopLogprobs(t *testing.T) {
	t.Parallel()
	inf := math.Inf(-1)
	for _, tc := range []struct {
		name   string
		top    map[string]float64
		scores [4]float64
		want   int
	}{
		{"the spaced letter as it follows Answer:", map[string]float64{" A": -2, " B": -0.5, " C": -3, "\n": -1}, [4]float64{-2, -0.5, -3, inf}, 1},
		{"a spaced key is taken as it is, even beside a likelier bare one", map[string]float64{" C": -0.2, "C": -0.1}, [4]float64{inf, inf, -0.2, inf}, 2},
		{"a bare letter counts, a tab-led one does not", map[string]float64{" C": -0.2, "D": -0.1, "\tD": -0.05}, [4]float64{inf, inf, -0.2, -0.1}, 3},
		{"a SentencePiece letter counts", map[string]float64{"\u2581A": -0.3, "\u2581B": -1}, [4]float64{-0.3, -1, inf, inf}, 0},
		{"a tie goes to the first letter", map[string]float64{" B": -1, " C": -1}, [4]float64{inf, -1, -1, inf}, 1},
		{"no letter at all is no answer", map[string]float64{" the": -0.1, " is": -2}, [4]float64{inf, inf, inf, inf}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := LetterScores(tc.top)
			if s != tc.scores {
				t.Fatalf("scores %v, want %v", s, tc.scores)
			}
			if got := Argmax(s); got != tc.want {
				t.Errorf("scores %v: argmax %d, want %d", s, got, tc.want)
			}
		})
	}
}

// mmluModel answers the sample set: astronomy all right, philosophy the
// first two, geography none, nutrition the first. Expected: 7 of 16
// (mmluModelMetrics).
func mmluModel(set *MMLUSet) (letter func(ctx string) string) {
	answers := map[string]string{}
	for _, sub := range set.Subjects {
		for i, q := range sub.Test {
			good := map[string]int{"astronomy": 4, "philosophy": 2, "high_school_geography": 0, "nutrition": 1}[sub.Name]
			pick := Letters[q.Answer]
			if i >= good {
				pick = Letters[(q.Answer+1)%4]
			}
			answers[strings.TrimSpace(q.Question)] = pick
		}
	}
	return func(ctx string) string {
		// The test question is the last one in the prompt.
		i := strings.LastIndex(ctx, "\n\n")
		q, _, _ := strings.Cut(ctx[i+2:], "\nA. ")
		return answers[q]
	}
}

// firstPrompt is the prompt of the first test question of set's k-th
// subject.
func firstPrompt(set *MMLUSet, k int) string {
	sub := set.Subjects[k]
	return MMLUPrompt(sub.Name, sub.Shots, sub.Test[0])
}

// mmluModelMetrics are the metrics of mmluModel's answers, each question
// answered by the letter mmluModel prefers.
var mmluModelMetrics = map[string]float64{"acc": 7.0 / 16, "acc_stem": 1, "acc_humanities": 0.5, "acc_social_sciences": 0, "acc_other": 0.25,
	"acc_subject_astronomy": 1, "acc_subject_philosophy": 0.5, "acc_subject_high_school_geography": 0, "acc_subject_nutrition": 0.25,
	NoAnswerMetric: 0}

func TestMMLUScoresKnownAnswers(t *testing.T) {
	t.Parallel()
	set := SampleMMLU()
	letter := mmluModel(set)
	t.Run("by echo", func(t *testing.T) {
		t.Parallel()
		f := newFakeLM(t, func(f *fakeLM) { f.letter = letter })
		res := f.run("mmlu", Config{Concurrency: 4}, set)
		if res.Status != StatusOK || res.Method != MethodEcho || res.N != 16 || res.Failure != nil {
			t.Fatalf("%+v", res)
		}
		sameMetrics(t, res.Metrics, mmluModelMetrics)
	})
	t.Run("by top_logprobs when echo fails, keeping the echo failure", func(t *testing.T) {
		t.Parallel()
		f := newFakeLM(t, func(f *fakeLM) {
			f.echoStatus, f.echoBody = 500, hostedEcho500
			f.top = func(prompt string) map[string]float64 {
				top := map[string]float64{" the": -1.5, "\n": -2.5}
				for _, l := range Letters {
					top[" "+l] = -3
				}
				top[" "+letter(prompt)] = -0.2
				return top
			}
		})
		res := f.run("mmlu", Config{Concurrency: 4}, set)
		if res.Status != StatusOK || res.Method != MethodTopLogprobs || res.N != 16 || KindOf(res.Failure) != EchoServerError {
			t.Fatalf("%+v", res)
		}
		sameMetrics(t, res.Metrics, mmluModelMetrics)
	})
	t.Run("no score when the fallback finds no letter", func(t *testing.T) {
		t.Parallel()
		f := newFakeLM(t, func(f *fakeLM) {
			f.echoStatus, f.echoBody = 400, `{"error":{"message":"echo is not supported"}}`
			f.top = func(string) map[string]float64 { return map[string]float64{" the": -0.5} }
		})
		res := f.run("mmlu", Config{}, set)
		if res.Status != StatusUnsupported || res.Metrics != nil || KindOf(res.Failure) != EchoRejected ||
			!strings.Contains(res.Failure.Detail, "no answer letter") {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("no score when the fallback gets no logprobs", func(t *testing.T) {
		t.Parallel()
		f := newFakeLM(t, func(f *fakeLM) {
			f.echoStatus, f.echoBody = 500, hostedEcho500
			f.noLogprobs = true
		})
		res := f.run("mmlu", Config{}, set)
		if res.Status != StatusUnsupported || KindOf(res.Failure) != EchoServerError || !strings.Contains(res.Failure.Detail, "logprobs_missing") {
			t.Fatalf("%+v", res)
		}
	})
}

func TestMMLUTalliesAccuracyPerSubjectAndCategory(t *testing.T) {
	t.Parallel()
	// Hand-made answers: two STEM subjects of different sizes, so the STEM
	// figure is micro-averaged (3 of 5), not the mean of its subjects'
	// (0.75); one humanities subject named as a JSONL file might name it;
	// no social sciences question, so no acc_social_sciences.
	var tally mmluTally
	for _, a := range []struct {
		subject string
		right   bool
	}{
		{"abstract_algebra", true}, {"abstract_algebra", false}, {"abstract_algebra", true}, {"abstract_algebra", false},
		{"astronomy", true},
		{"Formal Logic", true}, {"Formal Logic", false},
		{"virology", false},
	} {
		tally.add(a.subject, a.right)
	}
	sameMetrics(t, tally.metrics(), map[string]float64{
		"acc": 4.0 / 8, "acc_stem": 3.0 / 5, "acc_humanities": 0.5, "acc_other": 0,
		"acc_subject_abstract_algebra": 0.5, "acc_subject_astronomy": 1, "acc_subject_formal_logic": 0.5, "acc_subject_virology": 0,
	})
}

func sameMetrics(t *testing.T, got, want map[string]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("metrics %v, want %v", got, want)
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || math.Abs(g-w) > 1e-12 {
			t.Errorf("%s = %v, want %v (all: %v)", k, g, w, got)
		}
	}
}

func TestMMLUOnTheBuiltinEngineScoresByEcho(t *testing.T) {
	t.Parallel()
	b := startBuiltin(t)
	res := runEval("mmlu", Config{Endpoint: b.Endpoint, Concurrency: 4, Limit: 1}, SampleMMLU())
	// acc, the four categories, the four subjects and no_answer (none: echo scores every letter).
	if res.Status != StatusOK || res.Method != MethodEcho || res.N != 4 || len(res.Metrics) != 10 || res.Metrics[NoAnswerMetric] != 0 {
		t.Fatalf("%+v", res)
	}
}
