/**
 * The accessibility check of the browser tests: axe-core run on the page as
 * it is shown, its WCAG 2.x A and AA rules and best practices; the
 * violations of serious or critical impact (`seriousViolations`) or of any
 * impact (`allViolations`), each with its rule, its help text and the
 * elements it found.
 *
 * axe is put into the top document only and run there with `iframes: false`.
 * The dashboard's mail preview is a sandboxed frame without script holding
 * the administrator's own mail HTML: axe cannot run in it, and
 * @axe-core/playwright's AxeBuilder, which injects itself into every frame
 * first, waited for that frame forever.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const require = createRequire(import.meta.url);
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'];

interface Violation {
  id: string;
  impact?: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

export async function seriousViolations(page: Page): Promise<string[]> {
  return (await violations(page)).filter((v) => v.impact === 'serious' || v.impact === 'critical').map(describe);
}

/** Every violation whatever its impact (minor and moderate too), each with its rule, impact and the elements it found. */
export async function allViolations(page: Page): Promise<string[]> {
  return (await violations(page)).map((v) => `${describe(v)} [${String(v.impact)}]`);
}

const describe = (v: Violation): string => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`;

async function violations(page: Page): Promise<Violation[]> {
  // Playwright evaluates in the page's main world through the DevTools protocol, outside the page's CSP and Trusted Types.
  await page.evaluate(AXE_SOURCE);
  const found = await page.evaluate(async (tags: string[]) => {
    const axe = (globalThis as unknown as { axe: { run(ctx: unknown, o: unknown): Promise<{ violations: Violation[] }> } }).axe;
    const doc = (globalThis as unknown as { document: unknown }).document;
    const results = await axe.run(doc, { runOnly: { type: 'tag', values: tags }, iframes: false, resultTypes: ['violations'] });
    return results.violations.map((v) => ({ id: v.id, impact: v.impact ?? null, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) }));
  }, TAGS);
  return found;
}
