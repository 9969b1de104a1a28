// Package layers holds no code: its test keeps the project's import layering
// (DESIGN.md's layout table) true, by reading what `go list` says each
// package links.
package layers
