#!/usr/bin/env node
// An MCP server behind the TypeScript SDK's own OAuth parts, for the proxy's interop test of
// token renewal and step-up authorization: the SDK's authorization server router
// (`mcpAuthRouter`: metadata, registration, authorization, token endpoint), its demo provider
// (approves every authorization request at once) taught to issue and take refresh tokens,
// and its `requireBearerAuth` middleware in front of `/mcp` (401 with the Bearer challenge;
// 403 `insufficient_scope` for the `write_file` tool, which needs `files:write`).
// The SDK's example server (`simpleStreamableHttp.js --oauth`) issues no refresh tokens and
// requires no scope, so it cannot show either.
//
// Usage: PORT=3000 node oauth_server.mjs
// Test-only endpoints: GET /test/stats ({unauthorized, refreshes}), POST /test/revoke (every
// access token forgotten, as a server that revoked them).
import { randomUUID } from "node:crypto";
import express from "express";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  getOAuthProtectedResourceMetadataUrl,
  mcpAuthRouter,
} from "@modelcontextprotocol/sdk/server/auth/router.js";
import { requireBearerAuth } from "@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js";
import { InvalidGrantError, InvalidTokenError } from "@modelcontextprotocol/sdk/server/auth/errors.js";
import { DemoInMemoryAuthProvider } from "@modelcontextprotocol/sdk/examples/server/demoInMemoryOAuthProvider.js";

const port = Number(process.env.PORT);
const base = new URL(`http://localhost:${port}`);
const mcpUrl = new URL("/mcp", base);

/**
 * The demo provider, with refresh tokens (rotated at each use), and a token it does not know
 * refused as invalid (the demo's plain Error makes the SDK middleware answer 500, not 401).
 */
class RefreshingProvider extends DemoInMemoryAuthProvider {
  refreshTokens = new Map();
  refreshes = 0;

  async verifyAccessToken(token) {
    try {
      return await super.verifyAccessToken(token);
    } catch (error) {
      throw new InvalidTokenError(error.message);
    }
  }

  withRefreshToken(tokens, grant) {
    const refresh = randomUUID();
    this.refreshTokens.set(refresh, grant);
    return { ...tokens, refresh_token: refresh };
  }

  async exchangeAuthorizationCode(client, code, verifier) {
    const tokens = await super.exchangeAuthorizationCode(client, code, verifier);
    const issued = this.tokens.get(tokens.access_token);
    return this.withRefreshToken(tokens, {
      clientId: client.client_id,
      scopes: issued.scopes,
      resource: issued.resource,
    });
  }

  async exchangeRefreshToken(client, refreshToken, _scopes, resource) {
    const grant = this.refreshTokens.get(refreshToken);
    if (!grant || grant.clientId !== client.client_id) {
      throw new InvalidGrantError("unknown refresh token");
    }
    if (resource?.href !== grant.resource?.href) {
      throw new InvalidGrantError(`a refresh token for ${grant.resource}, not ${resource}`);
    }
    this.refreshTokens.delete(refreshToken);
    this.refreshes += 1;
    const token = randomUUID();
    this.tokens.set(token, {
      token,
      clientId: client.client_id,
      scopes: grant.scopes,
      expiresAt: Date.now() + 3600000,
      resource: grant.resource,
      type: "access",
    });
    const tokens = {
      access_token: token,
      token_type: "bearer",
      expires_in: 3600,
      scope: grant.scopes.join(" "),
    };
    return this.withRefreshToken(tokens, grant);
  }
}

const provider = new RefreshingProvider();
const app = express();
let unauthorized = 0;
app.use((req, res, next) => {
  res.on("finish", () => {
    if (res.statusCode === 401 && req.path === "/mcp") unauthorized += 1;
  });
  next();
});
app.use(
  mcpAuthRouter({
    provider,
    issuerUrl: base,
    resourceServerUrl: mcpUrl,
    scopesSupported: ["mcp:tools"],
  }),
);
const resourceMetadataUrl = getOAuthProtectedResourceMetadataUrl(mcpUrl);
const bearer = requireBearerAuth({ verifier: provider, resourceMetadataUrl });
const writer = requireBearerAuth({
  verifier: provider,
  requiredScopes: ["files:write"],
  resourceMetadataUrl,
});

app.get("/test/stats", (_req, res) => res.json({ unauthorized, refreshes: provider.refreshes }));
app.post("/test/revoke", (_req, res) => {
  provider.tokens.clear();
  res.json({});
});

/** Each request served by a server and a stateless transport of its own. */
async function serve(req, res) {
  const server = new McpServer({ name: "oauth-peer", version: "1.0.0" });
  server.registerTool("whoami", { description: "The client the token was issued to" }, async (extra) => ({
    content: [{ type: "text", text: `client ${extra.authInfo?.clientId}` }],
  }));
  server.registerTool("write_file", { description: "Needs the files:write scope" }, async () => ({
    content: [{ type: "text", text: "written" }],
  }));
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  res.on("close", () => {
    transport.close();
    server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, req.body);
}

const needsWriter = (req) => req.body?.method === "tools/call" && req.body?.params?.name === "write_file";
app.post("/mcp", express.json(), bearer, (req, res, next) => (needsWriter(req) ? writer(req, res, next) : next()), serve);
// No standalone stream in a stateless server.
app.get("/mcp", bearer, (_req, res) => res.status(405).end());
app.delete("/mcp", bearer, (_req, res) => res.status(405).end());

app.listen(port, (error) => {
  if (error) {
    console.error(error);
    process.exit(1);
  }
});
