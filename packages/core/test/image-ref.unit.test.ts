import { describe, it, expect } from 'vitest';
import { ConfigError } from '../src/errors.js';
import { applyMirrors, formatImageRef, mirrorImage, parseImageRef, parseMirrorRules, type MirrorRule } from '../src/image-ref.js';

const SHA = 'a'.repeat(64);

function parseError(ref: string): ConfigError {
  try {
    parseImageRef(ref);
  } catch (error) {
    expect(ConfigError.isInstance(error)).toBe(true);
    return error as ConfigError;
  }
  throw new Error(`expected ${JSON.stringify(ref)} to be rejected`);
}

describe('parseImageRef: Docker Hub', () => {
  it('normalises an official image to docker.io/library with tag latest', () => {
    const ref = parseImageRef('ubuntu');
    expect(ref).toEqual({
      original: 'ubuntu',
      registry: 'docker.io',
      repository: 'library/ubuntu',
      tag: 'latest',
      kind: 'dockerhub',
      canonical: 'docker.io/library/ubuntu:latest',
    });
  });

  it('keeps user namespaces and explicit tags', () => {
    const ref = parseImageRef('swebench/sweb.eval.x86_64.django__django-11099:v1.2');
    expect(ref.registry).toBe('docker.io');
    expect(ref.repository).toBe('swebench/sweb.eval.x86_64.django__django-11099');
    expect(ref.tag).toBe('v1.2');
    expect(ref.canonical).toBe('docker.io/swebench/sweb.eval.x86_64.django__django-11099:v1.2');
  });

  it.each([
    ['docker.io/ubuntu:22.04', 'docker.io/library/ubuntu:22.04'],
    ['docker.io/library/ubuntu:22.04', 'docker.io/library/ubuntu:22.04'],
    ['index.docker.io/ubuntu', 'docker.io/library/ubuntu:latest'],
    ['registry-1.docker.io/library/python:3.12-slim', 'docker.io/library/python:3.12-slim'],
    ['INDEX.DOCKER.IO/org/app', 'docker.io/org/app:latest'],
  ])('%s -> %s', (input, canonical) => {
    const ref = parseImageRef(input);
    expect(ref.canonical).toBe(canonical);
    expect(ref.kind).toBe('dockerhub');
    expect(ref.original).toBe(input);
  });

  it('treats a first component without "." or ":" as a Hub namespace, not a host', () => {
    expect(parseImageRef('myregistry/app').registry).toBe('docker.io');
    expect(parseImageRef('myregistry/app').repository).toBe('myregistry/app');
  });
});

describe('parseImageRef: registries and ports', () => {
  it('reads a host:port registry and keeps the tag apart', () => {
    const ref = parseImageRef('127.0.0.1:5000/x/y:tag');
    expect(ref).toMatchObject({ registry: '127.0.0.1:5000', repository: 'x/y', tag: 'tag', kind: 'generic' });
    expect(ref.canonical).toBe('127.0.0.1:5000/x/y:tag');
  });

  it('does not mistake a registry port for a tag', () => {
    const ref = parseImageRef('localhost:5000/x');
    expect(ref).toMatchObject({ registry: 'localhost:5000', repository: 'x', tag: 'latest' });
    expect(ref.canonical).toBe('localhost:5000/x:latest');
  });

  it('recognises localhost without a port and never adds library/ outside the Hub', () => {
    expect(parseImageRef('localhost/app').canonical).toBe('localhost/app:latest');
    expect(parseImageRef('quay.io/app:1').canonical).toBe('quay.io/app:1');
  });

  it('detects GHCR', () => {
    const ref = parseImageRef('ghcr.io/org/team/app:v1');
    expect(ref).toMatchObject({ kind: 'ghcr', registry: 'ghcr.io', repository: 'org/team/app', tag: 'v1' });
    expect(ref.ecr).toBeUndefined();
  });

  it('detects ECR with account and region', () => {
    const ref = parseImageRef('123456789012.dkr.ecr.us-west-2.amazonaws.com/team/app:prod');
    expect(ref.kind).toBe('ecr');
    expect(ref.ecr).toEqual({ accountId: '123456789012', region: 'us-west-2' });
    expect(ref.repository).toBe('team/app');
  });

  it('detects ECR in China regions', () => {
    const ref = parseImageRef('123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn/app');
    expect(ref.ecr).toEqual({ accountId: '123456789012', region: 'cn-north-1' });
  });

  it('does not call a look-alike host ECR', () => {
    expect(parseImageRef('12345.dkr.ecr.us-east-1.amazonaws.com/app').kind).toBe('generic');
    expect(parseImageRef('123456789012.dkr.ecr.us-east-1.amazonaws.com.evil.io/app').kind).toBe('generic');
  });
});

