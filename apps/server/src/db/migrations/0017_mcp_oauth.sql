-- MCP OAuth (auth method type `mcp_oauth`): the authorization server is discovered from the remote MCP server and
-- the client registered by this server. The discovered server (issuer, its metadata, the RFC 8707 resource) is
-- kept with the flow that found it and with the auth config it creates, and `issuer` binds registered clients and
-- tokens to the authorization server that issued them: they are never sent to another one.

-- A client registered dynamically (RFC 7591) may be public (no secret); a Client ID Metadata Document has none.
alter table provider_auth_credentials alter column client_secret_ciphertext drop not null;
-- The issuer a registered client belongs to (null: an OAuth app entered by a user, bound to no discovery).
alter table provider_auth_credentials add column issuer text;
-- How the client authenticates at the token endpoint (RFC 7591 `token_endpoint_auth_method`); null: in the body.
alter table provider_auth_credentials add column token_endpoint_auth_method text;

alter table provider_auth_configs add column issuer text;
alter table provider_auth_configs add column oauth_server jsonb;

alter table oauth_flows add column oauth_server jsonb;
