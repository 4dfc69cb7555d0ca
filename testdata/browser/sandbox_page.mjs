// Drives the sandbox gateway's payment page like a customer.
// usage: node sandbox_page.mjs <mode> <url> <return-url-prefix> [screenshot-dir]
//   card-success  open url (gw_url), choose card → success, pay
//   card-declined open url, choose card → declined, pay
//   cancel        open url, cancel the payment
//   inline        open url (the merchant's page with the inline form), press
//                 pay, pay by card inside the overlay
// Prints {"final": <url landed on>, "gateway": {title, heading, card}}.
import { launch, main, shot } from './lib.mjs';

const [mode, url, returnPrefix, dir] = process.argv.slice(2);
if (!mode || !url || !returnPrefix) {
  process.stderr.write('usage: node sandbox_page.mjs <mode> <url> <return-url-prefix> [screenshot-dir]\n');
  process.exit(2);
}

main(async () => {
  const b = await launch();
  try {
    const { page } = b;
    await page.goto(url);
    let gw = page.locator('#sandbox-gateway');
    let root = page;
    if (mode === 'inline') {
      await shot(page, dir, `${mode}-1-shop`);
      await page.locator('button[name=pay]').click();
      await page.locator('#gopay-gateway-iframe').waitFor();
      root = page.frameLocator('#gopay-gateway-iframe');
      gw = root.locator('#sandbox-gateway');
    }
    await gw.waitFor();
    const gateway = {
      title: mode === 'inline' ? null : await page.title(),
      heading: await root.locator('h1').innerText(),
      card: await root.locator('#card-form > fieldset > legend').innerText(),
    };
    await shot(page, dir, `${mode}-2-gateway`);
    const landed = page.waitForURL((u) => u.href.startsWith(returnPrefix));
    switch (mode) {
      case 'card-success':
      case 'inline':
        await root.locator('input[name=outcome][value=success]').check();
        await root.locator('#pay-card').click();
        break;
      case 'card-declined':
        await root.locator('input[name=outcome][value=declined]').check();
        await root.locator('#pay-card').click();
        break;
      case 'cancel':
        await root.locator('#cancel').click();
        break;
      default:
        throw new Error(`unknown mode ${mode}`);
    }
    await landed;
    await page.waitForLoadState('load');
    await shot(page, dir, `${mode}-3-returned`);
    return { final: page.url(), gateway, body: await page.locator('body').innerText() };
  } finally {
    await b.close();
  }
});
