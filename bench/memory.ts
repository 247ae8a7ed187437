/**
 * Where the memory of a resource goes (issue 16, item 2). Two modes:
 *
 *   node --expose-gc dist/bench/memory.js snapshot <count> <file.heapsnapshot>
 *     starts the real service in-process (embedded store, fresh data directory, simulated
 *     provider without delays), creates <count> load balancers through the write the API
 *     makes (ResourceWriter.create), waits until every one is `running` and the outbox is
 *     drained, collects garbage twice and writes a V8 heap snapshot (and prints
 *     process.memoryUsage as JSON on the last line).
 *
 *   node --max-old-space-size=8192 dist/bench/memory.js analyze <before> <after> <count> [out.md]
 *     reads two snapshots, builds the dominator tree of each (weak edges left out), and
 *     prints, per resource of the difference: the self size by constructor, and the
 *     retained size of every object that retains much, named by the path it is reached by.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import { ruleContextOf } from '../src/events/catalog';
import { known } from '../src/lib/known';
import { stackOf } from './report';
import { SettledObjects } from './settled';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const KEY = 'cpk_Bench0123456789abcdefghijABCDEFGHIJKLMNO';

async function snapshot(count: number, file: string): Promise<void> {
  const { loadConfig } = await import('../src/config');
  const { createLogger } = await import('../src/logger');
  const { startService } = await import('../src/service');
  const { loadBalancerFamily: family } = await import('../src/resources/load-balancer');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-bench-memory-'));
  const config = loadConfig({
    CLOUDPLANE_PORT: '0',
    CLOUDPLANE_DATA_DIR: dataDir,
    CLOUDPLANE_LOG_LEVEL: 'silent',
    CLOUDPLANE_BOOTSTRAP_API_KEY: KEY,
    CLOUDPLANE_QUOTAS: 'load_balancer=100000000',
    CLOUDPLANE_SIM_DELAY_MS: '0',
    // Settled means the outboxes drained, as they are 5 minutes after a resource's last change: at once here.
    CLOUDPLANE_OUTBOX_DRAIN_SECONDS: '0',
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('CLOUDPLANE_'))),
  });
  const service = await startService(config, createLogger('silent'));
  try {
    const { teamId, keyId } = known(service.bootstrap, 'the bootstrap team and key');
    const settled = new SettledObjects(service.ctx.store, family.kind, 'running');
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < count) {
          const n = next++;
          await service.ctx.writer.create(family, teamId, family.specFromCreate({ name: `mem-${n}`, region: 'fra1' }, ruleContextOf(config)), keyId);
        }
      }),
    );
    // Settled: every one running and its outbox relayed (what a long-running service holds).
    while (settled.settledCount < count) await sleep(500);
    settled.stop();
    await sleep(Number(process.env.BENCH_SETTLE_MS ?? 5000));
    const gc = (globalThis as { gc?: () => void }).gc;
    if (!gc) throw new Error('run with --expose-gc');
    gc();
    await sleep(10);
    gc();
    const m = process.memoryUsage();
    // Each space's size beside its use: a heap total far above heap used is pages V8 kept, not live objects.
    const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, { size: s.space_size, used: s.space_used_size }]));
    // RSS split as the kernel counts it (Linux): anonymous memory (heaps, malloc) and mapped files (the node binary).
    const status = fs.existsSync('/proc/self/status') ? fs.readFileSync('/proc/self/status', 'utf8') : '';
    const kernel = Object.fromEntries([...status.matchAll(/^(RssAnon|RssFile|RssShmem):\s+(\d+) kB$/gm)].map(([, name, kb]) => [name, Number(kb) * 1024]));
    v8.writeHeapSnapshot(file);
    process.stdout.write(
      `${JSON.stringify({ count, file, rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers, kernel, spaces })}\n`,
    );
  } finally {
    await service.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------

interface Graph {
  names: string[];
  nodeCount: number;
  type: Uint8Array;
  name: Uint32Array;
  selfSize: Float64Array;
  firstEdge: Uint32Array;
  edgeType: Uint8Array;
  edgeName: Uint32Array; // string index, or element index for element/hidden edges
  edgeTo: Uint32Array;
  nodeTypes: string[];
  edgeTypes: string[];
}

export function readGraph(file: string): Graph {
  const raw = JSON.parse(fs.readFileSync(file, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; edge_fields: string[]; node_types: [string[]]; edge_types: [string[]] } };
    nodes: number[];
    edges: number[];
    strings: string[];
  };
  const meta = raw.snapshot.meta;
  const nf = meta.node_fields.length;
  const ef = meta.edge_fields.length;
  const nodeCount = raw.nodes.length / nf;
  const [iType, iName, iSize, iEdges] = ['type', 'name', 'self_size', 'edge_count'].map((f) => meta.node_fields.indexOf(f));
  const [eType, eName, eTo] = ['type', 'name_or_index', 'to_node'].map((f) => meta.edge_fields.indexOf(f));
  const g: Graph = {
    names: raw.strings,
    nodeCount,
    type: new Uint8Array(nodeCount),
    name: new Uint32Array(nodeCount),
    selfSize: new Float64Array(nodeCount),
    firstEdge: new Uint32Array(nodeCount + 1),
    edgeType: new Uint8Array(raw.edges.length / ef),
    edgeName: new Uint32Array(raw.edges.length / ef),
    edgeTo: new Uint32Array(raw.edges.length / ef),
    nodeTypes: meta.node_types[0],
    edgeTypes: meta.edge_types[0],
  };
  let edge = 0;
  for (let n = 0; n < nodeCount; n++) {
    g.type[n] = raw.nodes[n * nf + iType];
    g.name[n] = raw.nodes[n * nf + iName];
    g.selfSize[n] = raw.nodes[n * nf + iSize];
    g.firstEdge[n] = edge;
    edge += raw.nodes[n * nf + iEdges];
  }
  g.firstEdge[nodeCount] = edge;
  for (let e = 0; e < g.edgeTo.length; e++) {
    g.edgeType[e] = raw.edges[e * ef + eType];
    g.edgeName[e] = raw.edges[e * ef + eName];
    g.edgeTo[e] = raw.edges[e * ef + eTo] / nf;
  }
  return g;
}

/** Dominators (Cooper, Harvey, Kennedy), retained sizes, and a first path to every node. */
export function dominate(g: Graph) {
  const weak = g.edgeTypes.indexOf('weak');
  const n = g.nodeCount;
  const order = new Int32Array(n).fill(-1); // postorder number
  const rpo: number[] = [];
  const parent = new Int32Array(n).fill(-1);
  const parentEdge = new Int32Array(n).fill(-1);
  // Iterative DFS from the root (node 0).
  const stack: number[] = [0];
  const cursor = new Uint32Array(n);
  const seen = new Uint8Array(n);
  seen[0] = 1;
  for (let i = 0; i < n; i++) cursor[i] = g.firstEdge[i];
  let post = 0;
  while (stack.length) {
    const v = stack[stack.length - 1];
    if (cursor[v] < g.firstEdge[v + 1]) {
      const e = cursor[v]++;
      if (g.edgeType[e] === weak) continue;
      const w = g.edgeTo[e];
      if (!seen[w]) {
        seen[w] = 1;
        parent[w] = v;
        parentEdge[w] = e;
        stack.push(w);
      }
    } else {
      stack.pop();
      order[v] = post++;
      rpo.push(v);
    }
  }
  rpo.reverse();
  // Predecessors (reachable, non-weak edges), CSR.
  const predCount = new Uint32Array(n + 1);
  for (let v = 0; v < n; v++) {
    if (!seen[v]) continue;
    for (let e = g.firstEdge[v]; e < g.firstEdge[v + 1]; e++) if (g.edgeType[e] !== weak) predCount[g.edgeTo[e] + 1]++;
  }
  for (let i = 0; i < n; i++) predCount[i + 1] += predCount[i];
  const preds = new Uint32Array(predCount[n]);
  const fill = predCount.slice(0, n);
  for (let v = 0; v < n; v++) {
    if (!seen[v]) continue;
    for (let e = g.firstEdge[v]; e < g.firstEdge[v + 1]; e++) if (g.edgeType[e] !== weak) preds[fill[g.edgeTo[e]]++] = v;
  }
  const idom = new Int32Array(n).fill(-1);
  idom[0] = 0;
  const intersect = (a: number, b: number) => {
    while (a !== b) {
      while (order[a] < order[b]) a = idom[a];
      while (order[b] < order[a]) b = idom[b];
    }
    return a;
  };
  for (let changed = true; changed;) {
    changed = false;
    for (const v of rpo) {
      if (v === 0) continue;
      let d = -1;
      for (let p = predCount[v]; p < predCount[v + 1]; p++) {
        const u = preds[p];
        if (idom[u] === -1) continue;
        d = d === -1 ? u : intersect(u, d);
      }
      if (d !== -1 && idom[v] !== d) {
        idom[v] = d;
        changed = true;
      }
    }
  }
  const retained = new Float64Array(n);
  for (let i = rpo.length - 1; i >= 0; i--) {
    const v = rpo[i];
    retained[v] += g.selfSize[v];
    if (v !== 0) retained[idom[v]] += retained[v];
  }
  return { idom, retained, parent, parentEdge, reachable: seen };
}

