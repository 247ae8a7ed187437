/**
 * Contexts: named API endpoints with their keys, in a YAML file at $CLOUDPLANE_CONFIG or
 * $XDG_CONFIG_HOME/cloudplane/config.yaml (~/.config by default). The file holds keys, so
 * it is written with mode 0600 (in a 0700 directory) and replaced atomically.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { CliError, EXIT, usageError } from './exit-codes';
import { fieldOf, hasStrings, textOf } from '../lib/unknown-values';

export interface Context {
  api_url: string;
  api_key: string;
}

export interface ContextFile {
  current_context: string | null;
  contexts: Record<string, Context>;
}

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CLOUDPLANE_CONFIG) return env.CLOUDPLANE_CONFIG;
  const base = env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config');
  return path.join(base, 'cloudplane', 'config.yaml');
}

export function readContexts(file = configPath()): ContextFile {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if (fieldOf(err, 'code') === 'ENOENT') return { current_context: null, contexts: {} };
    throw usageError(`cannot read ${file}: ${textOf(err)}`);
  }
  let parsed: unknown;
  try {
    parsed = YAML.parse(text);
  } catch (err) {
    throw usageError(`${file} is not valid YAML: ${textOf(err)}`);
  }
  const contexts: Record<string, Context> = {};
  for (const [name, value] of Object.entries(fieldOf(parsed, 'contexts') ?? {})) {
    if (!hasStrings(value, 'api_url', 'api_key')) throw usageError(`${file}: context ${name} needs api_url and api_key`);
    contexts[name] = { api_url: value.api_url, api_key: value.api_key };
  }
  const current = fieldOf(parsed, 'current_context');
  return { current_context: typeof current === 'string' ? current : null, contexts };
}

export function writeContexts(doc: ContextFile, file = configPath()): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, YAML.stringify(doc), { mode: 0o600 });
  // A file that existed with looser permissions is replaced, so the mode is ours.
  fs.renameSync(temporary, file);
}

export interface Credentials {
  apiUrl: string;
  apiKey: string;
  /** Where they came from, for messages. */
  context: string | null;
}

/**
 * The endpoint and key of a command: CLOUDPLANE_API_URL and CLOUDPLANE_API_KEY override
 * the context's (--context NAME, else the current one).
 */
export function resolveCredentials(contextName: string | undefined, env: NodeJS.ProcessEnv = process.env): Credentials {
  const doc = readContexts(configPath(env));
  const name = contextName ?? doc.current_context ?? null;
  const context = name ? doc.contexts[name] : undefined;
  if (contextName && !context) throw usageError(`no context named ${contextName} in ${configPath(env)} (cloudplane auth list)`);
  const apiUrl = env.CLOUDPLANE_API_URL || context?.api_url;
  const apiKey = env.CLOUDPLANE_API_KEY || context?.api_key;
  if (!apiUrl || !apiKey) {
    throw new CliError('no API endpoint or key: run `cloudplane auth init`, or set CLOUDPLANE_API_URL and CLOUDPLANE_API_KEY', EXIT.auth);
  }
  return { apiUrl: normaliseApiUrl(apiUrl), apiKey, context: context ? name : null };
}

/** The service's base address: `https://host[:port]`, accepted with or without a trailing /api/v1. */
export function normaliseApiUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw usageError(`not a URL: ${raw}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw usageError(`the API URL must be http or https: ${raw}`);
  return `${url.origin}${url.pathname.replace(/\/+$/, '').replace(/\/api\/v1$/, '')}`;
}
