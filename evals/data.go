package evals

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/glmbench/glmbench/internal/parquetcol"
)

// DataError is a data set that cannot be read as its layout. It names the
// file and, when it is known, the line.
type DataError struct {
	File string
	Line int
	Msg  string
}

func (e *DataError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

func dataErr(file string, line int, format string, args ...any) error {
	return &DataError{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// openData opens a data set file; a missing one is a DataError.
func openData(file string) (*os.File, error) {
	f, err := os.Open(file)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, dataErr(file, 0, "no such file")
		}
		return nil, dataErr(file, 0, "%v", errors.Unwrap(err))
	}
	return f, nil
}

// Doc is one document of ppl or long-ppl.
type Doc struct {
	// Text is what is scored (or prompted): the file's text; for the
	// wikitext raw layout, detokenized as lm-eval does.
	Text string
	// Words and Bytes count the original text, for word and byte
	// perplexity: words as lm-eval counts them (len(re.split(r"\s+", page))),
	// bytes in UTF-8.
	Words, Bytes int
	// Source is the file and line the document starts at.
	Source string
}

// Docs is a set of documents and where it came from.
type Docs struct {
	From string
	Docs []Doc
}

// Len is the number of documents.
func (d *Docs) Len() int { return len(d.Docs) }

// Origin says where the set came from.
func (d *Docs) Origin() string { return d.From }

// LoadDocs reads documents from src: a wikitext raw file (*.raw, e.g.
// wiki.test.raw: one document per " = Title = " heading), a JSONL file
// (*.jsonl: one object per line with a "text" field, or lm-eval's "page"),
// a parquet file (*.parquet: a "text" column; the Hub's wikitext rows, one
// per raw line, give the raw file's documents), any other file as one
// plain-text document, or a folder of such files (of a folder of the Hub's
// split files, test-*.parquet only; of wikitext's raw folder, wiki.test.raw).
func LoadDocs(src string) (*Docs, error) {
	st, err := os.Stat(src)
	if err != nil {
		return nil, dataErr(src, 0, "no such file or folder")
	}
	if !st.IsDir() && !st.Mode().IsRegular() {
		// A device or a pipe (/dev/zero) would be read without end.
		return nil, dataErr(src, 0, "not a regular file or a folder")
	}
	files := []string{src}
	if st.IsDir() {
		entries, err := os.ReadDir(src)
		if err != nil {
			return nil, dataErr(src, 0, "%v", err)
		}
		files = files[:0]
		for _, e := range entries {
			if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
				files = append(files, filepath.Join(src, e.Name()))
			}
		}
		if err := hfRepoErr(src, files); err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, dataErr(src, 0, "the folder holds no files")
		}
		files = hfTestShards(files)
	}
	out := &Docs{From: src}
	for _, name := range files {
		docs, err := loadDocsFile(name)
		if err != nil {
			return nil, err
		}
		out.Docs = append(out.Docs, docs...)
	}
	return out, nil
}

// loadDocsFile reads one file's documents: a parquet file in place (only
// its text column is read), any other whole.
func loadDocsFile(name string) ([]Doc, error) {
	if isParquet(name) {
		return withParquet(name, parseDocsParquet)
	}
	f, err := openData(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseDocs(name, f)
}

// ParseDocs reads one file's documents; name's extension picks the layout,
// as LoadDocs says.
func ParseDocs(name string, r io.Reader) ([]Doc, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, dataErr(name, 0, "%v", err)
	}
	var docs []Doc
	switch strings.ToLower(filepath.Ext(name)) {
	case ".parquet":
		docs, err = readParquet(name, bytes.NewReader(b), parseDocsParquet)
	case ".jsonl":
		docs, err = parseDocsJSONL(name, b)
	case ".raw":
		docs, err = parseWikitext(name, b)
	default:
		docs, err = parsePlain(name, b)
	}
	if err == nil && len(docs) == 0 {
		err = dataErr(name, 0, "no documents")
	}
	return docs, err
}

