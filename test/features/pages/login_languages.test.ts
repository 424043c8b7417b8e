/**
 * The sign-in page in every language: English, German, French, Spanish,
 * Japanese and Arabic (right to left). The language follows `ui_locales`
 * (carried from /authorize), then the saved choice (the language menu's
 * cookie), then `Accept-Language`; no string of the page is left in English
 * in another language; Arabic is laid out right to left; axe finds no
 * serious violation; meta lists the languages. The account center likewise;
 * the built-in mails, the SMS and the invitation have every text in every language. The choice of language is a
 * unit of its own (transports/web/i18n.ts).
 */
import anyTest from 'ava';
import type { Browser } from 'playwright-core';
import { launchChromium, watchPage } from '../../helpers/loopback.ts';
import { needs } from '../../helpers/needs.ts';
import { startTestServer, type TestServer } from '../../helpers/server.ts';
import { seriousViolations } from '../../helpers/accessibility.ts';
import { screenshot } from '../../helpers/screenshots.ts';
import { LOGIN_MESSAGES, LOGIN_MESSAGE_KEYS } from '../../../transports/web/login_messages.ts';
import { acceptedLanguages, pickLanguage } from '../../../transports/web/i18n.ts';
import { ACCOUNT_MESSAGES, ACCOUNT_MESSAGE_KEYS } from '../../../transports/web/account_messages.ts';
import { EMAIL_LANGUAGES, EMAIL_TEMPLATE_EVENTS, NOTICE_LANGUAGES, defaultTemplate, invitationMail, smsCodeText } from '../../../admin/index.ts';

const test = anyTest.serial;
const LANGS = ['en', 'de', 'fr', 'es', 'ja', 'ar'];
/** Words that are the same in English and the language (checked by a reader, not left over). */
const SAME_AS_ENGLISH: Record<string, string[]> = { de: ['code', 'nameOptional'], fr: ['code'] };
/** The same for the account center. */
const ACCOUNT_SAME_AS_ENGLISH: Record<string, string[]> = { fr: ['profile', 'sessions'] };

let server: TestServer;
let browser: Browser | undefined;
test.before(async () => {
  server = await startTestServer({ 'github-client-id': 'gh', 'github-client-secret': 'gh-secret' });
});
test.after.always(async () => {
  await browser?.close();
  await server?.close();
});

const page = async (headers: Record<string, string>, query = ''): Promise<{ html: string; res: Response }> => {
  const res = await fetch(`${server.httpUrl}/app${query}`, { headers });
  return { html: await res.text(), res };
};

test('every catalogue has exactly the English keys, and no message is left in English', (t) => {
  t.deepEqual(Object.keys(LOGIN_MESSAGES), LANGS);
  for (const lang of LANGS) {
    t.deepEqual(Object.keys(LOGIN_MESSAGES[lang]!).sort(), [...LOGIN_MESSAGE_KEYS].sort(), lang);
    for (const [key, text] of Object.entries(LOGIN_MESSAGES[lang]!)) {
      t.true(text.trim().length > 0, `${lang}.${key} is empty`);
      if (lang === 'en') continue;
      const english = LOGIN_MESSAGES['en']![key as keyof (typeof LOGIN_MESSAGES)['en']];
      if (text === english) t.true((SAME_AS_ENGLISH[lang] ?? []).includes(key), `${lang}.${key} is still English: ${text}`);
      // The placeholders survive translation.
      t.deepEqual(text.match(/\{\w+\}/g) ?? [], english.match(/\{\w+\}/g) ?? [], `${lang}.${key} placeholders`);
    }
  }
});

test('the account center: every catalogue has exactly the English keys, and no message is left in English', (t) => {
  t.deepEqual(Object.keys(ACCOUNT_MESSAGES), LANGS);
  for (const lang of LANGS) {
    t.deepEqual(Object.keys(ACCOUNT_MESSAGES[lang]!).sort(), [...ACCOUNT_MESSAGE_KEYS].sort(), lang);
    for (const [key, text] of Object.entries(ACCOUNT_MESSAGES[lang]!)) {
      t.true(text.length > 0, `${lang}.${key} is empty`);
      if (lang === 'en') continue;
      const english = ACCOUNT_MESSAGES['en']![key as (typeof ACCOUNT_MESSAGE_KEYS)[number]];
      if (text === english) t.true((ACCOUNT_SAME_AS_ENGLISH[lang] ?? []).includes(key), `${lang}.${key} is still English: ${text}`);
      t.deepEqual(text.match(/\{\w+\}/g) ?? [], english.match(/\{\w+\}/g) ?? [], `${lang}.${key} placeholders`);
    }
  }
});

