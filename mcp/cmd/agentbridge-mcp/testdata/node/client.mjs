// Drives agentbridge-mcp with the TypeScript SDK's client, over stdio or
// streamable HTTP, and fails (exit status 1, the reason on stderr) when the
// server does not behave; on success it prints one JSON line of what it saw.
//
//   node client.mjs stdio BINARY [ARGS...]   (environment passed on)
//   node client.mjs http URL                 (token: $AGENTBRIDGE_MCP_TOKEN)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

function check(ok, what) {
  if (!ok) throw new Error(what);
}

const [mode, target, ...args] = process.argv.slice(2);
const transport =
  mode === "stdio"
    ? new StdioClientTransport({ command: target, args, env: process.env, stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(target), {
        requestInit: { headers: { Authorization: "Bearer " + process.env.AGENTBRIDGE_MCP_TOKEN } },
      });
const client = new Client({ name: "ts-sdk-test", version: "1.0.0" });
const logs = [];
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));

try {
  await client.connect(transport);
  check(client.getServerVersion()?.name === "agentbridge-mcp", "server name: " + JSON.stringify(client.getServerVersion()));
  const caps = client.getServerCapabilities();
  check(caps?.tools && caps?.logging && caps?.resources, "capabilities: " + JSON.stringify(caps));
  await client.ping();

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const want of ["browser_snapshot", "browser_screenshot", "weboperator_execute_goal"]) {
    check(names.includes(want), "tools/list lacks " + want + ": " + names.join(","));
  }
  for (const t of tools) check(t.inputSchema?.type === "object", t.name + " has no object inputSchema");

  const snap = await client.callTool({ name: "browser_snapshot", arguments: {} });
  check(!snap.isError && snap.content[0]?.type === "text", "browser_snapshot: " + JSON.stringify(snap));

  const shot = await client.callTool({ name: "browser_screenshot", arguments: {} });
  check(!shot.isError, "browser_screenshot failed: " + JSON.stringify(shot));
  const image = shot.content.find((c) => c.type === "image");
  const link = shot.content.find((c) => c.type === "resource_link");
  check(image?.mimeType === "image/jpeg", "no JPEG image: " + JSON.stringify(shot.content));
  check(link?.uri?.startsWith("agentbridge://captures/"), "no resource link: " + JSON.stringify(shot.content));
  const read = await client.readResource({ uri: link.uri });
  check(read.contents[0]?.blob === image.data, "the capture resource is not the image");
  const { resources } = await client.listResources();
  check(resources.some((r) => r.uri === link.uri), "the capture is not listed");

  await client.setLoggingLevel("info");

  let code;
  try {
    await client.callTool({ name: "no_such_tool", arguments: {} });
  } catch (e) {
    code = e.code;
  }
  check(code === -32602, "an unknown tool is error -32602, got " + code);

  console.log(JSON.stringify({ tools: names.length, resources: resources.length }));
  await client.close();
} catch (e) {
  console.error("ts-sdk-client: " + (e?.stack || e));
  process.exit(1);
}