func newDoc(scored, original, source string) Doc {
	return Doc{Text: scored, Words: lmevalWords(original), Bytes: len(original), Source: source}
}

// lmevalWords counts words as lm-eval's wikitext task does,
// len(re.split(r"\s+", s)): whitespace runs + 1, so leading and trailing
// whitespace count as (empty) words too.
func lmevalWords(s string) int {
	n, in := 1, false
	for _, c := range s {
		sp := unicode.IsSpace(c)
		if sp && !in {
			n++
		}
		in = sp
	}
	return n
}

// lines splits b into lines, each keeping its "\n".
func lines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, b)
			break
		}
		out = append(out, b[:i+1])
		b = b[i+1:]
	}
	return out
}

func badUTF8(name string, b []byte) error {
	if utf8.Valid(b) {
		return nil
	}
	for i, l := range lines(b) {
		if !utf8.Valid(l) {
			return dataErr(name, i+1, "not valid UTF-8")
		}
	}
	return dataErr(name, 0, "not valid UTF-8")
}

func parsePlain(name string, b []byte) ([]Doc, error) {
	if err := badUTF8(name, b); err != nil {
		return nil, err
	}
	if strings.TrimSpace(string(b)) == "" {
		return nil, dataErr(name, 0, "empty: no text to score")
	}
	return []Doc{newDoc(string(b), string(b), name+":1")}, nil
}

func parseDocsJSONL(name string, b []byte) ([]Doc, error) {
	var docs []Doc
	for i, l := range lines(b) {
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			continue
		}
		var row map[string]json.RawMessage
		if err := json.Unmarshal(l, &row); err != nil {
			return nil, dataErr(name, i+1, "not a JSON object: %v", err)
		}
		raw, ok := row["text"]
		if !ok {
			raw, ok = row["page"]
		}
		var text string
		if !ok || json.Unmarshal(raw, &text) != nil {
			return nil, dataErr(name, i+1, `want a string field "text"`)
		}
		if strings.TrimSpace(text) == "" {
			continue // line-level wikitext exports hold empty rows
		}
		docs = append(docs, newDoc(text, text, fmt.Sprintf("%s:%d", name, i+1)))
	}
	return docs, nil
}

// isWikiTitle reports whether a wikitext raw line is a level-1 heading,
// " = Title = ": the start of a document (EleutherAI's document-level
// wikitext splits there).
func isWikiTitle(l string) bool {
	t := strings.TrimRight(l, " \r\n")
	return strings.HasPrefix(t, " = ") && !strings.HasPrefix(t, " = = ") && strings.HasSuffix(t, " =") && len(t) > 4
}

func parseWikitext(name string, b []byte) ([]Doc, error) {
	if err := badUTF8(name, b); err != nil {
		return nil, err
	}
	var docs []Doc
	var page strings.Builder
	start := 0
	flush := func() {
		if page.Len() > 0 {
			p := page.String()
			docs = append(docs, newDoc(WikitextDetokenize(p), p, fmt.Sprintf("%s:%d", name, start)))
			page.Reset()
		}
	}
	for i, l := range lines(b) {
		s := string(l)
		switch {
		case isWikiTitle(s):
			flush()
			start = i + 1
		case start == 0 && strings.TrimSpace(s) != "":
			return nil, dataErr(name, i+1, `text before the first " = Title = " heading: not the wikitext raw layout (name the file .txt to score it as plain text)`)
		case start == 0:
			continue
		}
		page.WriteString(s)
	}
	flush()
	return docs, nil
}

// MMLUQuestion is one multiple-choice question.
type MMLUQuestion struct {
	Question string
	Choices  [4]string
	// Answer is the right choice, 0–3 (A–D).
	Answer int
	Source string
}

// MMLUSubject is one subject's shots (the first five dev rows, in file
// order) and test questions.
type MMLUSubject struct {
	Name  string
	Shots []MMLUQuestion
	Test  []MMLUQuestion
}

// MMLUSet is a set of subjects and where it came from.
type MMLUSet struct {
	From     string
	Subjects []MMLUSubject
}

