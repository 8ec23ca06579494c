module github.com/pkbf/pkbf

go 1.26.0

require (
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/cloudflare/circl v1.6.5
	golang.org/x/crypto v0.58.0
	golang.org/x/sys v0.49.0
	golang.org/x/term v0.47.0
)
