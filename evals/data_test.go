package evals

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const wikiRaw = " \n = Alpha = \n \n Alpha is a well @-@ known test , with ( parens ) . \n \n = = History = = \n \n It began in 1 @,@ 000 . \n \n = Beta = \n \n Beta is \" quoted \" . \n"

func TestDocumentLoadersReadTheirLayouts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	t.Run("the wikitext raw layout is one document per title, detokenized as lm-eval does", func(t *testing.T) {
		t.Parallel()
		d, err := LoadDocs(write(t, dir, "wiki.test.raw", wikiRaw))
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Docs) != 2 {
			t.Fatalf("%d documents: %+v", len(d.Docs), d.Docs)
		}
		a := d.Docs[0]
		for _, want := range []string{"= Alpha =\n", "well-known test, with (parens).", "== History ==", "1,000."} {
			if !strings.Contains(a.Text, want) {
				t.Errorf("%q lacks %q", a.Text, want)
			}
		}
		orig := wikiRaw[strings.Index(wikiRaw, " = Alpha"):strings.Index(wikiRaw, " = Beta")]
		if a.Bytes != len(orig) || a.Words != lmevalWords(orig) || !strings.HasSuffix(a.Source, ":2") {
			t.Errorf("bytes %d words %d source %s: counts must come from the original page", a.Bytes, a.Words, a.Source)
		}
		if !strings.Contains(d.Docs[1].Text, `"quoted"`) {
			t.Errorf("%q", d.Docs[1].Text)
		}
	})
	t.Run("JSONL holds one document per line, empty ones skipped", func(t *testing.T) {
		t.Parallel()
		d, err := LoadDocs(write(t, dir, "docs.jsonl", `{"text": "first doc"}`+"\n\n"+`{"text": ""}`+"\n"+`{"page": "second", "id": 3}`+"\n"))
		if err != nil || len(d.Docs) != 2 || d.Docs[1].Text != "second" || !strings.HasSuffix(d.Docs[1].Source, ":4") {
			t.Fatalf("%+v %v", d, err)
		}
	})
	t.Run("a plain text file is one document; a folder is each of its files", func(t *testing.T) {
		t.Parallel()
		sub := filepath.Join(dir, "folder")
		write(t, sub, "a.txt", "Plain text.\nTwo lines.\n")
		write(t, sub, "b.jsonl", `{"text":"x y"}`)
		write(t, sub, ".hidden", "ignored")
		d, err := LoadDocs(sub)
		if err != nil || len(d.Docs) != 2 || d.Docs[0].Words != 5 || d.Docs[0].Bytes != 23 {
			t.Fatalf("%+v %v", d, err)
		}
	})
}

