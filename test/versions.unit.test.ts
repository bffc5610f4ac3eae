// One version for all of berth: every package, the @berth/* versions they depend on, the CLI's
// `--version`, the Modal client's identity, and the harbor plugin (whose wheel carries the bundled
// CLI: its `berth --version` is the wheel's, harbor-installed.test.ts checks). A release bumps all
// of them or none.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const constant = (path: string, name: string) => read(path).match(new RegExp(`export const ${name} = '([^']+)'`))?.[1];

describe('versions', () => {
  const packages = readdirSync(join(root, 'packages')).map(
    (dir) =>
      JSON.parse(read(`packages/${dir}/package.json`)) as {
        name: string;
        version: string;
        dependencies?: Record<string, string>;
        devDependencies?: Record<string, string>;
        optionalDependencies?: Record<string, string>;
        peerDependencies?: Record<string, string>;
      },
  );
  const version = packages.find((p) => p.name === '@berth/core')!.version;

  it('every package has the same version, and depends on exactly that version of the others', () => {
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
    for (const p of packages) {
      expect(p.version, p.name).toBe(version);
      const deps = { ...p.dependencies, ...p.devDependencies, ...p.optionalDependencies, ...p.peerDependencies };
      for (const [name, range] of Object.entries(deps)) if (name.startsWith('@berth/')) expect(range, `${p.name} -> ${name}`).toBe(version);
    }
  });

  it("the CLI's VERSION, the Modal client's identity and the harbor plugin's version are the packages'", () => {
    expect(constant('packages/cli/src/version.ts', 'VERSION')).toBe(version);
    expect(constant('packages/backend-modal/src/client-identity.ts', 'BERTH_MODAL_VERSION')).toBe(version);
    expect(read('python/harbor-berth/pyproject.toml').match(/^version = "([^"]+)"$/m)?.[1]).toBe(version);
  });
});
