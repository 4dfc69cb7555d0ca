/* Sandbox gateway: inline variant. Loaded by a script tag inside the
   merchant's form whose action is gw_url; on submit it opens gw_url in a
   modal overlay instead of leaving the page. The payment page's forms target
   _top, so the customer's choice brings the whole window to return_url.
   The overlay is a real modal dialog: aria-modal, titled in the merchant
   page's language, the rest of the page inert (focus stays inside), Escape
   (here or inside the gateway page, which posts {gopay:"close"}) closes it
   and focus returns to what opened it. */
(function () {
  'use strict';
  var OVERLAY_ID = 'gopay-gateway-overlay';
  var TEXTS = {
    cs: { title: 'Platební brána', close: 'Zavřít platební bránu' },
    sk: { title: 'Platobná brána', close: 'Zavrieť platobnú bránu' },
    en: { title: 'Payment gateway', close: 'Close the payment gateway' }
  };
  var opener = null;
  var inerted = [];

  function texts() {
    var lang = (document.documentElement.lang || navigator.language || 'en').toLowerCase().slice(0, 2);
    return TEXTS[lang] || TEXTS.en;
  }

  function open(url) {
    close();
    opener = document.activeElement;
    var t = texts();
    var overlay = document.createElement('div');
    overlay.id = OVERLAY_ID;
    overlay.setAttribute('role', 'dialog');
    overlay.setAttribute('aria-modal', 'true');
    overlay.setAttribute('aria-label', t.title);
    overlay.style.cssText = 'position:fixed;inset:0;z-index:2147483000;background:rgba(0,0,0,.55);' +
      'display:flex;align-items:center;justify-content:center';
    var box = document.createElement('div');
    box.style.cssText = 'display:flex;flex-direction:column;width:min(40rem,100vw);height:min(46rem,100vh);background:#fff;border-radius:8px;overflow:hidden';
    // The close button sits in a bar of its own so it never covers the page.
    var bar = document.createElement('div');
    bar.style.cssText = 'display:flex;justify-content:flex-end;background:#15406f;padding:2px 4px';
    var x = document.createElement('button');
    x.type = 'button';
    x.id = 'gopay-gateway-close';
    x.textContent = '\u00d7';
    x.setAttribute('aria-label', t.close);
    x.style.cssText = 'width:2.75rem;height:2.75rem;border:0;border-radius:50%;background:#fff;color:#15406f;font-size:1.6rem;cursor:pointer';
    x.onclick = close;
    bar.appendChild(x);
    var frame = document.createElement('iframe');
    frame.id = 'gopay-gateway-iframe';
    frame.title = t.title;
    frame.src = url + (url.indexOf('?') < 0 ? '?' : '&') + 'embedded=1';
    frame.style.cssText = 'border:0;width:100%;flex:1';
    box.appendChild(bar);
    box.appendChild(frame);
    overlay.appendChild(box);
    // Everything else becomes inert: Tab cannot leave the dialog.
    Array.prototype.forEach.call(document.body.children, function (el) {
      if (!el.inert && el.tagName !== 'SCRIPT') { el.inert = true; inerted.push(el); }
    });
    document.body.appendChild(overlay);
    document.addEventListener('keydown', onKey, true);
    window.addEventListener('message', onMessage);
    frame.addEventListener('load', function () { try { frame.focus(); } catch (e) { /* cross-origin */ } });
    x.focus();
  }

  function onKey(ev) {
    if (ev.key === 'Escape') { ev.preventDefault(); close(); }
  }

  function onMessage(ev) {
    var frame = document.getElementById('gopay-gateway-iframe');
    if (frame && ev.source === frame.contentWindow && ev.data && ev.data.gopay === 'close') { close(); }
  }

  function close() {
    var o = document.getElementById(OVERLAY_ID);
    if (!o) { return; }
    o.parentNode.removeChild(o);
    inerted.forEach(function (el) { el.inert = false; });
    inerted = [];
    document.removeEventListener('keydown', onKey, true);
    window.removeEventListener('message', onMessage);
    if (opener && opener.focus) { opener.focus(); }
    opener = null;
  }

  var script = document.currentScript;
  var form = script && script.closest ? script.closest('form') : null;
  if (form) {
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      open(form.getAttribute('action'));
    });
  }
  window._gopay = {
    checkout: function (opts) {
      if (opts && opts.inline === false) { window.location.href = opts.gatewayUrl; return; }
      open(opts.gatewayUrl);
    },
    close: close
  };
})();