export function label(g: Graph, v: number): string {
  const type = g.nodeTypes[g.type[v]];
  const name = g.names[g.name[v]];
  if (type === 'object' || type === 'closure' || type === 'native') return name.length > 40 ? `${name.slice(0, 40)}…` : name;
  return `(${type})`;
}

export function edgeLabel(g: Graph, e: number): string {
  const type = g.edgeTypes[g.edgeType[e]];
  if (type === 'element' || type === 'hidden') return `[${g.edgeName[e]}]`;
  const name = g.names[g.edgeName[e]];
  return type === 'internal' ? `{${name}}` : `.${name}`;
}

/** The path by which the DFS first reached v, as `Owner.edge.edge...`, at most `hops` long. */
export function pathOf(g: Graph, d: ReturnType<typeof dominate>, v: number, hops = 7): string {
  const parts: string[] = [];
  let x = v;
  for (let i = 0; i < hops && d.parent[x] > 0; i++) {
    parts.unshift(edgeLabel(g, d.parentEdge[x]));
    x = d.parent[x];
    // Stop at the first named class instance: it says who owns what.
    const l = label(g, x);
    if (g.nodeTypes[g.type[x]] === 'object' && !['Object', 'Array', 'Map', 'Set', '(object elements)', 'system / Context'].includes(l) && !l.startsWith('(')) {
      parts.unshift(l);
      return parts.join('');
    }
  }
  parts.unshift(label(g, x));
  return parts.join('');
}

