/** Test helper: paths to the project's shared material beside the checkout (`../shared`). */
import { fileURLToPath } from 'node:url';
import { dirname, resolve } from 'node:path';

/** Root of this repository. */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** `../shared` beside the checkout: spec, references and conformance data (read in place, never copied). */
export const SHARED_DIR = resolve(REPO_ROOT, '..', 'shared');
/** OpenFGA's conformance data. */
export const CONFORMANCE_DIR = resolve(SHARED_DIR, 'conformance');
