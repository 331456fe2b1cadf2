// The harness writes config.json into the extension folder; it is read
// again before every connection attempt, so a test can change it while the
// browser runs and have it apply at the next reconnect.

const DEFAULTS = {
  native: { enabled: true, host: 'com.weboperator.bridge', reconnectMs: 5000 },
  hub: null, // {url, token, backoffMinMs, backoffMaxMs, pingMs}
  approvals: 'ignore',
  wakeMs: 30000,
  log: false,
};

export async function loadConfig() {
  try {
    const res = await fetch(chrome.runtime.getURL('config.json'), { cache: 'no-store' });
    if (!res.ok) return DEFAULTS;
    const c = await res.json();
    return {
      native: { ...DEFAULTS.native, ...(c.native || {}) },
      hub: c.hub && typeof c.hub.url === 'string' ? {
        backoffMinMs: 1000, backoffMaxMs: 30000, pingMs: 20000, ...c.hub,
      } : null,
      approvals: ['approve', 'reject', 'ignore'].includes(c.approvals) ? c.approvals : 'ignore',
      wakeMs: Number.isFinite(c.wakeMs) && c.wakeMs > 0 ? c.wakeMs : DEFAULTS.wakeMs,
      log: c.log === true,
    };
  } catch {
    return DEFAULTS;
  }
}

export function extensionVersion() {
  return chrome.runtime.getManifest().version;
}
