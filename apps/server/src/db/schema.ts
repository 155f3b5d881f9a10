import type { ColumnType, Generated, Insertable, Selectable, Updateable } from "kysely";

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
export type Runtime =
  | { type: "remote"; url: string; protocol: "streamable_http" | "sse" }
  | { type: "stdio"; command: string; args: string[]; env?: Record<string, string> };

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

export interface ProviderAuthMethodsTable {
  id: string;
  provider_id: string;
  provider_version_id: string | null;
  key: string;
  type: "oauth" | "token";
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
  session_expiry_seconds: Generated<number>;
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
  client_secret_ciphertext: string;
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
  expires_at: NullableTimestamp;
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
  provider_deployments: ProviderDeploymentsTable;
  provider_config_vaults: ProviderConfigVaultsTable;
  provider_configs: ProviderConfigsTable;
  provider_auth_credentials: ProviderAuthCredentialsTable;
  provider_auth_configs: ProviderAuthConfigsTable;
  provider_auth_exports: ProviderAuthExportsTable;
  provider_auth_imports: ProviderAuthImportsTable;
}

export type Row<T extends keyof Database> = Selectable<Database[T]>;
export type NewRow<T extends keyof Database> = Insertable<Database[T]>;
export type RowUpdate<T extends keyof Database> = Updateable<Database[T]>;
