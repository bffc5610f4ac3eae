// src/wire/schema-data.ts is generated from src/wire/fields.json by scripts/gen-schema.mjs. These
// fail when the checked-in file is not what the generator makes now (fields.json was edited and the
// generator not run, or the file was edited by hand), and when the generator itself is wrong.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FIELDS_JSON, renderSchema, renderSchemaFile, SCHEMA_DATA } from '../scripts/gen-schema.mjs';
import { SCHEMA } from '../src/wire/schema.js';

const fieldsJson: unknown = JSON.parse(readFileSync(FIELDS_JSON, 'utf8'));

describe('schema-data.ts', () => {
  it('is what scripts/gen-schema.mjs makes from fields.json', () => {
    const expected = renderSchemaFile();
    const actual = readFileSync(SCHEMA_DATA, 'utf8');
    if (actual !== expected) {
      const a = actual.split('\n');
      const e = expected.split('\n');
      const line = a.findIndex((l, i) => l !== e[i]);
      expect.fail(
        `src/wire/schema-data.ts is not current with fields.json (first difference at line ${line + 1}: ` +
          `${JSON.stringify(a[line])} where the generator writes ${JSON.stringify(e[line])}). ` +
          'Run `npm run gen:schema -w @berth/backend-modal` and commit the result; do not edit schema-data.ts by hand.',
      );
    }
  });

  it('evaluates to fields.json, key for key and in the same order', () => {
    expect(SCHEMA).toStrictEqual(fieldsJson);
    expect(JSON.stringify(SCHEMA)).toBe(JSON.stringify(fieldsJson));
  });
});

describe('the generator', () => {
  it('writes nested names quoted, labels and oneofs in the order given, and empty messages', () => {
    const text = renderSchema({
      Outer: { package: 'p.q', fields: { a: { number: 1, type: 'Outer.Kind', label: 'repeated' }, b: { number: 2, type: 'string', oneof: 'x' } } },
      'Outer.Kind': { package: 'p.q', enum: { KIND_UNSPECIFIED: 0, KIND_A: 1 } },
      Empty: { package: 'p.q', fields: {} },
    });
    expect(text).toContain(
      "  Outer: {\n    package: 'p.q',\n    fields: {\n      a: { number: 1, type: 'Outer.Kind', label: 'repeated' },\n      b: { number: 2, type: 'string', oneof: 'x' },\n    },\n  },",
    );
    expect(text).toContain("  'Outer.Kind': {\n    package: 'p.q',\n    enum: {\n      KIND_UNSPECIFIED: 0,\n      KIND_A: 1,\n    },\n  },");
    expect(text).toContain("  Empty: {\n    package: 'p.q',\n    fields: {},\n  },");
    expect(text).toMatch(/^\/\/ GENERATED from fields\.json by scripts\/gen-schema\.mjs: do not edit\./);
    expect(text.trimEnd().endsWith('} as const satisfies Schema;')).toBe(true);
  });

  it('refuses entries outside the shape schema-spec.ts describes, naming where', () => {
    const msg = (fields: unknown) => ({ M: { package: 'p', fields } });
    expect(() => renderSchema(msg({ a: { number: '1', type: 'string' } }))).toThrow(/fields\.json: M\.a: "number" must be an integer/);
    expect(() => renderSchema(msg({ a: { number: 1, type: 'string', label: 'required' } }))).toThrow(/M\.a: "label" must be repeated or optional/);
    expect(() => renderSchema(msg({ a: { number: 1, type: 'string', lable: 'repeated' } }))).toThrow(/M\.a: unexpected key\(s\) lable/);
    expect(() => renderSchema({ M: { package: 'p', fields: {}, enum: { A: 0 } } })).toThrow(/M: needs exactly one of/);
    expect(() => renderSchema({ E: { package: 'p', enum: { A: 1.5 } } })).toThrow(/E\.A: must be an integer/);
    expect(() => renderSchema({ M: { fields: {} } })).toThrow(/M: package must be/);
  });
});
