module github.com/pkbf/pkbf/pkbflint

go 1.26.0

require (
	github.com/pkbf/pkbf v0.0.0
	github.com/zmap/zcrypto v0.0.0-20260906180147-3ed30b1e9340
	github.com/zmap/zlint/v3 v3.7.3
	golang.org/x/crypto v0.58.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/cloudflare/circl v1.6.5 // indirect
	github.com/pelletier/go-toml v1.9.5 // indirect
	github.com/weppos/publicsuffix-go v0.50.4-0.20260821095816-b0fdb5c2d345 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)

replace github.com/pkbf/pkbf => ../
