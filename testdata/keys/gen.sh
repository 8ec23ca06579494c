#!/usr/bin/env bash
# Generates the test keys in this folder and MANIFEST, their expected SPKI
# fingerprints. Every fingerprint comes from openssl, independently of pkbf:
#
#   openssl pkey -pubin -in NAME.spki.pem -outform DER | sha256sum
#
# (for compressed EC points, `openssl ec -pubin -conv_form compressed`).
# Needs openssl 3, ssh-keygen (OpenSSH 8 or later) and python3. Run it from
# this folder: bash gen.sh. It makes new random keys each time, so the tests
# only compare against the MANIFEST written in the same run.
set -euo pipefail
cd "$(dirname "$0")"
rm -f -- *.pem *.der *.pub *.openssh *.KEYS MANIFEST COMPRESSED authorized_keys known_hosts bundle.* compressed.txt.tmp
PASS=pkbf-test-passphrase
manifest() { printf '%s %s\n' "$1" "$2" >> MANIFEST; }
fp() { openssl pkey -pubin -in "$1" -outform DER | sha256sum | cut -c1-64; }
subj() { printf '/CN=pkbf test %s' "$1"; }

# A key: PKCS#8 private key, SPKI, certificate, CSR, and OpenSSH forms.
common() {
  local n=$1
  openssl pkey -in "$n.pkcs8.pem" -outform DER -out "$n.pkcs8.der"
  openssl pkey -in "$n.pkcs8.pem" -pubout -out "$n.spki.pem"
  openssl pkey -in "$n.pkcs8.pem" -pubout -outform DER -out "$n.spki.der"
  openssl pkcs8 -topk8 -in "$n.pkcs8.pem" -v2 aes-256-cbc -passout "pass:$PASS" -out "$n.pkcs8-encrypted.pem"
  openssl pkcs8 -topk8 -in "$n.pkcs8.pem" -v2 aes-256-cbc -passout "pass:$PASS" -outform DER -out "$n.pkcs8-encrypted.der"
  openssl req -new -x509 -key "$n.pkcs8.pem" -subj "$(subj "$n")" -days 3650 -out "$n.cert.pem" 2>/dev/null
  openssl x509 -in "$n.cert.pem" -outform DER -out "$n.cert.der"
  openssl req -new -key "$n.pkcs8.pem" -subj "$(subj "$n")" -out "$n.csr.pem"
  openssl req -in "$n.csr.pem" -outform DER -out "$n.csr.der"
  local f; f=$(fp "$n.spki.pem")
  for form in pkcs8.pem pkcs8.der spki.pem spki.der cert.pem cert.der csr.pem csr.der; do
    manifest "$n.$form" "$f"
  done
  manifest "$n.pkcs8-encrypted.pem" encrypted
  manifest "$n.pkcs8-encrypted.der" encrypted
}

# OpenSSH forms of a key in $n.openssh: plain and passphrase-protected
# private keys and the public key line.
openssh() {
  local n=$1 f=$2
  chmod 600 "$n.openssh"
  ssh-keygen -y -f "$n.openssh" > "$n.pub"
  cp "$n.openssh" "$n.openssh-encrypted.openssh"
  ssh-keygen -q -p -P "" -N "$PASS" -f "$n.openssh-encrypted.openssh" >/dev/null
  manifest "$n.openssh" "$f"
  manifest "$n.openssh-encrypted.openssh" "$f"
  manifest "$n.pub" "$f"
}

