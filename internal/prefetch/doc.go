// Package prefetch asks the CPU for cache lines ahead of their use: the
// instruction in assembly on amd64 and arm64 (the purego build tag, or
// any other architecture, gives a function that does nothing).
package prefetch