describe('parseImageRef: tags and digests', () => {
  it('has no default tag when a digest is given', () => {
    const ref = parseImageRef(`ubuntu@sha256:${SHA}`);
    expect(ref.tag).toBeUndefined();
    expect(ref.digest).toBe(`sha256:${SHA}`);
    expect(ref.canonical).toBe(`docker.io/library/ubuntu@sha256:${SHA}`);
  });

  it('keeps both tag and digest', () => {
    const ref = parseImageRef(`ghcr.io/org/app:1.0@sha256:${SHA}`);
    expect(ref).toMatchObject({ tag: '1.0', digest: `sha256:${SHA}` });
    expect(ref.canonical).toBe(`ghcr.io/org/app:1.0@sha256:${SHA}`);
  });

  it('handles a port, a tag and a digest together', () => {
    const ref = parseImageRef(`localhost:5000/a/b:t@sha256:${SHA}`);
    expect(ref).toMatchObject({ registry: 'localhost:5000', repository: 'a/b', tag: 't', digest: `sha256:${SHA}` });
  });

  it('accepts sha512 digests and separators in repository names', () => {
    expect(parseImageRef(`a/b@sha512:${'0'.repeat(128)}`).digest).toBe(`sha512:${'0'.repeat(128)}`);
    expect(parseImageRef('ns/a-b__c.d/e---f_g:T_1.x-y').repository).toBe('ns/a-b__c.d/e---f_g');
  });

  it('formatImageRef returns the canonical form', () => {
    expect(formatImageRef(parseImageRef('python:3'))).toBe('docker.io/library/python:3');
  });
});

describe('parseImageRef: invalid references', () => {
  it.each([
    ['', /is empty/],
    ['Ubuntu', /repository "library\/Ubuntu" must be lowercase/],
    ['ghcr.io/Org/App:1', /repository "Org\/App" must be lowercase/],
    ['ubuntu latest', /whitespace/],
    [' ubuntu', /whitespace/],
    ['https://ghcr.io/org/app', /URL scheme/],
    ['ubuntu@sha256:abc', /digest "sha256:abc" is not valid/],
    [`ubuntu@sha256:${'A'.repeat(64)}`, /digest .* is not valid/],
    [`ubuntu@sha256:${'a'.repeat(63)}`, /digest .* is not valid/],
    [`ubuntu@md5`, /digest "md5" is not valid/],
    ['ubuntu:', /tag "" is not valid/],
    ['ubuntu:-x', /tag "-x" is not valid/],
    [`ubuntu:${'t'.repeat(129)}`, /tag .* is not valid/],
    ['ghcr.io/', /repository name is missing/],
    ['a//b', /repository "a\/\/b" is not valid/],
    ['a/b_', /repository "a\/b_" is not valid/],
    ['a/-b', /repository "a\/-b" is not valid/],
    ['bad_host.io:99x/app', /registry host "bad_host.io:99x" is not a valid host/],
    [`${'a'.repeat(256)}`, /longer than 255/],
  ])('%j is rejected: %s', (input, why) => {
    const error = parseError(input);
    expect(error.message).toMatch(why);
    expect(error.message).toContain(`Invalid image reference ${JSON.stringify(input)}`);
    expect(error.message).toContain('expected [registry[:port]/]repository[:tag]');
    expect(error.path).toBe('spec.image');
    expect(error.category).toBe('permanent_infra');
  });
});