function bySelf(g: Graph, d: ReturnType<typeof dominate>): Map<string, { count: number; size: number }> {
  const out = new Map<string, { count: number; size: number }>();
  for (let v = 0; v < g.nodeCount; v++) {
    if (!d.reachable[v]) continue;
    const key = `${g.nodeTypes[g.type[v]]}:${label(g, v)}`;
    const entry = out.get(key) ?? { count: 0, size: 0 };
    entry.count++;
    entry.size += g.selfSize[v];
    out.set(key, entry);
  }
  return out;
}

/** Objects retaining at least `min` bytes whose dominator retains much more than them alone (the owners). */
function owners(g: Graph, d: ReturnType<typeof dominate>, min: number, nodes = new Map<string, number>()): Map<string, number> {
  const out = new Map<string, number>();
  for (let v = 1; v < g.nodeCount; v++) {
    if (!d.reachable[v] || d.retained[v] < min) continue;
    const key = pathOf(g, d, v);
    if (d.retained[v] > (out.get(key) ?? 0)) {
      out.set(key, d.retained[v]);
      nodes.set(key, v);
    }
  }
  return out;
}

/** Children of v in the dominator tree, grouped by label, retaining at least `min` together. */
export function dominated(g: Graph, d: ReturnType<typeof dominate>, v: number, min: number): Array<{ how: string; retained: number; count: number }> {
  const groups = new Map<string, { retained: number; count: number }>();
  for (let w = 0; w < g.nodeCount; w++) {
    if (d.idom[w] !== v || w === v || !d.reachable[w]) continue;
    const via = d.parent[w] === v ? edgeLabel(g, d.parentEdge[w]).replace(/^\[\d+\]$/, '[i]') : 'deeper';
    const key = `${via} ${label(g, w)}`;
    const entry = groups.get(key) ?? { retained: 0, count: 0 };
    entry.retained += d.retained[w];
    entry.count++;
    groups.set(key, entry);
  }
  return [...groups]
    .map(([how, x]) => ({ how, ...x }))
    .filter((x) => x.retained >= min)
    .sort((x, y) => y.retained - x.retained);
}

