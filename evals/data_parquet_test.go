package evals

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/parquetcol/parquettest"
	"github.com/parquet-go/parquet-go"
)

// The Hub's wikitext row: optional, dictionary-encoded, zstd.
type wikiRow struct {
	Text *string `parquet:"text,optional,dict,zstd"`
}

// hfWikiRows splits raw into lines as the Hub's wikitext builder yields
// them: each line with its "\n", a blank line as "". With keepNL false the
// lines lose their "\n" and blank ones stay as they are.
func hfWikiRows(raw string, keepNL bool) []wikiRow {
	var rows []wikiRow
	for _, l := range lines([]byte(raw)) {
		s := string(l)
		switch {
		case !keepNL:
			s = strings.TrimSuffix(s, "\n")
		case strings.TrimSpace(s) == "":
			s = ""
		}
		rows = append(rows, wikiRow{Text: &s})
	}
	return rows
}

// renamed is docs with each Source's file name replaced by name.
func renamed(docs []Doc, from, to string) []Doc {
	out := slices.Clone(docs)
	for i := range out {
		out[i].Source = strings.Replace(out[i].Source, from, to, 1)
	}
	return out
}

func TestParquetDocsAreTheRawFilesDocs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	want, err := ParseDocs("w.raw", strings.NewReader(wikiRaw))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		keepNL bool
	}{
		{"the Hub's rows (each line with its newline, blank lines empty) join back into the raw file", true},
		{"rows without their newlines join back into the raw file too", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := parquettest.Write(t, t.TempDir(), "test-00000-of-00001.parquet", hfWikiRows(wikiRaw, tc.keepNL), 3)
			got, err := LoadDocs(p)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Docs, renamed(want, "w.raw", p)) {
				t.Fatalf("parquet docs\n%+v\nraw docs\n%+v", got.Docs, want)
			}
		})
	}
	t.Run("rows that are not wikitext lines are one document each, blank ones skipped", func(t *testing.T) {
		t.Parallel()
		a, blank, b := "first document", " ", "second\ndocument"
		p := parquettest.Write(t, dir, "docs.parquet", []wikiRow{{&a}, {nil}, {&blank}, {&b}}, 2)
		got, err := LoadDocs(p)
		if err != nil {
			t.Fatal(err)
		}
		want := []Doc{newDoc(a, a, p+":1"), newDoc(b, b, p+":4")}
		if !reflect.DeepEqual(got.Docs, want) {
			t.Fatalf("%+v, want %+v", got.Docs, want)
		}
	})
	t.Run("a folder of the Hub's split files is its test split", func(t *testing.T) {
		t.Parallel()
		sub := filepath.Join(dir, "wikitext-2-raw-v1")
		parquettest.Write(t, sub, "test-00000-of-00001.parquet", hfWikiRows(wikiRaw, true), 100)
		other := " = Gamma = \n Train text . \n"
		parquettest.Write(t, sub, "train-00000-of-00001.parquet", hfWikiRows(other, true), 100)
		got, err := LoadDocs(sub)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Docs) != len(want) || !strings.Contains(got.Docs[0].Text, "= Alpha =") {
			t.Fatalf("%d docs %+v, want the test split's %d", len(got.Docs), got.Docs, len(want))
		}
	})
	t.Run("wikitext's raw folder is its test file, as the Hub's folder is its test split", func(t *testing.T) {
		t.Parallel()
		// unzip wikitext-2-raw-v1.zip: wiki.test.raw, wiki.train.raw and
		// wiki.valid.raw in one folder.
		raw := filepath.Join(dir, "wikitext-2-raw")
		write(t, raw, "wiki.test.raw", wikiRaw)
		write(t, raw, "wiki.train.raw", " = Gamma = \n Train text . \n")
		write(t, raw, "wiki.valid.raw", " = Delta = \n Valid text . \n")
		got, err := LoadDocs(raw)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Docs, renamed(want, "w.raw", filepath.Join(raw, "wiki.test.raw"))) {
			t.Fatalf("%d docs %+v, want the test file's %d", len(got.Docs), got.Docs, len(want))
		}
	})
	t.Run("the Hub repository's own folder names its configs, not its README as a document", func(t *testing.T) {
		t.Parallel()
		// huggingface-cli download Salesforce/wikitext --local-dir root:
		// README.md beside one folder per config.
		root := filepath.Join(dir, "repo")
		write(t, root, "README.md", "---\ndataset_info:\n---\n# Dataset Card for wikitext\n")
		parquettest.Write(t, filepath.Join(root, "wikitext-2-raw-v1"), "test-00000-of-00001.parquet", hfWikiRows(wikiRaw, true), 100)
		parquettest.Write(t, filepath.Join(root, "wikitext-103-raw-v1"), "test-00000-of-00001.parquet", hfWikiRows(wikiRaw, true), 100)
		got, err := LoadDocs(root)
		var de *DataError
		if !errors.As(err, &de) {
			t.Fatalf("%+v, %v: want a DataError", got, err)
		}
		for _, w := range []string{"wikitext-103-raw-v1", "wikitext-2-raw-v1"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q does not name %s", err, w)
			}
		}
	})
}

