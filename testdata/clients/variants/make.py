"""Writes the request files of this directory: requests as the Java 2.4
library (pre-generated Axis 1.4 stubs, HttpURLConnection) and the .NET
proxy (wsdl.exe, SoapHttpClientProtocol) send them, from the facts in
legacy-protocol.md ("Variants in other client libraries that shops still
run"). See README.md for which client and which fact each file stands for.

    /usr/bin/python3 -B testdata/clients/variants/make.py

Signatures are computed here (hashlib, cryptography) for the demo merchant
of the embedded sandbox, independently of the Go code. Files are written
byte for byte (no trailing newline where the client sends none).
"""

import hashlib
import os
import sys

from cryptography.hazmat.primitives.ciphers import Cipher, modes

try:  # cryptography >= 43 moved TripleDES here
    from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
except ImportError:
    from cryptography.hazmat.primitives.ciphers.algorithms import TripleDES

HERE = os.path.dirname(os.path.abspath(__file__))
GOID = "8123456789"
KEY = "DemoSecureKey-0123456789"  # the embedded sandbox's demo merchant
SESSION = "3000000001"  # an e2e test substitutes the id of a payment it created


def sign(fields, charset="utf-8", java=False):
    digest = hashlib.sha1("|".join(fields + [KEY]).encode(charset)).hexdigest().encode("ascii")
    if java:  # the Java library pads with a whole extra block of zero bytes
        digest += b"\0" * 8
    enc = Cipher(TripleDES(KEY.encode()[:24]), modes.ECB()).encryptor()
    return (enc.update(digest) + enc.finalize()).hex()


def xml_text(s):
    """Axis escapes every non-ASCII character as a character reference."""
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "".join(c if ord(c) < 128 else "&#x%X;" % ord(c) for c in s)


def write(name, text):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(text.encode("utf-8"))


# --- Java 2.4 (Axis 1.4 stubs) -------------------------------------------

AXIS_HEAD = ('<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope'
             ' xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"'
             ' xmlns:xsd="http://www.w3.org/2001/XMLSchema"'
             ' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body>')
AXIS_TAIL = "</soapenv:Body></soapenv:Envelope>"
ENC = 'soapenc:root="0" soapenv:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"'
SOAPENC = 'xmlns:soapenc="http://schemas.xmlsoap.org/soap/encoding/"'


def axis_scalar(ident, xsd_type, value):
    return (f'<multiRef id="{ident}" {ENC} xsi:type="soapenc:{xsd_type}" {SOAPENC}>{value}</multiRef>')


def axis_str(name, v):
    if v is None:
        return f'<{name} xsi:type="soapenc:string" xsi:nil="true"/>'
    return f'<{name} xsi:type="soapenc:string">{xml_text(v)}</{name}>'


def java_create_payment_cp1250():
    product = "Objednávka č. 42 – žluťoučký kůň"
    order, failed, success, channels = "java-1250-42", "https://eshop.example/failed", "https://eshop.example/success", "eu_gp_u,cz_kb"
    sig = sign([GOID, product, "12900", "CZK", order, failed, success, "0", "0", "", "", "", channels],
               charset="cp1250", java=True)
    body = (AXIS_HEAD +
            '<ns1:createPayment soapenv:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"'
            ' xmlns:ns1="http://axis.web.gopay.cz"><paymentCommand href="#id0"/></ns1:createPayment>'
            f'<multiRef id="id0" {ENC} xsi:type="ns2:EPaymentCommand" {SOAPENC} xmlns:ns2="urn:AxisEPaymentProvider">'
            + axis_str("currency", "CZK") + '<customerData href="#id1"/>'
            + axis_str("defaultPaymentChannel", "eu_gp_u") + axis_str("encryptedSignature", sig)
            + axis_str("failedURL", failed) + axis_str("lang", "CS") + axis_str("orderNumber", order)
            + axis_str("p1", None) + axis_str("p2", None) + axis_str("p3", None) + axis_str("p4", None)
            + '<partnerGoId xsi:type="soapenc:long" xsi:nil="true"/>'
            + axis_str("paymentChannels", channels) + '<preAuthorization href="#id2"/>'
            + axis_str("productName", product) + axis_str("recurrenceCycle", None)
            + axis_str("recurrenceDateTo", None) + '<recurrencePeriod xsi:type="soapenc:int" xsi:nil="true"/>'
            + '<recurrentPayment href="#id2"/>' + axis_str("successURL", success)
            + '<targetGoId href="#id3"/><totalPrice href="#id4"/></multiRef>'
            + axis_scalar("id3", "long", GOID) + axis_scalar("id4", "long", "12900")
            + axis_scalar("id2", "boolean", "false")
            + f'<multiRef id="id1" {ENC} xsi:type="ns3:ECustomerData" xmlns:ns3="urn:AxisEPaymentProvider" {SOAPENC}>'
            + axis_str("city", "Brno") + axis_str("countryCode", "CZE") + axis_str("email", "jan@example.cz")
            + axis_str("firstName", "Jan") + axis_str("lastName", "Dvořák") + axis_str("phoneNumber", None)
            + axis_str("postalCode", "60200") + axis_str("street", "Údolní 5") + "</multiRef>" + AXIS_TAIL)
    write("java24-createPayment-cp1250.xml", body)