function analyze(beforeFile: string, afterFile: string, count: number, outFile?: string): void {
  const lines: string[] = [];
  const say = (line: string) => {
    lines.push(line);
    process.stdout.write(`${line}\n`);
  };
  const kb = (n: number) => `${(n / 1024).toFixed(0)} KB`;
  const per = (n: number) => (n / count).toFixed(0);
  const a = readGraph(beforeFile);
  const da = dominate(a);
  const selfA = bySelf(a, da);
  const ownersA = owners(a, da, 64 * 1024);
  const totalA = da.retained[0];
  const b = readGraph(afterFile);
  const db = dominate(b);
  const selfB = bySelf(b, db);
  const ownerNodes = new Map<string, number>();
  const ownersB = owners(b, db, 256 * 1024, ownerNodes);
  const totalB = db.retained[0];
  say(`Reachable heap: ${kb(totalA)} with 0, ${kb(totalB)} with ${count}: ${per(totalB - totalA)} bytes per resource.`);
  say('');
  say(`### Self size by constructor, difference per resource (top 30)`);
  say('');
  say('| constructor | objects per resource | bytes per resource |');
  say('|---|---:|---:|');
  const diffs = [...selfB]
    .map(([k, v]) => ({ k, count: v.count - (selfA.get(k)?.count ?? 0), size: v.size - (selfA.get(k)?.size ?? 0) }))
    .sort((x, y) => y.size - x.size);
  for (const x of diffs.slice(0, 30)) say(`| \`${x.k}\` | ${(x.count / count).toFixed(2)} | ${per(x.size)} |`);
  say('');
  say(`### Retained size by owner (the path an object is first reached by), difference per resource`);
  say('');
  say('| owner path | retained before | retained after | bytes per resource |');
  say('|---|---:|---:|---:|');
  const rows = [...ownersB]
    .map(([k, v]) => ({ k, before: ownersA.get(k) ?? 0, after: v }))
    .filter((x) => x.after - x.before > count * 8)
    .sort((x, y) => y.after - y.before - (x.after - x.before));
  for (const x of rows.slice(0, 60)) say(`| \`${x.k.replace(/\|/g, '\\|')}\` | ${kb(x.before)} | ${kb(x.after)} | ${per(x.after - x.before)} |`);
  say('');
  say(`### What the largest owners hold (after; dominator-tree children retaining >= ${kb(count * 4)})`);
  say('');
  for (const v of rows.slice(0, 14).map((x) => known(ownerNodes.get(x.k), 'the node of an owner path'))) {
    say(`- \`${pathOf(b, db, v)}\` (${label(b, v)}): ${per(db.retained[v])} bytes per resource`);
    for (const c of dominated(b, db, v, count * 4).slice(0, 8)) say(`  - ${c.how}: ${per(c.retained)} bytes per resource (${c.count} objects)`);
  }
  say('');
  say('### Held by no single owner (dominated by the root or a GC-root group), after');
  say('');
  const tops = [0];
  for (let v = 1; v < b.nodeCount; v++) if (db.idom[v] === 0 && b.nodeTypes[b.type[v]] === 'synthetic') tops.push(v);
  for (const v of tops)
    for (const c of dominated(b, db, v, count * 16).slice(0, 12))
      say(`- under ${label(b, v)} ${b.names[b.name[v]]}: ${c.how}: ${per(c.retained)} bytes per resource (${c.count} objects)`);
  if (outFile) fs.writeFileSync(outFile, `${lines.join('\n')}\n`);
}

const [mode, ...args] = require.main === module ? process.argv.slice(2) : ['library'];
if (mode === 'snapshot') {
  snapshot(Number(args[0]), args[1]).then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`${stackOf(err)}\n`);
      process.exit(1);
    },
  );
} else if (mode === 'analyze') {
  analyze(args[0], args[1], Number(args[2]), args[3]);
} else if (mode !== 'library') {
  process.stderr.write('usage: memory.js snapshot <count> <file> | analyze <before> <after> <count> [out.md]\n');
  process.exit(2);
}
