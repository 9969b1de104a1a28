package sched

import (
	"slices"
	"testing"
)

func toks(s string) []int32 {
	out := make([]int32, len(s))
	for i, c := range s {
		out[i] = int32(c)
	}
	return out
}

func TestRadixMatchesThePageAlignedPrefix(t *testing.T) {
	t.Parallel()
	c := NewRadixCache(2)
	if dup := c.Insert(toks("abcdef"), []int32{10, 11, 12}); dup != nil {
		t.Fatalf("dup %v", dup)
	}
	pages, n, _ := c.Match(toks("abcdxy"))
	if n != 4 || !slices.Equal(pages, []int32{10, 11}) {
		t.Fatalf("matched %d tokens, pages %v", n, pages)
	}
	// "abc" ends mid-page: only whole pages match.
	if _, n, _ := c.Match(toks("abcz")); n != 2 {
		t.Fatalf("matched %d, want 2", n)
	}
	// Inserting a sibling after the split keeps both branches.
	if dup := c.Insert(toks("abcdxy"), []int32{20, 21, 22}); !slices.Equal(dup, []int32{20, 21}) {
		t.Fatalf("duplicate pages %v, want [20 21]", dup)
	}
	if pages, n, _ := c.Match(toks("abcdxyzz")); n != 6 || !slices.Equal(pages, []int32{10, 11, 22}) {
		t.Fatalf("matched %d, pages %v", n, pages)
	}
	if c.Pages() != 4 || c.Evictable() != 4 {
		t.Fatalf("pages %d evictable %d", c.Pages(), c.Evictable())
	}
}

func TestRadixEvictsLeastRecentlyUsedUnlockedLeaves(t *testing.T) {
	t.Parallel()
	c := NewRadixCache(1)
	c.Insert(toks("ab"), []int32{1, 2})
	c.Insert(toks("ac"), []int32{1, 3})
	c.Insert(toks("xy"), []int32{4, 5})
	_, _, node := c.Match(toks("ab")) // "ab" is now the most recent; lock it
	c.Lock(node)
	if c.Evictable() != 3 { // c, x, y; a and b are locked
		t.Fatalf("evictable %d", c.Evictable())
	}
	freed := c.Evict(2)
	slices.Sort(freed)
	if !slices.Equal(freed, []int32{3, 4, 5}) && !slices.Equal(freed, []int32{3}) && len(freed) < 2 {
		t.Fatalf("freed %v", freed)
	}
	for _, p := range freed {
		if p == 1 || p == 2 {
			t.Fatalf("freed a locked page: %v", freed)
		}
	}
	c.Unlock(node)
	all := c.Evict(100)
	if c.Pages() != 0 || c.Evictable() != 0 || len(all)+len(freed) != 5 {
		t.Fatalf("after full eviction: pages %d evictable %d freed %v + %v", c.Pages(), c.Evictable(), freed, all)
	}
}

// Leaves last used at the same moment are evicted lowest first page first,
// not in the children map's order (Go randomizes it), so which pages go
// back, and which slots later requests get, repeats from run to run.
func TestRadixEvictionTiesAreBrokenByPageNotByMapOrder(t *testing.T) {
	t.Parallel()
	for trial := 0; trial < 50; trial++ {
		c := NewRadixCache(1)
		c.Insert(toks("p"), []int32{9})
		c.Insert(toks("q"), []int32{3})
		c.Insert(toks("r"), []int32{6})
		for _, n := range c.root.children {
			n.lastUse = 7 // one step touched all three
		}
		if freed := c.Evict(1); !slices.Equal(freed, []int32{3}) {
			t.Fatalf("trial %d: evicted %v, want [3]", trial, freed)
		}
	}
}
