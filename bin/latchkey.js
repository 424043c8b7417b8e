#!/usr/bin/env node
// The `latchkey` command. Node 24 runs the TypeScript sources directly (type stripping).
import { main } from '../cmd/cli.ts';

const status = await main(process.argv.slice(2));
process.exit(status);