def java_refund(operation, name):
    """A refund with the part named `request`, the operation and every type
    qualified with http://gate.gopay.cz/ws (Java 2.4 stubs)."""
    amount, desc = "500", "Partial refund"
    sig = sign([GOID, SESSION, amount, "CZK", desc], java=True)
    body = (AXIS_HEAD +
            f'<ns1:{operation} soapenv:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"'
            f' xmlns:ns1="http://gate.gopay.cz/ws"><request href="#id0"/></ns1:{operation}>'
            f'<multiRef id="id0" {ENC} xsi:type="ns2:ERefundRequest" {SOAPENC} xmlns:ns2="http://gate.gopay.cz/ws">'
            '<amount href="#id1"/>' + axis_str("currency", "CZK") + axis_str("description", desc)
            + axis_str("encryptedSignature", sig) + '<paymentSessionId href="#id2"/><targetGoId href="#id3"/></multiRef>'
            + axis_scalar("id1", "long", amount) + axis_scalar("id2", "long", SESSION)
            + axis_scalar("id3", "long", GOID) + AXIS_TAIL)
    write(name, body)


def statement(name, content_type, java, user_agent, accept):
    date_from, date_to = "2026-01-01", "2026-01-31"
    sig = sign([date_from, date_to, GOID], java=java)  # no currency: four fields with the key
    query = (f"statementRequest.dateFrom={date_from}&statementRequest.dateTo={date_to}"
             f"&statementRequest.targetGoId={GOID}&statementRequest.contentType={content_type}"
             f"&statementRequest.encryptedSignature={sig}")
    write(name, f"GET /gw/services/get-account-statement?{query} HTTP/1.1\r\n"
                f"User-Agent: {user_agent}\r\nHost: 127.0.0.1\r\nAccept: {accept}\r\n"
                "Connection: keep-alive\r\n\r\n")


# --- .NET (wsdl.exe proxy, SoapHttpClientProtocol, [SoapRpcMethod]) --------

NET_HEAD = ('<?xml version="1.0" encoding="utf-8"?><soap:Envelope'
            ' xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"'
            ' xmlns:soapenc="http://schemas.xmlsoap.org/soap/encoding/"'
            ' xmlns:tns="https://testgw.gopay.cz/axis/EPaymentServiceV2"'
            ' xmlns:types="https://testgw.gopay.cz/axis/EPaymentServiceV2/encodedTypes"'
            ' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'
            ' xmlns:xsd="http://www.w3.org/2001/XMLSchema">'
            '<soap:Body soap:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/">')
NET_TAIL = "</soap:Body></soap:Envelope>"


def net_val(name, xsd_type, v):
    if v is None:
        return f'<{name} xsi:nil="true" />'
    v = v.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return f'<{name} xsi:type="xsd:{xsd_type}">{v}</{name}>'


def net_call(operation, part, type_ns, type_name, fields):
    return (NET_HEAD + f'<q1:{operation} xmlns:q1="http://axis.web.gopay.cz"><{part} href="#id1" /></q1:{operation}>'
            f'<q2:{type_name} id="id1" xsi:type="q2:{type_name}" xmlns:q2="{type_ns}">' + "".join(fields)
            + f"</q2:{type_name}>" + NET_TAIL)


def dotnet_refund():
    """The refundRequest form of refundPayment; on the wire it is refundPayment too."""
    amount, desc = "500", "Vrácení části"
    sig = sign([GOID, SESSION, amount, "CZK", desc])
    write("dotnet-refundPayment-refundRequest.xml", net_call(
        "refundPayment", "refundRequest", "http://gate.gopay.cz/ws", "ERefundRequest", [
            net_val("amount", "long", amount), net_val("currency", "string", "CZK"),
            net_val("description", "string", desc), net_val("encryptedSignature", "string", sig),
            net_val("paymentSessionId", "long", SESSION), net_val("targetGoId", "long", GOID)]))


