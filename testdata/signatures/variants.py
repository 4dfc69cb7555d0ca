"""Signature vectors of the legacy client variants (legacy-protocol.md,
"Variants in other client libraries that shops still run"), computed here
with Python's hashlib and the cryptography package, independently of the Go
code that verifies them (operations/signature_variants_test.go).

    /usr/bin/python3 testdata/signatures/variants.py > testdata/signatures/variants.json

Each vector records how its client computes the signature:
  charset  the bytes the joined string is hashed as (utf-8 or cp1250)
  padding  "none" (40 hex characters fill five blocks exactly: 80 hex out)
           or "extra-block" (the Java library appends a whole block of zero
           bytes: 96 hex out)
  key      "first24" (the first 24 bytes of the secure key)
Fields are given as each client joins them: the .NET library trims nothing,
so its values keep their surrounding blanks.
"""

import hashlib
import json
import sys

from cryptography.hazmat.primitives.ciphers import Cipher, modes

try:  # cryptography >= 43 moved TripleDES here
    from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
except ImportError:
    from cryptography.hazmat.primitives.ciphers.algorithms import TripleDES

KEY24 = "Zf2mlwbW6mQLkGmDWzTXwXHU"
KEY32 = "q7ZP4n9Xw2LfK8sRt3VmYb6C0aHdJ1eG"


def sign(joined_fields, key, charset, padding):
    joined = "|".join(joined_fields + [key])
    digest = hashlib.sha1(joined.encode(charset)).hexdigest()
    plain = digest.encode("ascii")
    if padding == "extra-block":
        plain += b"\0" * 8
    enc = Cipher(TripleDES(key.encode("utf-8")[:24]), modes.ECB()).encryptor()
    return joined, digest, (enc.update(plain) + enc.finalize()).hex()


COMMAND = [
    "targetGoId", "productName", "totalPrice", "currency", "orderNumber", "failedURL",
    "successURL", "preAuthorization", "recurrentPayment", "recurrenceDateTo",
    "recurrenceCycle", "recurrencePeriod", "paymentChannels",
]
ORDERS = {
    "paymentCommand": COMMAND,
    "paymentSession": ["targetGoId", "paymentSessionId"],
    "refundRequest": ["targetGoId", "paymentSessionId", "amount", "currency", "description"],
    "statementRequestNoCurrency": ["dateFrom", "dateTo", "targetGoId"],
    "createBuyer": ["eshopGoId", "buyerUsername", "buyerEmail"],
}


def command(product, order="42", pre="0", rec="0", channels="cz_kb,eu_gp_u"):
    return {
        "targetGoId": "8123456789", "productName": product, "totalPrice": "12900",
        "currency": "CZK", "orderNumber": order, "failedURL": "https://eshop.example/failed",
        "successURL": "https://eshop.example/success", "preAuthorization": pre,
        "recurrentPayment": rec, "recurrenceDateTo": "", "recurrenceCycle": "",
        "recurrencePeriod": "", "paymentChannels": channels,
    }


CASES = [
    ("java-utf8-session", "Java 2.4 library (UTF-8 platform): 96-hex signature", "paymentSession",
     {"targetGoId": "8123456789", "paymentSessionId": "3000000001"}, KEY24, "utf-8", "extra-block"),
    ("java-cp1250-command", "Java 2.4 library on a Czech Windows server: windows-1250, 96 hex", "paymentCommand",
     command("Objednávka č. 42 – žluťoučký kůň"), KEY24, "cp1250", "extra-block"),
    ("java-cp1250-refund", "Java 2.4 library on a Czech Windows server: refund with diacritics", "refundRequest",
     {"targetGoId": "8123456789", "paymentSessionId": "3000000001", "amount": "500", "currency": "CZK",
      "description": "Vrácení části – poškozené zboží"}, KEY24, "cp1250", "extra-block"),
    ("php-cp1250-form", "base-integration form on a windows-1250 shop page (PHP signed in the page charset)",
     "paymentCommand", command("Objednávka 1250"), KEY24, "cp1250", "none"),
    ("dotnet-untrimmed", ".NET proxy: nothing trimmed, unset booleans empty", "paymentCommand",
     command(" Objednávka 42 ", order="42 ", pre="", rec="", channels="cz_kb, eu_gp_u"), KEY24, "utf-8", "none"),
    ("dotnet-unset-booleans", ".NET proxy: unset booleans joined as empty, nothing to trim", "paymentCommand",
     command("Plan", pre="", rec=""), KEY24, "utf-8", "none"),
    ("java-statement-no-currency", "Java 2.4 / .NET statement download: four-field signature", "statementRequestNoCurrency",
     {"dateFrom": "2026-01-01", "dateTo": "2026-01-31", "targetGoId": "8123456789"}, KEY24, "utf-8", "none"),
    ("java-create-buyer", "Java 2.4 library: createBuyer", "createBuyer",
     {"eshopGoId": "8123456789", "buyerUsername": "novak", "buyerEmail": "jan.novak@example.cz"}, KEY24, "utf-8", "extra-block"),
    ("php-utf8-longkey", "PHP library, 32-character key (first 24 bytes key the cipher)", "paymentCommand",
     command("Objednávka č. 7"), KEY32, "utf-8", "none"),
]


def main():
    out = []
    for name, client, kind, fields, key, charset, padding in CASES:
        joined, digest, sig = sign([fields[f] for f in ORDERS[kind]], key, charset, padding)
        out.append({
            "name": name, "client": client, "kind": kind, "fields": fields, "secureKey": key,
            "charset": "windows-1250" if charset == "cp1250" else "UTF-8", "padding": padding,
            "concatenated": joined, "sha1Hex": digest, "encryptedSignature": sig,
        })
    json.dump(out, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
