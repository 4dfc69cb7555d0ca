// Drives one legacy customer journey in headless Chromium for the bridge's
// Go tests (cmd/soapbridge/flows_e2e_test.go).
//
// Input: one JSON argument
//   {"start": URL, "steps": [{"wait": sel, "text": s, "shot": name, "fetch": URL, "click": sel}],
//    "expect": URL prefix, "shots": dir, "chromium": path}
// Each step waits for a selector, checks that the page shows text s, takes a
// screenshot, GETs URL from the test (a hook that changes the world between
// two pages, e.g. takes the gateway down), clicks; at the end the
// script waits until the page's URL starts with "expect" and takes a last
// screenshot. Output (stdout): {"url": final URL, "text": page text, "shots": [...]}.
import { chromium } from 'playwright-core';
import path from 'node:path';

const job = JSON.parse(process.argv[2]);
const browser = await chromium.launch({
  executablePath: job.chromium || '/usr/bin/chromium',
  headless: true,
  // Containers and CI run as root without user namespaces.
  args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
});
const shots = [];
let n = 0;
let page;
async function shot(page, name) {
  const file = path.join(job.shots, `${String(++n).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  shots.push(file);
}
try {
  page = await browser.newPage({ locale: 'cs-CZ' });
  page.setDefaultTimeout(20000);
  await page.goto(job.start);
  for (const step of job.steps || []) {
    if (step.wait) await page.waitForSelector(step.wait, { state: 'visible' });
    await page.waitForLoadState('load');
    if (step.text && !(await page.innerText('body')).includes(step.text)) {
      throw new Error(`page ${page.url()} does not show ${JSON.stringify(step.text)}`);
    }
    if (step.shot) await shot(page, step.shot);
    if (step.fetch) {
      const r = await fetch(step.fetch);
      if (!r.ok) throw new Error(`hook ${step.fetch}: HTTP ${r.status}`);
    }
    if (step.click) await page.click(step.click);
  }
  await page.waitForURL((u) => u.toString().startsWith(job.expect));
  await page.waitForLoadState('load');
  await shot(page, 'final');
  const text = await page.innerText('body');
  process.stdout.write(JSON.stringify({ url: page.url(), text, shots }) + '\n');
} catch (err) {
  process.stderr.write(String(err && err.stack || err) + '\n');
  if (page) {
    process.stderr.write('at ' + page.url() + '\n');
    await shot(page, 'error').catch(() => {});
  }
  process.exitCode = 1;
} finally {
  await browser.close();
}
