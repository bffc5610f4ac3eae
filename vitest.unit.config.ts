// Tests that need no engine and no cluster, without the global setup's checks: quick runs while
// developing (`npx vitest run --config vitest.unit.config.ts <file>`). `npm test` runs them too.
// test/packaging packs the built packages: run `npm run build` before it.
import { defineConfig } from 'vitest/config';
import { alias } from './vitest.config.js';

export default defineConfig({
  resolve: { alias },
  test: { include: ['packages/*/test/**/*.test.ts', 'test/packaging/**/*.test.ts'], testTimeout: 60_000 },
});