// The Hub's MMLU row (cais/mmlu): choices a LIST of strings, answer the
// class label as int64.
type mmluPQRow struct {
	Question string   `parquet:"question,dict,snappy"`
	Subject  string   `parquet:"subject,dict,snappy"`
	Choices  []string `parquet:"choices,list,zstd"`
	Answer   int64    `parquet:"answer"`
}

func mmluPQRows(subject string, qs []MMLUQuestion) []mmluPQRow {
	var rows []mmluPQRow
	for _, q := range qs {
		rows = append(rows, mmluPQRow{Question: q.Question, Subject: subject, Choices: q.Choices[:], Answer: int64(q.Answer)})
	}
	return rows
}

// withoutSources is set with every Source and From cleared: what is
// compared across layouts.
func withoutSources(set *MMLUSet) *MMLUSet {
	out := &MMLUSet{}
	for _, s := range set.Subjects {
		c := MMLUSubject{Name: s.Name}
		for _, q := range s.Shots {
			q.Source = ""
			c.Shots = append(c.Shots, q)
		}
		for _, q := range s.Test {
			q.Source = ""
			c.Test = append(c.Test, q)
		}
		out.Subjects = append(out.Subjects, c)
	}
	return out
}

// csvMMLU is the embedded sample (the original CSV layout) and its rows per
// subject and split, read back from its files.
func csvMMLU(t *testing.T) (*MMLUSet, map[string][2][]MMLUQuestion) {
	t.Helper()
	sub, _ := fs.Sub(samples, "data/mmlu")
	set, err := loadMMLUFS(sub, "mmlu")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][2][]MMLUQuestion{}
	for _, s := range set.Subjects {
		var both [2][]MMLUQuestion
		for i, split := range []string{"dev", "test"} {
			f, _ := sub.Open(split + "/" + s.Name + "_" + split + ".csv")
			both[i], err = ParseMMLUCSV(s.Name, f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
		}
		files[s.Name] = both
	}
	return set, files
}

// writeMMLUCSV writes qs in the original layout (no header, the answer a
// letter).
func writeMMLUCSV(t *testing.T, file string, qs []MMLUQuestion) {
	t.Helper()
	var b strings.Builder
	w := csv.NewWriter(&b)
	for _, q := range qs {
		w.Write([]string{q.Question, q.Choices[0], q.Choices[1], q.Choices[2], q.Choices[3], string(rune('A' + q.Answer))})
	}
	w.Flush()
	write(t, filepath.Dir(file), filepath.Base(file), b.String())
}

