import type { ColumnType, Generated, Insertable, Selectable, Updateable } from "kysely";
import type { ConfigTransformer } from "../runtimes/transformer.ts";

/** Timestamps: the database fills them; reads give a Date. */
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** jsonb columns: written as JSON text (so pg and PGlite agree), read back parsed. */
type Json<T> = ColumnType<T, string, string>;
type NullableJson<T> = ColumnType<T | null, string | null | undefined, string | null>;
/** A jsonb column with a database default: optional on insert. */
type JsonWithDefault<T> = ColumnType<T, string | undefined, string>;

export type JsonObject = Record<string, unknown>;

export interface InstancesTable {
  id: string;
  name: string;
  created_at: Timestamp;
}

export interface ApiKeysTable {
  id: string;
  instance_id: string;
  name: string | null;
  /** Non-secret lookup part of the key. */
  prefix: string;
  /** SHA-256 of the secret part. */
  secret_hash: string;
  created_at: Timestamp;
  last_used_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
}

export interface ProvidersTable {
  id: string;
  /** Null for catalog providers every instance sees; set for an instance's custom providers. */
  instance_id: string | null;
  name: string;
  slug: string;
  description: string | null;
  publisher_id: string | null;
  current_version_id: string | null;
  metadata: JsonWithDefault<JsonObject>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface PublishersTable {
  id: string;
  instance_id: string | null;
  slug: string;
  name: string;
  description: string | null;
  image_url: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** How a provider version's MCP server is reached. `{package:NAME}` in args is resolved at launch. */
export type Runtime = (
  | { type: "remote"; url: string; protocol: "streamable_http" | "sse" }
  | { type: "stdio"; command: string; args: string[]; env?: Record<string, string> }
) & {
  /** Custom providers: how the deployment's config shapes the upstream call (see runtimes/transformer.ts). */
  transformer?: ConfigTransformer;
  /** Function custom providers: wall-clock limit of `initialize` and of each request, in milliseconds. */
  timeout_ms?: number;
  /** MCP Registry imports: the package a stdio runtime runs, which runtimes/runner.ts checks can run here. */
  package?: RuntimePackage;
};

export interface RuntimePackage {
  registry_type: "npm" | "pypi" | "nuget" | "oci" | "mcpb";
  identifier: string;
  version: string | null;
}

export interface CatalogTool {
  name: string;
  description?: string;
}

export interface ProviderVersionsTable {
  id: string;
  provider_id: string;
  version: string;
  status: string;
  runtime: Json<Runtime>;
  config_schema: Json<JsonObject>;
  tools: Json<CatalogTool[]>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface AuthMethodScope {
  id: string;
  scope: string;
  name: string | null;
  description: string | null;
}

export interface OAuthEndpoints {
  authorization_endpoint: string;
  token_endpoint: string;
  extra_authorize_params?: Record<string, string>;
  resource?: string;
}

/**
 * An authorization server found by MCP OAuth discovery, as a flow and the auth config it creates keep it: the
 * issuer, its RFC 8414 / OpenID metadata as validated, and the RFC 8707 resource (the MCP server) tokens are for.
 */
export interface DiscoveredOAuthServer {
  issuer: string;
  metadata: JsonObject;
  resource: string | null;
}

export interface ProviderAuthMethodsTable {
  id: string;
  provider_id: string;
  provider_version_id: string | null;
  key: string;
  type: "oauth" | "token" | "mcp_oauth";
  name: string;
  description: string | null;
  input_schema: Json<JsonObject>;
  scopes: Json<AuthMethodScope[]>;
  oauth: NullableJson<OAuthEndpoints>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ProviderListingsTable {
  id: string;
  provider_id: string;
  instance_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ServersTable {
  id: string;
  instance_id: string | null;
  provider_id: string | null;
  type: Generated<string>;
  status: Generated<string>;
  name: string;
  description: string | null;
  imported_server_id: string | null;
  metadata: Json<JsonObject>;
  variants: Json<JsonObject[]>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ProviderGroupsTable {
  id: string;
  instance_id: string;
  name: string;
  description: string | null;
  slug: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ProviderGroupListingsTable {
  provider_group_id: string;
  provider_listing_id: string;
  added_at: Generated<Date>;
}

export interface SessionTemplatesTable {
  id: string;
  instance_id: string;
  name: string;
  description: string | null;
  metadata: NullableJson<JsonObject>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface PortalsTable {
  id: string;
  instance_id: string;
  status: Generated<string>;
  name: string;
  slug: string;
  description: string | null;
  brand_name: string | null;
  brand_logo_url: string | null;
  brand_primary_color: string | null;
  brand_background_color: string | null;
  session_expiry_seconds: Generated<number>;
  /** OpenID Connect sign-in; all null when consumers sign in with invitations only. */
  oidc_issuer: string | null;
  oidc_client_id: string | null;
  oidc_client_secret_ciphertext: string | null;
  oidc_scopes: NullableJson<string[]>;
  oidc_groups_claim: string | null;
  oidc_group_mapping: NullableJson<{ claim_value: string; consumer_group_id: string }[]>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface PortalConsumersTable {
  id: string;
  instance_id: string;
  portal_id: string;
  status: ColumnType<"active" | "revoked", "active" | "revoked" | undefined>;
  sign_in_method: "oidc" | "invitation";
  /** `iss sub` of an OIDC consumer, the invitation id of an invitation consumer. */
  identity: string;
  subject: string | null;
  name: string | null;
  email: string | null;
  consumer_group_ids: Json<string[]>;
  last_signed_in_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** A consumer's sign-in: the server side of the portal cookie. */
export interface PortalConsumerSessionsTable {
  id: string;
  instance_id: string;
  portal_id: string;
  consumer_id: string;
  /** SHA-256 (hex) of the cookie's secret. */
  token_hash: string;
  expires_at: Timestamp;
  revoked_at: NullableTimestamp;
  created_at: Timestamp;
}

export interface PortalInvitationsTable {
  id: string;
  instance_id: string;
  portal_id: string;
  consumer_group_id: string;
  /** SHA-256 (hex) of the link's secret. */
  token_hash: string;
  status: ColumnType<"pending" | "accepted" | "revoked", "pending" | "accepted" | "revoked" | undefined>;
  consumer_id: string | null;
  expires_at: Timestamp;
  accepted_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ConsumerGroupsTable {
  /** Named by the client on first reference. */
  id: string;
  instance_id: string;
  status: Generated<string>;
  created_at: Timestamp;
}

export interface PortalConsumerAccessTable {
  id: string;
  instance_id: string;
  portal_id: string;
  consumer_group_id: string;
  access_type: string;
  session_template_id: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ProviderDeploymentsTable {
  id: string;
  instance_id: string;
  provider_id: string;
  locked_version_id: string | null;
  default_config_id: string | null;
  name: string;
  description: string | null;
  metadata: NullableJson<JsonObject>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ProviderConfigVaultsTable {
  id: string;
  instance_id: string;
  provider_id: string;
  provider_deployment_id: string;
  name: string;
  description: string | null;
  metadata: NullableJson<JsonObject>;
  data_ciphertext: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ProviderConfigsTable {
  id: string;
  instance_id: string;
  provider_id: string;
  provider_deployment_id: string;
  /** The version whose config schema validated the data. */
  provider_version_id: string;
  source: "inline" | "vault";
  name: string;
  description: string | null;
  metadata: NullableJson<JsonObject>;
  data_ciphertext: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ProviderAuthCredentialsTable {
  id: string;
  instance_id: string;
  provider_id: string;
  provider_deployment_id: string;
  type: "oauth";
  client_id: string;
  /** Null for a public client (registered without a secret, or a Client ID Metadata Document URL). */
  client_secret_ciphertext: string | null;
  /** The issuer this client was registered with by MCP OAuth discovery; null for an app a user entered. */
  issuer: string | null;
  /** RFC 7591 `token_endpoint_auth_method` of a registered client; null sends the secret in the body. */
  token_endpoint_auth_method: string | null;
  scopes: Json<string[]>;
  /** Nullable: a PATCH may clear it (the spec allows null names for credentials and auth configs). */
  name: string | null;
  description: string | null;
  metadata: NullableJson<JsonObject>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ProviderAuthConfigsTable {
  id: string;
  instance_id: string;
  provider_id: string;
  provider_deployment_id: string;
  provider_auth_method_id: string;
  provider_auth_credentials_id: string | null;
  type: "manual" | "oauth_automated" | "oauth_manual";
  status: "pending" | "active" | "expired" | "refresh_failed";
  status_reason: string | null;
  /** The encrypted credential data (token set or API token); null while pending. */
  credential_ciphertext: string | null;
  /** MCP OAuth: the issuer the tokens were obtained from, and the server they are refreshed at. */
  issuer: string | null;
  oauth_server: NullableJson<DiscoveredOAuthServer>;
  expires_at: NullableTimestamp;
  /** The portal consumer whose own connection this is (made from a portal), or null. */
  consumer_id: ColumnType<string | null, string | null | undefined, string | null>;
  name: string | null;
  description: string | null;
  metadata: NullableJson<JsonObject>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ProviderAuthExportsTable {
  id: string;
  instance_id: string;
  provider_auth_config_id: string;
  note: string;
  metadata: NullableJson<JsonObject>;
  value_ciphertext: string;
  created_at: Timestamp;
}

export interface ProviderAuthImportsTable {
  id: string;
  instance_id: string;
  provider_id: string;
  provider_deployment_id: string;
  provider_auth_config_id: string;
  provider_auth_method_id: string;
  note: string;
  metadata: NullableJson<JsonObject>;
  created_at: Timestamp;
}

/** An auth config's credential data, as it is encrypted into `credential_ciphertext`. */
export type CredentialData =
  | {
      kind: "oauth";
      access_token: string;
      refresh_token: string | null;
      token_type: string;
      scope: string | null;
      expires_at: string | null;
    }
  | { kind: "manual"; values: JsonObject };

export interface ToolFilters {
  tool_keys?: string[];
}

export interface SessionsTable {
  id: string;
  instance_id: string;
  name: string | null;
  description: string | null;
  metadata: NullableJson<JsonObject>;
  status: ColumnType<"active" | "archived" | "deleted", "active" | "archived" | "deleted" | undefined>;
  /** SHA-256 (hex) of the session's secret. */
  secret_hash: string;
  /** Messages received (JSON-RPC messages over MCP plus tool calls created through the API); the gateway counts. */
  message_count: Generated<number>;
  /** `connection_status` is `connected` until then; the gateway extends it on MCP activity, clears it on close. */
  connected_until: NullableTimestamp;
  /** Set for sessions a portal consumer started: who, through which sign-in, where and from which template. */
  consumer_id: ColumnType<string | null, string | null | undefined, string | null>;
  consumer_session_id: ColumnType<string | null, string | null | undefined, string | null>;
  portal_id: ColumnType<string | null, string | null | undefined, string | null>;
  portal_template_id: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface SessionProvidersTable {
  id: string;
  instance_id: string;
  session_id: string;
  provider_id: string;
  /** Kept as given (no foreign key): a removed provider or deleted session outlives its deployment. */
  provider_deployment_id: string;
  provider_config_id: string | null;
  provider_auth_config_id: string | null;
  session_template_id: string | null;
  status: ColumnType<"active" | "error" | "removed", "active" | "error" | "removed" | undefined>;
  name: string | null;
  description: string | null;
  metadata: NullableJson<JsonObject>;
  tool_filters: NullableJson<ToolFilters>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface SessionTemplateProvidersTable {
  id: string;
  instance_id: string;
  session_template_id: string;
  provider_id: string;
  provider_deployment_id: string;
  provider_config_id: string | null;
  provider_auth_config_id: string | null;
  name: string | null;
  description: string | null;
  metadata: NullableJson<JsonObject>;
  tool_filters: NullableJson<ToolFilters>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** An OAuth setup's `config`: how its authorization request is built. */
export interface OAuthFlowConfig {
  scopes?: string[];
  extra_authorize_params?: Record<string, string>;
}

export type OAuthFlowStatus = "pending" | "opened" | "completed" | "failed" | "expired";

/** OAuth setups (`poas_`) and setup sessions (`pas_`): the same flow, two API shapes. */
export interface OAuthFlowsTable {
  id: string;
  kind: "oauth_setup" | "setup_session";
  instance_id: string;
  provider_id: string;
  provider_deployment_id: string;
  provider_auth_method_id: string;
  provider_auth_credentials_id: string | null;
  provider_auth_config_id: string | null;
  status: OAuthFlowStatus;
  failure_reason: string | null;
  is_ephemeral: boolean;
  name: string | null;
  description: string | null;
  metadata: NullableJson<JsonObject>;
  redirect_url: string | null;
  config: JsonWithDefault<OAuthFlowConfig>;
  start_key: string;
  /** SHA-256 (hex) of the current OAuth `state`. */
  state_hash: string | null;
  state_used_at: NullableTimestamp;
  /** The PKCE code verifier, encrypted. */
  verifier_ciphertext: string | null;
  /** MCP OAuth: the authorization server the start page discovered, for the callback. */
  oauth_server: NullableJson<DiscoveredOAuthServer>;
  /** A re-authentication link's flow: the auth config whose credentials it replaces instead of creating one. */
  repairs_provider_auth_config_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** The portal consumer who started the flow from a portal: the auth config it creates is theirs. */
  consumer_id: ColumnType<string | null, string | null | undefined, string | null>;
  expires_at: Timestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ProviderOAuthTokenImportsTable {
  id: string;
  instance_id: string;
  provider_auth_config_id: string;
  provider_deployment_id: string | null;
  access_token_ciphertext: string;
  id_token_ciphertext: string | null;
  /** SHA-256 (hex) of the access token. */
  identifier: string;
  scope: string | null;
  token_type: string | null;
  note: string | null;
  metadata: NullableJson<JsonObject>;
  expires_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** A tool call's definition of the called tool, as its upstream listed it. */
export interface ToolCallTool {
  name: string;
  description: string | null;
  input_schema: JsonObject;
}

export type ToolCallStatus = "waiting_for_response" | "succeeded" | "failed" | "cancelled";

export interface ToolCallsTable {
  id: string;
  instance_id: string;
  session_id: string;
  session_provider_id: string | null;
  provider_id: string | null;
  provider_deployment_id: string | null;
  tool_key: string;
  status: ColumnType<ToolCallStatus, ToolCallStatus | undefined>;
  /** Until when the process running the call vouches for it (renewed while it runs; see CallsInFlight). */
  lease_until: Timestamp;
  transport: "tool_call" | "mcp";
  message_id: string;
  connection_id: string | null;
  provider_run_id: string | null;
  tool: NullableJson<ToolCallTool>;
  input: NullableJson<JsonObject>;
  output: NullableJson<JsonObject>;
  error: NullableJson<{ code: string; message: string }>;
  metadata: NullableJson<JsonObject>;
  created_at: Timestamp;
  completed_at: NullableTimestamp;
  /** The task a task-augmented call created: its id at the upstream, null for any other call. */
  task_id: string | null;
  /** The task's status (an MCP task status) and outcome as last seen through the session. */
  task_status: string | null;
  task_result: NullableJson<JsonObject>;
  /** The JSON-RPC error a failed task of the Tasks extension (2026-07-28) ended with, as tasks/get returned it. */
  task_error: NullableJson<JsonObject>;
  task_updated_at: NullableTimestamp;
  /** The call whose input_required round this call answers (a retry with the client's answers), else null. */
  answers_call_id: string | null;
}

export interface CustomProvidersTable {
  id: string;
  instance_id: string;
  provider_id: string;
  type: "remote" | "container" | "function";
  status: Generated<"active" | "archived">;
  name: string;
  description: string | null;
  metadata: NullableJson<JsonObject>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type CustomProviderVersionStatus = "queued" | "deploying" | "deployment_succeeded" | "deployment_failed";
export interface CustomProviderError {
  code: string;
  message: string;
}
/** A version's `from` as stored: the container password lives encrypted in `password_ciphertext` instead. */
export type CustomProviderSource =
  | { type: "remote"; remote_url: string; protocol: "streamable_http" | "sse" }
  | { type: "container"; image_ref: string; username: string | null }
  | {
      type: "function";
      runtime: "node20";
      entrypoint: string;
      files: { path: string; content: string }[];
      timeout_ms: number;
      memory_mb: number;
    };

export interface CustomProviderVersionsTable {
  id: string;
  custom_provider_id: string;
  provider_version_id: string;
  index: number;
  status: CustomProviderVersionStatus;
  source: Json<CustomProviderSource>;
  password_ciphertext: string | null;
  deployment_id: string;
  deployment_trigger: "custom_provider_created" | "version_created";
  deployment_error: NullableJson<CustomProviderError>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface CustomProviderEnvironmentsTable {
  id: string;
  custom_provider_id: string;
  name: "development" | "production";
  current_version_id: string | null;
  history: JsonWithDefault<string[]>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface CustomProviderCommitsTable {
  id: string;
  custom_provider_id: string;
  type: "merge_version_into_environment" | "rollback";
  status: "pending" | "applied" | "failed";
  trigger: "manual" | "system";
  message: string;
  error: NullableJson<CustomProviderError>;
  from_environment_id: string | null;
  to_environment_id: string;
  target_version_id: string;
  previous_version_id: string | null;
  created_at: Timestamp;
  applied_at: NullableTimestamp;
}

export interface CustomProviderJobsTable {
  version_id: string;
  state: Generated<"queued" | "running">;
  attempts: Generated<number>;
  claim_token: string | null;
  lease_until: NullableTimestamp;
  created_at: Timestamp;
}

export interface Database {
  instances: InstancesTable;
  api_keys: ApiKeysTable;
  providers: ProvidersTable;
  publishers: PublishersTable;
  provider_versions: ProviderVersionsTable;
  provider_auth_methods: ProviderAuthMethodsTable;
  provider_listings: ProviderListingsTable;
  servers: ServersTable;
  provider_groups: ProviderGroupsTable;
  provider_group_listings: ProviderGroupListingsTable;
  session_templates: SessionTemplatesTable;
  portals: PortalsTable;
  consumer_groups: ConsumerGroupsTable;
  portal_consumer_access: PortalConsumerAccessTable;
  portal_consumers: PortalConsumersTable;
  portal_consumer_sessions: PortalConsumerSessionsTable;
  portal_invitations: PortalInvitationsTable;
  provider_deployments: ProviderDeploymentsTable;
  provider_config_vaults: ProviderConfigVaultsTable;
  provider_configs: ProviderConfigsTable;
  provider_auth_credentials: ProviderAuthCredentialsTable;
  provider_auth_configs: ProviderAuthConfigsTable;
  provider_auth_exports: ProviderAuthExportsTable;
  provider_auth_imports: ProviderAuthImportsTable;
  oauth_flows: OAuthFlowsTable;
  provider_oauth_token_imports: ProviderOAuthTokenImportsTable;
  sessions: SessionsTable;
  session_providers: SessionProvidersTable;
  session_template_providers: SessionTemplateProvidersTable;
  tool_calls: ToolCallsTable;
  custom_providers: CustomProvidersTable;
  custom_provider_versions: CustomProviderVersionsTable;
  custom_provider_environments: CustomProviderEnvironmentsTable;
  custom_provider_commits: CustomProviderCommitsTable;
  custom_provider_jobs: CustomProviderJobsTable;
  catalog_state: CatalogStateTable;
  mcp_connections: McpConnectionsTable;
  slug_counters: SlugCountersTable;
  registry_imports: RegistryImportsTable;
  idempotency_keys: IdempotencyKeysTable;
}

/** A 2025-era client's MCP session on a session's endpoint (mcp/router.ts). */
export interface McpConnectionsTable {
  id: string;
  session_id: string;
  protocol_version: string;
  client_capabilities: Json<JsonObject>;
  client_info: NullableJson<JsonObject>;
  created_at: Generated<Timestamp>;
  last_used_at: Timestamp;
  /** The level the client set with logging/setLevel (an MCP LoggingLevel), null until it set one. */
  log_level: string | null;
}

/** The digest of the catalog last loaded in full (catalog/loader.ts `syncCatalog`). */
export interface CatalogStateTable {
  singleton: Generated<boolean>;
  digest: string;
  loaded_at: Timestamp;
}

/** Where the last import from an MCP registry got to (catalog/registry/import.ts). */
export interface RegistryImportsTable {
  /** The registry's base URL. */
  source: string;
  /** The newest `updatedAt` seen; the next incremental import asks for `updated_since` it. */
  updated_since: NullableTimestamp;
  last_run_at: Timestamp;
}

/** The last `base-N` number handed out per instance, table and slug base (lib/slugged-insert.ts). */
export interface SlugCountersTable {
  instance_id: string;
  scope: "portals" | "provider_groups" | "providers";
  base: string;
  last: number;
}

/** A POST's Idempotency-Key and, once it finished, its recorded answer (http/idempotency.ts). */
export interface IdempotencyKeysTable {
  id: string;
  instance_id: string;
  key: string;
  /** SHA-256 of method, path and body: a reuse of the key for another request is refused. */
  request_hash: string;
  /** Null while the first request runs. */
  status: number | null;
  response_headers: NullableJson<Record<string, string>>;
  /** The answer's JSON body, encrypted (SecretBox, bound to `id`). */
  response_ciphertext: string | null;
  created_at: Generated<Timestamp>;
  expires_at: Timestamp;
}

export type Row<T extends keyof Database> = Selectable<Database[T]>;
export type NewRow<T extends keyof Database> = Insertable<Database[T]>;
export type RowUpdate<T extends keyof Database> = Updateable<Database[T]>;
