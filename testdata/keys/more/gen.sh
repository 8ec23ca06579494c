#!/usr/bin/env bash
# Generates the keys, certificates and containers in this folder: every
# encoding of a key that users hold (DSA, RSA-PSS, X25519, X448, Ed448, DH,
# EC on brainpool and secp256k1 and with explicit parameters, encodings
# that are not canonical, PKCS#12, PKCS#7, TRUSTED CERTIFICATE, RFC 4716,
# PuTTY, a byte-order mark, CR line ends, prose around a key line), made by
# the tools users have: openssl, ssh-keygen, puttygen and keytool.
#
# CANONICAL lists, for each file that holds one key, the SHA-256 of the
# key's canonical SPKI, computed by openssl independently of pkbf:
#
#   openssl pkey -pubin -in SPKI -outform DER | sha256sum
#   openssl ec -pubin -in SPKI -param_enc named_curve -conv_form uncompressed -pubout -outform DER | sha256sum
#
# A file NAME holding several keys has NAME.KEYS with their fingerprints
# (in any order). EXPECT lists files whose reading must fail, with a part
# of the error. Run it from this folder: bash gen.sh. It reads a few keys
# of the folder above (which its own gen.sh makes) and makes new random
# keys each time.
set -euo pipefail
cd "$(dirname "$0")"
rm -f -- *.pem *.der *.pub *.p12 *.p7b *.ppk *.openssh *.txt *.KEYS CANONICAL AS_GIVEN EXPECT passphrase
PASS=pkbf-test-passphrase
echo "$PASS" > passphrase
canon() { printf '%s %s\n' "$1" "$2" >> CANONICAL; }
fp() { openssl pkey -pubin -in "$1" -outform DER | sha256sum | cut -c1-64; }
fpec() { openssl ec -pubin -in "$1" -param_enc named_curve -conv_form uncompressed -pubout -outform DER 2>/dev/null | sha256sum | cut -c1-64; }
certfp() { openssl x509 -in "$1" -pubkey -noout | openssl pkey -pubin -outform DER | sha256sum | cut -c1-64; }
subj() { printf '/CN=pkbf test %s' "$1"; }

# Private key, SPKI (PEM and DER) of a key in $n.pkcs8.pem; $2: ec for EC.
forms() {
  local n=$1 f
  openssl pkey -in "$n.pkcs8.pem" -outform DER -out "$n.pkcs8.der"
  openssl pkey -in "$n.pkcs8.pem" -pubout -out "$n.spki.pem"
  openssl pkey -in "$n.pkcs8.pem" -pubout -outform DER -out "$n.spki.der"
  if [ "${2:-}" = ec ]; then f=$(fpec "$n.spki.pem"); else f=$(fp "$n.spki.pem"); fi
  for form in pkcs8.pem pkcs8.der spki.pem spki.der; do canon "$n.$form" "$f"; done
}
cert() {
  local n=$1
  openssl req -new -x509 -key "$n.pkcs8.pem" -subj "$(subj "$n")" -days 3650 -out "$n.cert.pem" 2>/dev/null
  openssl x509 -in "$n.cert.pem" -outform DER -out "$n.cert.der"
  canon "$n.cert.pem" "$(certfp "$n.cert.pem")"
  canon "$n.cert.der" "$(certfp "$n.cert.pem")"
}

