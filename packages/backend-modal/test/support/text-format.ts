// A parser for the protobuf text format that the golden vectors are written in (what
// `protoc --encode` reads), producing the plain-object values the codec takes. Guided by the
// schema: it needs field types to know whether "1" is a number, an enum or a bool.
import { SCHEMA, indexSchema, type FieldInfo, type ResolvedType, type ScalarType, type Schema, type SchemaIndex } from '../../src/wire/schema.js';

type Token =
  | { kind: 'ident'; text: string; at: number }
  | { kind: 'number'; text: string; at: number }
  | { kind: 'string'; bytes: Uint8Array; at: number }
  | { kind: 'punct'; text: string; at: number }
  | { kind: 'eof'; at: number };

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const SIMPLE_ESCAPES: Record<string, number> = { n: 10, t: 9, r: 13, a: 7, b: 8, f: 12, v: 11, '\\': 92, "'": 39, '"': 34, '?': 63 };

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i] ?? '';
    if (/\s/.test(c)) {
      i++;
    } else if (c === '#') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][\w]*/.exec(text.slice(i))?.[0] ?? c;
      tokens.push({ kind: 'ident', text: m, at: i });
      i += m.length;
    } else if (/[0-9.]/.test(c)) {
      const m = /^(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fF]?)/.exec(text.slice(i))?.[0];
      if (!m) throw new Error(`text format: bad number at ${i}`);
      tokens.push({ kind: 'number', text: m, at: i });
      i += m.length;
    } else if (c === '"' || c === "'") {
      const at = i;
      const [bytes, next] = readString(text, i);
      tokens.push({ kind: 'string', bytes, at });
      i = next;
    } else if ('{}<>[]:;,-'.includes(c)) {
      tokens.push({ kind: 'punct', text: c, at: i });
      i++;
    } else {
      throw new Error(`text format: unexpected ${JSON.stringify(c)} at ${i}`);
    }
  }
  tokens.push({ kind: 'eof', at: text.length });
  return tokens;
}

/** A quoted string as bytes: escapes like \303 or \xc3 denote single bytes, not characters. */
function readString(text: string, start: number): [Uint8Array, number] {
  const quote = text[start];
  const out: number[] = [];
  let i = start + 1;
  const encoder = new TextEncoder();
  for (;;) {
    const c = text[i];
    if (c === undefined || c === '\n') throw new Error(`text format: unterminated string at ${start}`);
    if (c === quote) return [Uint8Array.from(out), i + 1];
    if (c !== '\\') {
      const cp = text.codePointAt(i) ?? 0;
      const ch = String.fromCodePoint(cp);
      out.push(...encoder.encode(ch));
      i += ch.length;
      continue;
    }
    const e = text[i + 1] ?? '';
    i += 2;
    if (e in SIMPLE_ESCAPES) {
      out.push(SIMPLE_ESCAPES[e] ?? 0);
    } else if (/[0-7]/.test(e)) {
      const digits = /^[0-7]{1,3}/.exec(text.slice(i - 1))?.[0] ?? e;
      out.push(parseInt(digits, 8) & 0xff);
      i += digits.length - 1;
    } else if (e === 'x' || e === 'X') {
      const digits = /^[0-9a-fA-F]{1,2}/.exec(text.slice(i))?.[0];
      if (!digits) throw new Error(`text format: bad \\x escape at ${i}`);
      out.push(parseInt(digits, 16));
      i += digits.length;
    } else if (e === 'u' || e === 'U') {
      const len = e === 'u' ? 4 : 8;
      const digits = text.slice(i, i + len);
      if (!new RegExp(`^[0-9a-fA-F]{${len}}$`).test(digits)) throw new Error(`text format: bad \\${e} escape at ${i}`);
      out.push(...encoder.encode(String.fromCodePoint(parseInt(digits, 16))));
      i += len;
    } else {
      throw new Error(`text format: unknown escape \\${e} at ${i - 2}`);
    }
  }
}

class Parser {
  #pos = 0;
  constructor(
    readonly index: SchemaIndex,
    readonly tokens: Token[],
  ) {}