// Len is the number of test questions.
func (s *MMLUSet) Len() int {
	n := 0
	for _, sub := range s.Subjects {
		n += len(sub.Test)
	}
	return n
}

// Origin says where the set came from.
func (s *MMLUSet) Origin() string { return s.From }

// MMLUShots is the number of shots per prompt.
const MMLUShots = 5

// LoadMMLU reads MMLU from src: the original layout (a folder holding
// dev/<subject>_dev.csv and test/<subject>_test.csv, or a data/ folder that
// does; CSV without a header, columns question, A, B, C, D, answer letter),
// or one JSONL or CSV file whose rows have question, choices (JSONL: a list
// of four; CSV: columns A, B, C, D or a JSON list in "choices") and answer
// (a letter, or 0–3), with optional subject and split, or one parquet file
// with those columns, or the Hugging Face Hub's parquet layout (cais/mmlu: a
// folder of test-*.parquet and dev-*.parquet, or one holding all/ or one
// such folder per subject; shots from dev as in the original layout). In
// one file, a subject's shots are its rows of split "dev", else its first
// five rows (which are then not scored).
func LoadMMLU(src string) (*MMLUSet, error) {
	st, err := os.Stat(src)
	if err != nil {
		return nil, dataErr(src, 0, "no such file or folder")
	}
	if st.IsDir() {
		if dirs := mmluParquetDirs(src); len(dirs) > 0 {
			return loadMMLUParquet(src, dirs)
		}
		return loadMMLUDir(src)
	}
	f, err := openData(src)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseMMLU(src, f)
}

// ParseMMLU reads one MMLU file: parquet when name ends in .parquet, JSONL
// when in .jsonl, else CSV with a header row.
func ParseMMLU(name string, r io.Reader) (*MMLUSet, error) {
	var rows []mmluRow
	var err error
	switch {
	case isParquet(name):
		rows, err = readParquet(name, r, parseMMLUParquet)
	case strings.EqualFold(filepath.Ext(name), ".jsonl"):
		rows, err = parseMMLUJSONL(name, r)
	default:
		rows, err = parseMMLUHeaderCSV(name, r)
	}
	if err != nil {
		return nil, err
	}
	set := &MMLUSet{From: name}
	groupMMLU(set, rows, strings.TrimSuffix(filepath.Base(name), filepath.Ext(name)))
	return finishMMLU(set, name)
}

// groupMMLU adds rows to set by subject (def where a row has none), in
// order of first appearance: a subject's shots are its first five rows of
// split "dev", else its first five rows (which are then not scored).
func groupMMLU(set *MMLUSet, rows []mmluRow, def string) {
	idx := map[string]int{}
	dev := map[string]bool{}
	for _, row := range rows {
		if row.subject == "" {
			row.subject = def
		}
		i, ok := idx[row.subject]
		if !ok {
			i = len(set.Subjects)
			idx[row.subject] = i
			set.Subjects = append(set.Subjects, MMLUSubject{Name: row.subject})
		}
		sub := &set.Subjects[i]
		if row.split == "dev" {
			dev[row.subject] = true
			sub.Shots = append(sub.Shots, row.q)
		} else {
			sub.Test = append(sub.Test, row.q)
		}
	}
	for i := range set.Subjects {
		sub := &set.Subjects[i]
		if !dev[sub.Name] {
			k := min(MMLUShots, len(sub.Test))
			sub.Shots, sub.Test = sub.Test[:k:k], sub.Test[k:]
		}
		sub.Shots = sub.Shots[:min(MMLUShots, len(sub.Shots))]
	}
}

func finishMMLU(set *MMLUSet, name string) (*MMLUSet, error) {
	set.Subjects = slices.DeleteFunc(set.Subjects, func(s MMLUSubject) bool { return len(s.Test) == 0 })
	if len(set.Subjects) == 0 {
		return nil, dataErr(name, 0, "no test questions")
	}
	return set, nil
}

type mmluRow struct {
	q              MMLUQuestion
	subject, split string
}