# DSA: PKCS#8, OpenSSL's own "DSA PRIVATE KEY", SPKI, certificate; and an
# OpenSSH DSA key (ssh-keygen makes 1024-bit ones only).
openssl genpkey -genparam -algorithm DSA -pkeyopt dsa_paramgen_bits:2048 -out dsa.params.tmp 2>/dev/null
openssl genpkey -paramfile dsa.params.tmp -out dsa.pkcs8.pem
rm dsa.params.tmp
forms dsa
cert dsa
openssl pkey -in dsa.pkcs8.pem -traditional -out dsa.traditional.pem
openssl dsa -in dsa.pkcs8.pem -outform DER -out dsa.traditional.der 2>/dev/null
canon dsa.traditional.pem "$(fp dsa.spki.pem)"
canon dsa.traditional.der "$(fp dsa.spki.pem)"
ssh-keygen -q -t dsa -N "" -C "pkbf test dsa" -f dsa-ssh.openssh
mv dsa-ssh.openssh.pub dsa-ssh.pub
ssh-keygen -e -m PKCS8 -f dsa-ssh.pub > dsa-ssh.spki.pem
for form in openssh pub spki.pem; do canon "dsa-ssh.$form" "$(fp dsa-ssh.spki.pem)"; done

# RSA-PSS, unrestricted and restricted to SHA-256 (its SPKI keeps the
# parameters).
openssl genpkey -algorithm RSA-PSS -pkeyopt rsa_keygen_bits:2048 -out rsapss.pkcs8.pem 2>/dev/null
forms rsapss
cert rsapss
openssl genpkey -algorithm RSA-PSS -pkeyopt rsa_keygen_bits:2048 -pkeyopt rsa_pss_keygen_md:sha256 \
  -pkeyopt rsa_pss_keygen_mgf1_md:sha256 -pkeyopt rsa_pss_keygen_saltlen:32 -out rsapss-sha256.pkcs8.pem 2>/dev/null
forms rsapss-sha256

# X25519, X448, Ed448.
for alg in X25519 X448 ED448; do
  n=$(echo "$alg" | tr 'A-Z' 'a-z')
  openssl genpkey -algorithm "$alg" -out "$n.pkcs8.pem"
  forms "$n"
done
cert ed448

# EC on curves other than the NIST ones, and with explicit parameters.
for c in brainpoolP256r1 secp256k1 brainpoolP384r1; do
  n=$(echo "$c" | tr 'A-Z' 'a-z')
  openssl genpkey -algorithm EC -pkeyopt "ec_paramgen_curve:$c" -out "$n.pkcs8.pem"
  forms "$n" ec
  f=$(fpec "$n.spki.pem")
  openssl ec -in "$n.pkcs8.pem" -out "$n.sec1.pem" 2>/dev/null
  openssl ec -in "$n.pkcs8.pem" -outform DER -out "$n.sec1.der" 2>/dev/null
  openssl ec -in "$n.pkcs8.pem" -pubout -conv_form compressed -out "$n.spki-compressed.pem" 2>/dev/null
  openssl ec -in "$n.pkcs8.pem" -param_enc explicit -out "$n.sec1-explicit.pem" 2>/dev/null
  openssl ec -in "$n.pkcs8.pem" -param_enc explicit -pubout -out "$n.spki-explicit.pem" 2>/dev/null
  openssl ec -in "$n.pkcs8.pem" -param_enc explicit -conv_form compressed -pubout -out "$n.spki-explicit-compressed.pem" 2>/dev/null
  openssl ec -in "$n.pkcs8.pem" -no_public -out "$n.sec1-nopub.pem" 2>/dev/null
  for form in sec1.pem sec1.der spki-compressed.pem sec1-explicit.pem spki-explicit.pem spki-explicit-compressed.pem; do canon "$n.$form" "$f"; done
  # Without its public key: openssl computes it, and so must pkbf.
  canon "$n.sec1-nopub.pem" "$(openssl ec -in "$n.sec1-nopub.pem" -pubout -outform DER 2>/dev/null | sha256sum | cut -c1-64)"
