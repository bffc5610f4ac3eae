import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (pkg: string, entry = 'index.ts') => fileURLToPath(new URL(`./packages/${pkg}/src/${entry}`, import.meta.url));

/** Tests import the sources through these aliases; the CLI's tests run its built binary, which is why `npm test` runs `tsc -b` first. */
export const alias = [
  { find: /^@berth\/core\/backend-kit$/, replacement: src('core', 'kit/index.ts') },
  { find: /^@berth\/core$/, replacement: src('core') },
  { find: /^@berth\/backend-docker$/, replacement: src('backend-docker') },
  { find: /^@berth\/backend-k8s$/, replacement: src('backend-k8s') },
  { find: /^@berth\/backend-modal$/, replacement: src('backend-modal') },
  { find: /^@berth\/conformance$/, replacement: src('conformance') },
  { find: /^@berth\/harbor$/, replacement: src('harbor') },
  { find: /^@berth\/serve$/, replacement: src('serve') },
  // Test infrastructure (private): the sources, as its package.json's exports say.
  { find: /^@berth\/test-support\/modal-sim$/, replacement: src('test-support', 'modal-sim/index.ts') },
  { find: /^@berth\/test-support\/(.+)$/, replacement: `${fileURLToPath(new URL('./packages/test-support/src/', import.meta.url))}$1.ts` },
];

export default defineConfig({
  resolve: { alias },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'python/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Tests that measure memory (the scale test's heap per handle) collect garbage first.
    execArgv: ['--expose-gc'],
  },
});
