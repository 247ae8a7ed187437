/**
 * Every decorator of a reconciler (pausing, adoption, a webhook's signing secret first) is
 * its inner reconciler in every respect but the pass it runs first: the optional parts a
 * controller asks of a reconciler reach the inner one, called on it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedStore } from '../../src/store/embedded';
import { ResourceWriter } from '../../src/resources/writer';
import { loadBalancerFamily } from '../../src/resources/load-balancer';
import { families } from '../../src/resources/registry';
import { quotaLimits } from '../../src/resources/quota';
import { loadConfig } from '../../src/config';
import { ruleContextOf } from '../../src/events/catalog';
import { pausable } from '../../src/controllers/pause';
import { adopting } from '../../src/controllers/adoption';
import { signingSecretFirst } from '../../src/webhooks/reconciler';
import type { Reconciler } from '../../src/controllers/controller';

let dir: string;
let store: EmbeddedStore;
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-decorators-'));
  store = new EmbeddedStore({ dataDir: dir });
  await store.start();
});
afterAll(async () => {
  await store.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A reconciler that records which of its parts were called, and on what. */
class Inner implements Reconciler {
  readonly kind = loadBalancerFamily.kind;
  readonly calls: string[] = [];
  async reconcile(team: string, id: string): Promise<undefined> {
    this.calls.push(`reconcile ${team}/${id}`);
  }
  watchExternal(changed: (team: string, id: string) => void) {
    this.calls.push('watchExternal');
    changed('team_a', 'lb_1');
    return () => this.calls.push('stopped');
  }
}

const decorators: Array<[string, (inner: Reconciler) => Reconciler]> = [
  ['pausable', (inner) => pausable(inner, store)],
  [
    'adopting',
    (inner) =>
      adopting(loadBalancerFamily, inner, store, new ResourceWriter(store), { store, limits: quotaLimits(families, {}) }, ruleContextOf(loadConfig({}))),
  ],
  ['signingSecretFirst', (inner) => signingSecretFirst(inner, store)],
];

test.each(decorators)('%s forwards the optional parts to the reconciler it wraps', (_name, decorate) => {
  const inner = new Inner();
  const outer = decorate(inner);
  expect(outer.kind).toBe(inner.kind);
  const seen: string[] = [];
  const stop = outer.watchExternal!((team, id) => seen.push(`${team}/${id}`));
  stop();
  expect(seen).toEqual(['team_a/lb_1']);
  expect(inner.calls).toEqual(['watchExternal', 'stopped']);
});