done
cert brainpoolp256r1
# The NIST P-256 key of the folder above, with explicit parameters, and
# without its public key (pkbf computes it).
f=$(fpec ../p256.spki.pem)
openssl ec -in ../p256.pkcs8.pem -param_enc explicit -out p256.sec1-explicit.pem 2>/dev/null
openssl ec -in ../p256.pkcs8.pem -param_enc explicit -outform DER -out p256.sec1-explicit.der 2>/dev/null
openssl ec -in ../p256.pkcs8.pem -param_enc explicit -pubout -out p256.spki-explicit.pem 2>/dev/null
openssl ec -in ../p256.pkcs8.pem -param_enc explicit -pubout -outform DER -out p256.spki-explicit.der 2>/dev/null
openssl pkcs8 -topk8 -nocrypt -in p256.sec1-explicit.pem -out p256.pkcs8-explicit.pem
openssl ec -in ../p256.pkcs8.pem -no_public -out p256.sec1-nopub.pem 2>/dev/null
openssl ec -in ../p256.pkcs8.pem -conv_form compressed -out p256.sec1-compressed.pem 2>/dev/null
for form in sec1-explicit.pem sec1-explicit.der spki-explicit.pem spki-explicit.der pkcs8-explicit.pem sec1-nopub.pem sec1-compressed.pem; do canon "p256.$form" "$f"; done
# A certificate of that key with explicit parameters: its SPKI keeps them.
# CANONICAL has the named curve's fingerprint; AS_GIVEN what openssl
# computes for the bytes given (x509 -pubkey keeps the parameters), which
# is what pkbf check reports for such a key.
openssl req -new -x509 -key p256.sec1-explicit.pem -subj /CN=explicit-parameters -days 3650 -out p256.cert-explicit.pem 2>/dev/null
canon p256.cert-explicit.pem "$f"
for g in p256.cert-explicit.pem; do
  printf '%s %s\n' "$g" "$(openssl x509 -in "$g" -pubkey -noout | openssl pkey -pubin -outform DER | sha256sum | cut -c1-64)" >> AS_GIVEN
done
printf '%s %s\n' p256.spki-explicit.pem "$(openssl pkey -pubin -in p256.spki-explicit.pem -outform DER | sha256sum | cut -c1-64)" >> AS_GIVEN

# DH: PKCS #3 (an ffdhe group) and X9.42 (RFC 5114 parameters).
openssl genpkey -algorithm DH -pkeyopt group:ffdhe2048 -out dh.pkcs8.pem
forms dh
openssl genpkey -genparam -algorithm DHX -pkeyopt dh_rfc5114:2 -out dhx.params.tmp 2>/dev/null
openssl genpkey -paramfile dhx.params.tmp -out dhx.pkcs8.pem
rm dhx.params.tmp
forms dhx

# Encodings that are not canonical, made from the RSA-2048 key of the
# folder above by rewriting its DER (openssl reads them and writes the
# canonical one): no NULL parameters, a modulus with a leading zero byte,
# and a certificate whose SPKI has that modulus; a modulus encoded as a
# negative INTEGER (its leading zero dropped, high bit set), which openssl
# reads as the unsigned magnitude and writes back with the zero, in an SPKI
# and in a certificate.
python3 - ../rsa2048.spki.der ../rsa2048.cert.der <<'PY'
import sys
def tlv(b, i):
    tag = b[i]; l = b[i + 1]; j = i + 2
    if l & 0x80:
        n = l & 0x7f; l = int.from_bytes(b[j:j + n], "big"); j += n
    return tag, b[j:j + l], j + l
def enc(tag, content):
    n = len(content)
    if n < 0x80: return bytes([tag, n]) + content
    nb = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(nb)]) + nb + content
def children(b):
    out, i = [], 0
    while i < len(b):
        tag, c, j = tlv(b, i); out.append((tag, c)); i = j
    return out
def spki_variant(spki, nonull=False, pad=False, negative=False):
    _, body, _ = tlv(spki, 0)
    (at, alg), (bt, bits) = children(body)
    if nonull:
        alg = b"".join(enc(t, c) for t, c in children(alg) if t != 5)
    if pad:
        _, key, _ = tlv(bits[1:], 0)
        (nt, n), (et, e) = children(key)
        bits = b"\x00" + enc(0x30, enc(2, b"\x00" + n) + enc(2, e))
    if negative:
        _, key, _ = tlv(bits[1:], 0)
        (nt, n), (et, e) = children(key)
        assert n[0] == 0 and n[1] >= 0x80
        bits = b"\x00" + enc(0x30, enc(2, n[1:]) + enc(2, e))
    return enc(0x30, enc(at, alg) + enc(bt, bits))
