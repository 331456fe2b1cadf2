// The native messaging side: the extension starts the host with
// connectNative, says bridge:hello, answers every bridge:request (several
// at a time, in any order) and sends task events as bridge:event. When the
// port drops it connects again after the configured delay (5 s, as the
// reference extension does).
import { loadConfig } from './config.js';

// How long debug.dropNativePort waits after its answer before it drops.
const DROP_DELAY_MS = 500;

export class NativeSide {
  constructor({ commands, log }) {
    this.commands = commands; // AgentCommands, given later by setCommands
    this.log = log;
    this.port = null;
    this.timer = null;
    this.connecting = false;
  }

  // ensure connects unless a port is open or a reconnect is scheduled.
  async ensure() {
    if (this.port || this.timer || this.connecting) return;
    this.connecting = true;
    try {
      const cfg = await loadConfig();
      if (!cfg.native.enabled) return;
      this.connect(cfg);
    } finally {
      this.connecting = false;
    }
  }

  connect(cfg) {
    let port;
    try {
      port = chrome.runtime.connectNative(cfg.native.host);
    } catch (e) {
      this.log('native: connect failed', e.message);
      this.schedule(cfg.native.reconnectMs);
      return;
    }
    this.port = port;
    port.onMessage.addListener((msg) => this.onMessage(port, msg));
    port.onDisconnect.addListener(() => {
      const err = chrome.runtime.lastError;
      this.log('native: disconnected', err ? err.message : '');
      if (this.port === port) this.port = null;
      this.schedule(cfg.native.reconnectMs);
    });
    this.post(port, { kind: 'bridge:hello' });
    this.log('native: hello sent');
  }

  schedule(ms) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.ensure();
    }, ms);
  }

  // drop disconnects the port, as a test hook: the host sees EOF, and the
  // extension reconnects after the configured delay.
  drop(reconnectMs) {
    const port = this.port;
    if (!port) return;
    this.port = null;
    port.disconnect();
    this.log('native: port dropped on request');
    this.schedule(reconnectMs);
  }

  post(port, msg) {
    try {
      port.postMessage(msg);
    } catch (e) {
      // The port went away while a request ran: the host has already
      // failed that request.
      this.log('native: post failed', e.message);
    }
  }

  emit(event) {
    if (this.port) this.post(this.port, { kind: 'bridge:event', event });
  }

  onMessage(port, msg) {
    if (!msg || typeof msg !== 'object' || Array.isArray(msg) || msg.kind !== 'bridge:request') return;
    const id = msg.id;
    const type = msg.type;
    const payload = msg.payload && typeof msg.payload === 'object' && !Array.isArray(msg.payload) ? msg.payload : {};
    const answer = (body) => this.post(port, { kind: 'bridge:response', id, ...body });
    if (type === 'debug.dropNativePort') {
      answer({ result: { ok: true } });
      // Chrome writes to the host after postMessage returns, and a
      // disconnect drops what it has not written yet: give the answer
      // time to reach the host before dropping the port.
      setTimeout(() => loadConfig().then((cfg) => {
        if (this.port === port) this.drop(cfg.native.reconnectMs);
      }), DROP_DELAY_MS);
      return;
    }
    Promise.resolve()
      .then(() => this.commands.handle(type, payload))
      .then(
        (result) => answer({ result: result === undefined ? null : result }),
        (e) => answer({ error: String((e && e.message) || e) }),
      );
  }
}
