package sched

import (
	"slices"
)

// RadixCache is the prefix cache over the paged KV pool, SGLang's radix tree:
// finished requests leave their pages keyed by their tokens, and a new
// request whose prompt starts with a cached prefix reuses those pages
// instead of computing them again. Keys are page-aligned (SGLang: "Since
// match_prefix can only match page-aligned keys, we also store page aligned
// keys in insert"). Running requests lock the nodes they use; eviction frees
// the least recently used unlocked leaves.
type RadixCache struct {
	pageSize  int
	root      *radixNode
	clock     uint64
	evictable int // pages in unlocked nodes
	total     int // pages held by the tree
}

type radixNode struct {
	key      []int32 // tokens, a whole number of pages
	pages    []int32 // one per pageSize tokens of key
	children map[string]*radixNode
	parent   *radixNode
	lockRef  int
	lastUse  uint64
}

// NewRadixCache returns an empty cache over pages of pageSize tokens.
func NewRadixCache(pageSize int) *RadixCache {
	return &RadixCache{pageSize: pageSize, root: &radixNode{children: map[string]*radixNode{}, lockRef: 1}}
}

// childKey names a child by its first page of tokens.
func (c *RadixCache) childKey(tokens []int32) string {
	b := make([]byte, 0, 4*c.pageSize)
	for _, t := range tokens[:c.pageSize] {
		b = append(b, byte(t), byte(t>>8), byte(t>>16), byte(t>>24))
	}
	return string(b)
}

// Match returns the pages of the longest cached page-aligned prefix of
// tokens, its length in tokens, and the node it ends at (to Lock while the
// pages are in use).
func (c *RadixCache) Match(tokens []int32) (pages []int32, n int, last *radixNode) {
	c.clock++
	node := c.root
	tokens = tokens[:len(tokens)/c.pageSize*c.pageSize]
	for len(tokens) > 0 {
		child, ok := node.children[c.childKey(tokens)]
		if !ok {
			break
		}
		child.lastUse = c.clock
		k := c.commonPages(child.key, tokens)
		if k < len(child.key) {
			child = c.split(child, k)
		}
		pages = append(pages, child.pages...)
		n += len(child.key)
		tokens = tokens[len(child.key):]
		node = child
	}
	return pages, n, node
}

// commonPages is the length of the common prefix of a and b in whole pages.
func (c *RadixCache) commonPages(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n / c.pageSize * c.pageSize
}

// split cuts node after k tokens and returns the new upper part.
func (c *RadixCache) split(node *radixNode, k int) *radixNode {
	upper := &radixNode{
		key: node.key[:k:k], pages: node.pages[: k/c.pageSize : k/c.pageSize],
		children: map[string]*radixNode{}, parent: node.parent, lockRef: node.lockRef, lastUse: node.lastUse,
	}
	node.parent.children[c.childKey(upper.key)] = upper
	node.key, node.pages = node.key[k:], node.pages[k/c.pageSize:]
	node.parent = upper
	upper.children[c.childKey(node.key)] = node
	return upper
}

// Insert adds the pages of tokens (page-aligned: len(tokens) is a multiple of
// the page size and pages has one page per page of tokens). Pages whose
// tokens were already cached stay the tree's; the caller's copies of them
// are returned as duplicates for it to free.
func (c *RadixCache) Insert(tokens []int32, pages []int32) (dup []int32) {
	c.clock++
	node := c.root
	for len(tokens) > 0 {
		child, ok := node.children[c.childKey(tokens)]
		if !ok {
			n := &radixNode{key: slices.Clone(tokens), pages: slices.Clone(pages), children: map[string]*radixNode{}, parent: node, lastUse: c.clock}
			node.children[c.childKey(tokens)] = n
			c.total += len(pages)
			c.evictable += len(pages)
			return dup
		}
		child.lastUse = c.clock
		k := c.commonPages(child.key, tokens)
		if k < len(child.key) {
			child = c.split(child, k)
		}
		// These tokens were cached already: the tree's pages win.
		for i, p := range pages[:k/c.pageSize] {
			if child.pages[i] != p {
				dup = append(dup, p)
			}
		}
		tokens, pages = tokens[k:], pages[k/c.pageSize:]
		node = child
	}
	return dup
}

// Lock marks node and its ancestors as in use, so eviction keeps them.
func (c *RadixCache) Lock(node *radixNode) {
	for n := node; n != c.root; n = n.parent {
		if n.lockRef == 0 {
			c.evictable -= len(n.pages)
		}
		n.lockRef++
	}
}

// Unlock undoes Lock.
func (c *RadixCache) Unlock(node *radixNode) {
	for n := node; n != c.root; n = n.parent {
		n.lockRef--
		if n.lockRef == 0 {
			c.evictable += len(n.pages)
		}
	}
}

// Evictable is the number of pages eviction could free now.
func (c *RadixCache) Evictable() int { return c.evictable }

// Pages is the number of pages the tree holds.
func (c *RadixCache) Pages() int { return c.total }

// Evict frees at least want pages (if that many are evictable), least
// recently used leaves first, and returns them.
func (c *RadixCache) Evict(want int) []int32 {
	var freed []int32
	for len(freed) < want {
		leaf := c.lruLeaf()
		if leaf == nil {
			break
		}
		freed = append(freed, leaf.pages...)
		c.total -= len(leaf.pages)
		c.evictable -= len(leaf.pages)
		delete(leaf.parent.children, c.childKey(leaf.key))
	}
	return freed
}

// lruLeaf finds the least recently used unlocked leaf. A linear walk: the
// trees here hold at most thousands of nodes and eviction is rare.
func (c *RadixCache) lruLeaf() *radixNode {
	var best *radixNode
	var walk func(n *radixNode)
	walk = func(n *radixNode) {
		if len(n.children) == 0 && n != c.root && n.lockRef == 0 {
			// Ties (leaves last used in the same step) go to the lowest
			// first page, not to the children map's order, so eviction,
			// and the slots later requests get, repeat from run to run.
			if best == nil || n.lastUse < best.lastUse || n.lastUse == best.lastUse && len(n.pages) > 0 && len(best.pages) > 0 && n.pages[0] < best.pages[0] {
				best = n
			}
		}
		for _, ch := range n.children {
			walk(ch)
		}
	}
	walk(c.root)
	return best
}