func TestParquetMMLUIsTheCSVLayoutsSet(t *testing.T) {
	t.Parallel()
	want, files := csvMMLU(t)
	// Subjects written in reverse name order: the set must still come in
	// name order, as the CSV layout's files do.
	var names []string
	for _, s := range want.Subjects {
		names = append([]string{s.Name}, names...)
	}
	check := func(t *testing.T, src string) {
		t.Helper()
		got, err := LoadMMLU(src)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(withoutSources(got), withoutSources(want)) {
			t.Fatalf("parquet set\n%+v\nCSV set\n%+v", withoutSources(got), withoutSources(want))
		}
	}
	t.Run("the Hub's all/ folder of dev and test files", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		var dev, test []mmluPQRow
		for _, n := range names {
			dev = append(dev, mmluPQRows(n, files[n][0])...)
			test = append(test, mmluPQRows(n, files[n][1])...)
		}
		parquettest.Write(t, filepath.Join(root, "all"), "dev-00000-of-00001.parquet", dev, 7)
		parquettest.Write(t, filepath.Join(root, "all"), "test-00000-of-00001.parquet", test, 5)
		check(t, root)
		check(t, filepath.Join(root, "all"))
	})
	t.Run("the Hub's folder per subject, a sixth dev row unused as in the CSV layout", func(t *testing.T) {
		t.Parallel()
		root, csvDir := t.TempDir(), t.TempDir()
		for _, n := range names {
			dev := append(slices.Clone(files[n][0]), MMLUQuestion{Question: "extra dev row of " + n, Choices: [4]string{"a", "b", "c", "d"}})
			parquettest.Write(t, filepath.Join(root, n), "dev-00000-of-00001.parquet", mmluPQRows(n, dev), 100)
			parquettest.Write(t, filepath.Join(root, n), "test-00000-of-00001.parquet", mmluPQRows(n, files[n][1]), 100)
			writeMMLUCSV(t, filepath.Join(csvDir, "dev", n+"_dev.csv"), dev)
			writeMMLUCSV(t, filepath.Join(csvDir, "test", n+"_test.csv"), files[n][1])
		}
		parquettest.Write(t, filepath.Join(root, "auxiliary_train"), "train-00000-of-00001.parquet", mmluPQRows("x", files[names[0]][1]), 100)
		fromCSV, err := LoadMMLU(csvDir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := LoadMMLU(root)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(withoutSources(got), withoutSources(fromCSV)) || got.Len() != want.Len() {
			t.Fatalf("parquet set\n%+v\nCSV set\n%+v", withoutSources(got), withoutSources(fromCSV))
		}
	})
	t.Run("a test file alone takes each subject's first five rows as shots, as JSONL does", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		var rows []mmluPQRow
		var jsonl strings.Builder
		for _, n := range names {
			rows = append(rows, mmluPQRows(n, files[n][1])...)
			rows = append(rows, mmluPQRows(n, files[n][0])...)
		}
		for _, r := range rows {
			b, _ := json.Marshal(map[string]any{"question": r.Question, "subject": r.Subject, "choices": r.Choices, "answer": r.Answer})
			jsonl.Write(append(b, '\n'))
		}
		p := parquettest.Write(t, dir, "test-00000-of-00001.parquet", rows, 4)
		got, err := LoadMMLU(p)
		if err != nil {
			t.Fatal(err)
		}
		fromJSONL, err := LoadMMLU(write(t, dir, "same.jsonl", jsonl.String()))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(withoutSources(got), withoutSources(fromJSONL)) || got.Len() != len(rows)-5*len(names) {
			t.Fatalf("parquet %+v\nJSONL %+v", withoutSources(got), withoutSources(fromJSONL))
		}
	})
}

// The Hub's trivia_qa answer struct, every field as the Hub has it.
type triviaPQAnswer struct {
	Aliases                   []string `parquet:"aliases,list"`
	NormalizedAliases         []string `parquet:"normalized_aliases,list"`
	MatchedWikiEntityName     string   `parquet:"matched_wiki_entity_name"`
	NormalizedMatchedWikiName string   `parquet:"normalized_matched_wiki_entity_name"`
	NormalizedValue           string   `parquet:"normalized_value"`
	Type                      string   `parquet:"type,dict"`
	Value                     string   `parquet:"value"`
}

