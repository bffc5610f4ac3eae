// The pure unit tests: `*.unit.test.ts`, which need no engine, no cluster, no simulator and no
// network (they pass with DOCKER_HOST and KUBECONFIG pointing nowhere). Quick runs while developing:
// `npx vitest run --config vitest.unit.config.ts`. Every other test needs the real parts that
// test/setup/setup.sh starts; `npm test` runs them all.
import { defineConfig } from 'vitest/config';
import { alias } from './vitest.config.js';

export default defineConfig({
  resolve: { alias },
  test: { include: ['packages/*/test/**/*.unit.test.ts', 'test/**/*.unit.test.ts'], testTimeout: 60_000 },
});
