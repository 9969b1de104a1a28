package evals

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/glmbench/glmbench/internal/parquetcol"
)

// The evals read the parquet files the Hugging Face Hub serves (what
// `huggingface-cli download --repo-type dataset` fetches):
//
//   - Salesforce/wikitext, e.g. wikitext-2-raw-v1/test-00000-of-00001.parquet:
//     one column text, one row per line of the raw file, the line's "\n"
//     kept and blank lines as "" (the builder yields "" where
//     line.strip() is empty);
//   - cais/mmlu: all/{dev,validation,test}-*.parquet and one such folder per
//     subject, columns question, subject, choices (a list of four strings)
//     and answer (the class label 0–3, int64);
//   - mandarjoshi/trivia_qa, e.g. rc.nocontext/validation-*.parquet: columns
//     question, question_id and answer, a struct of aliases,
//     normalized_aliases (lists of strings), value, normalized_value and
//     more.

// hfTestShards is the test split's files among files, as the Hub names
// them (test-00000-of-00001.parquet) or as wikitext's raw zip does
// (wiki.test.raw beside wiki.train.raw and wiki.valid.raw), or files when
// there are none.
func hfTestShards(files []string) []string {
	var test []string
	for _, f := range files {
		if ok, _ := filepath.Match("test-*.parquet", filepath.Base(f)); ok || filepath.Base(f) == "wiki.test.raw" {
			test = append(test, f)
		}
	}
	if len(test) == 0 {
		return files
	}
	return test
}

// parseDocsParquet reads documents from a "text" column (or lm-eval's
// "page"). Rows in the wikitext layout, the first non-blank one a
// " = Title = " heading, are the raw file's lines: they are joined back into
// it (a blank row is the raw file's " \n", a row without its "\n" gets one)
// and split as the raw file is. Any other row is one document, blank ones
// skipped.
func parseDocsParquet(p *parquetcol.File) ([]Doc, error) {
	col := "text"
	if !p.Has(col) && p.Has("page") {
		col = "page"
	}
	texts, err := p.Strings(0, false, col)
	if err != nil {
		return nil, err
	}
	first := slices.IndexFunc(texts, func(t string) bool { return strings.TrimSpace(t) != "" })
	if first >= 0 && isWikiTitle(texts[first]) {
		var raw strings.Builder
		for _, t := range texts {
			switch {
			case strings.TrimSpace(t) == "":
				raw.WriteString(" \n")
			case strings.HasSuffix(t, "\n"):
				raw.WriteString(t)
			default:
				raw.WriteString(t + "\n")
			}
		}
		return parseWikitext(p.Name(), []byte(raw.String()))
	}
	var docs []Doc
	for i, t := range texts {
		if strings.TrimSpace(t) != "" {
			docs = append(docs, newDoc(t, t, fmt.Sprintf("%s:%d", p.Name(), i+1)))
		}
	}
	return docs, nil
}

// parseMMLUParquet reads MMLU rows: question, choices (a list of four),
// answer (0–3 or a letter), and optional subject and split.
func parseMMLUParquet(p *parquetcol.File) ([]mmluRow, error) {
	if !p.Has("choices") && p.Has("options") {
		return nil, dataErr(p.Name(), 0, `column "options" where MMLU has "choices": MMLU-Pro (up to 10 options, answers A-J) is not MMLU's four-choice layout`)
	}
	questions, err := p.Strings(0, false, "question")
	if err != nil {
		return nil, err
	}
	choices, err := p.StringLists(0, "choices")
	if err != nil {
		return nil, err
	}
	answers, err := pqMMLUAnswers(p)
	if err != nil {
		return nil, err
	}
	subjects, err := p.Strings(0, true, "subject")
	if err != nil {
		return nil, err
	}
	splits, err := p.Strings(0, true, "split")
	if err != nil {
		return nil, err
	}
	rows := make([]mmluRow, len(questions))
	for i := range rows {
		if len(choices[i]) != 4 {
			return nil, pqRowErr(p.Name(), i, "choices has %d entries, want 4", len(choices[i]))
		}
		row := mmluRow{q: MMLUQuestion{Question: questions[i], Answer: answers[i], Source: fmt.Sprintf("%s:%d", p.Name(), i+1)},
			subject: strings.TrimSpace(subjects[i]), split: strings.ToLower(strings.TrimSpace(splits[i]))}
		copy(row.q.Choices[:], choices[i])
		rows[i] = row
	}
	return rows, nil
}