func loadMMLUDir(dir string) (*MMLUSet, error) {
	return loadMMLUFS(os.DirFS(dir), dir)
}

// loadMMLUFS reads the original layout from fsys; display is what file
// names in errors start with.
func loadMMLUFS(fsys fs.FS, display string) (*MMLUSet, error) {
	root := "."
	if _, err := fs.Stat(fsys, "test"); err != nil {
		if _, err := fs.Stat(fsys, "data/test"); err != nil {
			return nil, dataErr(display, 0, "want the original MMLU layout: a folder with dev/<subject>_dev.csv and test/<subject>_test.csv")
		}
		root = "data"
	}
	tests, _ := fs.Glob(fsys, path.Join(root, "test", "*_test.csv"))
	if len(tests) == 0 {
		return nil, dataErr(filepath.Join(display, root, "test"), 0, "no <subject>_test.csv file")
	}
	slices.Sort(tests)
	read := func(name string) ([]MMLUQuestion, error) {
		shown := filepath.Join(display, filepath.FromSlash(name))
		f, err := fsys.Open(name)
		if err != nil {
			return nil, dataErr(shown, 0, "no such file")
		}
		defer f.Close()
		return ParseMMLUCSV(shown, f)
	}
	set := &MMLUSet{From: display}
	for _, tf := range tests {
		subject := strings.TrimSuffix(path.Base(tf), "_test.csv")
		test, err := read(tf)
		if err != nil {
			return nil, err
		}
		shots, err := read(path.Join(root, "dev", subject+"_dev.csv"))
		if err != nil {
			return nil, err
		}
		set.Subjects = append(set.Subjects, MMLUSubject{Name: subject, Shots: shots[:min(MMLUShots, len(shots))], Test: test})
	}
	return finishMMLU(set, display)
}

// ParseMMLUCSV reads one file of the original MMLU layout: no header, six
// columns (question, A, B, C, D, answer letter), RFC 4180 quoting.
func ParseMMLUCSV(name string, r io.Reader) ([]MMLUQuestion, error) {
	var out []MMLUQuestion
	err := readCSV(name, r, func(line int, rec []string) error {
		if len(rec) != 6 {
			return dataErr(name, line, "%d columns, want 6: question, A, B, C, D, answer", len(rec))
		}
		ans, err := answerIndex(rec[5])
		if err != nil {
			return dataErr(name, line, "%v", err)
		}
		out = append(out, MMLUQuestion{Question: rec[0], Choices: [4]string{rec[1], rec[2], rec[3], rec[4]}, Answer: ans, Source: fmt.Sprintf("%s:%d", name, line)})
		return nil
	})
	return out, err
}

// readCSV calls row for each record with the line it starts on.
func readCSV(name string, r io.Reader, row func(line int, rec []string) error) error {
	cr := csv.NewReader(bufio.NewReader(&lineCap{r: r}))
	cr.FieldsPerRecord = -1
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return dataErr(name, pe.StartLine, "%v", pe.Err)
			}
			return dataErr(name, 0, "%v", err)
		}
		line, _ := cr.FieldPos(0)
		for _, f := range rec {
			if !utf8.ValidString(f) {
				return dataErr(name, line, "not valid UTF-8")
			}
		}
		if err := row(line, rec); err != nil {
			return err
		}
	}
}

// maxCSVLine is the most bytes of one CSV line: an MMLU question with its
// four choices is a few KiB, so 4 MiB refuses only a file with no line
// breaks (/dev/zero, a binary file), which encoding/csv would otherwise
// gather into one record until out of memory.
const maxCSVLine = 4 << 20

// errCSVLine is lineCap's error for a line past maxCSVLine.
var errCSVLine = fmt.Errorf("a line over %d MiB: not a CSV file", maxCSVLine>>20)

// lineCap passes r through, failing once a line runs past maxCSVLine.
type lineCap struct {
	r   io.Reader
	run int // bytes since the last line break
}

func (c *lineCap) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for _, b := range p[:n] {
		c.run++
		if b == '\n' {
			c.run = 0
		}
		if c.run > maxCSVLine {
			return 0, errCSVLine
		}
	}
	return n, err
}

