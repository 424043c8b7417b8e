/**
 * `@marcbachmann/cel-js`, loaded on first use: the first condition compiled
 * or value converted. The CEL modules import only its types and reach it
 * through {@link celLibrary}, so an engine whose models have no conditions
 * never loads it.
 */
import { createRequire } from 'node:module';

type CelJs = typeof import('@marcbachmann/cel-js');

const requirePackage = createRequire(import.meta.url);
let library: CelJs | undefined;

/** The CEL library, loaded on the first call. */
export function celLibrary(): CelJs {
  return (library ??= requirePackage('@marcbachmann/cel-js') as CelJs);
}