  peek(): Token {
    return this.tokens[this.#pos] ?? { kind: 'eof', at: -1 };
  }

  next(): Token {
    const t = this.peek();
    if (t.kind !== 'eof') this.#pos++;
    return t;
  }

  isPunct(text: string): boolean {
    const t = this.peek();
    return t.kind === 'punct' && t.text === text;
  }

  /** Consumes the punctuation if it is next. */
  accept(text: string): boolean {
    if (!this.isPunct(text)) return false;
    this.next();
    return true;
  }

  /** Fields until `close` (a closing brace, or the end of input for the top level). */
  message(name: string, close: '}' | '>' | undefined): Record<string, unknown> {
    const info = this.index.message(name);
    const out: Record<string, unknown> = {};
    for (;;) {
      const t = this.peek();
      if (close === undefined ? t.kind === 'eof' : t.kind === 'punct' && t.text === close) {
        this.next();
        return out;
      }
      if (t.kind !== 'ident') throw new Error(`text format: expected a field name of ${name} at ${t.at}`);
      this.next();
      const field = info.byName.get(t.text);
      if (!field) throw new Error(`text format: ${name} has no field ${t.text}`);
      this.field(name, field, out);
      if (!this.accept(',')) this.accept(';');
    }
  }

  field(owner: string, field: FieldInfo, out: Record<string, unknown>): void {
    const nested = field.type.kind === 'message' || field.type.kind === 'map';
    // The colon is optional before a message value and required before a scalar.
    if (!this.accept(':') && !nested) throw new Error(`text format: expected : after ${owner}.${field.name}`);
    const values: unknown[] = [];
    if (this.isPunct('[')) {
      this.next();
      while (!this.isPunct(']')) {
        values.push(this.value(field));
        this.accept(',');
      }
      this.next();
    } else {
      values.push(this.value(field));
    }
    for (const value of values) this.assign(owner, field, value, out);
  }

  value(field: FieldInfo): unknown {
    const type = field.type;
    if (type.kind === 'map') return this.mapEntry(type);
    if (type.kind === 'message') return this.message(type.name, this.open());
    return this.scalarOrEnum(type, field.name);
  }

  open(): '}' | '>' {
    const t = this.next();
    if (t.kind === 'punct' && t.text === '{') return '}';
    if (t.kind === 'punct' && t.text === '<') return '>';
    throw new Error(`text format: expected { at ${t.at}`);
  }

  mapEntry(type: Extract<ResolvedType, { kind: 'map' }>): [unknown, unknown] {
    const close = this.open();
    let key: unknown;
    let value: unknown;
    while (!this.isPunct(close)) {
      const t = this.next();
      if (t.kind !== 'ident' || (t.text !== 'key' && t.text !== 'value')) throw new Error(`text format: expected key or value at ${t.at}`);
      const target: ResolvedType = t.text === 'key' ? { kind: 'scalar', scalar: type.key } : type.value;
      this.accept(':');
      const v = target.kind === 'message' ? this.message(target.name, this.open()) : this.scalarOrEnum(target, t.text);
      if (t.text === 'key') key = v;
      else value = v;
      if (!this.accept(',')) this.accept(';');
    }
    this.next();
    return [key ?? defaultValue({ kind: 'scalar', scalar: type.key }), value ?? defaultValue(type.value)];
  }

  scalarOrEnum(type: ResolvedType, what: string): unknown {
    if (type.kind === 'enum') {
      const t = this.peek();
      if (t.kind === 'ident') {
        this.next();
        if (!type.numbers.has(t.text)) throw new Error(`text format: ${t.text} is not a value of ${type.name}`);
        return t.text;
      }
      const n = Number(this.integer('int32'));
      return type.names.get(n) ?? n; // the codec decodes known numbers to names
    }
    if (type.kind !== 'scalar') throw new Error(`text format: cannot parse ${what} of type ${type.kind}`);
    return this.scalar(type.scalar);
  }

  scalar(type: ScalarType): unknown {
    switch (type) {
      case 'string':
      case 'bytes': {
        // Adjacent strings concatenate, as in C.
        const parts: Uint8Array[] = [];
        while (this.peek().kind === 'string') parts.push((this.next() as Extract<Token, { kind: 'string' }>).bytes);
        if (parts.length === 0) throw new Error(`text format: expected a string at ${this.peek().at}`);
        const bytes = Uint8Array.from(parts.flatMap((p) => [...p]));
        return type === 'bytes' ? bytes : utf8.decode(bytes);
      }
      case 'bool': {
        const t = this.next();
        const text = t.kind === 'ident' || t.kind === 'number' ? t.text : '';
        if (['true', 'True', 't', '1'].includes(text)) return true;
        if (['false', 'False', 'f', '0'].includes(text)) return false;
        throw new Error(`text format: expected a bool at ${t.at}`);
      }
      case 'float':
      case 'double': {
        const negative = this.accept('-');
        const t = this.next();
        let v: number;
        if (t.kind === 'ident' && /^(inf|infinity)$/i.test(t.text)) v = Infinity;
        else if (t.kind === 'ident' && /^nan$/i.test(t.text)) v = NaN;
        else if (t.kind === 'number') v = /^0[xX]/.test(t.text) ? Number(BigInt(t.text)) : Number(t.text.replace(/[fF]$/, ''));
        else throw new Error(`text format: expected a number at ${t.at}`);
        if (negative) v = -v;
        return type === 'float' ? Math.fround(v) : v; // what a float field can actually hold
      }
      default: {
        const n = this.integer(type);
        return type.endsWith('64') && (n > BigInt(Number.MAX_SAFE_INTEGER) || n < -BigInt(Number.MAX_SAFE_INTEGER)) ? n : Number(n);
      }
    }
  }

  integer(type: ScalarType): bigint {
    const negative = this.accept('-');
    const t = this.next();
    if (t.kind !== 'number' || !/^(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9]\d*)$/.test(t.text)) throw new Error(`text format: expected an integer at ${t.at}`);
    // A leading 0 means octal, as in C.
    const magnitude = /^0[0-7]+$/.test(t.text) ? BigInt(`0o${t.text.slice(1)}`) : BigInt(t.text);
    const n = negative ? -magnitude : magnitude;
    const signed = !type.startsWith('u') && type !== 'fixed32' && type !== 'fixed64';
    const bits = type.endsWith('64') ? 64n : 32n;
    const [min, max] = signed ? [-(2n ** (bits - 1n)), 2n ** (bits - 1n) - 1n] : [0n, 2n ** bits - 1n];
    if (n < min || n > max) throw new Error(`text format: ${n} is out of range for ${type}`);
    return n;
  }

