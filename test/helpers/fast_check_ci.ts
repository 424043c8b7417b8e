/**
 * Loaded by ava before every test file (package.json `ava.require`): with
 * `CI` set, every fast-check property replays one fixed seed, so a landing
 * run is reproducible; local runs draw new seeds and keep exploring. A
 * property's own `seed` (from FC_SEED, to replay a failure) still wins.
 */
import fc from 'fast-check';

if (process.env['CI'] !== undefined && process.env['FC_SEED'] === undefined) {
  fc.configureGlobal({ ...fc.readConfigureGlobal(), seed: 20261121 });
}
