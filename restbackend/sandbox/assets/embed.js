/* Sandbox gateway: inline variant. Loaded by a script tag inside the
   merchant's form whose action is gw_url; on submit it opens gw_url in an
   overlay instead of leaving the page. The payment page's forms target
   _top, so the customer's choice brings the whole window to return_url. */
(function () {
  'use strict';
  var OVERLAY_ID = 'gopay-gateway-overlay';

  function open(url) {
    close();
    var overlay = document.createElement('div');
    overlay.id = OVERLAY_ID;
    overlay.setAttribute('role', 'dialog');
    overlay.style.cssText = 'position:fixed;inset:0;z-index:2147483000;background:rgba(0,0,0,.55);' +
      'display:flex;align-items:center;justify-content:center';
    var box = document.createElement('div');
    box.style.cssText = 'position:relative;width:min(40rem,96vw);height:min(46rem,94vh);background:#fff;border-radius:8px;overflow:hidden';
    var frame = document.createElement('iframe');
    frame.id = 'gopay-gateway-iframe';
    frame.title = 'Payment gateway';
    frame.src = url + (url.indexOf('?') < 0 ? '?' : '&') + 'embedded=1';
    frame.style.cssText = 'border:0;width:100%;height:100%';
    var x = document.createElement('button');
    x.type = 'button';
    x.id = 'gopay-gateway-close';
    x.textContent = '\u00d7';
    x.setAttribute('aria-label', 'Close');
    x.style.cssText = 'position:absolute;top:4px;right:8px;border:0;background:none;font-size:1.6rem;cursor:pointer';
    x.onclick = close;
    box.appendChild(frame);
    box.appendChild(x);
    overlay.appendChild(box);
    document.body.appendChild(overlay);
  }

  function close() {
    var o = document.getElementById(OVERLAY_ID);
    if (o) { o.parentNode.removeChild(o); }
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
