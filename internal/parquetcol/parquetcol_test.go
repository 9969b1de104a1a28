package parquetcol

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

type answerStruct struct {
	Aliases []string `parquet:"aliases,list"`
	Value   string   `parquet:"value"`
}

type apiRow struct {
	Question *string      `parquet:"question,optional"`
	Answer   answerStruct `parquet:"answer"`
	Label    int64        `parquet:"label"`
}

// The columns read back what parquet-go wrote: nulls as "", a struct's
// fields by path, integers, the first limit rows only, across row groups.
func TestColumnsReadBackWhatWasWritten(t *testing.T) {
	t.Parallel()
	q := func(s string) *string { return &s }
	rows := []apiRow{
		{q("one"), answerStruct{[]string{"a", "b"}, "A"}, 3},
		{nil, answerStruct{nil, "B"}, -1},
		{q("three"), answerStruct{[]string{"c"}, ""}, 7},
	}
	p, err := OpenFile(writeParquet(t, t.TempDir(), "api.parquet", rows, 2))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Rows() != 3 || p.Limit(0) != 3 || p.Limit(2) != 2 || p.Limit(9) != 3 {
		t.Fatalf("rows %d, limits %d %d %d", p.Rows(), p.Limit(0), p.Limit(2), p.Limit(9))
	}
	if got, err := p.Strings(0, false, "question"); err != nil || !reflect.DeepEqual(got, []string{"one", "", "three"}) {
		t.Errorf("question: %q, %v", got, err)
	}
	if got, err := p.Strings(2, true, "subject"); err != nil || !reflect.DeepEqual(got, []string{"", ""}) {
		t.Errorf("an optional column the file lacks: %q, %v", got, err)
	}
	if got, err := p.StringLists(0, "answer", "aliases"); err != nil || !reflect.DeepEqual(got, [][]string{{"a", "b"}, {}, {"c"}}) {
		t.Errorf("answer.aliases: %q, %v", got, err)
	}
	if got, err := p.Strings(2, false, "answer", "value"); err != nil || !reflect.DeepEqual(got, []string{"A", "B"}) {
		t.Errorf("answer.value, 2 rows: %q, %v", got, err)
	}
	c, err := p.Column("label")
	if err != nil || c.Kind != Int || c.List {
		t.Fatalf("label: %+v, %v", c, err)
	}
	var labels []int64
	if err := p.Values(c, 0, func(i int, vals []Value) error { labels = append(labels, vals[0].Num); return nil }); err != nil || !reflect.DeepEqual(labels, []int64{3, -1, 7}) {
		t.Errorf("label: %v, %v", labels, err)
	}
	if !p.HasField("answer", "aliases") || p.HasField("answer", "type") || !p.Has("Question") || p.Has("subject") {
		t.Error("Has and HasField do not see the schema")
	}
	if p.Columns() != "question, answer, label" {
		t.Errorf("columns %q", p.Columns())
	}
}

// Each error is an *Error of one line naming the file, and the column
// where there is one.
func TestErrorsNameTheFileAndColumn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := writeParquet(t, dir, "e.parquet", []apiRow{{nil, answerStruct{}, 1}}, 10)
	p, err := OpenFile(file)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, errMissing := OpenFile(filepath.Join(dir, "none.parquet"))
	_, errNoCol := p.Strings(0, false, "choices")
	_, errType := p.Strings(0, false, "label")
	_, errStruct := p.Column("answer")
	_, errField := p.Column("answer", "type")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errMissing, "none.parquet: no such file"},
		{errNoCol, file + `: no column "choices" (the file has: question, answer, label)`},
		{errType, file + `: column "label" is INT64, want strings`},
		{errStruct, file + `: column "answer" is a struct, want a value or a list`},
		{errField, file + `: column "answer" has no field "type"`},
	} {
		var pe *Error
		if !errors.As(tc.err, &pe) || !strings.HasSuffix(tc.err.Error(), tc.want) {
			t.Errorf("%v: want an *Error ending %q", tc.err, tc.want)
		}
	}
}
