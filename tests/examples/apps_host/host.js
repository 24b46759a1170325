// A minimal MCP Apps host for tests/examples/test_apps_browser.py, built with esbuild from the
// @modelcontextprotocol/ext-apps package's own host bridge (AppBridge). The app's tools/call
// requests go to window.mcpkitCallTool, which the test binds to an mcpkit Client.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

async function openApp(html, toolInput, toolResult) {
  const iframe = document.createElement("iframe");
  iframe.sandbox = "allow-scripts"; // an opaque origin, as a host sandboxes an app
  iframe.style.width = "400px";
  iframe.style.height = "300px";
  document.body.appendChild(iframe);
  const bridge = new AppBridge(
    null,
    { name: "mcpkit-test-host", version: "1.0.0" },
    { serverTools: {} },
  );
  bridge.oncalltool = async (params) => window.mcpkitCallTool(params);
  const initialized = new Promise((resolve) => {
    bridge.oninitialized = resolve;
  });
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = html;
  await initialized; // the app's ui/initialize handshake is done
  await bridge.sendToolInput({ arguments: toolInput });
  await bridge.sendToolResult(toolResult);
  window.mcpkitBridge = bridge;
}

window.openApp = openApp;
