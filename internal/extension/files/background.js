// The service worker: wires both protocol sides together. Chrome may stop
// an idle service worker, and everything in its memory goes (tasks, the
// hub's backoff, pending timers); an open native port and WebSocket traffic
// keep it running, and an alarm starts it again to reconnect when it was
// stopped.
import { AgentCommands } from './agent.js';
import { loadConfig } from './config.js';
import { HubSide } from './hub.js';
import { NativeSide } from './native.js';
import { TaskRunner } from './tasks.js';

let logging = false;
const log = (...args) => {
  if (logging) console.log('[agentbridge]', ...args);
};

const native = new NativeSide({ log });
const tasks = new TaskRunner({ emit: (e) => native.emit(e), log });
native.commands = new AgentCommands({ emit: (e) => native.emit(e), tasks, log });
const hub = new HubSide({ log });

function start() {
  native.ensure();
  hub.ensure();
}

// Listeners are registered synchronously at the top level so that the
// events they name wake the worker.
chrome.alarms.onAlarm.addListener(start);
chrome.runtime.onStartup.addListener(start);
chrome.runtime.onInstalled.addListener(start);

loadConfig().then((cfg) => {
  logging = cfg.log;
  log('service worker started', chrome.runtime.id);
  chrome.alarms.create('agentbridge-reconnect', { periodInMinutes: cfg.wakeMs / 60000 });
  start();
});