// pqMMLUAnswers reads the answer column: integers 0–3 (the Hub's class
// label) or letters A–D.
func pqMMLUAnswers(p *parquetcol.File) ([]int, error) {
	c, err := p.Column("answer")
	if err != nil {
		return nil, err
	}
	if c.List || c.Kind == parquetcol.Other {
		return nil, dataErr(p.Name(), 0, "column %q is %s, want an integer 0-3 or a letter A-D", c.Name, c.Describe())
	}
	var out []int
	err = p.Values(c, 0, func(i int, vals []parquetcol.Value) error {
		v := vals[0]
		switch {
		case v.Null:
			return pqRowErr(p.Name(), i, "no answer")
		case c.Kind == parquetcol.String:
			a, err := answerIndex(v.Str)
			if err != nil {
				return pqRowErr(p.Name(), i, "%v", err)
			}
			out = append(out, a)
		case v.Num < 0 || v.Num > 3:
			return pqRowErr(p.Name(), i, "answer %d is not 0-3", v.Num)
		default:
			out = append(out, int(v.Num))
		}
		return nil
	})
	return out, err
}

// mmluParquetDirs finds the Hub's MMLU layout in dir: test-*.parquet (and
// dev-*.parquet) in dir itself, else in dir/all, else in each subject's
// folder. It returns nil when dir holds none of these.
func mmluParquetDirs(dir string) []string {
	switch {
	case hasTestShards(dir):
		return []string{dir}
	case hasTestShards(filepath.Join(dir, "all")):
		return []string{filepath.Join(dir, "all")}
	}
	return hfConfigDirs(dir)
}

// hasTestShards reports whether the folder d holds test-*.parquet.
func hasTestShards(d string) bool {
	m, _ := filepath.Glob(filepath.Join(d, "test-*.parquet"))
	return len(m) > 0
}

