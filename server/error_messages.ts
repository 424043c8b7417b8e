/**
 * The client-facing `message` of the errors a user of the sign-in page or the
 * account center can meet, in the caller's language (`Accept-Language`, gRPC
 * metadata). Only the message changes: `code`, `reason` and `details` stay
 * as they are, so that programs keep deciding on them; English is the
 * reference and the answer whenever the language, or the reason, has no
 * translation.
 *
 * Scope (docs/errors.md, "Languages"): user-facing operations only (never
 * the super-admin ones), and the reasons of `server/error_catalogue.ts`
 * (translations: `server/error_translations.ts`).
 *
 * Where one reason carries several English messages (the password checks,
 * the shape validation of a field) and their difference matters to the
 * reader, the catalogue's `reason.variant` entries are told apart by the
 * English message, under the reason only: `details` stay as they are, so
 * the message is the one place the case is written. The code never depends
 * on it; a message that matches no variant falls back to the reason's own
 * entry, or stays English. test/server/error_catalogue.test.ts checks that
 * each English text is one the code writes, and throws the password and
 * field variants from the code that writes them.
 */
import { LatchkeyError } from '../engine/errors.ts';
import { mailLanguage } from '../admin/index.ts';
import { ENGLISH_ERROR_MESSAGES, type ErrorMessageKey } from './error_catalogue.ts';
import { ERROR_CATALOGUES } from './error_translations.ts';

export { ENGLISH_ERROR_MESSAGES, type ErrorCatalogue, type ErrorMessageKey } from './error_catalogue.ts';
export { ERROR_CATALOGUES } from './error_translations.ts';

interface Entry {
  readonly key: ErrorMessageKey;
  /** The English text as a pattern: `{name}` captures a value. */
  readonly pattern: RegExp;
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
const PLACEHOLDER = /\{(\w+)\}/g;

/** Each reason's entries, variants first (a variant's English must match), the reason's own last. */
const ENTRIES: ReadonlyMap<string, readonly Entry[]> = (() => {
  const byReason = new Map<string, Entry[]>();
  for (const [key, english] of Object.entries(ENGLISH_ERROR_MESSAGES) as [ErrorMessageKey, string][]) {
    const reason = key.split('.')[0] as string;
    const pattern = new RegExp(`^${escapeRegExp(english).replace(/\\?\{(\w+)\\?\}/g, '(?<$1>.+?)')}$`, 's');
    const list = byReason.get(reason) ?? [];
    if (key === reason) list.push({ key, pattern });
    else list.unshift({ key, pattern });
    byReason.set(reason, list);
  }
  return byReason;
})();

/**
 * The message of `err` in `language` (a primary subtag such as `de`), or
 * undefined when there is none: no catalogue for the language, no entry for
 * the reason, or a value the translation names that neither the English
 * message nor `details` carries.
 */
export function translatedMessage(err: LatchkeyError, language: string): string | undefined {
  const catalogue = ERROR_CATALOGUES[language];
  if (catalogue === undefined || err.reason === undefined) return undefined;
  for (const entry of ENTRIES.get(err.reason) ?? []) {
    const match = entry.pattern.exec(err.message);
    const isVariant = entry.key !== err.reason;
    if (isVariant && match === null) continue;
    const values: Record<string, string> = {};
    for (const [k, v] of Object.entries(err.details ?? {})) if (typeof v === 'string' || typeof v === 'number') values[k] = String(v);
    Object.assign(values, match?.groups ?? {});
    let missing = false;
    const text = catalogue[entry.key].replace(PLACEHOLDER, (_, name: string) => {
      const value = values[name];
      if (value === undefined) missing = true;
      return value ?? '';
    });
    return missing ? undefined : text;
  }
  return undefined;
}

/** `err` with its message in the language `acceptLanguage` prefers, when translated; else `err` itself. */
export function localizeError(err: LatchkeyError, acceptLanguage: string | undefined): LatchkeyError {
  if (acceptLanguage === undefined || err.reason === undefined) return err;
  const message = translatedMessage(err, mailLanguage(acceptLanguage));
  if (message === undefined) return err;
  return new LatchkeyError(err.code, message, { reason: err.reason, ...(err.details === undefined ? {} : { details: err.details }), cause: err });
}
