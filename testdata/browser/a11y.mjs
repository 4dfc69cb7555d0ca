// Keyboard-only and accessibility checks of the sandbox payment page and
// its inline overlay, in headless Chromium (restbackend/sandbox/browser_test.go).
// usage: node a11y.mjs <job JSON>
//   {"mode": "page", "url": gw_url, "return": prefix, "width": 375, "shots": dir, "name": "cs-375"}
//     loads the page, runs axe-core, then Tab … Enter on the card payment
//   {"mode": "overlay", "url": shop page, "return": prefix, "width": 1280, "shots": dir, "name": "cs-1280"}
//     Tab to the shop's pay button, Enter, checks the dialog (aria-modal,
//     title, focus kept inside), Escape, reopens, Escape from inside the
//     gateway, reopens and pays by keyboard inside the overlay
// Prints one JSON line with what it saw.
import { createRequire } from 'node:module';
import { launch, main, shot } from './lib.mjs';

const require = createRequire(import.meta.url);
const AXE = require.resolve('axe-core/axe.min.js');
const job = JSON.parse(process.argv[2] || '{}');

// axe runs WCAG 2.x A/AA rules; serious and critical findings are returned.
async function axe(page, context) {
  await page.addScriptTag({ path: AXE });
  return page.evaluate(async (ctx) => {
    const r = await window.axe.run(ctx || document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } });
    return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 5) }));
  }, context);
}

// tabTo presses Tab until the focused element matches pred (in the page or a frame).
async function tabTo(page, pred, max = 60) {
  for (let i = 1; i <= max; i++) {
    await page.keyboard.press('Tab');
    if (await pred()) return i;
  }
  throw new Error('focus never reached the target');
}

main(async () => {
  const b = await launch({ viewport: { width: job.width, height: job.width < 500 ? 812 : 900 } });
  const { page } = b;
  const out = { name: job.name };
  try {
    await page.goto(job.url);
    if (job.mode === 'page') {
      out.lang = await page.getAttribute('html', 'lang');
      out.title = await page.title();
      out.violations = await axe(page);
      out.overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
      await shot(page, job.shots, `page-${job.name}`);
      out.tabs = await tabTo(page, () => page.evaluate(() => document.activeElement && document.activeElement.id === 'pay-card'));
      out.focusVisible = await page.evaluate(() => {
        const r = document.activeElement.getBoundingClientRect();
        return r.width > 0 && r.height > 0 && getComputedStyle(document.activeElement, ':focus-visible').outlineStyle !== 'none';
      });
      await shot(page, job.shots, `page-${job.name}-focused`);
      const landed = page.waitForURL((u) => u.href.startsWith(job.return));
      await page.keyboard.press('Enter');
      await landed;
      out.final = page.url();
      return out;
    }
    // overlay
    out.shopTabs = await tabTo(page, () => page.evaluate(() => document.activeElement && document.activeElement.name === 'pay'));
    const open = async () => {
      await page.keyboard.press('Enter');
      await page.locator('#gopay-gateway-iframe').waitFor();
      await page.frameLocator('#gopay-gateway-iframe').locator('#sandbox-gateway').waitFor();
    };
    await open();
    out.dialog = await page.evaluate(() => {
      const o = document.getElementById('gopay-gateway-overlay');
      return {
        role: o.getAttribute('role'), modal: o.getAttribute('aria-modal'), label: o.getAttribute('aria-label'),
        frameTitle: document.getElementById('gopay-gateway-iframe').title,
        closeLabel: document.getElementById('gopay-gateway-close').getAttribute('aria-label'),
        focused: document.activeElement && document.activeElement.id,
      };
    });
    await shot(page, job.shots, `overlay-${job.name}-open`);
    out.violations = await axe(page, { exclude: [['#gopay-gateway-iframe']] });
    // Focus stays in the dialog however often Tab is pressed.
    out.escapedFocus = [];
    for (let i = 0; i < 25; i++) {
      await page.keyboard.press(i % 7 === 6 ? 'Shift+Tab' : 'Tab');
      const where = await page.evaluate(() => {
        const a = document.activeElement;
        const o = document.getElementById('gopay-gateway-overlay');
        return a === document.body || (o && o.contains(a)) ? null : (a.id || a.tagName);
      });
      if (where) out.escapedFocus.push(where);
    }
    await page.keyboard.press('Escape'); // may be inside the gateway frame: it asks the parent to close
    await page.locator('#gopay-gateway-overlay').waitFor({ state: 'detached' });
    out.afterEscape = await page.evaluate(() => document.activeElement && document.activeElement.name);
    await open();
    await page.keyboard.press('Escape'); // focus on the close button: the parent handles it
    await page.locator('#gopay-gateway-overlay').waitFor({ state: 'detached' });
    out.closedFromTop = true;
    // Pay inside the overlay with the keyboard only.
    await page.focus('button[name=pay]');
    await open();
    const frame = page.frameLocator('#gopay-gateway-iframe');
    out.payTabs = await tabTo(page, () => frame.locator('#pay-card').evaluate((el) => el === document.activeElement));
    await shot(page, job.shots, `overlay-${job.name}-pay-focused`);
    const landed = page.waitForURL((u) => u.href.startsWith(job.return));
    await page.keyboard.press('Enter');
    await landed;
    out.final = page.url();
    return out;
  } finally {
    await b.close();
  }
});