test('the mails and the SMS: every language has each event and notice, none left in English, placeholders kept', (t) => {
  t.deepEqual([...EMAIL_LANGUAGES], LANGS);
  t.deepEqual([...NOTICE_LANGUAGES], LANGS);
  const placeholders = (text: string) => (text.match(/\{\{\s*[\w.]+\s*\}\}|\{\w+\}/g) ?? []).map((p) => p.replace(/\s/g, '')).sort();
  for (const lang of LANGS) {
    for (const event of EMAIL_TEMPLATE_EVENTS) {
      const english = defaultTemplate(event, 'en');
      const own = defaultTemplate(event, lang);
      if (lang !== 'en') {
        t.not(own.subject, english.subject, `${lang} ${event}: the subject is still English`);
        t.not(own.template, english.template, `${lang} ${event}: the body is still English`);
      }
      t.deepEqual(placeholders(own.template), placeholders(english.template), `${lang} ${event}: placeholders`);
    }
    const sms = smsCodeText(lang, '123456', 'Acme');
    const invite = invitationMail(lang, { org: 'Acme', role: 'admin', url: 'https://example.com/i' });
    t.true(sms.includes('123456') && sms.includes('Acme'), `${lang}: the SMS carries the code and the name`);
    t.true(invite.subject.includes('Acme') && invite.html.includes('<b>Acme</b>') && invite.html.includes('admin'), `${lang}: the invitation`);
    if (lang === 'en') continue;
    t.not(sms, smsCodeText('en', '123456', 'Acme'), `${lang}: the SMS is still English`);
    const en = invitationMail('en', { org: 'Acme', role: 'admin', url: 'https://example.com/i' });
    t.not(invite.subject, en.subject, `${lang}: the invitation subject is still English`);
    t.not(invite.html, en.html, `${lang}: the invitation is still English`);
  }
});

test('the language: ui_locales, then the saved choice, then Accept-Language by weight, then English', (t) => {
  t.is(pickLanguage(LANGS, { uiLocales: 'fr', preferred: 'es-MX', saved: 'ja', acceptLanguage: 'de' }), 'fr', 'ui_locales first');
  t.is(pickLanguage(LANGS, { preferred: 'es-MX', saved: 'ja', acceptLanguage: 'de' }), 'es', "then the user's saved language");
  t.is(pickLanguage(LANGS, { preferred: 'pt-BR', saved: 'ja', acceptLanguage: 'de' }), 'ja', 'a saved language without a page: the browser choice');
  t.is(pickLanguage(LANGS, { preferred: null, acceptLanguage: 'de' }), 'de');
  t.deepEqual(acceptedLanguages('fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7, *;q=0.5'), ['fr-CH', 'fr', 'en', 'de']);
  t.deepEqual(acceptedLanguages('de;q=0, ja;q=0.2, es'), ['es', 'ja']);
  t.is(pickLanguage(LANGS, { acceptLanguage: 'pt-BR, es;q=0.5' }), 'es');
  t.is(pickLanguage(LANGS, { acceptLanguage: 'de-AT' }), 'de');
  t.is(pickLanguage(LANGS, { saved: 'ja', acceptLanguage: 'de' }), 'ja');
  t.is(pickLanguage(LANGS, { uiLocales: 'xx ar', saved: 'ja', acceptLanguage: 'de' }), 'ar');
  t.is(pickLanguage(LANGS, { uiLocales: ['de'], acceptLanguage: 'fr' }), 'fr', 'a repeated ui_locales is ignored');
  t.is(pickLanguage(LANGS, { saved: 'zz', acceptLanguage: 'pt' }), 'en');
  t.is(pickLanguage(LANGS, { acceptLanguage: 'x'.repeat(2000) }), 'en');
});

test('each language is served whole: lang, dir, Content-Language, every text of its catalogue; the policy is the same', async (t) => {
  const english = await page({ 'accept-language': 'en' });
  for (const lang of LANGS) {
    const { html, res } = await page({ 'accept-language': `${lang};q=0.9, en;q=0.1` });
    t.is(res.headers.get('content-language'), lang);
    t.regex(res.headers.get('vary') ?? '', /Accept-Language/);
    t.is(res.headers.get('content-security-policy'), english.res.headers.get('content-security-policy'), 'one script and one style for every language');
    t.true(html.includes(`<html lang="${lang}" dir="${lang === 'ar' ? 'rtl' : 'ltr'}">`), lang);
    t.false(/\{\{\w+\}\}/.test(html), 'no slot left unfilled');
    for (const key of ['signInTitle', 'emailOrPhone', 'forgot', 'createAccount', 'haveAccount', 'setPassword'] as const) {
      t.true(html.includes(LOGIN_MESSAGES[lang]![key].replace(/’/g, '’')), `${lang}.${key} in the page`);
    }
  }
  t.regex((await page({ 'accept-language': 'de' }, '?ui_locales=ja%20en')).html, /<html lang="ja"/);
  t.regex((await page({ 'accept-language': 'de', cookie: 'latchkey_lang=fr' })).html, /<html lang="fr"/);
  const meta = (await server.call('meta', {}, { protocol: 'rest' })).body!;
  t.deepEqual(meta['languages'], LANGS);
});

