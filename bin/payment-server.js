#!/usr/bin/env node
// Runs the compiled server from build/ when it matches the sources (`npm start` and
// `npm run bench` build it first); otherwise, on a fresh clone or after an edit, the
// TypeScript sources through tsx's loader, which works everywhere but costs about 75 MB
// of memory and a slower start.
import { pathToFileURL } from 'node:url';
import { entry, isFresh } from './compiled.js';

if (isFresh()) {
  await import(pathToFileURL(entry).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../server/cli.ts');
}
