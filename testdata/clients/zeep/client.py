"""A legacy e-shop on zeep (Debian's python3-zeep), the schema-validating
Python SOAP client: it resolves every schema import of the WSDL, so it can
only load the bridge's WSDL offline if the bridge serves the SOAP-encoding
schema itself.

Usage: python3 client.py
Environment: BRIDGE_WSDL_URL, SANDBOX_URL, GOID, SECURE_KEY.

Any fetch or call to a host other than 127.0.0.1 raises (OfflineTransport),
so a schema looked up on the internet fails the run. Prints one JSON object
of string facts for the Go test; signatures are made and checked by
legacy.py (the suds client's, written independently of the Go code).
"""

import json
import os
import secrets
import sys
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "suds"))

import legacy  # noqa: E402
import zeep  # noqa: E402
from zeep.helpers import serialize_object  # noqa: E402
from zeep.transports import Transport  # noqa: E402

NS_PROVIDER = "urn:AxisEPaymentProvider"

facts = {"fetched": ""}


def fact(k, v):
    if v is None:
        v = ""
    elif v is True or v is False:
        v = "true" if v else "false"
    facts[k] = str(v)


def env(name):
    v = os.environ.get(name, "")
    if not v:
        print(f"missing environment variable {name}", file=sys.stderr)
        sys.exit(2)
    return v


GOID = int(env("GOID"))
KEY = env("SECURE_KEY")


class Refused(Exception):
    pass


class OfflineTransport(Transport):
    """Loads and posts only to 127.0.0.1: the network is 'off'."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.session.trust_env = False  # no proxy from the environment

    @staticmethod
    def check(url):
        host = urllib.parse.urlsplit(url).hostname
        if host != "127.0.0.1":
            raise Refused(f"refused non-loopback fetch: {url}")

    def load(self, url):
        if "://" in url:
            self.check(url)
            facts["fetched"] += urllib.parse.urlsplit(url).query + ";"
        return super().load(url)

    def post(self, address, message, headers):
        self.check(address)
        return super().post(address, message, headers)

    def get(self, address, params, headers):
        self.check(address)
        return super().get(address, params, headers)


def sandbox_pay(sid):
    url = env("SANDBOX_URL").rstrip("/") + f"/sandbox/payments/{sid}/pay"
    OfflineTransport.check(url)
    req = urllib.request.Request(url, data=json.dumps({"outcome": "success", "instrument": "PAYMENT_CARD"}).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code


def plain(o):
    """A reply struct as an Obj of plain values. The soapenc scalar types are
    complex types with simple content (they carry id/href), so zeep gives
    each value as an object holding it in _value_1."""
    out = Obj()
    for k, v in serialize_object(o, dict).items():
        if isinstance(v, dict) and "_value_1" in v:
            v = v["_value_1"]
        out[k] = v
    return out


def status_facts(p, s, cmd):
    g = lambda n: getattr(s, n, None)
    fact(f"{p}.result", g("result"))
    fact(f"{p}.resultDescription", g("resultDescription"))
    fact(f"{p}.state", g("sessionState"))
    fact(f"{p}.id", g("paymentSessionId"))
    fact(f"{p}.productName", g("productName"))
    fact(f"{p}.sig", legacy.verify_payment_status(s, KEY))
    diff = [f for f in ("orderNumber", "productName", "targetGoId", "totalPrice", "currency")
            if legacy.field(g(f)) != legacy.field(cmd[f])]
    fact(f"{p}.matches", "differs: " + ",".join(diff) if diff else "ok")


class Obj(dict):
    """A dict whose keys legacy.py reads as attributes."""

    __getattr__ = dict.get


def main():
    client = zeep.Client(env("BRIDGE_WSDL_URL"), transport=OfflineTransport(cache=None, timeout=30))
    svc = client.service
    touch = svc.touch()
    fact("touch", getattr(touch, "_value_1", touch))

    Command = client.get_type(f"{{{NS_PROVIDER}}}EPaymentCommand")
    Customer = client.get_type(f"{{{NS_PROVIDER}}}ECustomerData")
    Info = client.get_type(f"{{{NS_PROVIDER}}}EPaymentSessionInfo")
    cmd = Obj(
        targetGoId=GOID,
        productName="Objednávka č. 42 – žluťoučký kůň",
        totalPrice=12900,
        currency="CZK",
        orderNumber="zeep-" + secrets.token_hex(6),
        failedURL="https://eshop.example/failed",
        successURL="https://eshop.example/success",
        preAuthorization=False,
        recurrentPayment=False,
        paymentChannels="eu_gp_u,cz_kb",
        defaultPaymentChannel="eu_gp_u",
        lang="CS",
    )
    cmd["encryptedSignature"] = legacy.sign_payment_command(cmd, KEY)
    customer = Customer(firstName="Jan", lastName="Novák", email="jan@example.cz", city="Praha",
                        street="Dlouhá 1", postalCode="11000", countryCode="CZE", phoneNumber="+420777123456")
    s = plain(svc.createPayment(Command(customerData=customer, **cmd)))
    status_facts("create", s, cmd)
    sid = s.paymentSessionId
    fact("pay.http", sandbox_pay(sid))

    info = Info(targetGoId=GOID, paymentSessionId=sid,
                encryptedSignature=legacy.sign_payment_session(GOID, sid, KEY))
    s = plain(svc.paymentStatus(info))
    status_facts("status", s, cmd)

    print(json.dumps(facts, ensure_ascii=False))


if __name__ == "__main__":
    main()
