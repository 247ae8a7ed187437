// `helm test`: the operator answers ready, and the bootstrap key reads through the API.
// Runs with `node -e` in the operator's own image; exits non-zero, saying why, on a failure.
const base = process.env.CLOUDPLANE_URL;
const key = process.env.CLOUDPLANE_API_KEY;

async function check() {
  const ready = await fetch(`${base}/readyz`);
  if (ready.status !== 200) throw new Error(`GET /readyz answered ${ready.status}: ${await ready.text()}`);
  const regions = await fetch(`${base}/api/v1/regions`, { headers: { authorization: `Bearer ${key}` } });
  const body = await regions.text();
  if (regions.status !== 200) throw new Error(`GET /api/v1/regions with the bootstrap key answered ${regions.status}: ${body}`);
  const count = JSON.parse(body).data.length;
  console.log(`ok: ${base} is ready and lists ${count} regions with the bootstrap key`);
}

check().catch((error) => {
  console.error(`helm test failed: ${error.message}${error.cause ? ` (${error.cause.message ?? error.cause})` : ''}`);
  process.exit(1);
});
