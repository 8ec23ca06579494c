module github.com/pkbf/pkbf/ct

go 1.26.0

require (
	filippo.io/sunlight v0.8.0
	filippo.io/torchwood v0.8.0
	github.com/google/certificate-transparency-go v1.4.0
	github.com/pkbf/pkbf v0.0.0
	github.com/transparency-dev/merkle v0.0.2
	golang.org/x/crypto v0.58.0
	golang.org/x/mod v0.32.0
	golang.org/x/term v0.47.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/cloudflare/circl v1.6.5 // indirect
	golang.org/x/sync v0.19.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)

replace github.com/pkbf/pkbf => ../
