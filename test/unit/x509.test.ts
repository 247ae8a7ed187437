/**
 * The certificates src/lib/x509.ts makes (with @peculiar/x509), read back by node:crypto's X509Certificate and
 * checked by OpenSSL's strict verification: an authority, a serving certificate with DNS
 * and IP names, and a client certificate whose organisations Kubernetes reads as groups.
 */
import { execFileSync } from 'node:child_process';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { issueCertificate, type KeyPair } from '../../src/lib/x509';

describe('X.509 certificates of a control plane', () => {
  let ca: KeyPair;
  let serving: KeyPair;
  let client: KeyPair;
  beforeAll(async () => {
    ca = await issueCertificate({ commonName: 'kubernetes', ca: true });
    const issuer = { commonName: 'kubernetes', key: ca.key };
    serving = await issueCertificate({ commonName: 'kube-apiserver', usages: ['server'], altNames: ['api.team.svc', '10.0.0.12'] }, issuer);
    client = await issueCertificate({ commonName: 'cloudplane', organizations: ['system:masters'], usages: ['client'] }, issuer);
  });

  it('makes an authority that signs the others', () => {
    const authority = new X509Certificate(ca.cert);
    expect(authority.ca).toBe(true);
    expect(authority.verify(authority.publicKey)).toBe(true);
    for (const leaf of [serving, client]) {
      const cert = new X509Certificate(leaf.cert);
      expect(cert.ca).toBe(false);
      expect(cert.checkIssued(authority)).toBe(true);
      expect(cert.verify(authority.publicKey)).toBe(true);
      expect(cert.checkPrivateKey(createPrivateKey(leaf.key))).toBe(true);
    }
  });

  it('names the serving certificate by its DNS names and addresses, and the client by its groups', () => {
    const cert = new X509Certificate(serving.cert);
    expect(cert.checkHost('api.team.svc')).toBe('api.team.svc');
    expect(cert.checkIP('10.0.0.12')).toBe('10.0.0.12');
    expect(cert.checkHost('other.team.svc')).toBeUndefined();
    expect(new X509Certificate(client.cert).subject).toBe('O=system:masters\nCN=cloudplane');
  });

  it('passes OpenSSL’s strict verification, each for its purpose', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cp-x509-'));
    try {
      const write = (name: string, text: string) => {
        fs.writeFileSync(path.join(dir, name), text);
        return path.join(dir, name);
      };
      const caFile = write('ca.pem', ca.cert);
      const verify = (file: string, purpose: string) =>
        execFileSync('openssl', ['verify', '-x509_strict', '-purpose', purpose, '-CAfile', caFile, file], {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'pipe'],
        });
      expect(verify(write('serving.pem', serving.cert), 'sslserver')).toContain('OK');
      expect(verify(write('client.pem', client.cert), 'sslclient')).toContain('OK');
      expect(() => verify(path.join(dir, 'client.pem'), 'sslserver')).toThrow();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
