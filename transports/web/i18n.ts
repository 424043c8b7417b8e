/**
 * Which language a page is shown in: the first of the request's
 * `ui_locales` (OpenID Connect Core §3.1.2.1: space-separated BCP 47 tags,
 * carried to `/app` with the rest of the authorization request) that the
 * page has; else the signed-in user's saved preference (the profile's
 * `locale`, set from the account center or `update_profile`); else the
 * reader's choice in this browser (the `latchkey_lang` cookie the pages'
 * language menus set); else the best of `Accept-Language` by its
 * weights (RFC 9110 §12.5.4); else the default, the first available. Tags
 * match on their primary subtag (`de-AT` is `de`).
 */

/** Each page language by its own name, for the language menus. */
export const LANGUAGE_NAMES: Readonly<Record<string, string>> = { en: 'English', de: 'Deutsch', fr: 'Français', es: 'Español', ja: '日本語', ar: 'العربية' };

/** The cookie that keeps the reader's choice of language. */
export const LANGUAGE_COOKIE = 'latchkey_lang';

const primary = (tag: string): string => tag.trim().toLowerCase().split(/[-_]/)[0] ?? '';

/** The languages of `Accept-Language`, by weight (highest first, ties in their order), without `q=0` and `*`. */
export function acceptedLanguages(header: string | undefined): string[] {
  if (header === undefined || header.length > 1024) return [];
  const items: { tag: string; q: number; i: number }[] = [];
  header.split(',').forEach((part, i) => {
    const [tag = '', ...params] = part.split(';');
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    if (tag.trim() === '' || tag.trim() === '*' || !Number.isFinite(q) || q <= 0) return;
    items.push({ tag: tag.trim(), q, i });
  });
  return items.sort((a, b) => b.q - a.q || a.i - b.i).map((x) => x.tag);
}

/** The language to show, from the request (see the module comment). */
export function pickLanguage(
  available: readonly string[],
  o: { uiLocales?: unknown; preferred?: string | null | undefined; saved?: string | undefined; acceptLanguage?: string | undefined },
): string {
  const has = (tag: string): string | undefined => available.find((a) => a === primary(tag));
  const ui = typeof o.uiLocales === 'string' && o.uiLocales.length <= 256 ? o.uiLocales.split(' ') : [];
  for (const tag of ui) {
    const hit = has(tag);
    if (hit !== undefined) return hit;
  }
  for (const choice of [o.preferred, o.saved]) {
    const hit = typeof choice === 'string' ? has(choice) : undefined;
    if (hit !== undefined) return hit;
  }
  for (const tag of acceptedLanguages(o.acceptLanguage)) {
    const hit = has(tag);
    if (hit !== undefined) return hit;
  }
  return available[0] ?? 'en';
}

/** The saved language of the user whose session cookie a page request carries (undefined when none). */
export type UserLocaleOf = (cookies: Readonly<Record<string, string>>) => Promise<string | undefined>;

/**
 * A page per language, rendered on its first request and kept after. The built-in pages are rendered from
 * catalogues, and each is up to 250 KB of text: rendering every language at start cost an idle server about
 * 3 MiB of heap and start-up CPU for languages it may never be asked for (docs/performance.md, "Server
 * footprint"). Asked for a language it was not given, it answers the first (the default).
 */
export function perLanguage<T>(languages: readonly string[], render: (lang: string) => T): (lang: string) => T {
  const pages = new Map<string, T>();
  return (lang) => {
    const key = languages.includes(lang) ? lang : (languages[0] ?? 'en');
    let page = pages.get(key);
    if (page === undefined) {
      page = render(key);
      pages.set(key, page);
    }
    return page;
  };
}
