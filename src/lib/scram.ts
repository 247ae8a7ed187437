/**
 * A PostgreSQL SCRAM-SHA-256 password verifier (RFC 5802, RFC 7677), made here so that a
 * password reaches the server only as its verifier: `ALTER ROLE … PASSWORD 'SCRAM-SHA-256$…'`
 * stores it as given, and no server log or statement text ever holds the password itself.
 * The passwords Cloudplane makes are ASCII, which SASLprep leaves as they are.
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';

/** PostgreSQL's own default (scram_iterations). */
const ITERATIONS = 4096;

export function scramSha256Verifier(password: string, salt: Buffer = randomBytes(16), iterations = ITERATIONS): string {
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}
