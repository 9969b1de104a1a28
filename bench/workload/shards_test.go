package workload

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/internal/parquetcol/parquettest"
)

// shardName is the Hub's name of shard i of n of a split.
func shardName(split string, i, n int) string {
	return fmt.Sprintf("%s-%05d-of-%05d-0a1b2c3d.parquet", split, i, n)
}

// expandDir is the requests the --dataset phase reading dir sends, asking
// for need items (0: all).
func expandDir(t *testing.T, dir string, need int) ([]Request, error) {
	t.Helper()
	f, err := Open("", dir)
	if err != nil {
		t.Fatal(err)
	}
	f.Phases[0].Requests = need
	return f.Phases[0].Expand(1)
}

// The same rows as one parquet file and as three shards of a folder give
// the same items (a shard's row k+1 is the file's row 15*i+k+1, and the
// item names its shard) and the same skips, for needs met in each shard
// and for all rows.
func TestParquetShardsAreTheOneFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := sampleConversations(45)
	one := parquettest.Write(t, dir, "one/train.parquet", rows, 4)
	shards := filepath.Join(dir, "data")
	var names []string
	for i := range 3 {
		names = append(names, parquettest.Write(t, shards, shardName("train", i, 3), rows[15*i:15*(i+1)], 4))
	}
	used := map[string]bool{}
	for _, need := range []int{0, 1, 5, 11, 13, 20, 25, 45} {
		for _, needAnswer := range []bool{true, false} {
			want, err := loadFile(t, one, Parquet, need, needAnswer)
			if err != nil {
				t.Fatal(err)
			}
			got, err := loadParquetDir(shards, need, needAnswer)
			if err != nil {
				t.Fatalf("need %d: %v", need, err)
			}
			asOne := &loaded{skipped: got.skipped}
			for _, it := range got.items {
				k := indexOf(names, it.File)
				if k < 0 {
					t.Fatalf("need %d: item of %q, not a shard", need, it.File)
				}
				used[it.File] = true
				it.Line += 15 * k
				it.File = ""
				asOne.items = append(asOne.items, it)
			}
			if !reflect.DeepEqual(asOne, want) {
				t.Errorf("need %d, needAnswer %v:\n got %+v\nwant %+v", need, needAnswer, asOne, want)
			}
		}
	}
	// The premise: the needs cross from each shard to the next.
	if len(used) != 3 {
		t.Fatalf("items from %d shards, want all 3", len(used))
	}
	// A pattern matching the shards (and not the one file) reads the same
	// items as the folder.
	for _, need := range []int{0, 13} {
		want, _ := loadParquetDir(shards, need, true)
		got, err := loadParquetDir(filepath.Join(dir, "*", "train-*.parquet"), need, true)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("pattern, need %d: %+v, %v\nwant %+v", need, got, err, want)
		}
	}
	// Through --dataset, the folder's format is guessed as parquet.
	// Its requests carry their items' shards and rows.
	reqs, err := expandDir(t, shards, 20)
	want, _ := loadParquetDir(shards, 20, true)
	if err != nil || len(reqs) != 20 {
		t.Fatalf("--dataset %s: %d requests, %v", shards, len(reqs), err)
	}
	for i, r := range reqs {
		if it := want.items[i]; r.File != it.File || r.Line != it.Line {
			t.Errorf("request %d: %s row %d, want %s row %d", i, r.File, r.Line, it.File, it.Line)
		}
	}
}

func indexOf(names []string, s string) int {
	for i, n := range names {
		if n == s {
			return i
		}
	}
	return -1
}