def dotnet_void_recurrent():
    sig = sign([GOID, SESSION])
    write("dotnet-voidRecurrentPayment.xml", net_call(
        "voidRecurrentPayment", "sessionInfo", "urn:AxisEPaymentProvider", "EPaymentSessionInfo", [
            net_val("encryptedSignature", "string", sig), net_val("paymentSessionId", "long", SESSION),
            net_val("targetGoId", "long", GOID)]))


def dotnet_create_payment():
    """Untrimmed values and unset booleans (xsi:nil, joined as empty) in the signature."""
    product, order = " Objednávka 42 ", "net-42 "
    failed, success, channels = "https://eshop.example/failed", "https://eshop.example/success", "eu_gp_u, cz_kb"
    sig = sign([GOID, product, "12900", "CZK", order, failed, success, "", "", "", "", "", channels])
    fields = [
        net_val("currency", "string", "CZK"), '<customerData href="#id2" />',
        net_val("defaultPaymentChannel", "string", None), net_val("encryptedSignature", "string", sig),
        net_val("failedURL", "string", failed), net_val("lang", "string", "cs"),
        net_val("orderNumber", "string", order), net_val("p1", "string", None), net_val("p2", "string", None),
        net_val("p3", "string", None), net_val("p4", "string", None), net_val("partnerGoId", "long", None),
        net_val("paymentChannels", "string", channels), net_val("preAuthorization", "boolean", None),
        net_val("productName", "string", product), net_val("recurrenceCycle", "string", None),
        net_val("recurrenceDateTo", "string", None), net_val("recurrencePeriod", "int", None),
        net_val("recurrentPayment", "boolean", None), net_val("successURL", "string", success),
        net_val("targetGoId", "long", GOID), net_val("totalPrice", "long", "12900"),
    ]
    customer = ('<q3:ECustomerData id="id2" xsi:type="q3:ECustomerData" xmlns:q3="urn:AxisEPaymentProvider">'
                + net_val("city", "string", "Bratislava") + net_val("countryCode", "string", "SVK")
                + net_val("email", "string", "jan@example.sk") + net_val("firstName", "string", "Ján")
                + net_val("lastName", "string", "Kováč") + net_val("phoneNumber", "string", None)
                + net_val("postalCode", "string", "81101") + net_val("street", "string", "Hlavná 1")
                + "</q3:ECustomerData>")
    body = net_call("createPayment", "paymentCommand", "urn:AxisEPaymentProvider", "EPaymentCommand", fields)
    write("dotnet-createPayment-untrimmed.xml", body.replace(NET_TAIL, customer + NET_TAIL))


def pay_base_form_cp1250():
    """The base-integration form as a windows-1250 shop page posts it: the
    browser percent-encodes the page's charset, and the shop signed the
    joined string in that charset too (80 hex: a PHP shop)."""
    from urllib.parse import urlencode
    product, order = "Objednávka č. 1250 – žluťoučký kůň", "cp1250-1"
    failed, success = "https://eshop.example/failed", "https://eshop.example/success"
    sig = sign([GOID, product, "12900", "CZK", order, failed, success, "0", "0", "", "", "", ""], charset="cp1250")
    fields = [("targetGoId", GOID), ("productName", product), ("totalPrice", "12900"), ("currency", "CZK"),
              ("orderNumber", order), ("failedURL", failed), ("successURL", success),
              ("preAuthorization", "false"), ("recurrentPayment", "false"), ("encryptedSignature", sig),
              ("customerData.firstName", "Jiří"), ("customerData.lastName", "Černý"),
              ("customerData.countryCode", "CZE"), ("lang", "CZE")]
    write("pay-base-v2-cp1250.form", urlencode([("paymentCommand." + k, v) for k, v in fields], encoding="cp1250"))


def main():
    java_create_payment_cp1250()
    java_refund("partiallyRefundPayment", "java24-partiallyRefundPayment-request.xml")
    java_refund("refundPayment", "java24-refundPayment-request.xml")
    statement("java24-statement-no-currency.http", "TYPE_CSV", True, "Java/1.6.0_45",
              "text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2")
    statement("dotnet-statement-no-currency.http", "TYPE_XLS", False, "Mozilla/4.0 (compatible; MSIE 6.0; "
              "MS Web Services Client Protocol 2.0.50727.8825)", "*/*")
    dotnet_refund()
    dotnet_void_recurrent()
    dotnet_create_payment()
    pay_base_form_cp1250()


if __name__ == "__main__":
    sys.exit(main())
