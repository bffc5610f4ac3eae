import { z } from 'zod';
import { normaliseAllowEntry, parseAllowEntry, type NetworkAllowlist } from './allow-entries.js';

export {
  type AllowEntry,
  addressAllowed,
  allowEntries,
  describeNetwork,
  isAllowlist,
  nameAllowed,
  type NetworkAllowlist,
  normaliseAllowEntry,
  parseAllowEntry,
} from './allow-entries.js';

/** `{ allow: [...] }`, normalised, every entry checked (its index and what is wrong in the error). */
export const NetworkAllowlistSchema = z
  .strictObject({ allow: z.array(z.string()).readonly() })
  .superRefine((value, ctx) => {
    value.allow.forEach((entry, index) => {
      const parsed = parseAllowEntry(entry);
      if ('problem' in parsed) ctx.addIssue({ code: 'custom', path: ['allow', index], message: `network.allow[${index}] ${parsed.problem}` });
    });
  })
  .transform((value): NetworkAllowlist => ({ allow: [...new Set(value.allow.map(normaliseAllowEntry))] }));