spki = open(sys.argv[1], "rb").read()
open("rsa2048.spki-nonull.der", "wb").write(spki_variant(spki, nonull=True))
open("rsa2048.spki-nonminimal.der", "wb").write(spki_variant(spki, pad=True))
open("rsa2048.spki-negative.der", "wb").write(spki_variant(spki, negative=True))
cert = open(sys.argv[2], "rb").read()
_, cbody, _ = tlv(cert, 0)
(tt, tbs), rest = children(cbody)[0], children(cbody)[1:]
fields = children(tbs)
def cert_variant(name, **variant):
    out = []
    for t, c in fields:
        if t == 0x30 and c.startswith(b"\x30\x0d\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x01\x01"):
            c = tlv(spki_variant(enc(t, c), **variant), 0)[1]
        out.append(enc(t, c))
    open(name, "wb").write(enc(0x30, enc(tt, b"".join(out)) + b"".join(enc(t, c) for t, c in rest)))
cert_variant("rsa2048.cert-nonminimal.der", pad=True)
cert_variant("rsa2048.cert-negative.der", negative=True)
PY
for form in spki-nonull.der spki-nonminimal.der spki-negative.der; do canon "rsa2048.$form" "$(openssl pkey -pubin -inform DER -in "rsa2048.$form" -outform DER | sha256sum | cut -c1-64)"; done
for form in cert-nonminimal.der cert-negative.der; do
  canon "rsa2048.$form" "$(openssl x509 -inform DER -in "rsa2048.$form" -pubkey -noout | openssl pkey -pubin -outform DER | sha256sum | cut -c1-64)"
done

# Containers. PKCS#12 from openssl: a key with its certificate and one
# more, with the empty password (AES-256, SHA-256 MAC: OpenSSL 3's
# defaults), with a password, in the legacy algorithms (RC2-40 and 3DES,
# SHA-1 MAC), certificates only, and unencrypted.
cat ../rsa2048.cert.pem ../p256.cert.pem > chain.tmp
openssl pkcs12 -export -inkey ../rsa2048.pkcs8.pem -in ../rsa2048.cert.pem -certfile ../p256.cert.pem -passout pass: -out chain-empty.p12
openssl pkcs12 -export -inkey ../rsa2048.pkcs8.pem -in ../rsa2048.cert.pem -certfile ../p256.cert.pem -passout "pass:$PASS" -out chain-password.p12
openssl pkcs12 -export -legacy -inkey ../rsa2048.pkcs8.pem -in ../rsa2048.cert.pem -certfile ../p256.cert.pem -passout "pass:$PASS" -out chain-legacy.p12
openssl pkcs12 -export -nokeys -in chain.tmp -passout pass: -out certs-only.p12
openssl pkcs12 -export -keypbe NONE -certpbe NONE -inkey ../rsa2048.pkcs8.pem -in ../rsa2048.cert.pem -certfile ../p256.cert.pem -passout pass: -out chain-unencrypted.p12
rm chain.tmp
for p in chain-empty chain-password chain-legacy chain-unencrypted; do
  for f in ../rsa2048.cert.pem ../p256.cert.pem ../rsa2048.cert.pem; do certfp "$f"; done > "$p.p12.KEYS"
done
for f in ../rsa2048.cert.pem ../p256.cert.pem; do certfp "$f"; done > certs-only.p12.KEYS
# From keytool: a key pair in a PKCS12 keystore, and a truststore.
keytool -genkeypair -alias pkbf -keyalg EC -groupname secp384r1 -dname "CN=pkbf test keytool" -validity 3650 \
  -storetype PKCS12 -keystore keytool.p12 -storepass "$PASS" -keypass "$PASS" 2>/dev/null
