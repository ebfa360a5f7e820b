#!/usr/bin/env node
// The command's entry is this committed file, not dist/cli.js: npm links a package's bins
// when it installs, and in a fresh clone dist/ is built only after that, so a bin pointing
// into dist/ would be left unlinked (and `npx` would look for the name on the registry).
import('../dist/cli.js').catch((error) => {
  if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('/dist/cli.js')) {
    console.error('payment-server: not built yet; run `npm run build` first.');
    process.exit(2);
  }
  throw error;
});
