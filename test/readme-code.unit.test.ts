// Every ```ts block of the READMEs compiles against the packages' sources: a reader who copies one
// gets code that type-checks, and a renamed option or export breaks this test, not the reader.
// A fragment that uses names from its surroundings (a `backend` made earlier, the reader's own
// `grade()`) declares them in an HTML comment right above the fence: <!-- ts-prelude: ... -->.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const READMES = [
  'README.md',
  ...['core', 'backend-docker', 'backend-k8s', 'backend-modal', 'conformance', 'harbor', 'serve', 'cli'].map((p) => `packages/${p}/README.md`),
];
// Inside the repository, so that Node's resolution finds the packages' own dependencies (dockerode, vitest...).
const OUT = join(ROOT, 'test', '.readme-code');

interface Block {
  readme: string;
  line: number;
  code: string;
  prelude: string;
}

/** The ```ts blocks of one README, each with the prelude comment right above its fence, if any. */
function tsBlocks(readme: string, text: string): Block[] {
  const lines = text.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(ts|typescript)\s*$/.test(lines[i] ?? '')) continue;
    const end = lines.findIndex((l, j) => j > i && l.startsWith('```'));
    if (end < 0) throw new Error(`${readme}:${i + 1}: a \`\`\`ts block that never ends`);
    const above = lines.slice(0, i).join('\n');
    const last = above.slice(above.lastIndexOf('<!--'));
    const prelude = /^<!--\s*ts-prelude:([\s\S]*?)-->\s*$/.exec(last)?.[1]?.trim() ?? '';
    blocks.push({ readme, line: i + 1, code: lines.slice(i + 1, end).join('\n'), prelude });
    i = end;
  }
  return blocks;
}

const SRC = (pkg: string, entry = 'index.ts') => [join(ROOT, 'packages', pkg, 'src', entry)];
const OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  lib: ['lib.es2023.d.ts', 'lib.esnext.disposable.d.ts'],
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  strict: true,
  noUncheckedIndexedAccess: true,
  skipLibCheck: true,
  esModuleInterop: true,
  noEmit: true,
  types: ['node'],
  paths: {
    '@berth/core/backend-kit': SRC('core', 'kit/index.ts'),
    '@berth/core': SRC('core'),
    '@berth/backend-docker': SRC('backend-docker'),
    '@berth/backend-k8s': SRC('backend-k8s'),
    '@berth/backend-modal': SRC('backend-modal'),
    '@berth/conformance': SRC('conformance'),
    '@berth/harbor': SRC('harbor'),
    '@berth/serve': SRC('serve'),
  },
};

const blocks = READMES.flatMap((readme) => tsBlocks(readme, readFileSync(join(ROOT, readme), 'utf8')));
afterAll(() => rmSync(OUT, { recursive: true, force: true }));

describe('README code', () => {
  it('finds the blocks, and a prelude only right above a fence', () => {
    const found = tsBlocks(
      'x.md',
      [
        '<!-- ts-prelude: declare const a: 1; -->',
        '```ts',
        'a;',
        '```',
        '',
        'text',
        '```ts',
        'b;',
        '```',
        '<!-- ts-prelude: c -->',
        '',
        '```ts',
        'c;',
        '```',
      ].join('\n'),
    );
    expect(found.map((b) => [b.line, b.code, b.prelude])).toEqual([
      [2, 'a;', 'declare const a: 1;'],
      [7, 'b;', ''],
      [12, 'c;', 'c'],
    ]);
    expect(blocks.length).toBeGreaterThanOrEqual(15);
  });

  it('every ```ts block type-checks against the sources', { timeout: 120_000 }, () => {
    rmSync(OUT, { recursive: true, force: true });
    mkdirSync(OUT, { recursive: true });
    const files = blocks.map((b, n) => {
      const file = join(OUT, `${b.readme.replace(/[/.]/g, '_')}_${b.line}_${n}.ts`);
      // `export {}` keeps each block its own module (top-level await, no clashes between blocks).
      writeFileSync(file, `${b.prelude}\n${b.code}\nexport {};\n`);
      return { file, block: b, offset: b.prelude.split('\n').length };
    });
    const program = ts.createProgram(
      files.map((f) => f.file),
      OPTIONS,
    );
    const problems = files.flatMap(({ file, block, offset }) =>
      ts.getPreEmitDiagnostics(program, program.getSourceFile(file)).map((d) => {
        const at = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : 0;
        const where = at < offset ? `${block.readme}:${block.line} (its ts-prelude)` : `${block.readme}:${block.line + at - offset + 1}`;
        return `${where}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
      }),
    );
    expect(problems, `${relative(ROOT, OUT)}: the blocks as compiled`).toEqual([]);
  });

  it('a block that does not compile is caught, at its README line', () => {
    const [block] = tsBlocks(
      'x.md',
      ['```ts', "import { createDockerBackend } from '@berth/backend-docker';", 'createDockerBackend({ noSuchOption: 1 });', '```'].join('\n'),
    );
    mkdirSync(OUT, { recursive: true });
    const file = join(OUT, 'broken.ts');
    writeFileSync(file, `\n${block?.code}\nexport {};\n`);
    const program = ts.createProgram([file], OPTIONS);
    const said = ts.getPreEmitDiagnostics(program, program.getSourceFile(file)).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    expect(said.join('\n')).toMatch(/noSuchOption/);
  });
});
