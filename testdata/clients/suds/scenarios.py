"""Legacy e-shop scenarios run through suds (suds-community, Debian's
python3-suds) against the bridge.

Usage: python3 scenarios.py <scenario> [args...]
Environment: BRIDGE_WSDL_URL, SANDBOX_URL, GOID, SECURE_KEY.
Prints one JSON object of string facts ("create.result": "CALL_COMPLETED",
"create.sig": "ok", ...) that the Go test asserts on. A SOAP fault ends the
script with exit code 1 and the fault, request and reply on stderr.

The client is built the way suds e-shops did: Client(wsdl_url), objects from
client.factory, calls through client.service. Signing and verification are in
legacy.py, written independently of the Go code.
"""

import json
import os
import secrets
import sys
import time
import urllib.error
import urllib.request

from suds import WebFault
from suds.client import Client
from suds.plugin import MessagePlugin

import legacy

NS_PROVIDER = "urn:AxisEPaymentProvider"
NS_GATE = "http://gate.gopay.cz/ws"

facts = {}


def env(name):
    v = os.environ.get(name, "")
    if not v:
        print(f"missing environment variable {name}", file=sys.stderr)
        sys.exit(2)
    return v


GOID = int(env("GOID"))
KEY = env("SECURE_KEY")


def fact(k, v):
    if v is None:
        v = ""
    elif v is True or v is False:
        v = "true" if v else "false"
    facts[k] = str(v)


class Wire(MessagePlugin):
    """Keeps the last request and reply, printed when a call fails."""

    last_sent = last_reply = b""

    def sending(self, context):
        self.last_sent = context.envelope

    def received(self, context):
        self.last_reply = context.reply


wire = Wire()


def new_client():
    return Client(env("BRIDGE_WSDL_URL"), cache=None, timeout=30, plugins=[wire])


def new(c, ns, name):
    return c.factory.create("{%s}%s" % (ns, name))


def new_command(c, **over):
    cd = new(c, NS_PROVIDER, "ECustomerData")
    cd.firstName, cd.lastName, cd.email = "Jan", "Novák", "jan@example.cz"
    cd.city, cd.street, cd.postalCode = "Praha", "Dlouhá 1", "11000"
    cd.countryCode, cd.phoneNumber = "CZE", "+420777123456"
    cmd = new(c, NS_PROVIDER, "EPaymentCommand")
    values = dict(
        targetGoId=GOID,
        productName="Objednávka č. 42 – žluťoučký kůň",
        totalPrice=12900,
        currency="CZK",
        orderNumber="suds-" + secrets.token_hex(6),
        failedURL="https://eshop.example/failed",
        successURL="https://eshop.example/success",
        preAuthorization=False,
        recurrentPayment=False,
        paymentChannels="eu_gp_u,cz_kb",
        defaultPaymentChannel="eu_gp_u",
        lang="CS",
        customerData=cd,
    )
    values.update(over)
    for k, v in values.items():
        setattr(cmd, k, v)
    return cmd


def status_facts(p, s, cmd=None):
    """What the legacy library checked on an EPaymentStatus besides the signature."""
    g = lambda n: getattr(s, n, None)
    fact(f"{p}.result", g("result"))
    fact(f"{p}.resultDescription", g("resultDescription"))
    fact(f"{p}.state", g("sessionState"))
    fact(f"{p}.subState", g("sessionSubState"))
    fact(f"{p}.id", g("paymentSessionId"))
    fact(f"{p}.parent", g("parentPaymentSessionId"))
    fact(f"{p}.productName", g("productName"))
    fact(f"{p}.paymentChannel", g("paymentChannel"))
    fact(f"{p}.sig", legacy.verify_payment_status(s, KEY))
    if cmd is not None:
        diff = [f for f in ("orderNumber", "productName", "targetGoId", "totalPrice", "currency")
                if legacy.field(g(f)) != legacy.field(getattr(cmd, f))]
        fact(f"{p}.matches", "differs: " + ",".join(diff) if diff else "ok")


def result_facts(p, r):
    fact(f"{p}.result", getattr(r, "result", None))
    fact(f"{p}.resultDescription", getattr(r, "resultDescription", None))
    fact(f"{p}.id", getattr(r, "paymentSessionId", None))
    fact(f"{p}.sig", legacy.verify_payment_result(r, KEY))