for bits in 2048 1024 512; do
  n=rsa$bits
  openssl genpkey -algorithm RSA -pkeyopt "rsa_keygen_bits:$bits" -out "$n.pkcs8.pem" 2>/dev/null
  common "$n"
  f=$(fp "$n.spki.pem")
  openssl rsa -in "$n.pkcs8.pem" -traditional -out "$n.pkcs1.pem" 2>/dev/null
  openssl rsa -in "$n.pkcs8.pem" -traditional -outform DER -out "$n.pkcs1.der" 2>/dev/null
  openssl rsa -in "$n.pkcs8.pem" -RSAPublicKey_out -out "$n.rsapub.pem" 2>/dev/null
  openssl rsa -in "$n.pkcs8.pem" -RSAPublicKey_out -outform DER -out "$n.rsapub.der" 2>/dev/null
  openssl rsa -in "$n.pkcs8.pem" -traditional -aes256 -passout "pass:$PASS" -out "$n.pkcs1-encrypted.pem" 2>/dev/null
  for form in pkcs1.pem pkcs1.der rsapub.pem rsapub.der; do manifest "$n.$form" "$f"; done
  manifest "$n.pkcs1-encrypted.pem" encrypted
  [ "$bits" -lt 1024 ] && continue # OpenSSH refuses RSA keys under 1024 bits
  cp "$n.pkcs1.pem" "$n.openssh"
  chmod 600 "$n.openssh"
  ssh-keygen -q -p -P "" -N "" -f "$n.openssh" >/dev/null
  openssh "$n" "$f"
done

