package schema

// HasHitRate says whether the server reported cached tokens for any of the
// phase's completed requests: when it did not, CachedTokens and HitRate are
// nil and the phase has no hit rate, which is not a hit rate of 0.
//
// Hits and Misses split the reporting requests by summary.IsHit: a hit has
// at least summary.HitPercent (10%) of its prompt cached, so the few chat
// template tokens every request shares do not make each one a hit.
func (c *CacheStats) HasHitRate() bool { return c.HitRate != nil }

// Within reports whether the drift's size stayed within its tolerance:
// AbsP99 ≤ Tolerance.
func (d *Drift) Within() bool { return d.AbsP99 <= float64(d.Tolerance) }
