/**
 * The resource families the console shows. What each is (title, the columns a list shows,
 * its actions and delete options) comes from the API's OpenAPI document, where the service
 * publishes every family's presentation (`x-cloudplane-families`); only the detail page's
 * panels, which are components of the console, are kept here. Lists, details, create and
 * delete are one generic set of pages (pages/families/).
 */
import type { Component } from 'svelte';
import { creatablePaths, publishedFamilies, type PublishedFamily } from './openapi';
import LoadBalancerTraffic from '../pages/families/panels/LoadBalancerTraffic.svelte';
import LoadBalancerBackends from '../pages/families/panels/LoadBalancerBackends.svelte';
import FileShareServers from '../pages/families/panels/FileShareServers.svelte';
import VpnTunnelStatus from '../pages/families/panels/VpnTunnelStatus.svelte';
import VpnTunnelTraffic from '../pages/families/panels/VpnTunnelTraffic.svelte';
import DatabaseConnection from '../pages/families/panels/DatabaseConnection.svelte';
import DatabaseUsers from '../pages/families/panels/DatabaseUsers.svelte';
import DatabaseDbs from '../pages/families/panels/DatabaseDbs.svelte';
import DatabaseTrustedSources from '../pages/families/panels/DatabaseTrustedSources.svelte';
import DatabaseBackups from '../pages/families/panels/DatabaseBackups.svelte';
import ServerBackups from '../pages/families/panels/ServerBackups.svelte';
import ClusterAccess from '../pages/families/panels/ClusterAccess.svelte';
import ClusterNodePools from '../pages/families/panels/ClusterNodePools.svelte';
import JobOutput from '../pages/families/panels/JobOutput.svelte';
import JobRuns from '../pages/families/panels/JobRuns.svelte';

export interface ResourceRecord {
  id: string;
  name: string;
  status: string;
  status_reason: string | null;
  region?: string;
  [field: string]: unknown;
}

export interface Column {
  key: string;
  label: string;
  /** Secondary columns are left out on a phone-sized screen. */
  secondary?: boolean;
}

/** `POST /api/v1/<path>/<id>/<name>` without a body, offered in the given states. */
export interface SimpleAction {
  name: string;
  label: string;
  allowedIn: string[];
}

export interface PanelProps {
  record: ResourceRecord;
  family: Family;
  /** Reads the record again (after an action changed it). */
  refresh: () => Promise<void>;
}

/** A choice offered in the delete confirmation, sent as `?<query>=true`. */
export interface DeleteOption {
  query: string;
  label: string;
}

export interface Family {
  /** The API's path segment, also the console's: `/#/load-balancers`. */
  path: string;
  title: string;
  singular: string;
  columns: Column[];
  actions: SimpleAction[];
  panels: Component<PanelProps>[];
  /** Record fields a panel shows better than the generic detail list. */
  shownByPanels: string[];
  deletable: boolean;
  deleteOptions?: DeleteOption[];
  /** The record field that names a resource: `name`, or `title` for a family without names (incidents). */
  nameKey: 'name' | 'title';
  /** Whether the API has a create (`POST /<path>`): incidents are opened by alert policies only. */
  creatable: boolean;
  /** What its ids start with before the `_`. */
  idPrefix: string;
}

/** The console's families, once loaded: what an id found in a record refers to. */
let known: Family[] = [];

/** The family an id belongs to (`svr_...` → servers), if the console shows that family. */
export const familyOfId = (value: unknown): Family | undefined =>
  typeof value === 'string' ? known.find((family) => value.startsWith(`${family.idPrefix}_`) && /^[a-z0-9]+_[0-9a-z]{16,26}$/.test(value)) : undefined;

/** What a resource is called in headings, links and announcements. */
export const nameOf = (family: Family, record: ResourceRecord): string => String(record[family.nameKey] ?? record.id);

/** The panels of a family's detail page, and the record fields they show (left out of the generic list of fields). */
interface Panels {
  panels: Component<PanelProps>[];
  shownByPanels: string[];
}

/** Panels by family path; a family without an entry gets the generic pages only. */
const PANELS: Record<string, Panels> = {
  'load-balancers': { panels: [LoadBalancerBackends, LoadBalancerTraffic], shownByPanels: ['backends'] },
  'vpn-gateways': { panels: [VpnTunnelStatus, VpnTunnelTraffic], shownByPanels: ['tunnel_status', 'bytes_sent', 'bytes_received', 'last_handshake'] },
  'file-storage': { panels: [FileShareServers], shownByPanels: [] },
  servers: { panels: [ServerBackups], shownByPanels: [] },
  databases: {
    panels: [DatabaseConnection, DatabaseUsers, DatabaseDbs, DatabaseTrustedSources, DatabaseBackups],
    shownByPanels: ['connection', 'private_connection', 'standby_nodes', 'users', 'db_names', 'trusted_sources'],
  },
  'kubernetes-clusters': { panels: [ClusterAccess, ClusterNodePools], shownByPanels: ['endpoint', 'version', 'ha', 'node_pools'] },
  jobs: { panels: [JobOutput, JobRuns], shownByPanels: [] },
};

/** The list shows the name (a link, the short id beside it) and the status (a badge) itself, not as columns. */
const SHOWN_BY_THE_LIST = ['id', 'name', 'status'];

function familyOf(published: PublishedFamily, creatable: Set<string>): Family {
  const keys = published.columns.map((column) => column.key);
  const nameKey = keys.includes('title') && !keys.includes('name') ? 'title' : 'name';
  return {
    path: published.path,
    title: published.title,
    singular: published.singular,
    nameKey,
    creatable: creatable.has(published.path),
    idPrefix: published.idPrefix,
    columns: published.columns.filter((column) => column.shownIn !== 'cli' && column.key !== nameKey && !SHOWN_BY_THE_LIST.includes(column.key)),
    actions: published.actions,
    deletable: published.deletable,
    deleteOptions: published.deleteOptions,
    ...(PANELS[published.path] ?? { panels: [], shownByPanels: [] }),
  };
}

/** The families the console shows, in the API's order (the navigation's). */
export async function loadFamilies(): Promise<Family[]> {
  const [published, creatable] = await Promise.all([publishedFamilies(), creatablePaths()]);
  known = published.filter((family) => family.console).map((family) => familyOf(family, creatable));
  return known;
}
