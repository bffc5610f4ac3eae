import { ImagePullError, type ImageAuth, type PreflightReport, type PullProgress } from '@berth/core';
import { describe, expect } from 'vitest';
import type { Harness } from '../harness.js';

/** Every secret-looking value in an auth, so the suite can check none of them leaks. */
export function secretsOf(auth: ImageAuth | undefined): string[] {
  if (!auth) return [];
  if ('password' in auth) return [auth.password];
  if ('identityToken' in auth) return [auth.identityToken];
  if ('aws' in auth) return [auth.aws.secretAccessKey, auth.aws.sessionToken].filter((s): s is string => typeof s === 'string');
  return [];
}

function expectNoSecrets(text: string, secrets: readonly string[], what: string): void {
  for (const secret of secrets) expect(text.includes(secret), `${what} contains a credential`).toBe(false);
}

export function imageCases(h: Harness): void {
  const privateImage = () => {
    const image = h.options.images.private;
    if (!image) throw new Error('images.private is required');
    return image;
  };
  const forget = async (ref: string) => {
    const fault = h.options.faults?.forgetImage;
    if (!fault) throw new Error('faults.forgetImage is required');
    await fault(ref);
  };

  describe('images', () => {
    h.defineCase({
      id: 'image.pull-unauthorized',
      title: "a private image without credentials is ImagePullError 'unauthorized', permanent, with no secret in its JSON",
      needs: ['images.private', 'faults.forgetImage'],
      timeoutMs: 60_000,
      run: async () => {
        const { ref, auth } = privateImage();
        await forget(ref);
        const error = await h.expectStartFailure(h.spec({ image: ref }), ImagePullError);
        expect(error.reason).toBe('unauthorized');
        expect(error.category).toBe('permanent_infra');
        expect(error.retryable).toBe(false);
        expect(error.image).toBe(ref);
        expectNoSecrets(JSON.stringify(error.toJSON()), secretsOf(auth), 'the error JSON');
        expectNoSecrets(error.message, secretsOf(auth), 'the error message');
      },
    });

    h.defineCase({
      id: 'image.pull-with-auth',
      title: 'a private image with credentials is pulled and runs',
      needs: ['images.private', 'faults.forgetImage'],
      timeoutMs: 120_000,
      run: async () => {
        const { ref, auth } = privateImage();
        await forget(ref);
        // Not cached (forgetImage worked): without the credentials the same image is refused, so
        // the start below that runs it must have pulled it.
        const refused = await h.expectStartFailure(h.spec({ image: ref }), ImagePullError);
        expect(refused.reason, 'the image started without credentials right after forgetImage').toBe('unauthorized');
        const pulls: PullProgress[] = [];
        const env = h.track(h.backend().environment(h.spec({ image: { ref, auth } })));
        try {
          env.events.on('pull', (p) => pulls.push(p));
          await env.start();
          expect(env.phase).toBe('running');
          expect((await env.exec(['echo', 'pulled'])).stdout).toBe('pulled\n');
          // The whole events (image, layer, status, sizes), not only their status lines.
          expectNoSecrets(JSON.stringify(pulls), secretsOf(auth), 'pull events');
          if (pulls.length === 0) {
            h.partial.push({ id: 'image.pull-with-auth', reason: 'the backend reported no pull progress: no pull event to check for credentials' });
          }
        } finally {
          await h.release(env);
        }
      },
    });

    h.defineCase({
      id: 'image.not-found',
      title: "a missing image is ImagePullError 'not_found', permanent",
      needs: ['images.missing'],
      timeoutMs: 60_000,
      run: async () => {
        const missing = h.options.images.missing ?? '';
        const auth = h.options.images.private?.auth;
        const error = await h.expectStartFailure(h.spec({ image: auth ? { ref: missing, auth } : missing }), ImagePullError);
        expect(error.reason).toBe('not_found');
        expect(error.category).toBe('permanent_infra');
        expect(error.retryable).toBe(false);
        expectNoSecrets(JSON.stringify(error.toJSON()), secretsOf(auth), 'the error JSON');
      },
    });
  });

  describe('preflight', () => {
    h.defineCase({
      id: 'preflight.basic',
      title: 'preflight with and without a spec reports ok for the basic image',
      timeoutMs: 60_000,
      run: async () => {
        const bare = await h.backend().preflight();
        expect(bare.backend).toBe(h.name);
        expect(bare.ok, JSON.stringify(bare)).toBe(true);
        expect(bare.checks.length).toBeGreaterThan(0);
        const withSpec = await h.backend().preflight(h.spec());
        expect(withSpec.ok, JSON.stringify(withSpec)).toBe(true);
        expect(withSpec.checks.every((c) => c.status !== 'fail')).toBe(true);
      },
    });

    h.defineCase({
      id: 'preflight.invalid-spec',
      title: 'preflight of an invalid spec reports a failed check instead of throwing',
      run: async () => {
        const report = await h.backend().preflight({ image: '' });
        expect(report.ok).toBe(false);
        const failed = report.checks.filter((c) => c.status === 'fail');
        expect(failed.length).toBeGreaterThan(0);
        expect(
          failed.some((c) => /image/i.test(c.message) || c.error?.type === 'ConfigError'),
          JSON.stringify(report),
        ).toBe(true);
      },
    });

    h.defineCase({
      id: 'preflight.private-image',
      title: "preflight of the private image fails its 'image' check without credentials and passes with them; no secret in the report",
      needs: ['images.private', 'faults.forgetImage'],
      timeoutMs: 60_000,
      run: async () => {
        const { ref, auth } = privateImage();
        await forget(ref);
        const without: PreflightReport = await h.backend().preflight(h.spec({ image: ref }));
        expect(without.ok, JSON.stringify(without)).toBe(false);
        const imageCheck = without.checks.find((c) => c.name === 'image');
        expect(imageCheck?.status, JSON.stringify(without)).toBe('fail');
        const withAuth: PreflightReport = await h.backend().preflight(h.spec({ image: { ref, auth } }));
        expect(withAuth.ok, JSON.stringify(withAuth)).toBe(true);
        expect(withAuth.checks.find((c) => c.name === 'image')?.status).toBe('ok');
        expectNoSecrets(JSON.stringify(without), secretsOf(auth), 'the preflight report');
        expectNoSecrets(JSON.stringify(withAuth), secretsOf(auth), 'the preflight report');
      },
    });
  });
}
