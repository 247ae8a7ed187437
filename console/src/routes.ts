/**
 * Every page of the console: a hash path pattern (`:name` segments become the page's
 * `params`) mapped to a page component. A route with `nav` gets a link in the navigation,
 * under its section, in the order of this list. Pages of other parts add their lines here;
 * the resource families' pages are made for the families the API describes (lib/families.ts).
 */
import type { Component } from 'svelte';
import type { Family } from './lib/families';
import SignIn from './pages/SignIn.svelte';
import FamilyList from './pages/families/FamilyList.svelte';
import FamilyDetail from './pages/families/FamilyDetail.svelte';
import FamilyCreate from './pages/families/FamilyCreate.svelte';
import FamilyEdit from './pages/families/FamilyEdit.svelte';
import WebhookList from './pages/webhooks/WebhookList.svelte';
import FailedDeliveries from './pages/webhooks/FailedDeliveries.svelte';
import WebhookDetail from './pages/webhooks/WebhookDetail.svelte';
import AuditLog from './pages/audit/AuditLog.svelte';
import AgentThreads from './pages/agent/Threads.svelte';
import AgentThread from './pages/agent/Thread.svelte';
import Profile from './pages/settings/Profile.svelte';
import TeamSettings from './pages/settings/TeamSettings.svelte';
import ApiKeys from './pages/settings/ApiKeys.svelte';
import Overview from './pages/overview/Overview.svelte';
import Usage from './pages/usage/Usage.svelte';
import Teams from './pages/teams/Teams.svelte';
import TeamDetail from './pages/teams/TeamDetail.svelte';

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
  /** `installationAdmin`: shown only to a session whose `installation_admin` is true (the page's API refuses others). */
  nav?: { label: string; section: 'Resources' | 'Activity' | 'Settings'; installationAdmin?: true };
  /** Shown without a session (the sign-in page). */
  public?: boolean;
}

export interface Routing {
  routes: Route[];
  /** Where `/` and a fresh sign-in lead: the first family's list. */
  home: string;
}

export function routingFor(families: Family[]): Routing {
  const home = families.length > 0 ? `/${families[0].path}` : '/settings/profile';
  const routes: Route[] = [
    { pattern: '/sign-in', component: SignIn, props: { home }, title: 'Sign in', public: true },
    // The team's resources by state, drawn (first in the navigation, before the families it counts).
    { pattern: '/overview', component: Overview, props: { families }, title: 'Overview', nav: { label: 'Overview', section: 'Resources' } },
    ...families.flatMap((family): Route[] => [
      { pattern: `/${family.path}`, component: FamilyList, props: { family }, title: family.title, nav: { label: family.title, section: 'Resources' } },
      { pattern: `/${family.path}/new`, component: FamilyCreate, props: { family }, title: `New ${family.singular}` },
      { pattern: `/${family.path}/:id`, component: FamilyDetail, props: { family }, title: family.title },
      { pattern: `/${family.path}/:id/edit`, component: FamilyEdit, props: { family }, title: `Change ${family.singular}` },
    ]),
    // console-pages: webhooks, audit log, agent, settings (the first match wins: /webhooks/failed before /webhooks/:id).
    { pattern: '/webhooks', component: WebhookList, title: 'Webhooks', nav: { label: 'Webhooks', section: 'Activity' } },
    { pattern: '/webhooks/failed', component: FailedDeliveries, title: 'Failed deliveries' },
    { pattern: '/webhooks/:id', component: WebhookDetail, title: 'Webhook subscription' },
    { pattern: '/usage', component: Usage, title: 'Usage', nav: { label: 'Usage', section: 'Activity' } },
    { pattern: '/audit-log', component: AuditLog, title: 'Audit log', nav: { label: 'Audit log', section: 'Activity' } },
    { pattern: '/agent', component: AgentThreads, title: 'Agent', nav: { label: 'Agent', section: 'Activity' } },
    { pattern: '/agent/:id', component: AgentThread, title: 'Agent thread' },
    { pattern: '/settings', component: Profile, title: 'Profile' },
    { pattern: '/settings/profile', component: Profile, title: 'Profile', nav: { label: 'Profile', section: 'Settings' } },
    { pattern: '/settings/team', component: TeamSettings, title: 'Team and members', nav: { label: 'Team and members', section: 'Settings' } },
    { pattern: '/settings/api-keys', component: ApiKeys, title: 'API keys', nav: { label: 'API keys', section: 'Settings' } },
    // The installation's teams (GET /teams): linked for installation admins only; others opening it are told why they cannot.
    { pattern: '/teams', component: Teams, title: 'Teams', nav: { label: 'Teams', section: 'Settings', installationAdmin: true } },
    { pattern: '/teams/:id', component: TeamDetail, title: 'Team' },
  ];
  return { routes, home };
}