type triviaPQRow struct {
	Question       string         `parquet:"question,zstd"`
	QuestionID     string         `parquet:"question_id,dict"`
	QuestionSource string         `parquet:"question_source,dict"`
	Answer         triviaPQAnswer `parquet:"answer"`
}

// sampleTriviaRows is the embedded sample's JSON, as the Hub's rows.
func sampleTriviaRows(t *testing.T) []triviaPQRow {
	t.Helper()
	b, _ := samples.ReadFile("data/triviaqa.json")
	var v struct {
		Data []struct {
			Question, QuestionID, QuestionSource string
			Answer                               struct {
				Aliases, NormalizedAliases []string
				Value, NormalizedValue     string
				Type                       string
			}
		}
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var rows []triviaPQRow
	for _, d := range v.Data {
		a := d.Answer
		rows = append(rows, triviaPQRow{Question: d.Question, QuestionID: d.QuestionID, QuestionSource: d.QuestionSource,
			Answer: triviaPQAnswer{Aliases: a.Aliases, NormalizedAliases: a.NormalizedAliases, Value: a.Value, NormalizedValue: a.NormalizedValue, Type: a.Type}})
	}
	return rows
}

func TestParquetTriviaQAIsTheJSONLayoutsSet(t *testing.T) {
	t.Parallel()
	rows := sampleTriviaRows(t)
	p := parquettest.Write(t, t.TempDir(), "validation-00000-of-00001.parquet", rows, 6)
	for _, max := range []int{0, 7} {
		want := SampleTriviaQA().Items
		if max > 0 {
			want = want[:max]
		}
		got, err := LoadTriviaQA(p, max)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Items) != len(want) {
			t.Fatalf("max %d: %d items, want %d", max, len(got.Items), len(want))
		}
		for i := range want {
			g, w := got.Items[i], want[i]
			g.Source, w.Source = "", ""
			if !reflect.DeepEqual(g, w) {
				t.Errorf("max %d: item %d\n%+v\nwant %+v", max, i, g, w)
			}
		}
	}
	t.Run("the Hub's config folder is its validation shards, in order, up to max", func(t *testing.T) {
		t.Parallel()
		// rc/: validation-0000{0..3}-of-00004.parquet beside train and test.
		dir := t.TempDir()
		for i, part := range [][]triviaPQRow{rows[:4], rows[4:9], rows[9:]} {
			parquettest.Write(t, dir, fmt.Sprintf("validation-%05d-of-00003.parquet", i), part, 3)
		}
		unk := []triviaPQRow{{Question: "Q?", QuestionID: "x", Answer: triviaPQAnswer{Value: "<unk>"}}}
		parquettest.Write(t, dir, "test-00000-of-00001.parquet", unk, 10)
		for _, max := range []int{0, 6} {
			want := SampleTriviaQA().Items
			if max > 0 {
				want = want[:max]
			}
			got, err := LoadTriviaQA(dir, max)
			if err != nil || len(got.Items) != len(want) {
				t.Fatalf("max %d: %v, %v; want %d items", max, got, err, len(want))
			}
			for i := range want {
				if got.Items[i].ID != want[i].ID || got.Items[i].Answer != want[i].Answer {
					t.Errorf("max %d: item %d is %+v, want %+v", max, i, got.Items[i], want[i])
				}
			}
		}
	})
	t.Run("the Hub's test split, value <unk> and no aliases, has no answer", func(t *testing.T) {
		t.Parallel()
		q := []triviaPQRow{{Question: "Q?", QuestionID: "x", Answer: triviaPQAnswer{Value: "<unk>", NormalizedValue: "<unk>"}}}
		_, err := LoadTriviaQA(parquettest.Write(t, t.TempDir(), "test-00000-of-00001.parquet", q, 10), 0)
		var de *DataError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), "row 1") {
			t.Fatalf("%v, want a DataError at row 1", err)
		}
	})
}

