/**
 * A question, understood without an LLM: its intent and the entities it names, matched
 * against the team's live state — the families (by title, plural, path, acronym or id
 * prefix), a resource by its id or its name (names are per family), a region, a state and
 * a time window. The words are matched, not understood: what this cannot place is
 * `unknown`, and the agent says so rather than guessing.
 */
import type { AnyFamily } from '../resources/family';
import { pluralOf } from '../lib/plural';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** The units a question may name a window in ("last 2 hours"), and what each is called in the answer. */
const UNIT_MS: Record<string, number> = { minute: 60_000, min: 60_000, hour: HOUR_MS, hr: HOUR_MS, day: DAY_MS, week: 7 * DAY_MS };
const UNIT_NAMES: Record<string, string> = { min: 'minute', hr: 'hour' };
export const ID_IN_TEXT = /\b([a-z][a-z0-9]*)_([0-9a-z]{16,26})\b/g;

export type Intent = 'count' | 'list' | 'status' | 'history' | 'howto' | 'events' | 'failures' | 'not_ready' | 'incidents' | 'overview' | 'unknown';

/** A resource of the team as its family presents it. */
export interface LiveResource {
  family: AnyFamily;
  record: Record<string, unknown>;
}

export interface Window {
  sinceMs: number;
  /** "in the last hour" */
  phrase: string;
}

export interface Question {
  intent: Intent;
  /** The families the question names, most specific phrase first-come. */
  families: AnyFamily[];
  /** The team's resources the question names by name or id. */
  resources: LiveResource[];
  /** Ids in the question (lower case), whether or not the team has them. */
  ids: string[];
  region?: string;
  /** A state of the named families (or of any family when none is named). */
  state?: string;
  /** "not running": the state is the one the resources are not in. */
  negated?: boolean;
  window?: Window;
  /** howto: the operation asked about (`create`, `delete`, `stop`, ...). */
  verb?: string;
  /** status: the name asked about that matches nothing of the team's. */
  unmatchedName?: string;
}

/** What the parser matches a question against: the askable families, the team's resources and the regions. */
export interface LiveState {
  families: AnyFamily[];
  resources: LiveResource[];
  regions: string[];
}

