// Shared launcher for the project's page tests: Debian's Chromium driven by
// playwright-core, headless, with a fresh profile per run. Go tests run the
// scripts beside this file with node (see restbackend/sandbox/browser_test.go).
import { chromium } from 'playwright-core';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

// launch starts Chromium with a throw-away user-data-dir; close() removes it.
export async function launch({ viewport = { width: 1000, height: 900 }, timeout = 20000 } = {}) {
  const userDataDir = mkdtempSync(join(tmpdir(), 'soapbridge-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport,
  });
  context.setDefaultTimeout(timeout);
  const page = context.pages()[0] || (await context.newPage());
  return {
    context,
    page,
    async close() {
      await context.close();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

// shot saves a full-page PNG as <dir>/<name>.png when dir is set.
export async function shot(page, dir, name) {
  if (!dir) return null;
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

// main runs fn and prints its result as one JSON line on stdout; failures
// go to stderr with exit code 1.
export function main(fn) {
  fn().then(
    (result) => { process.stdout.write(JSON.stringify(result ?? {}) + '\n'); },
    (err) => { process.stderr.write(String(err && err.stack ? err.stack : err) + '\n'); process.exit(1); },
  );
}
