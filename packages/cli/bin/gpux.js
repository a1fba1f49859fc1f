#!/usr/bin/env node
// The gpux command: registers tsx so the TypeScript sources run as they are (no build step), then runs the CLI.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/main.ts');
const code = await main(process.argv);
process.exitCode = code;
// Leave the event loop to drain output; if a stray handle keeps it alive, leave anyway.
setTimeout(() => process.exit(code), 2000).unref();
