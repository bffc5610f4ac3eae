// Reading the kubelet's events about a failed pull: did it pull without berth's pull Secret?
import { describe, expect, it } from 'vitest';
import { everyPullWithoutSecret, pullMessage, unreadSecrets } from '../src/pull-events.js';

const unread = (count: number, name = 'berth-pull-abc-1') => ({
  reason: 'FailedToRetrieveImagePullSecret',
  message: `Unable to retrieve some image pull secrets (${name}); attempting to pull the image may not succeed.`,
  count,
});
const failed = (count: number) => ({ reason: 'Failed', message: 'Failed to pull image "r/i:1": 401 Unauthorized', count });
const errImagePull = { reason: 'Failed', message: 'Error: ErrImagePull', count: 3 };

describe('pull events', () => {
  it('the Secrets the kubelet could not read, among those the pod names', () => {
    expect(unreadSecrets([unread(1), failed(1)], ['berth-pull-abc-1'])).toEqual(['berth-pull-abc-1']);
    expect(unreadSecrets([unread(1, 'their-secret'), failed(1)], ['berth-pull-abc-1'])).toEqual([]);
    expect(unreadSecrets([failed(1)], ['berth-pull-abc-1'])).toEqual([]);
    // Whole names only, from the kubelet's list of several.
    expect(unreadSecrets([unread(1, 'a-reg, berth-pull-abc-1')], ['berth-pull-abc', 'a-reg', 'berth-pull-abc-1', 'reg'])).toEqual([
      'a-reg',
      'berth-pull-abc-1',
    ]);
  });

  it('every failed pull without the Secret: the kubelet; a later pull with it that failed too: the credential', () => {
    expect(everyPullWithoutSecret([unread(2), failed(2), errImagePull], ['berth-pull-abc-1'])).toBe(true);
    expect(everyPullWithoutSecret([unread(1), failed(2), errImagePull], ['berth-pull-abc-1'])).toBe(false);
    expect(everyPullWithoutSecret([failed(1)], ['berth-pull-abc-1'])).toBe(false);
  });

  it("the kubelet's own words, not its 'Error: ErrImagePull'", () => {
    expect(pullMessage([failed(1), errImagePull], 'fallback')).toBe('Failed to pull image "r/i:1": 401 Unauthorized');
    expect(pullMessage([], 'fallback')).toBe('fallback');
  });
});
