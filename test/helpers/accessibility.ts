/**
 * The accessibility check of the browser tests: axe-core (through
 * @axe-core/playwright) run on the page as it is shown, its WCAG 2.x A and
 * AA rules and best practices; the violations of serious or critical impact,
 * each with its rule, its help text and the elements it found. Frames are
 * not entered: the only one, the dashboard's mail preview, is a sandboxed
 * document without script (axe cannot run in it) holding the
 * administrator's own mail HTML.
 */
import { AxeBuilder } from '@axe-core/playwright';
import type { Page } from 'playwright-core';

export async function seriousViolations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']).options({ iframes: false }).analyze();
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}
