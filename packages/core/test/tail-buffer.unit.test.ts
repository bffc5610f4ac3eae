import { describe, expect, it } from 'vitest';
import { TailBuffer } from '../src/tail-buffer.js';

describe('TailBuffer', () => {
  it('keeps everything under the cap', () => {
    const b = new TailBuffer(10);
    b.push(Buffer.from('abc'));
    b.push(Buffer.from('def'));
    expect(b.bytes().toString()).toBe('abcdef');
    expect(b.truncated).toBe(false);
  });
  it('keeps the tail when over the cap, across chunk boundaries', () => {
    const b = new TailBuffer(5);
    b.push(Buffer.from('abc'));
    b.push(Buffer.from('defg'));
    expect(b.bytes().toString()).toBe('cdefg');
    expect(b.truncated).toBe(true);
    b.push(Buffer.from('0123456789'));
    expect(b.bytes().toString()).toBe('56789');
  });
  it('an exact fit is not truncation; a zero cap keeps nothing', () => {
    const b = new TailBuffer(4);
    b.push(Buffer.from('abcd'));
    expect(b.truncated).toBe(false);
    const z = new TailBuffer(0);
    z.push(Buffer.from('x'));
    expect(z.bytes().length).toBe(0);
    expect(z.truncated).toBe(true);
  });
  it('copies chunks so a reused buffer does not corrupt output', () => {
    const b = new TailBuffer(100);
    const chunk = Buffer.from('aaaa');
    b.push(chunk);
    chunk.fill(0x62);
    expect(b.bytes().toString()).toBe('aaaa');
  });
});
