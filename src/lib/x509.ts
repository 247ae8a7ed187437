/**
 * X.509 certificates for a control plane of our own: an authority and the certificates it
 * signs (the API server's serving certificate, etcd's, the clients'), each with a new ECDSA
 * P-256 key, signed with SHA-256. node:crypto reads certificates but makes none; they are
 * made by @peculiar/x509 (on node's WebCrypto), a well-kept library, rather than by DER
 * written here.
 */
// @peculiar/x509 resolves its parts through tsyringe, which needs the Reflect metadata API.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { createPrivateKey, createPublicKey, generateKeyPairSync, KeyObject, randomBytes, webcrypto } from 'node:crypto';
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
const ECDSA = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
const { subtle } = webcrypto;

/** A new ECDSA P-256 key pair. */
export function newKey(): { privateKey: KeyObject; publicKey: KeyObject } {
  return generateKeyPairSync('ec', { namedCurve: 'P-256' });
}

export const privateKeyPem = (key: KeyObject) => key.export({ type: 'pkcs8', format: 'pem' }).toString();
export const publicKeyPem = (key: KeyObject) => key.export({ type: 'spki', format: 'pem' }).toString();

/** Organisations first, then the common name, as Kubernetes' own tools write a subject. */
const nameOf = ({ commonName, organizations = [] }: { commonName: string; organizations?: string[] }): x509.JsonName => [
  ...organizations.map((o) => ({ O: [o] })),
  { CN: [commonName] },
];

const cryptoKeysOf = async (pair: { privateKey: KeyObject; publicKey: KeyObject }) => ({
  privateKey: await subtle.importKey('pkcs8', pair.privateKey.export({ type: 'pkcs8', format: 'der' }), ECDSA, true, ['sign']),
  publicKey: await subtle.importKey('spki', pair.publicKey.export({ type: 'spki', format: 'der' }), ECDSA, true, ['verify']),
});

/** A positive serial of 128 random bits (RFC 5280 asks for at most 20 octets, positive). */
function serialNumber(): string {
  const serial = randomBytes(16);
  serial[0] &= 0x7f;
  return serial.toString('hex');
}

function extensionsOf(request: CertificateRequest): x509.Extension[] {
  const { KeyUsageFlags: Usage, ExtendedKeyUsage } = x509;
  if (request.ca) {
    return [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(Usage.digitalSignature | Usage.keyCertSign | Usage.cRLSign, true),
    ];
  }
  const usages = request.usages ?? ['server', 'client'];
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    // ECDSA keys sign, never encipher.
    new x509.KeyUsagesExtension(Usage.digitalSignature, true),
    new x509.ExtendedKeyUsageExtension(usages.map((u) => (u === 'server' ? ExtendedKeyUsage.serverAuth : ExtendedKeyUsage.clientAuth))),
  ];
  if (request.altNames?.length)
    extensions.push(new x509.SubjectAlternativeNameExtension(request.altNames.map((value) => ({ type: isIP(value) ? 'ip' : 'dns', value }))));
  return extensions;
}

/**
 * A certificate for `request` with a new key, signed by `issuer` (its certificate's
 * subject is the issuer's name), or by its own key when there is none (an authority).
 */
export async function issueCertificate(request: CertificateRequest, issuer?: { commonName: string; organizations?: string[]; key: string }): Promise<KeyPair> {
  const subject = newKey();
  const signer = issuer ? createPrivateKey(issuer.key) : subject.privateKey;
  const subjectKeys = await cryptoKeysOf(subject);
  const signerKeys = issuer ? await cryptoKeysOf({ privateKey: signer, publicKey: createPublicKey(signer) }) : subjectKeys;
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: nameOf(request),
    issuer: nameOf(issuer ?? request),
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + (request.validDays ?? DEFAULT_VALID_DAYS) * DAY_MS),
    signingAlgorithm: ECDSA,
    publicKey: subjectKeys.publicKey,
    signingKey: signerKeys.privateKey,
    extensions: [
      ...extensionsOf(request),
      await x509.SubjectKeyIdentifierExtension.create(subjectKeys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(signerKeys.publicKey),
    ],
  });
  return { cert: cert.toString('pem'), key: privateKeyPem(subject.privateKey) };
}
