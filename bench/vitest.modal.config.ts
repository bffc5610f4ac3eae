// `npm run bench:modal`: the Modal bench as a vitest file, so the TypeScript simulator runs without a build.
import { defineConfig } from 'vitest/config';
import { alias } from '../vitest.config.js';

export default defineConfig({
  resolve: { alias },
  test: { include: ['bench/modal.bench.ts'], testTimeout: 600_000, hookTimeout: 120_000 },
});