func TestMMLULoadersReadTheirLayouts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	t.Run("the original folder", func(t *testing.T) {
		t.Parallel()
		set, err := LoadMMLU("data/mmlu")
		if err != nil || len(set.Subjects) != 4 || set.Len() != 16 {
			t.Fatalf("%+v %v", set, err)
		}
		s := set.Subjects[0]
		if s.Name != "astronomy" || len(s.Shots) != 5 || s.Shots[0].Answer != 1 || s.Test[0].Choices[2] != "Saturn" {
			t.Errorf("%+v", s)
		}
	})
	t.Run("the original folder inside data/, quoted fields spanning lines, more than five dev rows", func(t *testing.T) {
		t.Parallel()
		root := filepath.Join(dir, "tar")
		write(t, root, "data/test/x_test.csv", "\"two\nlines\",a,b,c,d,C\n")
		write(t, root, "data/dev/x_dev.csv", strings.Repeat("q,a,b,c,d,A\n", 7))
		set, err := LoadMMLU(root)
		if err != nil || set.Subjects[0].Test[0].Question != "two\nlines" || len(set.Subjects[0].Shots) != 5 {
			t.Fatalf("%+v %v", set, err)
		}
	})
	t.Run("JSONL with subjects, splits and either kind of answer", func(t *testing.T) {
		t.Parallel()
		var b strings.Builder
		for i := range 7 {
			b.WriteString(`{"question":"q` + string(rune('0'+i)) + `","choices":["a","b","c","d"],"answer":2,"subject":"anatomy"}` + "\n")
		}
		b.WriteString(`{"question":"dev","choices":["a","b","c","d"],"answer":"D","subject":"virology","split":"dev"}` + "\n")
		b.WriteString(`{"question":"t","choices":["a","b","c","d"],"answer":"b","subject":"virology"}` + "\n")
		set, err := LoadMMLU(write(t, dir, "m.jsonl", b.String()))
		if err != nil || len(set.Subjects) != 2 {
			t.Fatalf("%+v %v", set, err)
		}
		an, vi := set.Subjects[0], set.Subjects[1]
		// Without dev rows, the first five are the shots and are not scored.
		if len(an.Shots) != 5 || len(an.Test) != 2 || an.Test[0].Question != "q5" || an.Test[0].Answer != 2 {
			t.Errorf("anatomy %+v", an)
		}
		if len(vi.Shots) != 1 || vi.Shots[0].Answer != 3 || len(vi.Test) != 1 || vi.Test[0].Answer != 1 {
			t.Errorf("virology %+v", vi)
		}
	})
	t.Run("CSV with a header, columns A-D or a choices list", func(t *testing.T) {
		t.Parallel()
		set, err := LoadMMLU(write(t, dir, "m.csv", "Question,A,B,C,D,Answer,Subject,split\nq,a,b,c,d,A,nutrition,dev\nr,a,b,c,d,D,nutrition,test\n"))
		if err != nil || set.Subjects[0].Name != "nutrition" || set.Subjects[0].Test[0].Answer != 3 {
			t.Fatalf("%+v %v", set, err)
		}
		set, err = LoadMMLU(write(t, dir, "c.csv", "question,choices,answer\nq,\"[\"\"1\"\",\"\"2\"\",\"\"3\"\",\"\"4\"\"]\",1\n"+strings.Repeat("x,\"[\"\"a\"\",\"\"b\"\",\"\"c\"\",\"\"d\"\"]\",B\n", 5)))
		if err != nil || set.Subjects[0].Name != "c" || set.Len() != 1 || set.Subjects[0].Shots[0].Choices[3] != "4" {
			t.Fatalf("%+v %v", set, err)
		}
	})
}

func TestTriviaQALoadersReadTheirLayouts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	t.Run("the original JSON, read only as far as asked", func(t *testing.T) {
		t.Parallel()
		set, err := LoadTriviaQA("data/triviaqa.json", 7)
		if err != nil || set.Len() != 7 {
			t.Fatalf("%+v %v", set, err)
		}
		it := set.Items[1]
		if it.Question != "What is the largest ocean on Earth?" || it.Answer != "Pacific Ocean" ||
			!strings.Contains(strings.Join(it.Aliases, "|"), "The Pacific") || !strings.HasSuffix(it.Source, ":21") {
			t.Errorf("%+v", it)
		}
	})
	t.Run("JSONL with the answer as an object, a string or a list", func(t *testing.T) {
		t.Parallel()
		set, err := LoadTriviaQA(write(t, dir, "t.jsonl", `{"question":"a?","answer":{"aliases":["X","Y"],"normalized_aliases":["x","y"],"value":"X"}}`+"\n"+
			`{"question":"b?","answer":"Z"}`+"\n"+`{"Question":"c?","Answer":["P","Q"]}`+"\n"), 0)
		if err != nil || set.Len() != 3 || strings.Join(set.Items[0].Aliases, ",") != "X,Y,x,y" || set.Items[1].Answer != "Z" || set.Items[2].Answer != "P" {
			t.Fatalf("%+v %v", set, err)
		}
	})
}

func TestMalformedDataSetsNameTheFileAndLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := func(p string) error { _, err := LoadDocs(p); return err }
	mmlu := func(p string) error { _, err := LoadMMLU(p); return err }
	trivia := func(p string) error { _, err := LoadTriviaQA(p, 0); return err }
	for _, tc := range []struct {
		name    string
		load    func(string) error
		file    string
		content string
		line    int
		says    string
	}{
		{"a JSONL line that is not JSON", docs, "d.jsonl", "{\"text\":\"ok\"}\n{oops\n", 2, "not a JSON object"},
		{"a JSONL line without text", docs, "d2.jsonl", "{\"text\":\"ok\"}\n\n{\"body\":\"x\"}\n", 3, `"text"`},
		{"text before the first wikitext title", docs, "w.raw", " \n stray words\n = T = \n", 2, "heading"},
		{"invalid UTF-8", docs, "p.txt", "fine\nbad \xff byte\n", 2, "UTF-8"},
		{"an empty text file", docs, "e.txt", " \n", 0, "empty"},
		{"an MMLU row of five columns", mmlu, "mm/test/s_test.csv", "q,a,b,c,d,A\nq,a,b,c,d\n", 2, "5 columns"},
		{"an MMLU answer that is no letter", mmlu, "mm2/test/s_test.csv", "q,a,b,c,d,E\n", 1, `"E"`},
		{"an MMLU quote left open", mmlu, "mm3/test/s_test.csv", "q,a,b,c,d,A\n\"open,a,b,c,d,A\n", 2, "quote"},
		{"an MMLU JSONL row with three choices", mmlu, "m.jsonl", `{"question":"q","choices":["a","b","c"],"answer":0}`, 1, "choices"},
		{"an MMLU CSV without a header", mmlu, "m.csv", "q,a,b,c,d,A\n", 1, "header"},
		{"a TriviaQA item without an answer", trivia, "t.json", "{\"Data\": [\n {\"Question\": \"a?\", \"Answer\": {\"Aliases\": [\"x\"]}},\n {\"Question\": \"b?\"}\n]}", 3, "no answer"},
		{"a TriviaQA file cut short", trivia, "t2.json", "{\"Data\": [\n {\"Question\": \"a?\",\n", 2, "item 1"},
		{"a TriviaQA file that is not the layout", trivia, "t3.json", "[1, 2]", 1, "Data"},
		{"a TriviaQA JSONL line that is not JSON", trivia, "t.jsonl", "{\"question\":\"q\",\"answer\":\"a\"}\nnope\n", 2, "not a question"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := write(t, dir, tc.file, tc.content)
			if strings.Contains(tc.file, "/test/") {
				write(t, dir, strings.Replace(strings.Replace(tc.file, "/test/", "/dev/", 1), "_test", "_dev", 1), "q,a,b,c,d,A\n")
				p = filepath.Join(dir, strings.Split(tc.file, "/")[0])
			}
			err := tc.load(p)
			var de *DataError
			if !errors.As(err, &de) {
				t.Fatalf("%v: want a DataError", err)
			}
			want := filepath.Join(dir, tc.file)
			if de.File != want || de.Line != tc.line || !strings.Contains(de.Msg, tc.says) {
				t.Fatalf("%v: want %s:%d saying %q", err, want, tc.line, tc.says)
			}
		})
	}
	t.Run("a folder given for TriviaQA says it is a folder", func(t *testing.T) {
		t.Parallel()
		sub := filepath.Join(dir, "trivia-folder")
		write(t, sub, "t.json", `{"Data": []}`)
		err := trivia(sub)
		var de *DataError
		if !errors.As(err, &de) || de.File != sub || de.Line != 0 || !strings.Contains(de.Msg, "a folder") {
			t.Fatalf("%v: want %s saying it is a folder", err, sub)
		}
	})
	for _, load := range []func(string) error{docs, mmlu, trivia} {
		var de *DataError
		if err := load(filepath.Join(dir, "missing")); !errors.As(err, &de) || de.File != filepath.Join(dir, "missing") {
			t.Errorf("a missing file: %v", err)
		}
	}
}

func TestLMEvalCountsWordsAsReSplit(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]int{"": 1, "a": 1, "a b": 2, " a b ": 4, "a\n\n b": 2, "a\u00a0b": 2} {
		if got := lmevalWords(s); got != want {
			t.Errorf("%q: %d words, want %d", s, got, want)
		}
	}
}

func TestTheSamplesLoad(t *testing.T) {
	t.Parallel()
	if d := SampleDocs(); d.Len() != 4 || d.Origin() != SampleOrigin {
		t.Errorf("docs %d from %s", d.Len(), d.Origin())
	}
	if s := SampleMMLU(); s.Len() != 16 || len(s.Subjects) != 4 {
		t.Errorf("mmlu %d", s.Len())
	}
	cats := map[string]bool{}
	for _, s := range SampleMMLU().Subjects {
		cats[Category(s.Name)] = true
	}
	if len(cats) != 4 {
		t.Errorf("the sample subjects cover %v, want every category", cats)
	}
	if s := SampleTriviaQA(); s.Len() != 25 {
		t.Errorf("triviaqa %d", s.Len())
	}
}

func TestLoadDocsRefusesADeviceThatWouldNeverEnd(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	_, err := LoadDocs("/dev/zero")
	var de *DataError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("LoadDocs(/dev/zero) = %v, want a data error saying it is not a regular file", err)
	}
}
