package evals

import (
	"slices"

	"github.com/glmbench/glmbench/internal/badinput"
)

// SetTriviaShots applies TriviaQA's shot rules to jobs, the evals to run
// with their data loaded. A shots file (shotsPath, the --shots flag; ""
// for none) is for TriviaQA only and gives its shots, the file's first
// TriviaShots questions. Without one, a TriviaQA data set's first
// TriviaShots questions are the shots and are not scored (TriviaQA), so a
// set of no more than that, which would leave nothing to score, is
// refused. Every error is bad input, said before any request.
func SetTriviaShots(jobs []Job, shotsPath string) error {
	if shotsPath != "" {
		i := slices.IndexFunc(jobs, func(j Job) bool { return j.Eval.Name == "triviaqa" })
		if i < 0 {
			return badinput.Errorf("--shots is for triviaqa only")
		}
		shots, err := LoadTriviaQA(shotsPath, TriviaShots)
		if err != nil {
			return badinput.Errorf("triviaqa --shots data set: %v", err)
		}
		jobs[i].In.Shots = shots
	}
	for _, j := range jobs {
		if t, ok := j.In.Data.(*TriviaSet); ok && j.In.Shots == nil && t.Len() <= TriviaShots {
			return badinput.Errorf("triviaqa data set %s: %d questions, all needed as shots; give more, or --shots", t.Origin(), t.Len())
		}
	}
	return nil
}
