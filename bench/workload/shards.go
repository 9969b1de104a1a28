package workload

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/glmbench/glmbench/internal/badinput"
)

// A data set may be a folder of parquet shards, as huggingface-cli download
// lays out a Hub data set (data/train-00000-of-00006-….parquet, …): its
// .parquet files, in name order (which is shard order), are read as one
// set, each only as far as the phase still needs, so a later shard is not
// opened once enough items are read. A pattern (DIR/train-*.parquet) is
// read as a folder of the files it matches. The files must all be of one
// split, the part of a name before its first "-" (or "."): train,
// test_sft, ….

// isDir reports whether path is a folder on disk (an embedded sample is
// not).
func isDir(path string) bool {
	if strings.HasPrefix(path, embeddedPrefix) {
		return false
	}
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// shardSplit is the split a shard's file name names: the part before its
// first "-" or ".".
func shardSplit(name string) string {
	if i := strings.IndexAny(name, "-."); i > 0 {
		return name[:i]
	}
	return name
}

// parquetShards is the .parquet files of the folder dir, in name order,
// refusing a folder with none or with files of several splits.
func parquetShards(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, badinput.Errorf("%s: %s", dir, err)
	}
	var shards, others []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".parquet") {
			shards = append(shards, filepath.Join(dir, e.Name()))
			continue
		}
		name := e.Name()
		if e.IsDir() {
			name += string(filepath.Separator)
		}
		others = append(others, name)
	}
	if len(shards) == 0 {
		return nil, badinput.Errorf("%s: a folder with no .parquet file (a folder data set is parquet shards; it holds %s)", dir, someNames(others))
	}
	return oneSplit(dir, shards)
}

// isGlob reports whether path is a pattern (DIR/train-*.parquet) rather
// than a file: it has *, ? or [ and no file has its name.
func isGlob(path string) bool {
	if strings.HasPrefix(path, embeddedPrefix) || !strings.ContainsAny(path, "*?[") {
		return false
	}
	_, err := os.Stat(path)
	return err != nil
}

// globShards is the .parquet files the pattern matches, in name order,
// refusing a pattern that matches none or files of several splits.
func globShards(pattern string) ([]string, error) {
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return nil, badinput.Errorf("%s: %s", pattern, err)
	}
	var shards []string
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && !st.IsDir() && strings.HasSuffix(m, ".parquet") {
			shards = append(shards, m)
		}
	}
	if len(shards) == 0 {
		return nil, badinput.Errorf("%s: no .parquet file matches (it matches %s)", pattern, someNames(matches))
	}
	return oneSplit(pattern, shards)
}

// oneSplit is shards, the files named by path (a folder or a pattern), in
// name order, refusing files of several splits.
func oneSplit(path string, shards []string) ([]string, error) {
	slices.Sort(shards)
	var splits []string
	for _, s := range shards {
		if sp := shardSplit(filepath.Base(s)); !slices.Contains(splits, sp) {
			splits = append(splits, sp)
		}
	}
	if len(splits) > 1 {
		slices.Sort(splits)
		first := filepath.Join(filepath.Dir(shards[0]), splits[0]+"-*.parquet")
		return nil, badinput.Errorf("%s: parquet files of %d splits (%s): give one, e.g. --dataset '%s'", path, len(splits), strings.Join(splits, ", "), first)
	}
	return shards, nil
}

// someNames says a folder's entries: none, or the first few and how many
// more.
func someNames(names []string) string {
	const few = 4
	switch {
	case len(names) == 0:
		return "nothing"
	case len(names) <= few:
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:few], ", ") + ", … (" + strconv.Itoa(len(names)) + " in all)"
}

// loadParquetDir reads the folder dir's parquet shards (or those the
// pattern dir matches, as isGlob says) as one data set, each as
// loadParquet reads a file, until need usable items (0: all of every
// shard); a shard is opened only while items are still needed. An item's
// Line is its row in its shard, File the shard's path.
func loadParquetDir(dir string, need int, needAnswer bool) (*loaded, error) {
	var shards []string
	var err error
	if isGlob(dir) {
		shards, err = globShards(dir)
	} else {
		shards, err = parquetShards(dir)
	}
	if err != nil {
		return nil, err
	}
	out := &loaded{}
	for _, s := range shards {
		left := 0
		if need > 0 {
			if left = need - len(out.items); left == 0 {
				break
			}
		}
		got, err := loadShard(s, left, needAnswer)
		if err != nil {
			return nil, err
		}
		for _, it := range got.items {
			it.File = s
			out.items = append(out.items, it)
		}
		for why, n := range got.skipped {
			out.skip(why)
			out.skipped[why] += n - 1
		}
	}
	return out, nil
}

// loadShard reads one shard of a folder data set.
func loadShard(path string, need int, needAnswer bool) (*loaded, error) {
	rc, err := OpenData(path, "")
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return loadParquet(rc, path, need, needAnswer)
}
