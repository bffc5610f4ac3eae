// Three-part JWTs (HS256) like the ones Modal hands out: clients decode the payload to read `exp`
// and refresh early, so the tokens must be real JWTs even though only the simulator checks them.
import { createHmac } from 'node:crypto';

const b64url = (data: string | Buffer) => Buffer.from(data).toString('base64url');

export function signJwt(key: Buffer, claims: Record<string, unknown>): string {
  const head = `${b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))}.${b64url(JSON.stringify(claims))}`;
  return `${head}.${b64url(createHmac('sha256', key).update(head).digest())}`;
}