needs(test, 'chromium')('in the browser: each language has no English left on screen, Arabic runs right to left, axe passes, and the menu keeps the choice', async (t) => {
  browser = await launchChromium();
  const englishTexts = new Set(Object.entries(LOGIN_MESSAGES['en']!).map(([, v]) => v));
  for (const lang of LANGS) {
    const context = await browser.newContext({ locale: lang, viewport: { width: 375, height: 800 } });
    t.teardown(() => context.close());
    const p = await context.newPage();
    const problems = watchPage(p);
    await p.goto(`${server.httpUrl}/app`);
    await p.locator('#social .provider').first().waitFor();
    t.is(await p.getAttribute('html', 'lang'), lang);
    if (lang !== 'en') {
      // Every text shown (labels, buttons, links, title): none is an English message.
      const shown = await p.evaluate<string[]>("Array.from(document.querySelectorAll('h1,label,button,a,p,option,legend')).filter((e) => e.offsetParent !== null).map((e) => e.textContent.trim()).filter(Boolean)");
      const allowed = new Set((SAME_AS_ENGLISH[lang] ?? []).map((k) => LOGIN_MESSAGES['en']![k as 'code']));
      t.deepEqual(shown.filter((text) => englishTexts.has(text) && !allowed.has(text)), [], `${lang}: English left on screen`);
      t.true(shown.some((text) => text.includes(LOGIN_MESSAGES[lang]!.continueWith.replace("{name}", "GitHub"))), `${lang}: the provider button: ${JSON.stringify(shown)}`);
    }
    if (lang === 'ar') {
      t.is(await p.evaluate<string>("getComputedStyle(document.body).direction"), 'rtl');
      // The title starts at the right edge of the card.
      const gap = await p.evaluate<number>("document.querySelector('main').getBoundingClientRect().right - document.getElementById('title').getBoundingClientRect().right");
      t.true(gap < 40, `title ${gap}px from the right edge`);
      await screenshot(p, 'app-sign-in-ar');
    }
    if (lang === 'ja') await screenshot(p, 'app-sign-in-ja');
    t.deepEqual(await seriousViolations(p), [], `accessibility in ${lang}`);
    t.deepEqual(problems, [], lang);
  }
  // The account center in each language: nothing of it is left in English.
  const accountEnglish = new Set(Object.values(ACCOUNT_MESSAGES['en']!));
  for (const lang of LANGS.filter((l) => l !== 'en')) {
    const email = `lang-${lang}@example.com`;
    const signup = await server.call('signup', { email, password: 'Correct-Horse-7-Battery' }, { protocol: 'rest' });
    t.truthy(signup.body, JSON.stringify(signup.error));
    const context = await browser.newContext({ locale: lang, viewport: { width: 375, height: 800 } });
    t.teardown(() => context.close());
    const cookie = signup.setCookies.find((c) => c.startsWith('cookie_session='))!.split(';')[0]!.split('=')[1]!;
    await context.addCookies([{ name: 'cookie_session', value: cookie, url: server.httpUrl }]);
    const p = await context.newPage();
    const problems = watchPage(p);
    await p.goto(`${server.httpUrl}/app/account`);
    await p.locator('#content:not([aria-busy])').waitFor();
    await p.locator('#sessions li').first().waitFor();
    t.is(await p.getAttribute('html', 'lang'), lang);
    const shown = await p.evaluate<string[]>("Array.from(document.querySelectorAll('h1,h2,h3,label,button,a,p,li span,strong')).filter((e) => e.offsetParent !== null).map((e) => (e.getAttribute('aria-label') || e.textContent).trim()).filter(Boolean)");
    const allowed = new Set((ACCOUNT_SAME_AS_ENGLISH[lang] ?? []).map((k) => ACCOUNT_MESSAGES['en']![k as 'profile']));
    t.deepEqual(shown.filter((text) => accountEnglish.has(text) && !allowed.has(text)), [], `${lang}: English left on the account center`);
    t.true(shown.includes(ACCOUNT_MESSAGES[lang]!.thisDevice) || shown.some((x) => x.includes(ACCOUNT_MESSAGES[lang]!.thisDevice)), `${lang}: this device`);
    if (lang === 'ar') {
      t.is(await p.evaluate<string>('getComputedStyle(document.body).direction'), 'rtl');
      await screenshot(p, 'app-account-ar');
    }
    t.deepEqual(await seriousViolations(p), [], `accessibility of the account center in ${lang}`);
    t.deepEqual(problems, [], lang);
  }

  // The menu: German is chosen, kept in a cookie, and wins over the browser's English.
  const context = await browser.newContext({ locale: 'en' });
  t.teardown(() => context.close());
  const p = await context.newPage();
  await p.goto(`${server.httpUrl}/app`);
  await p.selectOption('#lang', 'de');
  await p.waitForFunction("document.documentElement.lang === 'de'");
  t.is(await p.textContent('#title'), LOGIN_MESSAGES['de']!.signInTitle);
  t.is((await context.cookies()).find((c) => c.name === 'latchkey_lang')?.value, 'de');
  await p.goto(`${server.httpUrl}/app`);
  t.is(await p.getAttribute('html', 'lang'), 'de');
});
