// A legacy e-shop on Node.js `soap` (npm, version pinned in package.json):
// it reads the bridge's WSDL and calls the RPC/encoded operations from it.
// Signatures are made and checked here with node:crypto, written
// independently of the Go code.
//
// Usage: node shop.js <historic>
// Environment: BRIDGE_WSDL_URL, SANDBOX_URL, GOID, SECURE_KEY.
// Prints one JSON object of string facts for the Go test.
'use strict';

const crypto = require('node:crypto');
const soap = require('soap');

function env(name) {
  const v = process.env[name];
  if (!v) {
    console.error(`missing environment variable ${name}`);
    process.exit(2);
  }
  return v;
}

const GOID = env('GOID');
const KEY = env('SECURE_KEY');
const facts = {};
const fact = (k, v) => { facts[k] = v === undefined || v === null ? '' : String(v); };

// --- the signature scheme -----------------------------------------------------

const trim = (s) => (s === undefined || s === null ? '' : String(s)).replace(/^[ \t\r\n\0\x0B]+|[ \t\r\n\0\x0B]+$/g, '');
const field = (v) => (v === undefined || v === null ? '' : v === true ? '1' : v === false ? '0' : String(v));
const bool01 = (v) => (v === undefined || v === null || v === '' ? '' : v === true || v === 'true' || v === '1' ? '1' : '0');

function hash(fields) {
  return crypto.createHash('sha1').update([...fields.map(field), KEY].join('|'), 'utf8').digest('hex');
}

function cipher(decrypt) {
  const key = Buffer.from(KEY, 'utf8').subarray(0, 24);
  const c = decrypt ? crypto.createDecipheriv('des-ede3', key, null) : crypto.createCipheriv('des-ede3', key, null);
  c.setAutoPadding(false);
  return c;
}

function sign(fields) {
  const c = cipher(false);
  return Buffer.concat([c.update(hash(fields), 'latin1'), c.final()]).toString('hex');
}

function verify(fields, sig) {
  if (!sig) return 'missing';
  if (!/^[0-9a-f]+$/i.test(sig) || sig.length % 16 !== 0) return 'bad';
  const c = cipher(true);
  const plain = Buffer.concat([c.update(Buffer.from(sig, 'hex')), c.final()]).toString('latin1').replace(/\0+$/, '').trim();
  return plain === hash(fields) ? 'ok' : 'bad';
}

// Reply values: node-soap gives a simple value typed by xsi:type as
// {attributes, $value}, or the value itself.
const val = (v) => (v !== null && typeof v === 'object' && '$value' in v ? v.$value : v);

function verifyStatus(s) {
  const g = (n) => val(s[n]);
  return verify([g('targetGoId'), trim(g('productName')), g('totalPrice'), g('currency'), trim(g('orderNumber')),
    bool01(g('recurrentPayment')), g('parentPaymentSessionId'), bool01(g('preAuthorization')), g('result'),
    g('sessionState'), g('sessionSubState'), g('paymentChannel')], g('encryptedSignature'));
}

function statusFacts(p, s) {
  const g = (n) => val(s[n]);
  fact(`${p}.result`, g('result'));
  fact(`${p}.resultDescription`, g('resultDescription'));
  fact(`${p}.state`, g('sessionState'));
  fact(`${p}.id`, g('paymentSessionId'));
  fact(`${p}.productName`, g('productName'));
  fact(`${p}.paymentChannel`, g('paymentChannel'));
  fact(`${p}.sig`, verifyStatus(s));
}

async function sandboxPay(id, body) {
  const r = await fetch(`${env('SANDBOX_URL')}/sandbox/payments/${id}/pay`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ outcome: 'success', ...body }),
  });
  if (!r.ok) console.error(`sandbox pay: ${r.status} ${await r.text()}`);
  return r.status;
}

async function main() {
  const client = await soap.createClientAsync(env('BRIDGE_WSDL_URL'));
  const scenario = process.argv[2] || '';
  if (scenario !== 'historic') {
    console.error('usage: node shop.js historic');
    process.exit(2);
  }
  // A shop configured before 2015: its channel list holds only codes of
  // earlier years (Volksbank, gone: any bank; Fio's older code; premium
  // SMS). The customer pays by the Fio button.
  const cmd = {
    targetGoId: GOID, productName: 'Předplatné – Šumava', totalPrice: 49900, currency: 'CZK',
    orderNumber: 'node-' + crypto.randomBytes(5).toString('hex'),
    failedURL: 'https://eshop.example/failed', successURL: 'https://eshop.example/success',
    preAuthorization: false, recurrentPayment: false,
    paymentChannels: 'cz_vb,cz_fio,cz_sms', defaultPaymentChannel: 'cz_fio', lang: 'CS',
    customerData: { firstName: 'Jiří', lastName: 'Novák', email: 'jiri.novak@example.cz', countryCode: 'CZE' },
  };
  cmd.encryptedSignature = sign([cmd.targetGoId, trim(cmd.productName), cmd.totalPrice, trim(cmd.currency), trim(cmd.orderNumber),
    trim(cmd.failedURL), trim(cmd.successURL), bool01(cmd.preAuthorization), bool01(cmd.recurrentPayment), '', '', '',
    trim(cmd.paymentChannels)]);
  const [created] = await client.createPaymentAsync({ paymentCommand: cmd });
  const s = created.createPaymentReturn;
  statusFacts('create', s);
  const id = val(s.paymentSessionId);
  fact('pay.http', await sandboxPay(id, { instrument: 'BANK_ACCOUNT', swift: 'FIOBCZPP' }));
  const [st] = await client.paymentStatusAsync({
    paymentSessionInfo: { targetGoId: GOID, paymentSessionId: id, encryptedSignature: sign([GOID, id]) },
  });
  statusFacts('status', st.paymentStatusReturn);
  process.stdout.write(JSON.stringify(facts) + '\n');
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