keytool -exportcert -rfc -alias pkbf -keystore keytool.p12 -storepass "$PASS" -file keytool.cert.tmp 2>/dev/null
certfp keytool.cert.tmp > keytool.p12.KEYS
certfp keytool.cert.tmp >> keytool.p12.KEYS
rm keytool.cert.tmp
keytool -importcert -noprompt -alias ca -file ../rsa2048.cert.pem -storetype PKCS12 -keystore truststore.p12 -storepass changeit 2>/dev/null
echo "truststore.p12 password" >> EXPECT
# PKCS#7 bundles, PEM and DER; a TRUSTED CERTIFICATE.
openssl crl2pkcs7 -nocrl -certfile ../rsa2048.cert.pem -certfile ../p256.cert.pem -certfile ed448.cert.pem -out bundle.p7b
openssl crl2pkcs7 -nocrl -certfile ../rsa2048.cert.pem -certfile ../p256.cert.pem -certfile ed448.cert.pem -outform DER -out bundle-der.p7b
for f in ../rsa2048.cert.pem ../p256.cert.pem ed448.cert.pem; do certfp "$f"; done > bundle.p7b.KEYS
cp bundle.p7b.KEYS bundle-der.p7b.KEYS
openssl x509 -in ../p256.cert.pem -addtrust serverAuth -out p256.trusted.pem
canon p256.trusted.pem "$(certfp ../p256.cert.pem)"

# SSH public keys in RFC 4716 form (ssh-keygen and puttygen), and PuTTY
# private keys (versions 3 and 2, and with a passphrase).
ssh-keygen -e -f ../p384.pub > p384.rfc4716.pub
ssh-keygen -e -f ../rsa2048.pub > rsa2048.rfc4716.pub
canon p384.rfc4716.pub "$(fpec ../p384.spki.pem)"
canon rsa2048.rfc4716.pub "$(fp ../rsa2048.spki.pem)"
puttygen ../ed25519.openssh -O private -o ed25519.ppk
puttygen ../rsa2048.openssh -O private --ppk-param version=2 -o rsa2048.v2.ppk
puttygen ../p256.openssh -O private --new-passphrase passphrase -o p256.encrypted.ppk
puttygen ../ed25519.openssh -O public -o ed25519.puttygen-rfc4716.pub
canon ed25519.ppk "$(fp ../ed25519.spki.pem)"
canon rsa2048.v2.ppk "$(fp ../rsa2048.spki.pem)"
canon p256.encrypted.ppk "$(fpec ../p256.spki.pem)"
canon ed25519.puttygen-rfc4716.pub "$(fp ../ed25519.spki.pem)"

# Text as editors leave it: a byte-order mark, old Mac CR line ends, mixed
# line ends, and prose around a key line.
{ printf '\xef\xbb\xbf'; cat ../p256.cert.pem; } > bom.cert.pem
tr '\n' '\r' < ../rsa2048.spki.pem > cr.spki.pem
tr '\n' '\r' < ../ed25519.pub > cr.pub
awk 'NR % 2 { printf "%s\r\n", $0; next } { print }' ../p384.cert.pem > mixed.cert.pem
canon bom.cert.pem "$(certfp ../p256.cert.pem)"
canon cr.spki.pem "$(fp ../rsa2048.spki.pem)"
canon cr.pub "$(fp ../ed25519.spki.pem)"
canon mixed.cert.pem "$(certfp ../p384.cert.pem)"
{
  echo "Notes on our keys. ssh-rsa keys are old; ssh-ed25519 is the default now."
  echo "ecdsa-sha2-nistp256 is fine too, and so is ssh-dss for nothing."
  cat ../ed25519.pub
  echo "That is all."
} > prose.txt
canon prose.txt "$(fp ../ed25519.spki.pem)"

sort -o CANONICAL CANONICAL
sort -o EXPECT EXPECT
