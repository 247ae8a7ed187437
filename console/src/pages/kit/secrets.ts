/**
 * A secret shown once lives only in a page's state. `forgetOnLeave(clear)` makes the page
 * drop it when the user leaves: when the page is unmounted (another console page) and on
 * `pagehide` (another site, a reload, a closed tab), so that the back-forward cache never
 * brings it back. Use as `$effect(() => forgetOnLeave(() => (revealed = null)))`.
 */
export function forgetOnLeave(clear: () => void): () => void {
  window.addEventListener('pagehide', clear);
  return () => {
    window.removeEventListener('pagehide', clear);
    clear();
  };
}
