/**
 * Looks for secrets where they must not be: every file under a directory, read as raw
 * bytes, and any text (log output, events), in the forms a secret could be written in
 * (as is, base64, base64url, hex).
 */
import fs from 'node:fs';
import path from 'node:path';

export interface Needle {
  /** What the secret is, for the failure message (never the secret itself). */
  label: string;
  value: string | Buffer;
}

/** The byte strings a secret could appear as. */
export function formsOf(value: string | Buffer): Array<{ form: string; bytes: Buffer }> {
  const raw = Buffer.isBuffer(value) ? value : Buffer.from(value, 'utf8');
  const forms = [
    { form: 'raw', bytes: raw },
    { form: 'base64', bytes: Buffer.from(raw.toString('base64').replace(/=+$/, '')) },
    { form: 'base64url', bytes: Buffer.from(raw.toString('base64url')) },
    { form: 'hex', bytes: Buffer.from(raw.toString('hex')) },
    { form: 'HEX', bytes: Buffer.from(raw.toString('hex').toUpperCase()) },
  ];
  return forms.filter((f, i) => forms.findIndex((g) => g.bytes.equals(f.bytes)) === i);
}

export function filesUnder(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name));
}

/** `<label> (<form>) in <where>` for every needle found in `haystack`. */
export function findIn(where: string, haystack: Buffer, needles: Needle[]): string[] {
  const found: string[] = [];
  for (const needle of needles) {
    for (const { form, bytes } of formsOf(needle.value)) {
      if (haystack.includes(bytes)) found.push(`${needle.label} (${form}) in ${where}`);
    }
  }
  return found;
}

/** Every needle found in any file under `dir`, by file. */
export function findInFiles(dir: string, needles: Needle[]): string[] {
  return filesUnder(dir).flatMap((file) => findIn(path.relative(dir, file), fs.readFileSync(file), needles));
}
