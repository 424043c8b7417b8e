#!/usr/bin/env node
// The `latchkey` command. Node 24 runs the TypeScript sources directly (type stripping). The compile
// cache (in the system's temporary directory, or NODE_COMPILE_CACHE) keeps each module's stripped and
// compiled form between runs, so every start after the first skips that work; without a writable
// directory the command runs as before.
import { enableCompileCache } from 'node:module';

enableCompileCache?.();
const { main } = await import('../cmd/cli.ts');
const status = await main(process.argv.slice(2));
process.exit(status);
