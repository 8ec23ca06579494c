#!/usr/bin/env bash
# Makes, for every elliptic curve over a prime field that this openssl can
# generate keys on, a key without its public point (SEC 1, -no_public),
# with the curve named and with explicit parameters; and one key on a
# curve that has no name (P-256's parameters with 2G as the generator).
# CANONICAL holds the SHA-256 of the SPKI openssl derives from each file
# (`openssl ec -pubout`, the curve named where openssl knows its name).
# Run it from anywhere: bash testdata/keys/curves/gen.sh (needs openssl,
# python3).
set -euo pipefail
cd "$(dirname "$0")"
rm -f -- *.pem CANONICAL
derived() { openssl ec -in "$1" -pubout -param_enc named_curve -outform DER 2>/dev/null | sha256sum | cut -c1-64; }
for c in $(openssl ecparam -list_curves | awk -F: '/^ *[A-Za-z]/ {gsub(/ /, "", $1); print $1}'); do
  explicit=$(openssl ecparam -name "$c" -param_enc explicit -outform DER 2>/dev/null | xxd -p | tr -d '\n') || continue
  case $explicit in *06072a8648ce3d0101*) ;; *) continue ;; esac # prime field
  openssl ecparam -name "$c" -genkey -noout -out "$c.key.pem" 2>/dev/null || continue
  openssl ec -in "$c.key.pem" -no_public -out "$c.nopub.pem" 2>/dev/null
  openssl ec -in "$c.key.pem" -no_public -param_enc explicit -out "$c.explicit-nopub.pem" 2>/dev/null
  printf '%s %s\n' "$c.nopub.pem" "$(derived "$c.nopub.pem")" >> CANONICAL
  printf '%s %s\n' "$c.explicit-nopub.pem" "$(derived "$c.explicit-nopub.pem")" >> CANONICAL
  rm "$c.key.pem"
done
# A curve with no name: P-256 with 2G as its generator (and no seed).
openssl ecparam -name prime256v1 -param_enc explicit -outform DER -out p256.params.der
python3 - <<'PY'
import base64
der = open("p256.params.der", "rb").read()
p = 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffff
a = p - 3
gx = 0x6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296
gy = 0x4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5
lam = (3 * gx * gx + a) * pow(2 * gy, -1, p) % p
x2 = (lam * lam - 2 * gx) % p
y2 = (lam * (gx - x2) - gy) % p
old = b"\x04" + gx.to_bytes(32, "big") + gy.to_bytes(32, "big")
new = b"\x04" + x2.to_bytes(32, "big") + y2.to_bytes(32, "big")
assert der.count(old) == 1
der = der.replace(old, new)
# Drop the curve's seed (BIT STRING inside the Curve SEQUENCE): it belongs to P-256.
seed = der.find(b"\x03\x15\x00")
der = der[:seed] + der[seed + 23:]
# Fix the lengths of the Curve SEQUENCE and the outer SEQUENCE.
curve = der.find(b"\x30\x5b\x04\x20")
assert curve > 0
der = der[:curve] + b"\x30" + bytes([0x5b - 23]) + der[curve + 2:]
assert der[0:3] == b"\x30\x81\xf7"
der = der[:2] + bytes([0xf7 - 23]) + der[3:]
open("unnamed.params.pem", "w").write("-----BEGIN EC PARAMETERS-----\n" + base64.encodebytes(der).decode() + "-----END EC PARAMETERS-----\n")
PY
rm p256.params.der
openssl ecparam -in unnamed.params.pem -check >/dev/null
openssl ecparam -in unnamed.params.pem -genkey -noout -out unnamed.key.pem
openssl ec -in unnamed.key.pem -no_public -out unnamed.nopub.pem 2>/dev/null
printf '%s %s\n' unnamed.nopub.pem "$(openssl ec -in unnamed.nopub.pem -pubout -outform DER 2>/dev/null | sha256sum | cut -c1-64)" >> CANONICAL
rm unnamed.key.pem unnamed.params.pem
sort -o CANONICAL CANONICAL
