/**
 * The console's build: Svelte 5 components compiled by Vite into plain JavaScript and CSS
 * under dist/console, which the service serves at `/` (src/api/plugins/console.ts).
 * `make build` runs it; `npx vite --config console/vite.config.mts` serves it for development.
 */
import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import path from 'node:path';

const here = import.meta.dirname;

export default defineConfig({
  root: here,
  base: '/',
  // The service sends a Content-Security-Policy without 'unsafe-inline': no inline script or
  // style may be emitted, so the modulepreload polyfill (an inline helper in some setups) is off.
  build: {
    outDir: path.resolve(here, '../dist/console'),
    emptyOutDir: true,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    cssCodeSplit: false,
    // Which plugins took long (a warning on any busy machine) is nothing a person running the service can act on.
    rolldownOptions: { checks: { bundlerTimings: false } },
  },
  plugins: [
    svelte({
      configFile: false,
      // The compiler's accessibility checks (a11y_*: a click handler without a key handler, an
      // input without a label, ...) fail the build rather than scroll past as warnings.
      onwarn(warning, defaultHandler) {
        if (warning.code.startsWith('a11y')) throw new Error(`${warning.filename}:${warning.start?.line}: ${warning.message} (${warning.code})`);
        defaultHandler(warning);
      },
    }),
  ],
  server: { proxy: { '/api': 'http://127.0.0.1:8080', '/auth': 'http://127.0.0.1:8080' } },
});
