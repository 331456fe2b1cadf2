// Browser-level actions shared by both protocols: finding the target tab,
// running the page agent in it, navigating and waiting for the load, and
// capturing the visible tab.
import { pageAgent } from './page.js';

const LOAD_START_MS = 2000; // how long a click may take to start a navigation
const LOAD_MS = 30000; // how long a page may take to load for navigate
const SETTLE_MS = 5000; // how long any other command waits for a loading page

// activeTab returns the active tab of the last-focused window, creating a
// tab when there is none.
export async function activeTab() {
  let [tab] = await chrome.tabs.query({ active: true, lastFocusedWindow: true });
  if (!tab) [tab] = await chrome.tabs.query({ active: true });
  if (!tab) tab = await chrome.tabs.create({ url: 'about:blank' });
  return tab;
}

// resolveTab returns the tab a payload names with tabId, or the active tab.
export async function resolveTab(tabId) {
  if (tabId === undefined || tabId === null) return activeTab();
  if (!Number.isInteger(tabId)) throw new Error('tabId must be an integer');
  return getTab(tabId);
}

// runInPage runs one page-agent operation in one frame of the tab (the
// top frame unless frameId says otherwise) and returns its {ok, ...}
// result. A page that started navigating is waited for, so the next
// request sees the new document.
export async function runInPage(tabId, op, args, frameId = 0) {
  const [first] = await inject(tabId, { frameIds: [frameId] }, op, args);
  if (!first) throw new Error('The page returned no result (it may have navigated away)');
  const out = first.out;
  const left = out.navigating;
  delete out.navigating;
  if (left) {
    // A load that finished before this looked needs no wait: the tab
    // shows another URL and is complete.
    const arrived = frameId === 0 ? (tab) => tab.status === 'complete' && tab.url !== left : null;
    await settle(tabId, LOAD_START_MS, arrived);
  }
  return out;
}

// stalled maps a tab to the URL of a load that a command already waited
// SETTLE_MS for: later commands act on that page at once while it still
// loads (a page whose image never arrives would otherwise make every
// command wait, or fail).
const stalled = new Map();

// settle waits, before or after a command acts on a tab, for the tab's
// load under way (or starting within startMs) to finish, but SETTLE_MS at
// most: a page that loads for longer is acted on as it is. skipIf(tab),
// when given, ends the wait at once if it holds for the tab as it is now.
async function settle(tabId, startMs = 0, skipIf = null) {
  const tab = await getTab(tabId);
  if (tab.status === 'loading' && stalled.get(tabId) === tab.url) return;
  const loaded = await waitForLoad(tabId, startMs, { loadMs: SETTLE_MS, quiet: true, skipIf });
  if (loaded !== false) {
    stalled.delete(tabId);
    return;
  }
  const now = await chrome.tabs.get(tabId).catch(() => null);
  if (now && now.status === 'loading') stalled.set(tabId, now.url);
}

async function getTab(tabId) {
  try {
    return await chrome.tabs.get(tabId);
  } catch {
    throw new Error(`No tab with id ${tabId}`);
  }
}

// runInAllFrames runs one page-agent operation in every frame of the tab
// it can reach and returns [{frameId, out}], the top frame first.
export async function runInAllFrames(tabId, op, args) {
  const results = await inject(tabId, { allFrames: true }, op, args);
  return results.sort((a, b) => a.frameId - b.frameId);
}

async function inject(tabId, target, op, args) {
  await settle(tabId);
  let results;
  try {
    results = await chrome.scripting.executeScript({
      target: { tabId, ...target },
      func: pageAgent,
      args: [op, args ?? {}],
    });
  } catch (e) {
    throw new Error(`Cannot run in this page: ${e.message}`);
  }
  return (results || [])
    .filter((r) => r.result && typeof r.result === 'object')
    .map((r) => ({ frameId: r.frameId, out: r.result }));
}

// waitForLoad resolves with true once the tab has finished loading, or
// with null when no load started within startMs (0: when the tab is not
// loading, return at once) or skipIf(tab) held for the tab as it was at
// the call. A load that does not finish within loadMs is an error, or,
// with quiet, resolves false. With fresh, only a load that starts after
// the call counts, not one already under way.
function waitForLoad(tabId, startMs, { fresh = false, loadMs = LOAD_MS, quiet = false, skipIf = null } = {}) {
  return new Promise((resolve, reject) => {
    let started = false;
    let timer;
    const finish = (err, value) => {
      clearTimeout(timer);
      chrome.tabs.onUpdated.removeListener(onUpdated);
      chrome.tabs.onRemoved.removeListener(onRemoved);
      if (err) reject(err); else resolve(value);
    };
    const onUpdated = (id, change) => {
      if (id !== tabId) return;
      if (change.status === 'loading') {
        started = true;
        clearTimeout(timer);
        timer = setTimeout(() => {
          if (quiet) finish(null, false);
          else finish(new Error(`Page load did not finish within ${loadMs} ms`));
        }, loadMs);
      } else if (change.status === 'complete' && started) {
        finish(null, true);
      }
    };
    const onRemoved = (id) => {
      if (id === tabId) finish(new Error('The tab was closed'));
    };
    chrome.tabs.onUpdated.addListener(onUpdated);
    chrome.tabs.onRemoved.addListener(onRemoved);
    chrome.tabs.get(tabId).then((tab) => {
      if (started) return;
      if (skipIf && skipIf(tab)) {
        finish(null, null);
      } else if (tab.status === 'loading' && !fresh) {
        onUpdated(tabId, { status: 'loading' });
      } else if (startMs <= 0) {
        finish(null, null);
      } else {
        timer = setTimeout(() => finish(null, null), startMs);
      }
    }, () => finish(new Error(`No tab with id ${tabId}`)));
  });
}

