/**
 * One polite live region for the whole console (App.svelte renders it): status changes that
 * happen without a reload (a load balancer turning `running`) are read out by screen readers.
 * Each announcement is a new line in the region, so repeating a sentence is read again.
 */
export interface Announcement {
  id: number;
  text: string;
}

export const announcements: Announcement[] = $state([]);
let next = 0;

export function announce(text: string): void {
  announcements.push({ id: next++, text });
  if (announcements.length > 5) announcements.splice(0, announcements.length - 5);
}