func TestParquetListsInTheLegacyTwoLevelLayoutRead(t *testing.T) {
	t.Parallel()
	// A bare repeated column (no LIST group around it), as older writers
	// made lists.
	type legacy struct {
		Question string   `parquet:"question"`
		Choices  []string `parquet:"choices"`
		Answer   string   `parquet:"answer"`
	}
	rows := []legacy{
		{"q1", []string{"a", "b", "c", "d"}, "B"},
		{"q2", []string{"e", "f", "g", "h"}, "d"},
	}
	got, err := withParquet(parquettest.Write(t, t.TempDir(), "legacy.parquet", rows, 1), parseMMLUParquet)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].q.Choices != [4]string{"a", "b", "c", "d"} || got[0].q.Answer != 1 ||
		got[1].q.Choices != [4]string{"e", "f", "g", "h"} || got[1].q.Answer != 3 {
		t.Fatalf("%+v", got)
	}
}

func TestBadParquetNamesTheFileAndColumn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	type wrongChoices struct {
		Question string `parquet:"question"`
		Choices  string `parquet:"choices"`
		Answer   int64  `parquet:"answer"`
	}
	type noChoices struct {
		Question string `parquet:"question"`
		Answer   int64  `parquet:"answer"`
	}
	type textAsInt struct {
		Text int64 `parquet:"text"`
	}
	three := []mmluPQRow{{Question: "q", Choices: []string{"a", "b", "c"}, Answer: 1}}
	five := []mmluPQRow{{Question: "q", Choices: []string{"a", "b", "c", "d"}, Answer: 4}}
	load := map[string]func(string) error{
		"mmlu": func(p string) error { _, err := LoadMMLU(p); return err },
		"docs": func(p string) error { _, err := LoadDocs(p); return err },
		"trivia": func(p string) error {
			_, err := LoadTriviaQA(p, 0)
			return err
		},
	}
	for _, tc := range []struct {
		name, loader, file string
		want               []string
	}{
		{"a file that is not parquet", "mmlu", write(t, dir, "csv.parquet", "question,A,B,C,D,answer\n"), []string{"csv.parquet", "not a parquet file"}},
		{"a truncated parquet file", "docs", write(t, dir, "cut.parquet", "PAR1\x00\x00PAR1"), []string{"cut.parquet", "not a parquet file"}},
		{"a missing column", "mmlu", parquettest.Write(t, dir, "nochoices.parquet", []noChoices{{"q", 1}}, 10), []string{"nochoices.parquet", `no column "choices"`, "question, answer"}},
		{"a column of the wrong type", "mmlu", parquettest.Write(t, dir, "strchoices.parquet", []wrongChoices{{"q", "abcd", 1}}, 10), []string{"strchoices.parquet", `column "choices"`, "want a list of strings"}},
		{"three choices", "mmlu", parquettest.Write(t, dir, "three.parquet", three, 10), []string{"three.parquet", "row 1", "3 entries"}},
		{"an answer out of range", "mmlu", parquettest.Write(t, dir, "five.parquet", five, 10), []string{"five.parquet", "row 1", "answer 4"}},
		{"text of the wrong type", "docs", parquettest.Write(t, dir, "int.parquet", []textAsInt{{3}}, 10), []string{"int.parquet", `column "text"`, "want strings"}},
		{"a TriviaQA file without answer", "trivia", parquettest.Write(t, dir, "noans.parquet", []noChoices{{"q", 1}}, 10), []string{"noans.parquet", `column "answer"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := load[tc.loader](tc.file)
			var de *DataError
			if !errors.As(err, &de) {
				t.Fatalf("%v, want a DataError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
}

// The fixtures in testdata were written by DuckDB 1.5.6
// (testdata/make_duckdb_fixtures.mjs says how), not by parquet-go: every
// value the script wrote must come back.
func TestParquetWrittenByDuckDBReads(t *testing.T) {
	t.Parallel()
	t.Run("MMLU: optional columns, a dictionary-encoded subject, a LIST of choices, zstd", func(t *testing.T) {
		t.Parallel()
		rows, err := withParquet(filepath.Join("testdata", "mmlu_duckdb.parquet"), parseMMLUParquet)
		if err != nil {
			t.Fatal(err)
		}
		want := []struct {
			q, subject string
			choices    [4]string
			answer     int
		}{
			{"Which unit measures electric current?", "physics", [4]string{"volt", "ampere", "ohm", "watt"}, 1},
			{"What is the boiling point of water at sea level, in degrees Celsius?", "physics", [4]string{"90", "100", "110", "120"}, 1},
			{"Which force keeps the planets in orbit around the Sun?", "physics", [4]string{"friction", "magnetism", "gravity", "tension"}, 2},
			{"What is the SI unit of energy?", "physics", [4]string{"joule", "newton", "pascal", "watt"}, 0},
			{"Light travels fastest in which medium?", "physics", [4]string{"water", "glass", "diamond", "vacuum"}, 3},
			{`Which word is a synonym of "rapid"?`, "english", [4]string{"slow", "quick", "late", "calm"}, 1},
			{`Which word is the opposite of "ancient"?`, "english", [4]string{"modern", "old", "antique", "aged"}, 0},
			{"Which of these is a noun?", "english", [4]string{"run", "blue", "table", "quickly"}, 2},
			{`Which sentence uses "their" correctly?`, "english", [4]string{"Their going home.", "The dog wagged their tail.", "Put it over their.", "They lost their keys."}, 3},
			{"Which word is spelled correctly?", "english", [4]string{"recieve", "receive", "receeve", "recive"}, 1},
		}
		if len(rows) != len(want) {
			t.Fatalf("%d rows, want %d", len(rows), len(want))
		}
		for i, w := range want {
			r := rows[i]
			if r.q.Question != w.q || r.subject != w.subject || r.q.Choices != w.choices || r.q.Answer != w.answer || r.split != "" {
				t.Errorf("row %d: %+v, want %+v", i+1, r, w)
			}
		}
	})
	t.Run("TriviaQA: answer a struct of lists, an empty aliases list, snappy", func(t *testing.T) {
		t.Parallel()
		set, err := LoadTriviaQA(filepath.Join("testdata", "trivia_duckdb.parquet"), 0)
		if err != nil {
			t.Fatal(err)
		}
		want := []TriviaItem{
			{Question: "Which metal is liquid at room temperature?", ID: "dk_001", Answer: "Mercury", Aliases: []string{"Mercury", "Quicksilver", "Hg", "mercury", "quicksilver", "hg"}},
			{Question: "How many legs does a spider have?", ID: "dk_002", Answer: "Eight", Aliases: []string{"Eight", "8", "eight"}},
			// No aliases: the value, then the normalized aliases, as the JSON layout takes them.
			{Question: "What colour do you get by mixing blue and yellow?", ID: "dk_003", Answer: "Green", Aliases: []string{"Green", "green"}},
		}
		for i := range want {
			want[i].Source = filepath.Join("testdata", "trivia_duckdb.parquet") + ":" + string(rune('1'+i))
		}
		if !reflect.DeepEqual(set.Items, want) {
			t.Fatalf("%+v\nwant %+v", set.Items, want)
		}
	})
}

// FuzzParquetLoaders: whatever the bytes, each loader gives a result or a
// DataError; the decoder's panics on a corrupt file become DataErrors too.
func FuzzParquetLoaders(f *testing.F) {
	for _, name := range []string{"mmlu_duckdb.parquet", "trivia_duckdb.parquet"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, errDocs := ParseDocs("f.parquet", bytes.NewReader(b))
		_, errMMLU := ParseMMLU("f.parquet", bytes.NewReader(b))
		_, errTrivia := ParseTriviaQA("f.parquet", bytes.NewReader(b), 3)
		for _, err := range []error{errDocs, errMMLU, errTrivia} {
			var de *DataError
			if err != nil && !errors.As(err, &de) {
				t.Fatalf("%T %v, want a DataError", err, err)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Fatalf("%q is not one line", err)
			}
		}
	})
}

// A parquet file is read in place: of a file whose other columns are large
// (trivia_qa's rc holds whole pages beside each question), only the text
// column is read. Not parallel: it counts the process's allocations.
func TestParquetDocsReadOnlyTheTextColumn(t *testing.T) {
	type wideRow struct {
		Text  string `parquet:"text"`
		Pages string `parquet:"pages"`
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rows := make([]wideRow, 64)
	for i := range rows {
		page := make([]byte, 128<<10)
		for j := range page {
			page[j] = byte('a' + rng.IntN(26))
		}
		rows[i] = wideRow{Text: fmt.Sprintf("document %d", i), Pages: string(page)}
	}
	p := parquettest.Write(t, t.TempDir(), "wide.parquet", rows, 16)
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	docs, err := LoadDocs(p)
	runtime.ReadMemStats(&after)
	if err != nil || len(docs.Docs) != len(rows) {
		t.Fatalf("%v docs, %v", docs, err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > uint64(st.Size())/4 {
		t.Fatalf("reading %d docs from a %d-byte file allocated %d bytes: the file was read whole", len(rows), st.Size(), got)
	}
}

// A file's own column names are quoted in errors: a name with a newline
// does not break the error's one line.
func TestParquetErrorsQuoteTheFilesColumnNames(t *testing.T) {
	t.Parallel()
	schema := parquet.NewSchema("x", parquet.Group{"ti\ntle": parquet.String()})
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[any](&buf, schema)
	if _, err := w.WriteRows([]parquet.Row{{parquet.ByteArrayValue([]byte("a")).Level(0, 0, 0)}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p := write(t, t.TempDir(), "odd.parquet", buf.String())
	_, err := LoadDocs(p)
	var de *DataError
	if !errors.As(err, &de) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), `"ti\ntle"`) {
		t.Fatalf("%q: want a one-line DataError quoting the column", err)
	}
}

// A schema corrupt so that a list's group reads as a leaf (one byte of
// the DuckDB fixture changed, found by mutation) is a DataError, not a
// panic.
func TestParquetCorruptSchemaIsADataError(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("testdata", "mmlu_duckdb.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if b[929] != 0 {
		t.Fatalf("byte 929 is %d: the fixture changed", b[929])
	}
	b[929] = 4
	_, err = ParseMMLU("m.parquet", bytes.NewReader(b))
	var de *DataError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), `"choices"`) {
		t.Fatalf("%v: want a DataError naming the column", err)
	}
}

// TIGER-Lab/MMLU-Pro's data folder (test-*.parquet, validation-*.parquet)
// looks like the Hub's MMLU layout, but its questions have up to 10
// options: a DataError saying so, not a score.
func TestMMLUProIsNotMMLU(t *testing.T) {
	t.Parallel()
	type proRow struct {
		QuestionID  int64    `parquet:"question_id"`
		Question    string   `parquet:"question"`
		Options     []string `parquet:"options,list"`
		Answer      string   `parquet:"answer"`
		AnswerIndex int64    `parquet:"answer_index"`
		Category    string   `parquet:"category"`
	}
	root := t.TempDir()
	rows := []proRow{{1, "q", []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}, "J", 9, "math"}}
	parquettest.Write(t, filepath.Join(root, "data"), "test-00000-of-00001.parquet", rows, 10)
	parquettest.Write(t, filepath.Join(root, "data"), "validation-00000-of-00001.parquet", rows, 10)
	_, err := LoadMMLU(root)
	var de *DataError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "MMLU-Pro") || !strings.Contains(err.Error(), "test-00000-of-00001.parquet") {
		t.Fatalf("%v: want a DataError naming the file and MMLU-Pro", err)
	}
}
