package model

import (
	"fmt"

	"github.com/glmbench/glmbench/kernels"
)

// KVCache is the paged KV pool: for every layer (the main ones and MTP) and
// every token slot, the MLA latent c (kv_lora_rank) beside the shared rope
// key (qk_rope_head_dim) in one row, and the indexer key (index_head_dim)
// in a separate array stored transposed, one row per feature: the indexer
// scores every visible key, and q·K over a run of slots is then
// index_head_dim vector multiply-adds along the run instead of a horizontal
// sum per key. Slots come in pages of PageSize; a sequence owns
// pages and its position t lives in slot pages[t/PageSize]·PageSize + t%PageSize.
type KVCache struct {
	Width    int // MLA floats per slot per layer: latent + rope key
	IndexDim int // indexer floats per slot per layer
	PageSize int
	Pages    int

	mla  [][]float32 // [layer][slots·Width]
	idx  [][]float32 // [layer][IndexDim·slots], feature-major
	free []int32     // free page ids, a stack
}

// NewKVCache allocates a pool of pages·pageSize token slots for cfg's main
// layers and its MTP layer.
func NewKVCache(cfg *Config, pages, pageSize int) *KVCache {
	return newKVCache(cfg, pages, pageSize, cfg.Layers())
}

// NewKVCacheNoMTP allocates a pool for the main layers only, for serving
// without speculative decoding (the MTP layer's cache would go unused).
func NewKVCacheNoMTP(cfg *Config, pages, pageSize int) *KVCache {
	return newKVCache(cfg, pages, pageSize, cfg.NumHiddenLayers)
}

// NewKVPages is a pool of pages with no cached values at all: the page
// bookkeeping a simulated executor needs, without the memory.
func NewKVPages(pages, pageSize int) *KVCache {
	return newKVCache(&Config{}, pages, pageSize, 0)
}

func newKVCache(cfg *Config, pages, pageSize, layers int) *KVCache {
	if pages <= 0 || pageSize <= 0 {
		panic(fmt.Sprintf("model: NewKVCache(%d pages of %d)", pages, pageSize))
	}
	kv := &KVCache{Width: cfg.KVLoraRank + cfg.QKRopeHeadDim, IndexDim: cfg.IndexHeadDim, PageSize: pageSize, Pages: pages}
	for range layers {
		kv.mla = append(kv.mla, make([]float32, pages*pageSize*kv.Width))
		kv.idx = append(kv.idx, make([]float32, pages*pageSize*kv.IndexDim))
	}
	kv.free = make([]int32, pages)
	for i := range kv.free {
		kv.free[i] = int32(pages - 1 - i) // pop order 0, 1, 2, …
	}
	return kv
}

// Layers is the number of layers the pool caches.
func (kv *KVCache) Layers() int { return len(kv.mla) }

// Slots is the pool's size in tokens.
func (kv *KVCache) Slots() int { return kv.Pages * kv.PageSize }

// FreePages is the number of pages not owned by any sequence.
func (kv *KVCache) FreePages() int { return len(kv.free) }

// Alloc takes n pages, or returns false (taking none) if fewer are free.
func (kv *KVCache) Alloc(n int) ([]int32, bool) {
	if n > len(kv.free) {
		return nil, false
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = kv.free[len(kv.free)-1-i]
	}
	kv.free = kv.free[:len(kv.free)-n]
	return out, true
}

// Release returns pages to the pool.
func (kv *KVCache) Release(pages []int32) { kv.free = append(kv.free, pages...) }

// Layer is layer l's MLA pool as a Slots × Width matrix: [c | k_rope] per slot.
func (kv *KVCache) Layer(l int) kernels.Mat {
	return kernels.NewMat(kv.mla[l], kv.Slots(), kv.Width)
}

// IndexKeys is layer l's indexer keys, transposed: an IndexDim × Slots
// matrix whose column s is slot s's key.
func (kv *KVCache) IndexKeys(l int) kernels.Mat {
	return kernels.NewMat(kv.idx[l], kv.IndexDim, kv.Slots())
}

// SlotsFor appends to dst the slots of positions [from, to) of a sequence
// that owns pages.
func (kv *KVCache) SlotsFor(dst []int32, pages []int32, from, to int) []int32 {
	for t := from; t < to; t++ {
		dst = append(dst, pages[t/kv.PageSize]*int32(kv.PageSize)+int32(t%kv.PageSize))
	}
	return dst
}
