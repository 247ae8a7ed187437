/**
 * X.509 certificates made with node:crypto alone: node:crypto reads certificates
 * (X509Certificate) but makes none, and a control plane needs its own authority and the
 * certificates it signs (the API server's serving certificate, etcd's, the clients').
 * This writes the DER of RFC 5280's TBSCertificate (version 3; subject and issuer as
 * common name and organisations; validity; the subject's public key as node:crypto
 * exports it; basic constraints, key usage, extended key usage and subject alternative
 * names) and signs it with ECDSA P-256 and SHA-256, the keys being made here too.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, KeyObject, randomBytes, sign } from 'node:crypto';
import { isIP } from 'node:net';

/** A certificate and its private key, both PEM. */
export interface KeyPair {
  cert: string;
  key: string;
}

export interface CertificateRequest {
  commonName: string;
  /** Organisations (O=): Kubernetes reads them as the client's groups. */
  organizations?: string[];
  /** A certificate authority (signs certificates; no other use). */
  ca?: boolean;
  /** What a leaf certificate is for: serving TLS, authenticating a client, or both. */
  usages?: Array<'server' | 'client'>;
  /** Subject alternative names: DNS names and IP addresses (told apart by their form). */
  altNames?: string[];
  /** How long it is valid from now (default ten years). */
  validDays?: number;
}

const DAY_MS = 86_400_000;
const DEFAULT_VALID_DAYS = 3650;
/** Valid from a while ago: clocks of the machines that check it may be behind. */
const BACKDATE_MS = 3_600_000;

const OID = {
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  subjectKeyIdentifier: '2.5.29.14',
  authorityKeyIdentifier: '2.5.29.35',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
};

function length(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let rest = n; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

const tlv = (tag: number, content: Buffer): Buffer => Buffer.concat([Buffer.from([tag]), length(content.length), content]);
const sequence = (...items: Buffer[]) => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]) => tlv(0x31, Buffer.concat(items));
const octets = (content: Buffer) => tlv(0x04, content);
const utf8 = (text: string) => tlv(0x0c, Buffer.from(text, 'utf8'));
const explicit = (n: number, content: Buffer) => tlv(0xa0 + n, content);
const TRUE = Buffer.from([0x01, 0x01, 0xff]);

/** A non-negative INTEGER from its big-endian bytes. */
function integer(bytes: Buffer): Buffer {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  const trimmed = bytes.subarray(start);
  return tlv(0x02, trimmed[0] & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed);
}

function oid(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split('.').map(Number);
  const bytes = [40 * first + second];
  for (const arc of rest) {
    const group = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) group.unshift(0x80 | (v & 0x7f));
    bytes.push(...group);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** A BIT STRING of whole bytes, its unused trailing bits counted (DER). */
function bits(bytes: Buffer): Buffer {
  const last = bytes[bytes.length - 1] ?? 0;
  let unused = 0;
  while (unused < 7 && last !== 0 && !(last & (1 << unused))) unused++;
  return tlv(0x03, Buffer.concat([Buffer.from([unused]), bytes]));
}

/** UTCTime through 2049, GeneralizedTime after (RFC 5280, 4.1.2.5). */
function time(at: Date): Buffer {
  const iso = at.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return at.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`)) : tlv(0x18, Buffer.from(`${iso}Z`));
}

function name(commonName: string, organizations: readonly string[]): Buffer {
  const rdn = (type: string, value: string) => set(sequence(oid(type), utf8(value)));
  return sequence(...organizations.map((o) => rdn(OID.organization, o)), rdn(OID.commonName, commonName));
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return sequence(oid(id), ...(critical ? [TRUE] : []), octets(value));
}

function altName(entry: string): Buffer {
  const family = isIP(entry);
  if (family === 4) return tlv(0x87, Buffer.from(entry.split('.').map(Number)));
  if (family === 6) throw new Error(`IPv6 subject alternative names are not written here: ${entry}`);
  return tlv(0x82, Buffer.from(entry, 'ascii'));
}

/** A key's identifier: the SHA-1 of its SubjectPublicKeyInfo (RFC 7093's kind of method). */
const keyId = (publicKey: KeyObject) =>
  createHash('sha1')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest();

function extensions(request: CertificateRequest, subjectKey: KeyObject, issuerKey: KeyObject): Buffer {
  const list = [
    extension(OID.basicConstraints, true, request.ca ? sequence(TRUE) : sequence()),
    extension(OID.subjectKeyIdentifier, false, octets(keyId(subjectKey))),
    extension(OID.authorityKeyIdentifier, false, sequence(tlv(0x80, keyId(issuerKey)))),
  ];
  // digitalSignature (bit 0), keyCertSign (5) and cRLSign (6) for an authority; digitalSignature for a leaf (ECDSA keys sign, never encipher).
  list.push(extension(OID.keyUsage, true, bits(Buffer.from([request.ca ? 0x86 : 0x80]))));
  if (!request.ca) {
    const usages = request.usages ?? ['server', 'client'];
    list.push(extension(OID.extKeyUsage, false, sequence(...usages.map((u) => oid(u === 'server' ? OID.serverAuth : OID.clientAuth)))));
  }
  if (request.altNames?.length) list.push(extension(OID.subjectAltName, false, sequence(...request.altNames.map(altName))));
  return explicit(3, sequence(...list));
}

const pem = (label: string, der: Buffer) =>
  `-----BEGIN ${label}-----\n${(der.toString('base64').match(/.{1,64}/g) ?? []).join('\n')}\n-----END ${label}-----\n`;

/** A new ECDSA P-256 key pair. */
export function newKey(): { privateKey: KeyObject; publicKey: KeyObject } {
  return generateKeyPairSync('ec', { namedCurve: 'P-256' });
}

export const privateKeyPem = (key: KeyObject) => key.export({ type: 'pkcs8', format: 'pem' }).toString();
export const publicKeyPem = (key: KeyObject) => key.export({ type: 'spki', format: 'pem' }).toString();

/**
 * A certificate for `request` with a new key, signed by `issuer` (its certificate's
 * subject is the issuer's name), or by its own key when there is none (an authority).
 */
export function issueCertificate(request: CertificateRequest, issuer?: { commonName: string; organizations?: string[]; key: string }): KeyPair {
  const { privateKey, publicKey } = newKey();
  const signer = issuer ? createPrivateKey(issuer.key) : privateKey;
  const now = Date.now();
  const serial = randomBytes(16);
  serial[0] &= 0x7f;
  const algorithm = sequence(oid(OID.ecdsaWithSha256));
  const tbs = sequence(
    explicit(0, integer(Buffer.from([2]))),
    integer(serial),
    algorithm,
    issuer ? name(issuer.commonName, issuer.organizations ?? []) : name(request.commonName, request.organizations ?? []),
    sequence(time(new Date(now - BACKDATE_MS)), time(new Date(now + (request.validDays ?? DEFAULT_VALID_DAYS) * DAY_MS))),
    name(request.commonName, request.organizations ?? []),
    publicKey.export({ type: 'spki', format: 'der' }),
    extensions(request, publicKey, createPublicKey(signer)),
  );
  const signature = sign('sha256', tbs, signer);
  return { cert: pem('CERTIFICATE', sequence(tbs, algorithm, bits0(signature))), key: privateKeyPem(privateKey) };
}

/** A signature's BIT STRING: no unused bits, whatever its last byte. */
const bits0 = (bytes: Buffer) => tlv(0x03, Buffer.concat([Buffer.from([0]), bytes]));