// A need met inside the first shard never opens the second: with the
// second corrupt, a small need loads, and all rows fail naming the second
// shard. A bad row of a later shard is named by its shard and its row
// there.
func TestParquetShardsStopAtTheNeed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var rows []promptRow
	for i := range 12 {
		rows = append(rows, promptRow{Prompt: fmt.Sprintf("prompt %d", i)})
	}
	parquettest.Write(t, dir, shardName("train", 0, 3), rows, 4)
	bad := filepath.Join(dir, shardName("train", 1, 3))
	if err := os.WriteFile(bad, []byte("PAR1 not a parquet file PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	parquettest.Write(t, dir, shardName("train", 2, 3), rows, 4)
	for _, need := range []int{1, 7, 12} {
		got, err := loadParquetDir(dir, need, false)
		if err != nil || len(got.items) != need {
			t.Errorf("need %d: %v", need, err)
		}
	}
	for _, need := range []int{0, 13} {
		_, err := loadParquetDir(dir, need, false)
		if !badinput.Is(err) || !strings.HasPrefix(err.Error(), bad+": ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("need %d: %v, want one line of bad input naming %s", need, err, bad)
		}
	}

	dir = t.TempDir()
	parquettest.Write(t, dir, shardName("train", 0, 2), rows, 4)
	rows[2].Prompt = " "
	second := parquettest.Write(t, dir, shardName("train", 1, 2), rows, 4)
	if _, err := loadParquetDir(dir, 14, false); err != nil {
		t.Fatalf("need 14, before the bad row: %v", err)
	}
	want := second + ": row 3: empty prompt"
	if _, err := expandDir(t, dir, 0); err == nil || err.Error() != want {
		t.Errorf("all rows: %v, want %q", err, want)
	}
}

// A folder of several splits is refused in one line that names them and
// shows how to give one; so is a folder without parquet files (saying what
// it holds) and a folder given as another format.
func TestParquetFolderRefusals(t *testing.T) {
	t.Parallel()
	rows := []promptRow{{Prompt: "p"}}
	splits := t.TempDir()
	for _, s := range []string{"train_sft", "test_sft", "train_gen"} {
		parquettest.Write(t, splits, shardName(s, 0, 1), rows, 4)
	}
	parquettest.Write(t, splits, shardName("train_sft", 1, 2), rows, 4)
	_, err := expandDir(t, splits, 1)
	want := fmt.Sprintf("%s: parquet files of 3 splits (test_sft, train_gen, train_sft): give one, e.g. --dataset '%s'",
		splits, filepath.Join(splits, "test_sft-*.parquet"))
	if !badinput.Is(err) || err.Error() != want {
		t.Errorf("several splits: %v\nwant %s", err, want)
	}
	// So is a pattern matching several, and one matching none.
	_, err = expandDir(t, filepath.Join(splits, "t*.parquet"), 1)
	want = filepath.Join(splits, "t*.parquet") + want[len(splits):]
	if !badinput.Is(err) || err.Error() != want {
		t.Errorf("a pattern of several splits: %v\nwant %s", err, want)
	}
	none := filepath.Join(splits, "validation-*.parquet")
	if _, err = expandDir(t, none, 1); !badinput.Is(err) || err.Error() != none+": no .parquet file matches (it matches nothing)" {
		t.Errorf("a pattern matching nothing: %v", err)
	}

	empty := t.TempDir()
	_, err = expandDir(t, empty, 1)
	want = empty + ": a folder with no .parquet file (a folder data set is parquet shards; it holds nothing)"
	if !badinput.Is(err) || err.Error() != want {
		t.Errorf("empty folder: %v\nwant %s", err, want)
	}
	other := t.TempDir()
	for _, n := range []string{"a.json", "b.txt", "c.jsonl", "d.csv", "e.md"} {
		os.WriteFile(filepath.Join(other, n), []byte("x"), 0o644)
	}
	os.Mkdir(filepath.Join(other, "data"), 0o755)
	_, err = expandDir(t, other, 1)
	want = other + ": a folder with no .parquet file (a folder data set is parquet shards; it holds a.json, b.txt, c.jsonl, d.csv, … (6 in all))"
	if !badinput.Is(err) || err.Error() != want {
		t.Errorf("no parquet file: %v\nwant %s", err, want)
	}

	p := Phase{Name: "d", Kind: Dataset, Path: splits, Format: JSONL}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "a folder data set is parquet shards") {
		t.Errorf("a folder as jsonl: %v", err)
	}
}
