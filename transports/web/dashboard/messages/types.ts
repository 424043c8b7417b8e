/** The shape of a dashboard catalogue: exactly the keys of the English one (en.ts). */
import type { en } from './en.ts';

export type DashboardMessageKey = keyof typeof en;
export type DashboardMessages = Readonly<Record<DashboardMessageKey, string>>;
