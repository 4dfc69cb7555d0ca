"""What a legacy Python e-shop did around suds: sign requests and verify
signed replies with the EPaymentServiceV2 scheme (SHA-1 hex of the joined
fields, Triple DES EDE in ECB mode, key = first 24 bytes of the secure key).
Written independently of the Go code on purpose: it is the client's view.

Triple DES comes from Debian's python3-cryptography (the stdlib has no DES):
in process, no subprocess per signature, and present on Debian next to suds.
"""

import hashlib
import hmac

from cryptography.hazmat.primitives.ciphers import Cipher, modes

try:  # cryptography >= 43 moved TripleDES here (and later dropped the old name)
    from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
except ImportError:  # Debian 12 ships 38
    from cryptography.hazmat.primitives.ciphers.algorithms import TripleDES

# What the legacy library trimmed off the marked fields (PHP's trim set).
_TRIM = " \t\r\n\0\x0b"


def field(v, trim=False):
    """A field as the legacy library joined it: booleans 1/0, absent empty.
    The strings true/false count as booleans: suds leaves soapenc:boolean
    (and soapenc:long) reply values as text, unconverted."""
    if v is None:
        return ""
    s = str(v)
    if v is True or s == "true":
        return "1"
    if v is False or s == "false":
        return "0"
    return s.strip(_TRIM) if trim else s


def _hash(fields, key):
    return hashlib.sha1("|".join(list(fields) + [key]).encode("utf-8")).hexdigest()


def _cipher(key):
    return Cipher(TripleDES(key.encode("utf-8")[:24]), modes.ECB())


def sign(fields, key):
    plain = _hash(fields, key).encode("ascii")  # 40 bytes: a multiple of 8, no padding
    enc = _cipher(key).encryptor()
    return (enc.update(plain) + enc.finalize()).hex()


def verify(fields, key, signature):
    """'ok', 'missing' or 'bad': the check a legacy client made on a reply."""
    if signature is None or str(signature) == "":
        return "missing"
    try:
        raw = bytes.fromhex(str(signature))
    except ValueError:
        return "bad"
    if len(raw) == 0 or len(raw) % 8 != 0:
        return "bad"
    dec = _cipher(key).decryptor()
    plain = (dec.update(raw) + dec.finalize()).rstrip(b"\0").strip()
    want = _hash(fields, key).encode("ascii")
    return "ok" if hmac.compare_digest(want, plain) else "bad"


# Field orders of the scheme (legacy-protocol.md). Objects are suds objects
# (or anything with the attributes); an absent attribute counts as None.


def _get(o, name):
    v = getattr(o, name, None)
    # suds' factory fills a field typed soapenc:string, soapenc:long, ... with
    # a holder object (value, _id, _href) whose value stays None until set.
    if hasattr(v, "__keylist__") and hasattr(v, "value"):
        v = v.value
    return v


def sign_payment_command(c, key):
    g = lambda n: _get(c, n)
    return sign([
        field(g("targetGoId")),
        field(g("productName"), True),
        field(g("totalPrice")),
        field(g("currency"), True),
        field(g("orderNumber"), True),
        field(g("failedURL"), True),
        field(g("successURL"), True),
        field(g("preAuthorization")),
        field(g("recurrentPayment")),
        field(g("recurrenceDateTo"), True),
        field(g("recurrenceCycle"), True),
        field(g("recurrencePeriod"), True),
        field(g("paymentChannels"), True),
    ], key)


def sign_payment_session(goid, session_id, key):
    return sign([field(goid), field(session_id)], key)


def sign_recurrence_request(r, key):
    return sign([field(_get(r, n)) for n in
                 ("parentPaymentSessionId", "targetGoId", "orderNumber", "totalPrice")], key)


def sign_refund_request(r, key):
    return sign([field(_get(r, n)) for n in
                 ("targetGoId", "paymentSessionId", "amount", "currency", "description")], key)


def verify_payment_status(s, key):
    g = lambda n: _get(s, n)
    return verify([
        field(g("targetGoId")),
        field(g("productName"), True),
        field(g("totalPrice")),
        field(g("currency")),
        field(g("orderNumber"), True),
        field(g("recurrentPayment")),
        field(g("parentPaymentSessionId")),
        field(g("preAuthorization")),
        field(g("result")),
        field(g("sessionState")),
        field(g("sessionSubState")),
        field(g("paymentChannel")),
    ], key, g("encryptedSignature"))


def verify_payment_result(r, key):
    return verify([field(_get(r, "paymentSessionId")), field(_get(r, "result"), True)],
                  key, _get(r, "encryptedSignature"))
