import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const source = (file: string) => fileURLToPath(new URL(file, import.meta.url));

export default defineConfig({
  // Tests run the packages' TypeScript sources, the client included, so that a change is
  // tested without a build; what a user installs (dist/) is tested by the packaging test
  // and by the tests that run the commands.
  resolve: {
    alias: [
      { find: /^@payment-service\/client$/, replacement: source('./client/index.ts') },
      { find: /^@payment-service\/client\/(webhooks|decimal)$/, replacement: source('./client/$1.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 60_000,
  },
});