// answerIndex reads an answer letter A–D (or a digit 0–3).
func answerIndex(s string) (int, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	if len(t) == 1 {
		switch c := t[0]; {
		case c >= 'A' && c <= 'D':
			return int(c - 'A'), nil
		case c >= '0' && c <= '3':
			return int(c - '0'), nil
		}
	}
	return 0, fmt.Errorf("answer %q is not A, B, C or D", s)
}

func parseMMLUHeaderCSV(name string, r io.Reader) ([]mmluRow, error) {
	var col map[string]int
	var rows []mmluRow
	err := readCSV(name, r, func(line int, rec []string) error {
		if col == nil {
			col = map[string]int{}
			for i, h := range rec {
				col[strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))] = i
			}
			_, q := col["question"]
			_, a := col["answer"]
			_, ch := col["choices"]
			_, abcd := col["d"]
			if !q || !a || (!ch && !abcd) {
				return dataErr(name, line, "want a header naming question, answer and choices (or A, B, C, D); for the original header-less layout pass the folder holding dev/ and test/")
			}
			return nil
		}
		get := func(k string) (string, bool) {
			i, ok := col[k]
			if !ok || i >= len(rec) {
				return "", false
			}
			return rec[i], true
		}
		var row mmluRow
		var ok bool
		if row.q.Question, ok = get("question"); !ok {
			return dataErr(name, line, "%d columns, fewer than the header's", len(rec))
		}
		if c, has := get("choices"); has {
			var list []string
			if err := json.Unmarshal([]byte(c), &list); err != nil || len(list) != 4 {
				return dataErr(name, line, "choices %q is not a JSON list of four strings", clipLine(c))
			}
			copy(row.q.Choices[:], list)
		} else {
			for j, k := range []string{"a", "b", "c", "d"} {
				if row.q.Choices[j], ok = get(k); !ok {
					return dataErr(name, line, "no column %s", strings.ToUpper(k))
				}
			}
		}
		a, _ := get("answer")
		ans, err := answerIndex(a)
		if err != nil {
			return dataErr(name, line, "%v", err)
		}
		row.q.Answer = ans
		row.subject, _ = get("subject")
		row.split, _ = get("split")
		row.subject, row.split = strings.TrimSpace(row.subject), strings.ToLower(strings.TrimSpace(row.split))
		row.q.Source = fmt.Sprintf("%s:%d", name, line)
		rows = append(rows, row)
		return nil
	})
	if err == nil && col == nil {
		err = dataErr(name, 0, "empty file")
	}
	return rows, err
}

func parseMMLUJSONL(name string, r io.Reader) ([]mmluRow, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, dataErr(name, 0, "%v", err)
	}
	var rows []mmluRow
	for i, l := range lines(b) {
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			continue
		}
		var v struct {
			Question *string         `json:"question"`
			Choices  []string        `json:"choices"`
			Answer   json.RawMessage `json:"answer"`
			Subject  string          `json:"subject"`
			Split    string          `json:"split"`
		}
		if err := json.Unmarshal(l, &v); err != nil {
			return nil, dataErr(name, i+1, "not a question object: %v", err)
		}
		if v.Question == nil {
			return nil, dataErr(name, i+1, `no "question"`)
		}
		if len(v.Choices) != 4 {
			return nil, dataErr(name, i+1, `"choices" has %d entries, want 4`, len(v.Choices))
		}
		var ans int
		var letter string
		switch {
		case json.Unmarshal(v.Answer, &ans) == nil && ans >= 0 && ans <= 3:
		case json.Unmarshal(v.Answer, &letter) == nil:
			if ans, err = answerIndex(letter); err != nil {
				return nil, dataErr(name, i+1, "%v", err)
			}
		default:
			return nil, dataErr(name, i+1, `"answer" %s is not 0-3 or a letter A-D`, clipLine(string(v.Answer)))
		}
		row := mmluRow{q: MMLUQuestion{Question: *v.Question, Answer: ans, Source: fmt.Sprintf("%s:%d", name, i+1)},
			subject: strings.TrimSpace(v.Subject), split: strings.ToLower(strings.TrimSpace(v.Split))}
		copy(row.q.Choices[:], v.Choices)
		rows = append(rows, row)
	}
	return rows, nil
}

