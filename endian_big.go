//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

package pkbf

// byteInWord maps a byte's index within a 32-bit word to its position in
// the word's value: reversed on big-endian machines.
const byteInWord = 3
