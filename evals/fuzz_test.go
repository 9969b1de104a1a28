package evals

import (
	"bytes"
	"errors"
	"testing"
)

// checkDataErr fails unless err is nil or a DataError that names file.
func checkDataErr(t *testing.T, err error, file string) {
	t.Helper()
	if err == nil {
		return
	}
	var de *DataError
	if !errors.As(err, &de) || de.File != file || de.Line < 0 {
		t.Fatalf("error %v (%T) does not name %s", err, err, file)
	}
}

func FuzzParseDocs(f *testing.F) {
	f.Add(".jsonl", []byte(`{"text": "a doc"}`+"\n"+`{"page": "b"}`))
	f.Add(".raw", []byte(wikiRaw))
	f.Add(".txt", []byte("plain\ntext\n"))
	f.Add(".raw", []byte(" \n = T = \n\xff\n"))
	f.Fuzz(func(t *testing.T, ext string, b []byte) {
		name := "f" + ext
		docs, err := ParseDocs(name, bytes.NewReader(b))
		checkDataErr(t, err, name)
		if err == nil && len(docs) == 0 {
			t.Fatal("no error and no document")
		}
		for _, d := range docs {
			if d.Text == "" || d.Bytes <= 0 || d.Words < 1 {
				t.Fatalf("document %+v", d)
			}
		}
	})
}

func FuzzParseMMLUCSV(f *testing.F) {
	f.Add([]byte("q,a,b,c,d,A\n\"multi\nline\",a,b,c,d,d\n"))
	f.Add([]byte("q,a,b,c,d\n"))
	f.Add([]byte("\"open,a,b\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		qs, err := ParseMMLUCSV("x_test.csv", bytes.NewReader(b))
		checkDataErr(t, err, "x_test.csv")
		for _, q := range qs {
			if q.Answer < 0 || q.Answer > 3 {
				t.Fatalf("answer %d", q.Answer)
			}
		}
	})
}

func FuzzParseMMLU(f *testing.F) {
	f.Add(".jsonl", []byte(`{"question":"q","choices":["a","b","c","d"],"answer":1,"subject":"s","split":"dev"}`+"\n"+`{"question":"r","choices":["a","b","c","d"],"answer":"C","subject":"s"}`))
	f.Add(".csv", []byte("question,A,B,C,D,answer\nq,a,b,c,d,B\n"))
	f.Add(".csv", []byte("question,choices,answer,subject\nq,\"[\"\"a\"\",\"\"b\"\",\"\"c\"\",\"\"d\"\"]\",0,s\n"))
	f.Fuzz(func(t *testing.T, ext string, b []byte) {
		name := "m" + ext
		set, err := ParseMMLU(name, bytes.NewReader(b))
		checkDataErr(t, err, name)
		if err != nil {
			return
		}
		if set.Len() == 0 {
			t.Fatal("no error and no test question")
		}
		for _, s := range set.Subjects {
			if s.Name == "" || len(s.Shots) > MMLUShots {
				t.Fatalf("subject %+v", s)
			}
			for _, q := range append(s.Shots, s.Test...) {
				if q.Answer < 0 || q.Answer > 3 {
					t.Fatalf("answer %d", q.Answer)
				}
			}
		}
	})
}

func FuzzParseTriviaQA(f *testing.F) {
	f.Add(".json", []byte(`{"Data": [{"Question": "q?", "Answer": {"Aliases": ["a"], "NormalizedAliases": ["a"]}}], "Version": 1.0}`), 0)
	f.Add(".json", []byte(`{"Data": [{"Question": "q?"}]}`), 0)
	f.Add(".jsonl", []byte(`{"question": "q", "answer": {"aliases": ["x"]}}`+"\n"+`{"question":"r","answer":"y"}`), 1)
	f.Fuzz(func(t *testing.T, ext string, b []byte, max int) {
		name := "t" + ext
		set, err := ParseTriviaQA(name, bytes.NewReader(b), max)
		checkDataErr(t, err, name)
		if err != nil {
			return
		}
		if set.Len() == 0 || (max > 0 && set.Len() > max) {
			t.Fatalf("%d items for max %d", set.Len(), max)
		}
		for _, it := range set.Items {
			if it.Question == "" || len(it.Aliases) == 0 || it.Answer != it.Aliases[0] {
				t.Fatalf("item %+v", it)
			}
		}
	})
}