/** Words a user may call a family by: its title, plural, path, acronym and id prefix. */
export function phrasesOf(family: AnyFamily): string[] {
  const title = family.title.toLowerCase();
  const words = title.split(/\s+/);
  const phrases = [
    title,
    pluralOf(title),
    family.plural.toLowerCase(),
    family.name.replace(/_/g, ' '),
    (family.path.split('/').at(-1) ?? family.path).replace(/-/g, ' '),
  ];
  if (words.length > 1) phrases.push(words.map((w) => w[0]).join(''), `${words.map((w) => w[0]).join('')}s`);
  if (family.idPrefix.length >= 3) phrases.push(family.idPrefix, `${family.idPrefix}s`);
  return [...new Set(phrases)];
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** The phrase as a whole word (or words) of the text; names may hold `-`, `.` and `_`. */
export const hasWord = (text: string, phrase: string) => new RegExp(`(?<![\\w.-])${escapeRegExp(phrase)}(?![\\w-]|\\.\\w)`).test(text);

export const nameOf = (record: Record<string, unknown>): string | null => {
  const name = record.name ?? record.title ?? record.url;
  return typeof name === 'string' ? name : null;
};

/** "last hour", "past 30 minutes", "last 2 days", "today"; null when the question names none. */
export function windowIn(question: string, now: number): Window | null {
  const match = /\b(?:last|past)\s+(\d+)?\s*(minute|min|hour|hr|day|week)s?\b/.exec(question);
  if (match) {
    const count = match[1] ? Number(match[1]) : 1;
    const unitMs = UNIT_MS[match[2]];
    const unit = UNIT_NAMES[match[2]] ?? match[2];
    return { sinceMs: now - count * unitMs, phrase: `in the last ${count === 1 ? unit : `${count} ${unit}s`}` };
  }
  if (/\btoday\b/.test(question)) {
    const midnight = new Date(now);
    midnight.setUTCHours(0, 0, 0, 0);
    return { sinceMs: midnight.getTime(), phrase: 'today (UTC)' };
  }
  return null;
}

/** Families named in the text; a phrase inside a longer matched one does not count. */
export function familiesIn(words: string, candidates: AnyFamily[]): AnyFamily[] {
  const hits = candidates.flatMap((family) =>
    phrasesOf(family)
      .filter((phrase) => hasWord(words, phrase))
      .map((phrase) => ({ family, phrase })),
  );
  const kept = hits.filter(
    (hit) => !hits.some((other) => other.phrase.length > hit.phrase.length && other.phrase.includes(hit.phrase) && other.family !== hit.family),
  );
  return [...new Set(kept.map((hit) => hit.family))];
}

/** What "how do I <verb>" may say for the generic operations; a family's own commands are matched by their words. */
const VERB_SYNONYMS: Record<string, string> = {
  create: 'create',
  make: 'create',
  add: 'create',
  launch: 'create',
  provision: 'create',
  spin: 'create',
  set: 'create',
  new: 'create',
  delete: 'delete',
  remove: 'delete',
  destroy: 'delete',
  drop: 'delete',
  update: 'update',
  change: 'update',
  modify: 'update',
  edit: 'update',
  rename: 'update',
  resize: 'update',
  list: 'list',
  see: 'list',
  show: 'list',
  view: 'list',
  find: 'list',
  get: 'get',
  read: 'get',
  inspect: 'get',
};

const HOWTO = /^\s*(?:how\s+(?:do|can|could|would|should|to)\b(?:\s+(?:i|we|you|one))?|what\s+is\s+the\s+(?:call|command|api)\s+to)\s+(?:\w+\s+)??([a-z-]+)\b/;
const HISTORY_WORDS = /\b(history|events?|happened|timeline|log)\b/;
const OVERVIEW_WORDS = /\b(overview|summary|inventory|everything|infrastructure|resources)\b/;
/** Words around a name that are no name: a resource called one of these is not looked for. */
const NOT_NAMES = new Set(['a', 'an', 'the', 'my', 'all', 'any', 'of', 'in', 'is', 'it', 'status', 'list', 'show', 'count', 'events', 'history']);

/** The resources the question names: by id, or by name (longest first; a name inside a longer matched one does not count). */
function resourcesIn(raw: string, question: string, named: AnyFamily[], live: LiveState): { resources: LiveResource[]; ids: string[] } {
  const ids = [...raw.matchAll(ID_IN_TEXT)].map((m) => m[0].toLowerCase());
  const byId = live.resources.filter((r) => ids.includes(String(r.record.id).toLowerCase()));
  const familyWords = new Set(live.families.flatMap(phrasesOf));
  const stateWords = new Set(live.families.flatMap((f) => f.states));
  const candidates = live.resources.filter((r) => {
    const name = nameOf(r.record)?.toLowerCase();
    if (!name || name.length < 2 || NOT_NAMES.has(name) || familyWords.has(name) || stateWords.has(name) || live.regions.includes(name)) return false;
    return hasWord(question, name);
  });
  // A family named with the name narrows it ("the server web"), when it has one so called.
  const inNamed = candidates.filter((r) => named.includes(r.family));
  const scoped = inNamed.length > 0 ? inNamed : candidates;
  const names = scoped.map((r) => nameOf(r.record)?.toLowerCase() ?? '');
  const byName = scoped.filter((_, i) => !names.some((other) => other.length > names[i].length && other.includes(names[i])));
  return { resources: [...new Set([...byId, ...byName])], ids };
}

/** The question's intent and entities, against the team's live state. */
export function parseQuestion(raw: string, live: LiveState, now: number): Question {
  const question = raw.toLowerCase().trim();
  const words = question.replace(/[-_]/g, ' ');
  const families = familiesIn(words, live.families);
  const region = live.regions.find((r) => hasWord(question, r.toLowerCase()));
  const window = windowIn(question, now) ?? undefined;
  const base = { families, region, window };

  const howto = HOWTO.exec(question);
  if (howto) {
    const ownWords = new Set(families.flatMap((f) => (f.commands ?? []).flatMap((c) => c.words)));
    const said = howto[1];
    const verb = Object.hasOwn(VERB_SYNONYMS, said) && !ownWords.has(said) ? VERB_SYNONYMS[said] : said;
    return { ...base, intent: 'howto', resources: [], ids: [], verb };
  }

  const found = resourcesIn(raw, question, families, live);
  const { ids } = found;
  // "How many web servers ..." counts servers, though one of them be named web.
  const counting = /\b(how many|count|number of)\b/.test(question) && families.length > 0 && ids.length === 0;
  const resources = counting ? [] : found.resources;
  const scope = families.length > 0 ? families : live.families;
  const negation = /\b(?:not|isn'?t|aren'?t)\s+(\w+)/.exec(question);
  const stateFamilies = resources.length > 0 ? [] : scope;
  const state =
    negation && stateFamilies.some((f) => f.states.includes(negation[1]))
      ? negation[1]
      : stateFamilies.flatMap((f) => f.states).find((s) => hasWord(question, s));
  const entities = { ...base, resources, ids, ...(state ? { state } : {}), ...(negation ? { negated: true } : {}) };

  if (ids.length > 0 || resources.length > 0) return { ...entities, intent: HISTORY_WORDS.test(question) ? 'history' : 'status' };
  if (/\bincidents?\b/.test(question)) return { ...entities, intent: 'incidents' };
  if (/\b(fail(ed|ures?|ing|s)?|errors?|broken|went wrong|problems?|issues?)\b/.test(question)) return { ...entities, intent: 'failures' };
  if (negation || /\b(down|unhealthy|not ready|degraded)\b/.test(question)) return { ...entities, intent: 'not_ready' };
  if (/\b(how many|count|number of)\b/.test(question)) return { ...entities, intent: 'count' };
  if (/\b(events?|happened|activity|changes|changed|what'?s new|latest)\b/.test(question)) return { ...entities, intent: 'events' };
  if (families.length > 0 || state || region) return { ...entities, intent: 'list' };
  if (OVERVIEW_WORDS.test(question)) return { ...entities, intent: 'overview' };
  const statusOf =
    /\b(?:status|state|health)\s+of\s+(?:the\s+|my\s+)?([\w.-]+)/.exec(question) ??
    /\bhow\s+is\s+(?:the\s+|my\s+)?([\w.-]+)\s+(?:doing|going)\b/.exec(question);
  if (statusOf) return { ...entities, intent: 'status', unmatchedName: statusOf[1] };
  return { ...entities, intent: 'unknown' };
}
