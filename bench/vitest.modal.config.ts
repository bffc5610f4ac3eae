// `npm run bench:modal` and `npm run bench:modal-sdk`: the Modal benches as vitest files, so the TypeScript simulator runs without a build.
import { defineConfig } from 'vitest/config';
import { alias } from '../vitest.config.js';

export default defineConfig({
  resolve: { alias },
  test: { include: ['bench/modal*.bench.ts'], testTimeout: 600_000, hookTimeout: 120_000 },
});