// TriviaItem is one TriviaQA question.
type TriviaItem struct {
	Question string
	// Answer is the answer a shot shows: the first alias, as lm-eval takes it.
	Answer string
	// Aliases are every accepted answer (Aliases, then NormalizedAliases).
	Aliases []string
	Source  string
	// ID is the question's id (the original layout's QuestionId, JSONL's
	// question_id), or "#N", N its index in the file, where it has none:
	// the same in every run, so runs pair up by it.
	ID string
}

// TriviaSet is a set of TriviaQA items and where it came from.
type TriviaSet struct {
	From  string
	Items []TriviaItem
}

// Len is the number of items.
func (s *TriviaSet) Len() int { return len(s.Items) }

// Origin says where the set came from.
func (s *TriviaSet) Origin() string { return s.From }

// LoadTriviaQA reads at most max items (0: all) from file: the original
// JSON ({"Data": [{"Question", "Answer": {"Aliases", "NormalizedAliases",
// "Value"}}]}, read as a stream, so a 1 GB file costs only the items
// taken), or JSONL (*.jsonl) with question and answer (an object with
// aliases / normalized_aliases / value, a string, or a list of strings), or
// parquet (*.parquet, as the Hugging Face Hub serves trivia_qa) with those
// columns, answer a struct, or a folder of the Hub's (rc.nocontext/, rc/):
// its validation-*.parquet shards.
func LoadTriviaQA(file string, max int) (*TriviaSet, error) {
	// os.Open succeeds on a folder; reading it would fail as a bad layout.
	if st, err := os.Stat(file); err == nil && st.IsDir() {
		return loadTriviaShards(file, max)
	}
	f, err := openData(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseTriviaQA(file, f, max)
}

// ParseTriviaQA reads TriviaQA from r: parquet when name ends in .parquet,
// JSONL when in .jsonl, else the original JSON.
func ParseTriviaQA(name string, r io.Reader, max int) (*TriviaSet, error) {
	var items []TriviaItem
	var err error
	switch {
	case isParquet(name):
		items, err = readParquet(name, r, func(p *parquetcol.File) ([]TriviaItem, error) { return parseTriviaParquet(p, max) })
	case strings.EqualFold(filepath.Ext(name), ".jsonl"):
		items, err = parseTriviaJSONL(name, r, max)
	default:
		items, err = parseTriviaJSON(name, r, max)
	}
	if err == nil && len(items) == 0 {
		err = dataErr(name, 0, "no questions")
	}
	if err != nil {
		return nil, err
	}
	return &TriviaSet{From: name, Items: items}, nil
}

// triviaRow is one item in either layout; json matches keys without regard
// to case, so "Question" and "question" both land here.
type triviaRow struct {
	Question *string         `json:"question"`
	Answer   json.RawMessage `json:"answer"`
	ID       string          `json:"questionid"`
	IDSnake  string          `json:"question_id"`
}

type triviaAnswer struct {
	Aliases    []string `json:"aliases"`
	Normalized []string `json:"normalizedaliases"`
	NormSnake  []string `json:"normalized_aliases"`
	Value      string   `json:"value"`
}

// item is the row as an item; index is its index in the file, its ID
// where the row gives none.
func (row *triviaRow) item(name string, line, index int) (TriviaItem, error) {
	if row.Question == nil || strings.TrimSpace(*row.Question) == "" {
		return TriviaItem{}, dataErr(name, line, "no question")
	}
	it := TriviaItem{Question: strings.TrimSpace(*row.Question), Source: fmt.Sprintf("%s:%d", name, line)}
	it.ID = cmp.Or(strings.TrimSpace(row.ID), strings.TrimSpace(row.IDSnake), "#"+strconv.Itoa(index))
	raw := bytes.TrimSpace(row.Answer)
	var s string
	var list []string
	var a triviaAnswer
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return it, dataErr(name, line, "no answer (a test file without answers?)")
	case json.Unmarshal(raw, &s) == nil:
		list = []string{s}
	case json.Unmarshal(raw, &list) == nil:
	case json.Unmarshal(raw, &a) == nil:
		list = append(list, a.Aliases...)
		if a.Value != "" && len(list) == 0 {
			list = append(list, a.Value)
		}
		list = append(list, a.Normalized...)
		list = append(list, a.NormSnake...)
	default:
		return it, dataErr(name, line, "answer %s is not an object, a string or a list of strings", clipLine(string(raw)))
	}
	if !it.setAliases(list) {
		return it, dataErr(name, line, "the answer has no alias")
	}
	return it, nil
}

