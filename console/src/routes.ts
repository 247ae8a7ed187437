/**
 * Every page of the console: a hash path pattern (`:name` segments become the page's
 * `params`) mapped to a page component. A route with `nav` gets a link in the navigation,
 * under its section, in the order of this list. Pages of other parts add their lines here.
 */
import type { Component } from 'svelte';
import { families } from './lib/families';
import SignIn from './pages/SignIn.svelte';
import FamilyList from './pages/families/FamilyList.svelte';
import FamilyDetail from './pages/families/FamilyDetail.svelte';
import FamilyCreate from './pages/families/FamilyCreate.svelte';

export interface PageProps {
  params: Record<string, string>;
  [prop: string]: unknown;
}

export interface Route {
  pattern: string;
  component: Component<any>;
  /** Extra props for the component (the family a generic page shows). */
  props?: Record<string, unknown>;
  title: string;
  nav?: { label: string; section: 'Resources' | 'Activity' | 'Settings' };
  /** Shown without a session (the sign-in page). */
  public?: boolean;
}

export const routes: Route[] = [
  { pattern: '/sign-in', component: SignIn, title: 'Sign in', public: true },
  ...families.flatMap((family): Route[] => [
    { pattern: `/${family.path}`, component: FamilyList, props: { family }, title: family.title, nav: { label: family.title, section: 'Resources' } },
    { pattern: `/${family.path}/new`, component: FamilyCreate, props: { family }, title: `New ${family.singular}` },
    { pattern: `/${family.path}/:id`, component: FamilyDetail, props: { family }, title: family.title },
  ]),
];

/** Where `/` and a fresh sign-in lead. */
export const HOME = `/${families[0].path}`;
