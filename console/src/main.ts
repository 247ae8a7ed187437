import { mount } from 'svelte';
import App from './App.svelte';
import StartFailed from './StartFailed.svelte';
import { loadFamilies } from './lib/families';
import { routingFor } from './routes';
import './app.css';

const target = document.getElementById('app')!;
// The families, and so the pages, are what the API describes: read them before the first page.
loadFamilies().then(
  (families) => mount(App, { target, props: routingFor(families) }),
  (error: unknown) => mount(StartFailed, { target, props: { message: error instanceof Error ? error.message : String(error) } }),
);
