// The packages' structure, as the review asked it to stay: no import circle anywhere in their
// sources (type-only imports included), and dependencies pointing toward core: the backend kit and
// pooled() never import the trial runner or each other's internals.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));

function sources(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (path.endsWith('.ts')) graph.set(relative(root, path), []);
    }
  };
  for (const pkg of readdirSync(join(root, 'packages'))) {
    const src = join(root, 'packages', pkg, 'src');
    if (statSync(join(root, 'packages', pkg)).isDirectory() && readdirSync(join(root, 'packages', pkg)).includes('src')) walk(src);
  }
  for (const file of graph.keys()) {
    const text = readFileSync(join(root, file), 'utf8');
    const targets = [...text.matchAll(/(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'|import\('(\.[^']+)'\)/g)].map((m) => m[1] ?? m[2]!);
    graph.set(
      file,
      targets.map((t) => relative(root, resolve(root, dirname(file), t)).replace(/\.js$/, '.ts')),
    );
  }
  return graph;
}

/** Strongly connected components of more than one module (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe("the packages' import graph", () => {
  const graph = sources();

  it('has no circle', () => {
    expect(graph.size).toBeGreaterThan(150);
    expect(circles(graph)).toEqual([]);
  });

  it('finds a circle when there is one (the check itself works)', () => {
    expect(
      circles(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', ['c.ts']],
          ['c.ts', ['a.ts']],
          ['d.ts', ['a.ts']],
        ]),
      ),
    ).toEqual([['a.ts', 'b.ts', 'c.ts']]);
  });

  it("points toward core: the kit and pooled() import neither the trial runner nor each other's internals", () => {
    const offending = [...graph].flatMap(([file, deps]) => {
      const inKit = file.startsWith('packages/core/src/kit/');
      const inPool = file.startsWith('packages/core/src/pool/');
      return deps
        .filter((d) => ((inKit || inPool) && d.startsWith('packages/core/src/trials/')) || (inPool && d.startsWith('packages/core/src/kit/environment')))
        .map((d) => `${file} -> ${d}`);
    });
    expect(offending).toEqual([]);
  });
});
