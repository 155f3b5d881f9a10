import type { components } from "@toolplane/types";
import type { CredentialData, JsonObject, Row } from "../../db/schema.ts";
import type { SecretBox } from "../../secrets/secret-box.ts";

type ExportValue = components["schemas"]["ProviderAuthExport"]["value"];
type AuthMethodType = Row<"provider_auth_methods">["type"];

export const credentialAad = (authConfigId: string) => `provider_auth_configs:${authConfigId}`;
export const exportAad = (exportId: string) => `provider_auth_exports:${exportId}`;

export const sealCredential = (secrets: SecretBox, authConfigId: string, data: CredentialData) =>
  secrets.encryptJson(data, credentialAad(authConfigId));

export const openCredential = (secrets: SecretBox, authConfigId: string, ciphertext: string) =>
  secrets.decryptJson<CredentialData>(ciphertext, credentialAad(authConfigId));

/** What an export shows of stored credential data. */
export function exportValue(data: CredentialData): ExportValue {
  if (data.kind === "manual") return { ...data.values, type: "manual" };
  const { kind: _kind, ...tokens } = data;
  return { type: "oauth", ...tokens };
}

/**
 * The schema an import `value` must satisfy for an auth method: its input schema (the token set for OAuth
 * methods), also allowing the `type` member an export carries so exports can be imported as they are.
 */
export function importSchema(method: { type: AuthMethodType; input_schema: JsonObject }): JsonObject {
  const properties = (method.input_schema.properties as JsonObject | undefined) ?? {};
  return {
    ...method.input_schema,
    properties: { ...properties, type: { const: method.type === "token" ? "manual" : "oauth" } },
  };
}

/** An import `value` (already validated) as stored credential data. */
export function credentialFromImport(method: { type: AuthMethodType }, value: JsonObject): CredentialData {
  const { type: _type, ...rest } = value;
  if (method.type === "token") return { kind: "manual", values: rest };
  return {
    kind: "oauth",
    access_token: String(rest.access_token),
    refresh_token: typeof rest.refresh_token === "string" ? rest.refresh_token : null,
    token_type: typeof rest.token_type === "string" ? rest.token_type : "Bearer",
    scope: typeof rest.scope === "string" ? rest.scope : null,
    expires_at: typeof rest.expires_at === "string" ? new Date(rest.expires_at).toISOString() : null,
  };
}
