/**
 * The message catalogues of the admin dashboard (`/dashboard`): every string
 * the page shows, per language, in the shape of the sign-in page's
 * catalogues (one record of message key to text per BCP 47 tag, English
 * first and the reference). Each catalogue's type requires exactly the
 * English keys, so a missing or extra key fails the type check; a test
 * compares them as well and renders every language looking for English
 * left over. `{name}` slots are filled by the page; identifiers, wire values
 * (event names, roles, outcomes), brand names and the authorization engine's
 * own terms in its trees are shown as they are.
 */
import { en } from './en.ts';
import { de } from './de.ts';
import { fr } from './fr.ts';
import { es } from './es.ts';
import { ja } from './ja.ts';
import { ar } from './ar.ts';

import type { DashboardMessageKey, DashboardMessages } from './types.ts';

export type { DashboardMessageKey, DashboardMessages } from './types.ts';

/** The keys of the catalogues, in the English catalogue's order. */
export const DASHBOARD_MESSAGE_KEYS: readonly DashboardMessageKey[] = Object.freeze(Object.keys(en) as DashboardMessageKey[]);

/** The catalogues by BCP 47 tag, English (the default) first. */
export const DASHBOARD_MESSAGES: Readonly<Record<string, DashboardMessages>> = Object.freeze({ en, de, fr, es, ja, ar });

/** The languages written right to left. */
export const DASHBOARD_RTL_LANGUAGES: ReadonlySet<string> = new Set(['ar']);
