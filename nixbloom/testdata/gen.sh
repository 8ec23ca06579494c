#!/usr/bin/env bash
# Makes nix32.txt: 20-byte values in hex and their Nix32 encoding as Nix
# itself writes it (nix-hash from Debian's nix-bin: apt-get install nix-bin).
# Fixed edge cases first, then random values from openssl.
set -euo pipefail
cd "$(dirname "$0")"
{
  nix-hash --version | sed 's/^/# made with /'
  for hex in 0000000000000000000000000000000000000000 ffffffffffffffffffffffffffffffffffffffff \
             8000000000000000000000000000000000000001 0100000000000000000000000000000000000080 \
             da39a3ee5e6b4b0d3255bfef95601890afd80709; do
    echo "$hex $(nix-hash --to-base32 --type sha1 "$hex")"
  done
  for _ in $(seq 200); do
    hex=$(openssl rand -hex 20)
    echo "$hex $(nix-hash --to-base32 --type sha1 "$hex")"
  done
} > nix32.txt
