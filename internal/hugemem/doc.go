// Package hugemem allocates large memory that Linux backs with transparent
// huge pages: a bloom filter larger than the caches costs a TLB miss a
// probe on small pages, and a 2 MiB page covers what 512 small ones do.
// Elsewhere it is plain make.
package hugemem
