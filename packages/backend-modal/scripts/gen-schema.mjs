#!/usr/bin/env node
// Writes src/wire/schema-data.ts from src/wire/fields.json: the same entries in the same order, as a
// TypeScript constant (so nothing reads files at run time and the value types keep their literals).
// Run `npm run gen:schema -w @berth/backend-modal` after editing fields.json;
// test/schema-generated.unit.test.ts fails while the two disagree.
//
// Plain .mjs with no dependencies: Node 20 cannot run TypeScript directly, and a test imports
// renderSchema() to compare its output with the file in the repository.
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const FIELDS_JSON = fileURLToPath(new URL('../src/wire/fields.json', import.meta.url));
export const SCHEMA_DATA = fileURLToPath(new URL('../src/wire/schema-data.ts', import.meta.url));

const HEADER = `// GENERATED from fields.json by scripts/gen-schema.mjs: do not edit. To change the schema, edit
// fields.json and run \`npm run gen:schema -w @berth/backend-modal\`; test/schema-generated.unit.test.ts
// fails while this file and fields.json disagree.
//
// The parts of Modal's protobuf API the backend speaks, as a .ts constant so nothing reads files at
// run time and the value types keep their literals.
import type { Schema } from './schema-spec.js';
`;

const FIELD_KEYS = ['number', 'type', 'label', 'oneof'];
const LABELS = ['repeated', 'optional'];

/** The text of schema-data.ts for a parsed fields.json; throws on anything outside its shape. */
export function renderSchema(fields) {
  if (!isObject(fields)) fail('', 'the top level must be an object of messages and enums');
  const out = [HEADER, 'export const SCHEMA = {'];
  for (const [name, entry] of Object.entries(fields)) {
    const where = name;
    if (!/^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$/.test(name)) fail(where, 'not a protobuf type name');
    if (!isObject(entry)) fail(where, 'must be an object');
    const extra = Object.keys(entry).filter((k) => !['package', 'fields', 'enum'].includes(k));
    if (extra.length > 0) fail(where, `unexpected key(s) ${extra.join(', ')}`);
    if (typeof entry.package !== 'string' || !/^[a-z_][\w]*(\.[a-z_]\w*)*$/.test(entry.package)) fail(where, 'package must be a dotted lower-case name');
    if ('fields' in entry === 'enum' in entry) fail(where, 'needs exactly one of "fields" (a message) or "enum"');
    out.push(`  ${key(name)}: {`, `    package: ${str(entry.package)},`);
    if ('fields' in entry) out.push(...messageLines(where, entry.fields));
    else out.push(...enumLines(where, entry.enum));
    out.push('  },');
  }
  out.push('} as const satisfies Schema;', '');
  return out.join('\n');
}

function messageLines(where, fields) {
  if (!isObject(fields)) fail(where, '"fields" must be an object');
  const names = Object.keys(fields);
  if (names.length === 0) return ['    fields: {},'];
  const lines = ['    fields: {'];
  for (const name of names) {
    const at = `${where}.${name}`;
    const spec = fields[name];
    if (!/^[a-z_]\w*$/.test(name)) fail(at, 'not a protobuf field name');
    if (!isObject(spec)) fail(at, 'must be an object');
    const extra = Object.keys(spec).filter((k) => !FIELD_KEYS.includes(k));
    if (extra.length > 0) fail(at, `unexpected key(s) ${extra.join(', ')}`);
    if (!Number.isSafeInteger(spec.number)) fail(at, '"number" must be an integer');
    if (typeof spec.type !== 'string' || spec.type === '') fail(at, '"type" must be a type name');
    if ('label' in spec && !LABELS.includes(spec.label)) fail(at, `"label" must be ${LABELS.join(' or ')}`);
    if ('oneof' in spec && (typeof spec.oneof !== 'string' || spec.oneof === '')) fail(at, '"oneof" must be a name');
    // Keys in fields.json's own order, so the constant is fields.json entry for entry.
    const parts = Object.keys(spec).map((k) => `${k}: ${typeof spec[k] === 'number' ? String(spec[k]) : str(spec[k])}`);
    lines.push(`      ${key(name)}: { ${parts.join(', ')} },`);
  }
  lines.push('    },');
  return lines;
}

function enumLines(where, values) {
  if (!isObject(values) || Object.keys(values).length === 0) fail(where, '"enum" must be a non-empty object');
  const lines = ['    enum: {'];
  for (const [name, value] of Object.entries(values)) {
    if (!/^[A-Za-z_]\w*$/.test(name)) fail(`${where}.${name}`, 'not an enum value name');
    if (!Number.isSafeInteger(value)) fail(`${where}.${name}`, 'must be an integer');
    lines.push(`      ${key(name)}: ${value},`);
  }
  lines.push('    },');
  return lines;
}

const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (s) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
const key = (k) => (/^[A-Za-z_$][\w$]*$/.test(k) ? k : str(k));

function fail(where, message) {
  throw new Error(`fields.json${where ? `: ${where}` : ''}: ${message}`);
}

/** The text schema-data.ts should have, from fields.json on disk. */
export function renderSchemaFile(path = FIELDS_JSON) {
  return renderSchema(JSON.parse(readFileSync(path, 'utf8')));
}

if (process.argv[1] && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url))) {
  const text = renderSchemaFile();
  let old = '';
  try {
    old = readFileSync(SCHEMA_DATA, 'utf8');
  } catch {
    // first run
  }
  if (old === text) console.log(`${SCHEMA_DATA} is current`);
  else {
    writeFileSync(SCHEMA_DATA, text);
    console.log(`wrote ${SCHEMA_DATA}`);
  }
}
