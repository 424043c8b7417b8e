/**
 * Screenshots of the server's pages for docs/ui.md, taken by the browser
 * tests at the moments they show each screen. Off unless
 * `LATCHKEY_UI_SCREENSHOTS` names a folder (`LATCHKEY_UI_SCREENSHOTS=docs/ui`
 * refreshes the documentation's pictures), so ordinary runs write nothing.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';

const DIR = process.env['LATCHKEY_UI_SCREENSHOTS'];

/** Saves `<dir>/<name>.png` of the whole page when screenshots are on. */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (!DIR) return;
  mkdirSync(DIR, { recursive: true });
  await page.screenshot({ path: join(DIR, `${name}.png`), fullPage: true, animations: 'disabled', caret: 'hide' });
}
