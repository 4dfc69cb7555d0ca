// The migration report's layout in headless Chromium
// (operations/usage/report/browser_test.go).
// usage: node report_page.mjs <url> <width> [shots dir]
// Prints one JSON line: the page's scroll width and the viewport's, and the
// widest <pre> against its cell.
import { launch, main, shot } from './lib.mjs';

const [url, width, shots] = process.argv.slice(2);

main(async () => {
  const b = await launch({ viewport: { width: Number(width), height: 900 } });
  try {
    const { page } = b;
    await page.goto(url);
    const out = await page.evaluate(() => ({
      scrollWidth: document.documentElement.scrollWidth,
      clientWidth: document.documentElement.clientWidth,
      pres: [...document.querySelectorAll('pre')].map((p) => p.scrollWidth - p.clientWidth).filter((d) => d > 0).length,
    }));
    await shot(page, shots, `report-${width}`);
    return out;
  } finally {
    await b.close();
  }
});
