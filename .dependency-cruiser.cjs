/**
 * The layers of src/ and the rules that hold them (docs/layers.md). A module may import
 * its own layer and any lower one, never a higher one; the peer layers (webhooks, audit,
 * usage, agent) do not import each other; and nothing in src/ is part of an import cycle.
 * Type-only imports count: a type reaching up ties the layers as surely as a value does.
 *
 * Run: `make layers` (npx depcruise src --config .dependency-cruiser.cjs), and
 * test/unit/layers.test.ts, which runs the same rules through the library's API.
 */

/** Lowest first. Each entry: the layer's name and the paths (regular expressions) in it. */
const LAYERS = [
  { name: 'lib', paths: ['^src/lib/', '^src/logger\\.ts$', '^src/metrics\\.ts$'] },
  { name: 'config', paths: ['^src/config\\.ts$'] },
  { name: 'vpn-agent', paths: ['^src/vpn-agent/'] },
  { name: 'store', paths: ['^src/store/'] },
  { name: 'resources', paths: ['^src/resources/'] },
  { name: 'events', paths: ['^src/events/'] },
  { name: 'drivers', paths: ['^src/drivers/'] },
  { name: 'controllers', paths: ['^src/controllers/', '^src/alerts/'] },
  { name: 'webhooks', peers: 'side', paths: ['^src/webhooks/'] },
  { name: 'audit', peers: 'side', paths: ['^src/audit/'] },
  { name: 'usage', peers: 'side', paths: ['^src/usage/'] },
  { name: 'agent', peers: 'side', paths: ['^src/agent/'] },
  { name: 'accounts', paths: ['^src/accounts/'] },
  { name: 'api', paths: ['^src/api/'] },
  { name: 'families', paths: ['^src/families/'] },
  {
    name: 'entry',
    paths: ['^src/cli/', '^src/service\\.ts$', '^src/main\\.ts$', '^src/record-upkeep\\.ts$', '^src/testing\\.ts$', '^src/init-manifests\\.ts$'],
  },
];

/** Peers share one rank: none is above another, so none may import another. */
const ranks = [];
for (const layer of LAYERS) {
  const previous = ranks[ranks.length - 1];
  if (layer.peers && previous && previous.peers === layer.peers) previous.layers.push(layer);
  else ranks.push({ peers: layer.peers, layers: [layer] });
}

const upward = [];
ranks.forEach((rank, i) => {
  const higher = ranks.slice(i + 1).flatMap((r) => r.layers.flatMap((l) => l.paths));
  if (higher.length === 0) return;
  for (const layer of rank.layers) {
    upward.push({
      name: `no-upward-from-${layer.name}`,
      comment: `${layer.name} sits below ${ranks
        .slice(i + 1)
        .flatMap((r) => r.layers.map((l) => l.name))
        .join(', ')}: it may not import them (docs/layers.md)`,
      severity: 'error',
      from: { path: layer.paths },
      to: { path: higher },
    });
  }
});

const sideways = [];
for (const rank of ranks.filter((r) => r.layers.length > 1)) {
  for (const layer of rank.layers) {
    const others = rank.layers.filter((l) => l !== layer);
    sideways.push({
      name: `no-peer-from-${layer.name}`,
      comment: `${layer.name} and ${others.map((l) => l.name).join(', ')} are peers: they meet through the layers below or the composition root, never directly (docs/layers.md)`,
      severity: 'error',
      from: { path: layer.paths },
      to: { path: others.flatMap((l) => l.paths) },
    });
  }
}

module.exports = {
  forbidden: [
    ...upward,
    ...sideways,
    {
      name: 'no-circular',
      comment: 'An import cycle: the modules in it can be neither loaded nor understood one at a time (docs/layers.md)',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'not-in-a-layer',
      comment: 'Every module under src/ belongs to a layer: add a new folder to LAYERS in .dependency-cruiser.cjs and to docs/layers.md',
      severity: 'error',
      from: { path: '^src/', pathNot: LAYERS.flatMap((l) => l.paths) },
      to: {},
    },
  ],
  options: {
    includeOnly: '^src/',
    doNotFollow: { path: 'node_modules' },
    // Type-only imports (`import type`, types used only in signatures) are dependencies too.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
