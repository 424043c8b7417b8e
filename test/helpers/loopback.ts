/**
 * Loopback plumbing shared by the tests that start servers on known ports or
 * drive a real browser.
 */
import { createServer } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { CHROMIUM_PATH } from './needs.ts';

/**
 * A port free on 127.0.0.1 at the time of the call, for a server whose public
 * URL must name its port before it starts (`--url`, an issuer). Another
 * process may take it meanwhile: callers retry a failed start on a new one.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * The system Chromium (`/usr/bin/chromium`, installed by `.ci/run` when
 * missing), headless, on a fresh temporary profile that playwright removes on
 * close. The flags keep it off the network it has no use for: without them it
 * reaches out for updates, sync and field trials at every start, which this
 * machine's closed network refuses.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    timeout: 60_000,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/**
 * Collects what must never happen on the server's pages: Content-Security-
 * Policy and Trusted Types violations (Chromium's console "Refused to …"
 * lines), page errors, and native dialogs (dismissed). The tests assert the
 * list is empty.
 */
export function watchPage(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (m) => {
    if (/Content.Security.Policy|Trusted Type|Refused to/i.test(m.text())) problems.push(m.text());
  });
  page.on('dialog', (d) => {
    problems.push(`dialog: ${d.message()}`);
    void d.dismiss();
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  return problems;
}

/**
 * Waits for the page to reach an address that `match` accepts and answers that address as it was then. A page that
 * moves on by itself (the sign-in page goes on to the account center, dropping the fragment) would make a later
 * `page.url()` read the next address instead.
 */
export async function landing(page: Page, match: (u: URL) => boolean, timeout: number): Promise<URL> {
  let seen: URL | undefined;
  await page.waitForURL((u) => {
    if (seen === undefined && match(u)) seen = u;
    return seen !== undefined;
  }, { timeout });
  if (seen === undefined) throw new Error(`the page never reached the address awaited; it is at ${page.url()}`);
  return seen;
}