// setAliases sets the item's aliases to list's distinct non-blank entries
// and its answer to the first; false when there is none.
func (it *TriviaItem) setAliases(list []string) bool {
	for _, x := range list {
		if x = strings.TrimSpace(x); x != "" && !slices.Contains(it.Aliases, x) {
			it.Aliases = append(it.Aliases, x)
		}
	}
	if len(it.Aliases) == 0 {
		return false
	}
	it.Answer = it.Aliases[0]
	return true
}

func parseTriviaJSONL(name string, r io.Reader, max int) ([]TriviaItem, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var items []TriviaItem
	for line := 1; sc.Scan(); line++ {
		l := bytes.TrimSpace(sc.Bytes())
		if len(l) == 0 {
			continue
		}
		var row triviaRow
		if err := json.Unmarshal(l, &row); err != nil {
			return nil, dataErr(name, line, "not a question object: %v", err)
		}
		it, err := row.item(name, line, len(items))
		if err != nil {
			return nil, err
		}
		items = append(items, it)
		if max > 0 && len(items) >= max {
			return items, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, dataErr(name, 0, "%v", err)
	}
	return items, nil
}

// lineCounter counts the newlines that pass through it.
type lineCounter struct {
	r     io.Reader
	lines int
}

func (c *lineCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.lines += bytes.Count(p[:n], []byte{'\n'})
	return n, err
}

// parseTriviaJSON streams the original layout, item by item.
func parseTriviaJSON(name string, r io.Reader, max int) ([]TriviaItem, error) {
	lc := &lineCounter{r: r}
	dec := json.NewDecoder(lc)
	// line is where the decoder stands: the newlines read, less those still
	// buffered ahead of it.
	// Separators the decoder has not consumed yet are skipped, so the line
	// is that of the next value.
	line := func() int {
		ahead, _ := io.ReadAll(dec.Buffered())
		lead := len(ahead) - len(bytes.TrimLeft(ahead, " \t\r\n,:"))
		return 1 + lc.lines - bytes.Count(ahead[lead:], []byte{'\n'})
	}
	fail := func(format string, args ...any) ([]TriviaItem, error) {
		return nil, dataErr(name, line(), format, args...)
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fail(`want the TriviaQA JSON layout {"Data": [...]} (or a .jsonl file)`)
	}
	var items []TriviaItem
	sawData := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fail("%v", err)
		}
		key, _ := t.(string)
		if !strings.EqualFold(key, "Data") {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return fail("%v", err)
			}
			continue
		}
		sawData = true
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			return fail(`"Data" is not a list`)
		}
		for dec.More() {
			at := line()
			var row triviaRow
			if err := dec.Decode(&row); err != nil {
				return nil, dataErr(name, at, "item %d: %v", len(items)+1, err)
			}
			it, err := row.item(name, at, len(items))
			if err != nil {
				return nil, err
			}
			items = append(items, it)
			if max > 0 && len(items) >= max {
				return items, nil
			}
		}
		if _, err := dec.Token(); err != nil {
			return fail("%v", err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return fail("%v", err)
	}
	if !sawData {
		return fail(`no "Data" list`)
	}
	return items, nil
}