  assign(owner: string, field: FieldInfo, value: unknown, out: Record<string, unknown>): void {
    if (field.type.kind === 'map') {
      const [key, v] = value as [unknown, unknown];
      const map = (out[field.name] ??= {}) as Record<string, unknown>;
      Object.defineProperty(map, String(key), { value: v, enumerable: true, writable: true, configurable: true });
    } else if (field.repeated) {
      ((out[field.name] ??= []) as unknown[]).push(value);
    } else {
      if (field.name in out) throw new Error(`text format: ${owner}.${field.name} set twice`);
      const info = this.index.message(owner);
      const other = field.oneof === undefined ? undefined : info.oneofs.get(field.oneof)?.find((m) => m.name in out);
      if (other) throw new Error(`text format: ${owner}.${field.name} and ${other.name} are in the same oneof`);
      out[field.name] = value;
    }
  }
}

function defaultValue(type: ResolvedType): unknown {
  if (type.kind === 'enum') return type.names.get(0) ?? 0;
  if (type.kind === 'message') return {};
  if (type.kind !== 'scalar') return undefined;
  if (type.scalar === 'string') return '';
  if (type.scalar === 'bool') return false;
  if (type.scalar === 'bytes') return new Uint8Array(0);
  return 0;
}

/** Parses text-format `text` as message `name` into the codec's plain-object representation. */
export function parseTextFormat(name: string, text: string, schema: Schema = SCHEMA): Record<string, unknown> {
  const parser = new Parser(indexSchema(schema), tokenize(text));
  return parser.message(name, undefined);
}

/**
 * Drops what proto3 does not put on the wire (default values of fields without presence, empty
 * lists and maps), so a parsed value compares equal to the decoding of its encoding.
 */
export function stripDefaults(name: string, value: Record<string, unknown>, schema: Schema = SCHEMA): Record<string, unknown> {
  const index = indexSchema(schema);
  const info = index.message(name);
  const out: Record<string, unknown> = {};
  const strip = (type: ResolvedType, v: unknown): unknown => (type.kind === 'message' ? stripDefaults(type.name, v as Record<string, unknown>, schema) : v);
  for (const [key, v] of Object.entries(value)) {
    const field = info.byName.get(key);
    if (!field || v === undefined) continue;
    const type = field.type;
    if (type.kind === 'map') {
      const entries = Object.entries(v as Record<string, unknown>);
      if (entries.length > 0) out[key] = Object.fromEntries(entries.map(([k, e]) => [k, strip(type.value, e)]));
    } else if (field.repeated) {
      if ((v as unknown[]).length > 0) out[key] = (v as unknown[]).map((e) => strip(type, e));
    } else if (field.explicitPresence || !isDefault(type, v)) {
      out[key] = strip(type, v);
    }
  }
  return out;
}

function isDefault(type: ResolvedType, v: unknown): boolean {
  if (type.kind === 'enum') return v === 0 || v === type.names.get(0);
  if (v instanceof Uint8Array) return v.length === 0;
  if (typeof v === 'number') return Object.is(v, 0);
  return v === 0n || v === '' || v === false;
}