def session_info(c, sid, goid=None, sig=None):
    i = new(c, NS_PROVIDER, "EPaymentSessionInfo")
    i.targetGoId = GOID if goid is None else goid
    i.paymentSessionId = sid
    i.encryptedSignature = sig if sig is not None else legacy.sign_payment_session(i.targetGoId, sid, KEY)
    return i


def refund_request(c, sid, amount, description):
    r = new(c, NS_GATE, "ERefundRequest")
    r.targetGoId, r.paymentSessionId, r.amount = GOID, sid, amount
    r.currency, r.description = "CZK", description
    r.encryptedSignature = legacy.sign_refund_request(r, KEY)
    return r


def create(c, cmd, p="create"):
    cmd.encryptedSignature = legacy.sign_payment_command(cmd, KEY)
    s = c.service.createPayment(cmd)
    status_facts(p, s, cmd)
    return s


def sandbox_post(path, body):
    """POST to a JSON test helper of the sandbox gateway; returns the HTTP status."""
    url = env("SANDBOX_URL").rstrip("/") + path
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        print(f"sandbox POST {url}: HTTP {e.code}: {e.read()!r}", file=sys.stderr)
        return e.code


def pay(sid, p="pay"):
    fact(f"{p}.http", sandbox_post(f"/sandbox/payments/{sid}/pay",
                                   {"outcome": "success", "instrument": "PAYMENT_CARD"}))


def create_and_pay(c, cmd):
    s = create(c, cmd)
    pay(s.paymentSessionId)
    return s


def status(c, sid, p="status", cmd=None):
    s = c.service.paymentStatus(session_info(c, sid))
    status_facts(p, s, cmd)
    return s


def refund_overload(c):
    """The refundPayment overload suds kept: 'part:type' of its one input part.
    suds maps operations by name, so of the two WSDL operations named
    refundPayment only the one declared last survives."""
    m = c.wsdl.services[0].ports[0].methods["refundPayment"]
    return ",".join(f"{p.name}:{p.type[0]}" for p in m.soap.input.body.parts)