for c in P-256:prime256v1 P-384:secp384r1 P-521:secp521r1; do
  n=p${c:2:3}; curve=${c#*:}
  openssl genpkey -algorithm EC -pkeyopt "ec_paramgen_curve:${c%%:*}" -out "$n.pkcs8.pem"
  common "$n"
  f=$(fp "$n.spki.pem")
  openssl ec -in "$n.pkcs8.pem" -out "$n.sec1.pem" 2>/dev/null
  openssl ec -in "$n.pkcs8.pem" -outform DER -out "$n.sec1.der" 2>/dev/null
  { openssl ecparam -name "$curve"; cat "$n.sec1.pem"; } > "$n.ecparams-sec1.pem"
  openssl ec -in "$n.pkcs8.pem" -aes256 -passout "pass:$PASS" -out "$n.sec1-encrypted.pem" 2>/dev/null
  openssl ec -in "$n.pkcs8.pem" -pubout -conv_form compressed -out "$n.spki-compressed.pem" 2>/dev/null
  openssl ec -in "$n.pkcs8.pem" -pubout -conv_form compressed -outform DER -out "$n.spki-compressed.der" 2>/dev/null
  for form in sec1.pem sec1.der ecparams-sec1.pem; do manifest "$n.$form" "$f"; done
  manifest "$n.sec1-encrypted.pem" encrypted
  fc=$(openssl pkey -pubin -in "$n.spki-compressed.pem" -outform DER | sha256sum | cut -c1-64)
  manifest "$n.spki-compressed.pem" "$fc"
  manifest "$n.spki-compressed.der" "$fc"
  echo "$n $f $fc" >> compressed.txt.tmp
  cp "$n.sec1.pem" "$n.openssh"
  chmod 600 "$n.openssh"
  ssh-keygen -q -p -P "" -N "" -f "$n.openssh" >/dev/null
  openssh "$n" "$f"
done

# Ed25519: OpenSSH cannot import openssl's Ed25519 keys, so ssh-keygen makes
# the key and its 32-byte seed is lifted into PKCS#8 (RFC 8410) for openssl.
n=ed25519
ssh-keygen -q -t ed25519 -N "" -C "pkbf test ed25519" -f "$n.openssh"
rm -f "$n.openssh.pub"
python3 - "$n.openssh" > "$n.pkcs8.der" <<'PY'
import base64, struct, sys
lines = open(sys.argv[1]).read().split("\n")
blob = base64.b64decode("".join(l for l in lines if l and not l.startswith("-----")))
assert blob.startswith(b"openssh-key-v1\0")
p = len(b"openssh-key-v1\0")
def string():
    global p
    (n,) = struct.unpack(">I", blob[p:p + 4]); p += 4
    v = blob[p:p + n]; p += n
    return v
string(); string(); string(); p += 4; string()  # cipher, kdf, options, count, public key
priv = string()
(q,) = (8,)
def field():
    global q
    (n,) = struct.unpack(">I", priv[q:q + 4]); q += 4
    v = priv[q:q + n]; q += n
    return v
assert field() == b"ssh-ed25519"
field()
seed = field()[:32]
sys.stdout.buffer.write(bytes.fromhex("302e020100300506032b657004220420") + seed)
PY
openssl pkey -inform DER -in "$n.pkcs8.der" -out "$n.pkcs8.pem"
common "$n"
openssh "$n" "$(fp "$n.spki.pem")"

# Security-key (sk-) public key lines, made from the ECDSA P-256 and Ed25519
# keys above: their inner key is that key, so its fingerprint is too.
python3 - p256.pub ed25519.pub > sk.pub <<'PY'
import base64, struct, sys
def s(b): return struct.pack(">I", len(b)) + b
def fields(blob):
    out, p = [], 0
    while p < len(blob):
        (n,) = struct.unpack(">I", blob[p:p + 4]); out.append(blob[p + 4:p + 4 + n]); p += 4 + n
    return out
for path, sk in ((sys.argv[1], b"sk-ecdsa-sha2-nistp256@openssh.com"), (sys.argv[2], b"sk-ssh-ed25519@openssh.com")):
    typ, b64 = open(path).read().split()[:2]
    f = fields(base64.b64decode(b64))
    blob = s(sk) + b"".join(s(x) for x in f[1:]) + s(b"ssh:")
    print(sk.decode(), base64.b64encode(blob).decode(), "pkbf test sk key")
PY
sed -n 1p sk.pub > p256-sk.pub
sed -n 2p sk.pub > ed25519-sk.pub
rm sk.pub
manifest p256-sk.pub "$(fp p256.spki.pem)"
manifest ed25519-sk.pub "$(fp ed25519.spki.pem)"

# An authorized_keys file with options, quotes and comments, and a
# known_hosts file; KEYS lists the fingerprints of their lines in order.
{
  echo "# pkbf test authorized_keys"
  echo
  echo "$(cat rsa2048.pub) rsa2048 comment"
  echo "command=\"echo 'hello world'\",no-pty $(cat p256.pub) p256 with options"
  echo "from=\"10.0.0.0/8,192.168.*\" $(cat p384.pub)"
  echo "restrict,environment=\"A=b c\" $(cat p521.pub) p521"
  echo "$(cat ed25519.pub)"
  echo "no-touch-required $(cat p256-sk.pub)"
  echo "$(cat ed25519-sk.pub)"
} > authorized_keys
for n in rsa2048 p256 p384 p521 ed25519 p256 ed25519; do fp "$n.spki.pem"; done > authorized_keys.KEYS
{
  echo "example.org,192.0.2.1 $(cat ed25519.pub)"
  echo "@cert-authority *.example.org $(cat p256.pub)"
} > known_hosts
for n in ed25519 p256; do fp "$n.spki.pem"; done > known_hosts.KEYS

# A PEM bundle: certificates, keys and explanatory text in one stream.
{
  echo "Bag Attributes: text outside blocks is ignored"
  cat rsa2048.cert.pem p256.sec1.pem
  echo "subject=/CN=more text"
  cat ed25519.pkcs8.pem p384.ecparams-sec1.pem rsa512.rsapub.pem p521.csr.pem
} > bundle.pem
for n in rsa2048 p256 ed25519 p384 rsa512 p521; do fp "$n.spki.pem"; done > bundle.pem.KEYS
cat rsa2048.spki.der p256.cert.der ed25519.csr.der > bundle.der
for n in rsa2048 p256 ed25519; do fp "$n.spki.pem"; done > bundle.der.KEYS

sort compressed.txt.tmp > COMPRESSED && rm compressed.txt.tmp
sort -o MANIFEST MANIFEST
