"""Checks this client's signing code against the vectors the legacy client
library produced (python3 selfcheck.py legacy-vectors.json), so that a
failing scenario points at the bridge, not at the test client."""

import json
import sys
from types import SimpleNamespace

import legacy


def main(path):
    with open(path, encoding="utf-8") as f:
        vectors = json.load(f)
    failed = 0
    for i, v in enumerate(vectors):
        key, want, kind = v["secureKey"], v["encryptedSignature"], v["kind"]
        o = SimpleNamespace(**v["fields"])
        if kind == "paymentCommand":
            got = legacy.sign_payment_command(o, key)
        elif kind == "paymentSession":
            got = legacy.sign_payment_session(o.targetGoId, o.paymentSessionId, key)
        elif kind == "recurrenceRequest":
            got = legacy.sign_recurrence_request(o, key)
        elif kind == "refundRequest":
            got = legacy.sign_refund_request(o, key)
        elif kind in ("paymentStatus", "paymentResult"):
            o.encryptedSignature = want
            check = legacy.verify_payment_status if kind == "paymentStatus" else legacy.verify_payment_result
            got = want if check(o, key) == "ok" else "verify failed"
        else:  # kinds without a SOAP call here: sign the joined fields as given
            joined = v["concatenated"][: -len(key) - 1]
            got = legacy.sign(joined.split("|"), key)
        if got != want:
            failed += 1
            print(f"vector {i} ({kind}): got {got}, want {want}", file=sys.stderr)
    print(json.dumps({"vectors": str(len(vectors)), "failed": str(failed)}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