// navigate loads url in the tab and resolves with the tab once the load
// completes.
export async function navigate(tabId, url) {
  if (typeof url !== 'string' || url === '') throw new Error('url is required');
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`Invalid URL ${JSON.stringify(url)}`);
  }
  if (!['http:', 'https:'].includes(parsed.protocol) && parsed.href !== 'about:blank') {
    throw new Error(`Unsupported URL scheme ${parsed.protocol} (use http, https or about:blank)`);
  }
  const before = await chrome.tabs.get(tabId);
  if (sameDocument(before.url, parsed)) {
    const moved = waitForURL(tabId, parsed.href, 5000);
    await chrome.tabs.update(tabId, { url: parsed.href });
    return moved;
  }
  const loaded = waitForLoad(tabId, LOAD_MS, { fresh: true });
  try {
    await chrome.tabs.update(tabId, { url: parsed.href });
  } catch (e) {
    loaded.catch(() => {});
    throw e;
  }
  await loaded;
  return chrome.tabs.get(tabId);
}

// waitForURL resolves with the tab once its URL is url, or after ms with
// the tab as it is.
function waitForURL(tabId, url, ms) {
  return new Promise((resolve) => {
    const finish = () => {
      clearTimeout(timer);
      chrome.tabs.onUpdated.removeListener(onUpdated);
      chrome.tabs.get(tabId).then(resolve, () => resolve({ id: tabId, url }));
    };
    const onUpdated = (id, change) => {
      if (id === tabId && change.url === url) finish();
    };
    const timer = setTimeout(finish, ms);
    chrome.tabs.onUpdated.addListener(onUpdated);
  });
}

// sameDocument reports whether going from url to target only changes the
// fragment: Chrome then scrolls without loading anything.
function sameDocument(url, target) {
  if (!url || !target.hash) return false;
  try {
    const from = new URL(url);
    return from.hash !== target.hash && from.href.slice(0, from.href.length - from.hash.length) === target.href.slice(0, target.href.length - target.hash.length);
  } catch {
    return false;
  }
}

// Chrome allows two captureVisibleTab calls a second per extension:
// captures are serialised and spaced, and a quota error is retried.
// "image readback failed" is what Chrome says when the tab has no rendered
// frame to copy (just activated, or a compositor busy on a loaded machine:
// seen in headless Chromium 156): a capture first waits for the page to
// render a frame, and a readback failure waits for another, then retries.
let captureChain = Promise.resolve();
const CAPTURE_GAP_MS = 550;

// paint resolves once the tab's page has rendered a frame since the call
// (or could not be asked: a page scripts cannot reach is captured as is).
async function paint(tabId) {
  try {
    await chrome.scripting.executeScript({ target: { tabId }, func: pageAgent, args: ['paint', {}] });
  } catch {
    // not scriptable: nothing to wait for
  }
}

// capture returns the visible part of the tab as a data URL; the tab is
// made active in its window first.
export function capture(tabId, format) {
  const run = async () => {
    const tab = await chrome.tabs.get(tabId);
    if (!tab.active) await chrome.tabs.update(tabId, { active: true });
    const options = format === 'png' ? { format: 'png' } : { format: 'jpeg', quality: 80 };
    await paint(tabId);
    for (let attempt = 0; ; attempt++) {
      try {
        return await chrome.tabs.captureVisibleTab(tab.windowId, options);
      } catch (e) {
        if (attempt < 3 && /MAX_CAPTURE_VISIBLE_TAB_CALLS_PER_SECOND/.test(e.message)) {
          await sleep(CAPTURE_GAP_MS);
          continue;
        }
        if (attempt < 5 && /image readback failed/i.test(e.message)) {
          await paint(tabId);
          await sleep(200 * (attempt + 1));
          continue;
        }
        throw new Error(`Screenshot failed: ${e.message}`);
      }
    }
  };
  const result = captureChain.then(run);
  captureChain = result.then(() => sleep(CAPTURE_GAP_MS), () => sleep(CAPTURE_GAP_MS));
  return result;
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

// withTimeout rejects with message when p has not settled within ms.
export function withTimeout(p, ms, message) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}
