import { FAILURE_CATEGORIES, classifyFailure } from '@berth/core';
import { describe, expect } from 'vitest';
import type { Harness } from '../harness.js';
import { secretsOf } from './images.js';

export function errorCases(h: Harness): void {
  describe('errors', () => {
    h.defineCase({
      id: 'errors.taxonomy',
      title: 'every error the suite saw is a classified BerthError naming the backend, serialisable, without secrets',
      run: async () => {
        expect(h.errors.length, 'the cases before this one should have seen errors').toBeGreaterThan(0);
        const secrets = secretsOf(h.options.images.private?.auth);
        for (const error of h.errors) {
          const label = `${error.name}: ${error.message}`;
          expect.soft(error.backend, `backend of ${label}`).toBe(h.name);
          expect(FAILURE_CATEGORIES, label).toContain(error.category);
          expect(typeof error.retryable, label).toBe('boolean');
          expect(error.retryable, label).toBe(error.category === 'transient_infra');
          expect(error.type.length, label).toBeGreaterThan(0);
          expect(error.operation, `operation of ${label}`).toBeDefined();
          const json = JSON.stringify(error.toJSON());
          const parsed = JSON.parse(json) as { name?: string; category?: string; message?: string };
          expect(parsed.category, label).toBe(error.category);
          expect(parsed.name, label).toBe(error.name);
          for (const secret of secrets) expect(json.includes(secret), `${label} serialises a credential`).toBe(false);
          const classified = classifyFailure(error);
          expect(classified.unclassified, label).toBe(false);
          expect(classified.category, label).toBe(error.category);
        }
      },
    });
  });
}
