#!/usr/bin/env bash
# Makes, for every elliptic curve over a binary (characteristic-two) field
# that this openssl can generate keys on, a key in every form openssl
# writes: SEC 1 private keys with the curve named and with explicit
# parameters, and SPKIs named and explicit, uncompressed, compressed and
# hybrid. FORMS holds, for each curve, the SHA-256 of the canonical SPKI
# (named curve, uncompressed point) and of the compressed one, as openssl
# writes them (`openssl ec -pubout -param_enc named_curve -conv_form
# uncompressed|compressed -outform DER`), from the named key and then from
# the explicit one: openssl maps explicit parameters to the first curve
# that has them (wap-wsg-idm-ecid-wtls10 to sect233k1, say). A curve with
# no OID (Oakley-EC2N-3, -4) keeps its explicit parameters.
# Run it from anywhere: bash testdata/keys/binary/gen.sh (needs openssl).
set -euo pipefail
cd "$(dirname "$0")"
rm -f -- *.pem FORMS
fp() {
  local der
  der=$(openssl ec -in "$1" -pubout -param_enc named_curve -conv_form "$2" -outform DER 2>/dev/null | xxd -p) ||
    der=$(openssl ec -in "$1" -pubout -param_enc explicit -conv_form "$2" -outform DER 2>/dev/null | xxd -p)
  echo "$der" | xxd -r -p | sha256sum | cut -c1-64
}
for c in $(openssl ecparam -list_curves | awk -F: '/^ *[A-Za-z]/ {gsub(/ /, "", $1); print $1}'); do
  explicit=$(openssl ecparam -name "$c" -param_enc explicit -outform DER 2>/dev/null | xxd -p | tr -d '\n') || continue
  case $explicit in *06072a8648ce3d0102*) ;; *) continue ;; esac # characteristic two
  openssl ecparam -name "$c" -genkey -noout -out "$c.sec1.pem" 2>/dev/null || continue
  openssl ec -in "$c.sec1.pem" -param_enc explicit -out "$c.sec1-explicit.pem" 2>/dev/null
  for conv in uncompressed compressed hybrid; do
    openssl ec -in "$c.sec1.pem" -pubout -conv_form "$conv" -out "$c.spki-$conv.pem" 2>/dev/null
    openssl ec -in "$c.sec1.pem" -pubout -param_enc explicit -conv_form "$conv" -out "$c.spki-explicit-$conv.pem" 2>/dev/null
  done
  printf '%s %s %s %s %s\n' "$c" "$(fp "$c.sec1.pem" uncompressed)" "$(fp "$c.sec1.pem" compressed)" \
    "$(fp "$c.sec1-explicit.pem" uncompressed)" "$(fp "$c.sec1-explicit.pem" compressed)" >> FORMS
done