// hfConfigDirs is dir's subfolders that hold test-*.parquet: the configs
// (or MMLU's subjects) of a Hub repository downloaded whole.
func hfConfigDirs(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var dirs []string
	for _, e := range entries {
		if d := filepath.Join(dir, e.Name()); e.IsDir() && hasTestShards(d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// hfRepoErr is a DataError for a folder that is a Hub repository downloaded
// whole (its README.md is no document), or nil when files, the folder's
// own, include a parquet file or dir has no config folders.
func hfRepoErr(dir string, files []string) error {
	if slices.ContainsFunc(files, isParquet) {
		return nil
	}
	dirs := hfConfigDirs(dir)
	if len(dirs) == 0 {
		return nil
	}
	names := make([]string, len(dirs))
	for i, d := range dirs {
		names[i] = filepath.Base(d)
	}
	return dataErr(dir, 0, "a Hub repository's folder: give one config's folder (%s)", strings.Join(names, ", "))
}

// loadMMLUParquet reads the Hub's layout from dirs: each subject's shots
// are its first five dev rows, as in the original layout (a subject with no
// dev rows takes its first five test rows, as one file does); subjects come
// in name order, as the original layout's files do.
func loadMMLUParquet(src string, dirs []string) (*MMLUSet, error) {
	var rows []mmluRow
	for _, d := range dirs {
		for _, split := range []string{"dev", "test"} {
			files, _ := filepath.Glob(filepath.Join(d, split+"-*.parquet"))
			slices.Sort(files)
			for _, f := range files {
				got, err := withParquet(f, parseMMLUParquet)
				if err != nil {
					return nil, err
				}
				for i := range got {
					got[i].split = split
					got[i].subject = cmp.Or(got[i].subject, filepath.Base(d))
				}
				rows = append(rows, got...)
			}
		}
	}
	set := &MMLUSet{From: src}
	groupMMLU(set, rows, "")
	slices.SortStableFunc(set.Subjects, func(a, b MMLUSubject) int { return strings.Compare(a.Name, b.Name) })
	return finishMMLU(set, src)
}

// parseTriviaParquet reads at most max items (0: all): question,
// question_id (optional) and answer, the Hub's struct of aliases,
// normalized_aliases and value (or a string, or a list of strings).
func parseTriviaParquet(p *parquetcol.File, max int) ([]TriviaItem, error) {
	questions, err := p.Strings(max, false, "question")
	if err != nil {
		return nil, err
	}
	ids, err := p.Strings(max, true, "question_id")
	if err != nil {
		return nil, err
	}
	answers, err := pqTriviaAnswers(p, max)
	if err != nil {
		return nil, err
	}
	items := make([]TriviaItem, len(questions))
	for i, q := range questions {
		it := TriviaItem{Question: strings.TrimSpace(q), Source: fmt.Sprintf("%s:%d", p.Name(), i+1)}
		it.ID = cmp.Or(strings.TrimSpace(ids[i]), fmt.Sprintf("#%d", i))
		if it.Question == "" {
			return nil, pqRowErr(p.Name(), i, "no question")
		}
		if !it.setAliases(answers[i]) {
			return nil, pqRowErr(p.Name(), i, "the answer has no alias (the test split has no answers: take validation)")
		}
		items[i] = it
	}
	return items, nil
}

// pqTriviaAnswers reads each row's accepted answers in the JSON layout's
// order: aliases (or value where there are none), then normalized_aliases.
// The Hub's test split has no aliases and value "<unk>": no answer.
func pqTriviaAnswers(p *parquetcol.File, max int) ([][]string, error) {
	if !p.Has("answer") {
		return nil, dataErr(p.Name(), 0, "no column %q (the file has: %s)", "answer", p.Columns())
	}
	if !p.HasField("answer", "aliases") && !p.HasField("answer", "value") {
		c, err := p.Column("answer")
		if err != nil {
			return nil, err
		}
		if c.List {
			return p.StringLists(max, "answer")
		}
		s, err := p.Strings(max, false, "answer")
		out := make([][]string, len(s))
		for i := range s {
			out[i] = []string{s[i]}
		}
		return out, err
	}
	n := p.Limit(max)
	list := func(sub string) ([][]string, error) {
		if !p.HasField("answer", sub) {
			return make([][]string, n), nil
		}
		return p.StringLists(max, "answer", sub)
	}
	aliases, err := list("aliases")
	if err != nil {
		return nil, err
	}
	norm, err := list("normalized_aliases")
	if err != nil {
		return nil, err
	}
	values := make([]string, n)
	if p.HasField("answer", "value") {
		if values, err = p.Strings(max, false, "answer", "value"); err != nil {
			return nil, err
		}
	}
	out := make([][]string, n)
	for i := range out {
		out[i] = aliases[i]
		if len(out[i]) == 0 && values[i] != "" && values[i] != "<unk>" {
			out[i] = []string{values[i]}
		}
		out[i] = append(slices.Clip(out[i]), norm[i]...)
	}
	return out, nil
}

// loadTriviaShards reads at most max items (0: all) from the validation
// split's shards in dir, in name order (the Hub's rc config has four; the
// test split has no answers).
func loadTriviaShards(dir string, max int) (*TriviaSet, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "validation-*.parquet"))
	if len(files) == 0 {
		return nil, dataErr(dir, 0, "a folder without validation-*.parquet: want a TriviaQA JSON, JSONL or parquet file, or the Hub's config folder (rc.nocontext/)")
	}
	slices.Sort(files)
	set := &TriviaSet{From: dir}
	for _, f := range files {
		left := 0
		if max > 0 {
			left = max - len(set.Items)
		}
		items, err := withParquet(f, func(p *parquetcol.File) ([]TriviaItem, error) { return parseTriviaParquet(p, left) })
		if err != nil {
			return nil, err
		}
		set.Items = append(set.Items, items...)
		if max > 0 && len(set.Items) >= max {
			break
		}
	}
	if len(set.Items) == 0 {
		return nil, dataErr(dir, 0, "no questions")
	}
	return set, nil
}