describe('applyMirrors', () => {
  const rules: MirrorRule[] = [{ from: 'docker.io/swebench/', to: 'mirror:5001/swebench/' }];

  it('rewrites a matching reference and parses the result', () => {
    const ref = applyMirrors('swebench/sweb.eval.x86_64.astropy:latest', rules);
    expect(ref.original).toBe('mirror:5001/swebench/sweb.eval.x86_64.astropy:latest');
    expect(ref).toMatchObject({ registry: 'mirror:5001', repository: 'swebench/sweb.eval.x86_64.astropy', tag: 'latest' });
  });

  it('normalises the from prefix: with or without docker.io, trailing slash optional', () => {
    for (const from of ['swebench/', 'docker.io/swebench/', 'index.docker.io/swebench', 'docker.io/swebench']) {
      expect(applyMirrors('docker.io/swebench/x:1', [{ from, to: 'mirror:5001/swebench/' }]).canonical).toBe('mirror:5001/swebench/x:1');
    }
  });

  it('leaves non-matching references unchanged', () => {
    const ref = applyMirrors('ubuntu:22.04', rules);
    expect(ref.canonical).toBe('docker.io/library/ubuntu:22.04');
    expect(ref.original).toBe('ubuntu:22.04');
    expect(applyMirrors('ghcr.io/swebench/x', rules).registry).toBe('ghcr.io');
  });

  it('returns an ImageRef input as is when nothing matches', () => {
    const input = parseImageRef('ghcr.io/org/app');
    expect(applyMirrors(input, rules)).toBe(input);
  });

  it('matches only whole path components', () => {
    expect(applyMirrors('swebench/x', [{ from: 'docker.io/swe', to: 'mirror:5001/' }]).registry).toBe('docker.io');
    expect(applyMirrors('swebench/x', [{ from: 'docker.io/swe/', to: 'mirror:5001/' }]).registry).toBe('docker.io');
    expect(applyMirrors('localhost:5000/x', [{ from: 'localhost', to: 'mirror:5001' }]).registry).toBe('localhost:5000');
    expect(applyMirrors('ubuntu:22.04', [{ from: 'library/ubuntu:22', to: 'mirror:5001/u' }]).registry).toBe('docker.io');
  });

  it('treats a tag or digest as a boundary after a repository', () => {
    const rule = [{ from: 'library/ubuntu', to: 'mirror:5001/hub/ubuntu' }];
    expect(applyMirrors('ubuntu:22.04', rule).canonical).toBe('mirror:5001/hub/ubuntu:22.04');
    expect(applyMirrors(`ubuntu@sha256:${SHA}`, rule).canonical).toBe(`mirror:5001/hub/ubuntu@sha256:${SHA}`);
  });

  it('a bare Hub name matches the official image as well as the namespace', () => {
    const rule = [{ from: 'ubuntu', to: 'mirror:5001/ubuntu' }];
    expect(applyMirrors('ubuntu:22.04', rule).canonical).toBe('mirror:5001/ubuntu:22.04');
    expect(applyMirrors('ubuntu/tools:1', rule).canonical).toBe('mirror:5001/ubuntu/tools:1');
    // With a trailing '/', only the namespace.
    expect(applyMirrors('ubuntu:22.04', [{ from: 'ubuntu/', to: 'mirror:5001/ubuntu/' }]).registry).toBe('docker.io');
  });

  it('rewrites a whole registry', () => {
    expect(applyMirrors('python:3', [{ from: 'docker.io', to: 'mirror:5001' }]).canonical).toBe('mirror:5001/library/python:3');
    expect(applyMirrors('ghcr.io/o/a:1', [{ from: 'ghcr.io/', to: 'localhost:5000/ghcr/' }]).canonical).toBe('localhost:5000/ghcr/o/a:1');
  });

  it('first matching rule wins', () => {
    const ordered = [
      { from: 'docker.io/swebench/special', to: 'a.example:1/special' },
      { from: 'docker.io/swebench/', to: 'b.example:2/swebench/' },
    ];
    expect(applyMirrors('swebench/special:1', ordered).registry).toBe('a.example:1');
    expect(applyMirrors('swebench/other:1', ordered).registry).toBe('b.example:2');
    expect(applyMirrors('swebench/special:1', [...ordered].reverse()).registry).toBe('b.example:2');
  });

  it('rejects a rule that produces an invalid reference', () => {
    expect(() => applyMirrors('swebench/x', [{ from: 'swebench/', to: 'mirror:5001/Bad/' }])).toThrow(/Mirror rule .* not a valid image reference/);
  });
});

describe('parseMirrorRules', () => {
  it('parses comma-separated pairs, tolerating spaces and empty entries', () => {
    expect(parseMirrorRules(' docker.io/swebench/=mirror:5001/swebench/ , ghcr.io=localhost:5000/ghcr,')).toEqual([
      { from: 'docker.io/swebench/', to: 'mirror:5001/swebench/' },
      { from: 'ghcr.io', to: 'localhost:5000/ghcr' },
    ]);
    expect(parseMirrorRules('')).toEqual([]);
  });

  it.each(['docker.io/swebench/', 'a=b=c', '=mirror:5001/', 'swebench/=', 'https://docker.io/x=mirror:5001/x', 'a b=c'])('rejects %j', (text) => {
    let error: unknown;
    try {
      parseMirrorRules(text);
    } catch (e) {
      error = e;
    }
    expect(ConfigError.isInstance(error)).toBe(true);
    expect((error as ConfigError).message).toMatch(/^Invalid mirror rule ".*": .*expected comma-separated from=to/);
  });
});

describe('mirrorImage', () => {
  const spec = { username: 'u', password: 'hub-token-123' };
  it('keeps the spec credentials when nothing is rewritten', () => {
    expect(mirrorImage('ghcr.io/a/b:1', spec, [{ from: 'docker.io/swebench/', to: 'mirror:5001/swebench/' }])).toEqual({
      image: expect.objectContaining({ canonical: 'ghcr.io/a/b:1' }),
      auth: spec,
    });
  });
  it('never sends the spec credentials to a mirror on another host', () => {
    const out = mirrorImage('docker.io/swebench/x:1', spec, [{ from: 'docker.io/swebench/', to: 'mirror:5001/swebench/' }]);
    expect(out.image.canonical).toBe('mirror:5001/swebench/x:1');
    expect(out.auth).toBeUndefined();
  });
  it("uses the rule's own credentials for its mirror", () => {
    const rule = { from: 'docker.io/swebench/', to: 'mirror:5001/swebench/', auth: { secretName: 'mirror-creds' } };
    expect(mirrorImage('docker.io/swebench/x:1', spec, [rule])).toMatchObject({ auth: { secretName: 'mirror-creds' }, rule });
  });
  it('a rewrite within the same registry keeps the spec credentials', () => {
    const out = mirrorImage('ghcr.io/old/x:1', spec, [{ from: 'ghcr.io/old/', to: 'ghcr.io/new/' }]);
    expect(out).toMatchObject({ image: { canonical: 'ghcr.io/new/x:1' }, auth: spec });
  });
});