def run(c, scenario, args):
    if scenario == "touch":
        fact("touch", c.service.touch())
        fact("methods", len(c.wsdl.services[0].ports[0].methods))
        fact("refundPayment.parts", refund_overload(c))

    elif scenario == "card_paid":
        cmd = new_command(c)
        s = create_and_pay(c, cmd)
        status(c, s.paymentSessionId, "status", cmd)

    elif scenario in ("preauth_capture", "preauth_void"):
        cmd = new_command(c, preAuthorization=True, totalPrice=5000, productName="Hold")
        s = create_and_pay(c, cmd)
        status(c, s.paymentSessionId, "authorized", cmd)
        info = session_info(c, s.paymentSessionId)
        op = c.service.capturePayment if scenario == "preauth_capture" else c.service.voidAuthorization
        result_facts("op", op(info))
        status(c, s.paymentSessionId, "status", cmd)

    elif scenario == "refund_whole":
        # suds cannot send the sessionInfo form of refundPayment (see
        # refund_overload): a suds e-shop refunds the whole amount through
        # the refundRequest form it has.
        cmd = new_command(c)
        s = create_and_pay(c, cmd)
        fact("refundPayment.parts", refund_overload(c))
        result_facts("op", c.service.refundPayment(refund_request(c, s.paymentSessionId, cmd.totalPrice, "vrácení")))
        status(c, s.paymentSessionId, "status", cmd)

    elif scenario == "refund_partial":
        cmd = new_command(c)
        s = create_and_pay(c, cmd)
        result_facts("op", c.service.partiallyRefundPayment(refund_request(c, s.paymentSessionId, 5000, "vrácení části")))
        fact("refundPayment.parts", refund_overload(c))
        result_facts("op2", c.service.refundPayment(refund_request(c, s.paymentSessionId, 3000, "druhá část")))
        status(c, s.paymentSessionId, "status", cmd)

    elif scenario == "recurrence_on_demand":
        cmd = new_command(c, productName="Monthly plan", totalPrice=19900, currency="EUR",
                          recurrentPayment=True, recurrenceCycle="ON_DEMAND",
                          recurrenceDateTo="2099-12-31", paymentChannels="eu_gp_u",
                          defaultPaymentChannel="eu_gp_u")
        s = create_and_pay(c, cmd)
        status(c, s.paymentSessionId, "status", cmd)
        fact("parent.id", s.paymentSessionId)
        rq = new(c, NS_GATE, "ERecurrenceRequest")
        rq.parentPaymentSessionId, rq.targetGoId = s.paymentSessionId, GOID
        rq.orderNumber, rq.totalPrice = cmd.orderNumber + "-1", 9900
        rq.encryptedSignature = legacy.sign_recurrence_request(rq, KEY)
        child = c.service.createRecurrentPayment(rq)
        status_facts("child", child)  # CREATED: the card is charged afterwards
        fact("child.totalPrice", getattr(child, "totalPrice", None))
        fact("child.orderNumber", getattr(child, "orderNumber", None))
        # As an e-shop does (or on the notification): poll until charged.
        for _ in range(100):
            paid = c.service.paymentStatus(session_info(c, child.paymentSessionId))
            if getattr(paid, "sessionState", None) != "CREATED":
                break
            time.sleep(0.05)
        status_facts("childPaid", paid)
        result_facts("void", c.service.voidRecurrentPayment(session_info(c, s.paymentSessionId)))

    elif scenario == "payment_methods":
        methods = c.service.paymentMethodList() or []
        codes = [str(getattr(m, "code", "") or "") for m in methods]
        fact("methods.count", len(codes))
        fact("methods.codes", ",".join(codes))

    elif scenario == "create_buyer":
        b = new(c, NS_PROVIDER, "EBuyerCreate")
        b.buyerEmail, b.eshopGoId, b.encryptedSignature = "b@example.cz", GOID, "00"
        r = c.service.createBuyer(b)
        fact("buyer.result", getattr(r, "result", None))
        fact("buyer.resultDescription", getattr(r, "resultDescription", None))

    elif scenario == "bad_signature":
        cmd = new_command(c)
        cmd.totalPrice = 1
        sig = legacy.sign_payment_command(cmd, KEY)  # signed over another price
        cmd.totalPrice = 12900
        cmd.encryptedSignature = sig
        status_facts("create", c.service.createPayment(cmd))
        status_facts("status", c.service.paymentStatus(session_info(c, 3000000001, None, "ab" * 40)))
        result_facts("capture", c.service.capturePayment(session_info(c, 3000000001, None, "zz")))

    elif scenario == "unknown_goid":
        cmd = new_command(c, targetGoId=1000000001)
        cmd.encryptedSignature = legacy.sign_payment_command(cmd, KEY)
        status_facts("create", c.service.createPayment(cmd))
        status_facts("status", c.service.paymentStatus(session_info(c, 3000000001, 1000000001)))

    elif scenario == "rest_validation":
        create(c, new_command(c, orderNumber="9" * 129), "long")
        create(c, new_command(c, currency="XYZ"), "currency")

    elif scenario == "status_wcust":
        cmd = new_command(c)
        s = create_and_pay(c, cmd)
        w = c.service.paymentStatusWCust(session_info(c, s.paymentSessionId))
        status_facts("status", w, cmd)
        cust, card = getattr(w, "customerData", None), getattr(w, "customerCardData", None)
        for f in ("firstName", "lastName", "email", "city", "countryCode"):
            fact(f"customer.{f}", getattr(cust, f, None))
        for f in ("cardNumber", "cardExpiration", "cardBrand", "cardIssuerCountry", "cardIssuerBank"):
            fact(f"card.{f}", getattr(card, f, None))

    else:
        print(f"unknown scenario '{scenario}'", file=sys.stderr)
        sys.exit(2)


def main(argv):
    scenario = argv[1] if len(argv) > 1 else ""
    c = new_client()
    rc = 0
    try:
        run(c, scenario, argv[2:])
    except WebFault as f:
        print(f"WebFault {f.fault.faultcode}: {f.fault.faultstring}", file=sys.stderr)
        print(f"request:\n{wire.last_sent.decode('utf-8', 'replace')}\nresponse:\n"
              f"{wire.last_reply.decode('utf-8', 'replace')}", file=sys.stderr)
        rc = 1
    # ASCII-only JSON: independent of the locale's stdout encoding.
    print(json.dumps(facts))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
