// managed-agents console: the page's only script (plain ES2020, no build step).
//
// Security rule: the page never parses HTML. Every element is made with document.createElement (through `el`)
// and every text is set with textContent or a text node, so what a tool or a model wrote (`<script>` included)
// shows as text and never runs.
(() => {
  "use strict";

  // ---------------------------------------------------------------------------------------------------------
  // Small helpers.

  const $ = (id) => document.getElementById(id);

  /** The content of `<meta name=NAME>`, or "". */
  const meta = (name) => {
    const node = document.querySelector(`meta[name="${name}"]`);
    return node ? node.getAttribute("content") || "" : "";
  };

  /**
   * Makes an element. `attrs`: attribute names to values (`class`; `on<event>` takes a function only;
   * null/undefined/false leave the attribute out, true sets it empty). Children: nodes, or strings and numbers,
   * which become text nodes; null/undefined/false are skipped; arrays are flattened.
   */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key.startsWith("on")) {
        if (typeof value === "function") node.addEventListener(key.slice(2), value);
      } else if (key === "class") {
        node.className = value;
      } else {
        node.setAttribute(key, value === true ? "" : String(value));
      }
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  /** A value as text: strings as they are, anything else as JSON. */
  const text = (value) => {
    if (value === null || value === undefined) return "";
    if (typeof value === "string") return value;
    try {
      return JSON.stringify(value);
    } catch (_) {
      return String(value);
    }
  };

  /** A value as pretty-printed JSON. */
  const pretty = (value) => {
    try {
      const shown = JSON.stringify(value === undefined ? null : value, null, 2);
      return shown === undefined ? String(value) : shown;
    } catch (_) {
      return String(value);
    }
  };

  /** A word fit for a class name. */
  const token = (value) => String(value === null || value === undefined ? "unknown" : value).replace(/[^A-Za-z0-9_-]/g, "_");

  const enc = encodeURIComponent;
  const isTime = (ms) => typeof ms === "number" && Number.isFinite(ms) && ms > 0;
  /** Milliseconds since the epoch as a local date and time. */
  const when = (ms) => (isTime(ms) ? new Date(ms).toLocaleString() : "");
  /** … as a local time of day. */
  const clock = (ms) => (isTime(ms) ? new Date(ms).toLocaleTimeString() : "");
  const iso = (ms) => (isTime(ms) ? new Date(ms).toISOString() : null);

  const parse = (data) => {
    try {
      return JSON.parse(data);
    } catch (_) {
      return null;
    }
  };

  const isClosed = (status) => status === "terminated" || status === "deleted";

  // ---------------------------------------------------------------------------------------------------------
  // State.

  const CSRF = meta("csrf-token");
  const state = {
    readOnly: meta("console-mode") === "read-only",
    inbox: true,
    journal: true,
    cursor: null, // the conversation list's next page
    listing: 0, // counts list loads: a late answer of an older one is dropped
    approvals: [], // the waiting approvals, as last fetched
    current: null, // the open conversation: {id, status, source, seen, waiting, minSeq, maxSeq}
    opening: 0, // counts conversation opens: a late answer of an older one is dropped
  };

  /** How many journal entries one page of the API holds (the view's default). */
  const ENTRY_PAGE = 200;

  // ---------------------------------------------------------------------------------------------------------
  // The API.

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  /** Calls the JSON API; throws an ApiError with the answer's `{"error": {code, message}}`. */
  async function api(method, path, body) {
    const init = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
    if (method !== "GET") {
      init.headers["X-CSRF-Token"] = CSRF;
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body === undefined ? {} : body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch (error) {
      throw new ApiError(0, "network", `The console cannot be reached (${error.message}).`);
    }
    const raw = await response.text();
    const data = raw ? parse(raw) : null;
    if (!response.ok) {
      const problem = data && typeof data.error === "object" && data.error ? data.error : {};
      throw new ApiError(response.status, problem.code || `http_${response.status}`, problem.message || `HTTP ${response.status}`);
    }
    return data || {};
  }

  // ---------------------------------------------------------------------------------------------------------
  // The notice: API errors and short confirmations.

  let noticeTimer = 0;

  function notify(message, kind = "info") {
    const box = $("notice");
    clearTimeout(noticeTimer);
    box.textContent = "";
    box.className = "notice";
    if (!message) return;
    box.classList.add(`notice-${kind}`);
    box.dataset.kind = kind;
    box.append(...(Array.isArray(message) ? message : [message]));
    if (kind === "info") noticeTimer = setTimeout(() => notify(""), 6000);
  }

  /** Shows an error (an ApiError says its code; a lost session offers to sign in again). */
  function fail(error) {
    if (error instanceof ApiError) {
      const parts = [`${error.message} (${error.code})`];
      if (error.status === 401) parts.push(" ", el("a", { href: "/login" }, "Sign in again"));
      notify(parts, "error");
    } else {
      notify(String((error && error.message) || error), "error");
    }
  }

  // ---------------------------------------------------------------------------------------------------------
  // Conversations.

  const statusChip = (status) => el("span", { class: `status status-${token(status)}` }, text(status) || "unknown");

  function conversationRow(c) {
    const row = el(
      "tr",
      { class: "conversation", "data-id": c.external_id, "data-status": c.status },
      el("td", { class: "id" },
        el("button", { type: "button", class: "link open-conversation", title: "Open the timeline", onclick: () => openLater(c.external_id) }, text(c.external_id))),
      el("td", { class: "status-cell" }, statusChip(c.status)),
      el("td", { class: "provider" }, text(c.provider)),
      el("td", { class: "num requests" }, text(c.requests)),
      el("td", { class: "updated" }, el("time", { datetime: iso(c.updated_at_ms) }, when(c.updated_at_ms))),
      el("td", { class: "last-error" }, text(c.last_error)),
    );
    if (state.current && state.current.id === c.external_id) row.classList.add("selected");
    return row;
  }

  /** Loads the list's first page (`more`: the next page, appended). */
  async function loadConversations(more) {
    const params = new URLSearchParams();
    const status = $("filter-status").value;
    const provider = $("filter-provider").value.trim();
    if (status) params.set("status", status);
    if (provider) params.set("provider", provider);
    params.set("limit", "50");
    if (more && state.cursor) params.set("cursor", state.cursor);
    const mine = ++state.listing;
    const data = await api("GET", `/api/conversations?${params}`);
    if (mine !== state.listing) return;
    const body = $("conversation-list");
    if (!more) body.textContent = "";
    const shown = new Set(Array.from(body.children, (row) => row.dataset.id));
    for (const c of data.conversations || []) {
      if (!shown.has(c.external_id)) body.appendChild(conversationRow(c));
    }
    state.cursor = data.next_cursor || null;
    $("more-conversations").classList.toggle("hidden", !state.cursor);
    $("conversations-empty").classList.toggle("hidden", body.children.length > 0);
  }

  /** Replaces a conversation's row with its new summary (when the list shows it). */
  function updateRow(summary) {
    for (const row of $("conversation-list").children) {
      if (row.dataset.id === summary.external_id) row.replaceWith(conversationRow(summary));
    }
  }

  function markSelectedRow() {
    const id = state.current ? state.current.id : null;
    for (const row of $("conversation-list").children) row.classList.toggle("selected", row.dataset.id === id);
  }

  // ---------------------------------------------------------------------------------------------------------
  // Approvals: the inbox tab, the count, and the buttons in the open timeline.

  /** Approve / Deny (with a reason) for one waiting call; `withOpen` adds "Open conversation". */
  function approvalActions(approval, withOpen) {
    const box = el("div", { class: "actions" });
    if (!state.readOnly) {
      const reason = el("input", {
        type: "text",
        class: "deny-message",
        placeholder: "Reason for denying (optional)",
        "aria-label": "Reason for denying",
        autocomplete: "off",
      });
      const approve = el("button", { type: "button", class: "approve" }, "Approve");
      const deny = el("button", { type: "button", class: "deny danger" }, "Deny");
      approve.addEventListener("click", () => decide(approval, "allow", "", box));
      deny.addEventListener("click", () => decide(approval, "deny", reason.value.trim(), box));
      reason.addEventListener("keydown", (event) => {
        if (event.key === "Enter") {
          event.preventDefault();
          deny.click();
        }
      });
      box.append(reason, approve, deny);
    }
    if (withOpen) {
      box.append(el("button", { type: "button", class: "open secondary", onclick: () => openLater(approval.external_id) }, "Open conversation"));
    }
    return box;
  }

  function approvalItem(a) {
    return el(
      "li",
      { class: "approval", "data-id": a.external_id, "data-tool-use-id": a.tool_use_id },
      el("div", { class: "approval-head" },
        el("span", { class: "tool-name" }, text(a.name) || "tool"),
        a.kind ? el("span", { class: "tool-kind" }, text(a.kind)) : null,
        el("span", { class: "conversation-id" }, "in ", el("code", null, text(a.external_id))),
        el("time", { class: "time", datetime: iso(a.created_at_ms) }, when(a.created_at_ms))),
      el("pre", { class: "json" }, pretty(a.input)),
      approvalActions(a, true),
    );
  }

  const approvalKey = (externalId, toolUseId) => `${externalId}\u0000${toolUseId}`;

  /** Shows `state.approvals` in the tab, keeping the items still waiting (and what was typed into them). */
  function renderApprovals() {
    const list = $("approval-list");
    const existing = new Map();
    for (const item of Array.from(list.children)) existing.set(approvalKey(item.dataset.id, item.dataset.toolUseId), item);
    const wanted = new Map();
    for (const a of state.approvals) wanted.set(approvalKey(a.external_id, a.tool_use_id), a);
    for (const [key, item] of existing) {
      if (!wanted.has(key)) {
        item.remove();
        existing.delete(key);
      }
    }
    let index = 0;
    for (const [key, a] of wanted) {
      const item = existing.get(key) || approvalItem(a);
      if (list.children[index] !== item) list.insertBefore(item, list.children[index] || null);
      index += 1;
    }
    const count = $("approvals-count");
    count.textContent = String(wanted.size);
    count.classList.toggle("zero", wanted.size === 0);
    $("tab-approvals").classList.toggle("attention", wanted.size > 0);
    $("approvals-empty").classList.toggle("hidden", wanted.size > 0);
  }

  /** Fetches the waiting approvals: the tab, the count, and the open timeline's buttons. */
  async function refreshApprovals() {
    const data = await api("GET", "/api/approvals");
    state.approvals = Array.isArray(data.approvals) ? data.approvals : [];
    renderApprovals();
    const current = state.current;
    if (current) {
      current.waiting = new Map();
      for (const a of state.approvals) if (a.external_id === current.id) current.waiting.set(a.tool_use_id, a);
      syncInlineApprovals();
    }
  }

  /** Answers a waiting call, then refreshes the approvals and opens its conversation. */
  async function decide(approval, decision, message, box) {
    const buttons = Array.from(box.querySelectorAll("button.approve, button.deny"));
    for (const button of buttons) button.disabled = true;
    const body = decision === "deny" && message ? { decision, message } : { decision };
    let answered = false;
    try {
      await api("POST", `/api/conversations/${enc(approval.external_id)}/approvals/${enc(approval.tool_use_id)}`, body);
      answered = true;
      notify(`${decision === "allow" ? "Approved" : "Denied"} ${text(approval.name) || "the call"} in ${approval.external_id}.`);
    } catch (error) {
      for (const button of buttons) button.disabled = false;
      fail(error);
    }
    try {
      await refreshApprovals();
    } catch (error) {
      fail(error);
    }
    // Show the conversation going on.
    if (answered && (!state.current || state.current.id !== approval.external_id)) await openConversation(approval.external_id);
  }

  /** Adds or removes Approve / Deny on the timeline's `approval_requested` entries. */
  function syncInlineApprovals() {
    const current = state.current;
    if (!current) return;
    for (const item of $("timeline").children) {
      if (item.dataset.kind !== "approval_requested") continue;
      const waiting = current.waiting.get(item.dataset.toolUseId);
      const box = Array.from(item.children).find((child) => child.classList.contains("actions"));
      item.classList.toggle("waiting", Boolean(waiting));
      if (waiting && !box && !state.readOnly) item.append(approvalActions(waiting, false));
      else if (!waiting && box) box.remove();
    }
  }

  // ---------------------------------------------------------------------------------------------------------
  // The timeline.

  function usageLine(usage, extra) {
    const parts = [];
    if (usage && typeof usage === "object") {
      if (usage.input_tokens !== undefined && usage.input_tokens !== null) parts.push(`${usage.input_tokens} input tokens`);
      if (usage.output_tokens !== undefined && usage.output_tokens !== null) parts.push(`${usage.output_tokens} output tokens`);
      if (usage.cache_read_input_tokens) parts.push(`${usage.cache_read_input_tokens} cached`);
    }
    parts.push(...extra.filter(Boolean));
    return parts.length ? el("div", { class: "usage" }, parts.join(" · ")) : null;
  }

  /** One journal entry as `<li class="entry entry-KIND" data-seq=SEQ>`: a label (time, who), then a body. */
  function entryItem(entry) {
    const kind = text(entry.kind) || "unknown";
    const data = entry.data && typeof entry.data === "object" ? entry.data : {};
    const item = el("li", { class: `entry entry-${token(kind)}`, "data-seq": String(entry.seq), "data-kind": kind });
    const label = (...words) =>
      el("div", { class: "label" },
        el("time", { class: "time", datetime: iso(entry.at_ms), title: when(entry.at_ms) }, clock(entry.at_ms)),
        el("span", { class: "who" }, ...words));
    const body = (value) => (typeof value === "string" || value === null || value === undefined
      ? el("div", { class: "text" }, text(value))
      : el("pre", { class: "json" }, pretty(value)));
    const json = (value) => el("pre", { class: "json" }, pretty(value));
    const tool = (id) => {
      if (id !== undefined && id !== null) item.dataset.toolUseId = text(id);
    };
    switch (kind) {
      case "message":
        item.append(label("You"), body(data.text));
        break;
      case "turn":
        item.append(label("Model"), body(data.text));
        if (data.usage) item.append(usageLine(data.usage, []) || "");
        break;
      case "tool_call":
        tool(data.id);
        item.append(label("Tool call: ", el("strong", null, text(data.name))), json(data.input));
        break;
      case "tool_result":
        tool(data.tool_use_id);
        if (data.is_error) item.classList.add("error");
        item.append(label(data.is_error ? "Result (error)" : "Result"), body(data.text));
        break;
      case "approval_requested":
        tool(data.tool_use_id);
        item.append(label("Waiting for approval: ", el("strong", null, text(data.name))), json(data.input));
        break;
      case "approval_decided": {
        tool(data.tool_use_id);
        const allowed = data.decision === "allow";
        item.classList.add(allowed ? "allowed" : "denied");
        item.append(label(allowed ? "Approved" : "Denied"));
        if (data.message) item.append(body(data.message));
        break;
      }
      case "reply":
        item.append(label("Reply"), body(data.text));
        item.append(
          usageLine(data.usage, [
            typeof data.turns === "number" ? `${data.turns} turn${data.turns === 1 ? "" : "s"}` : null,
            data.terminal_reason ? text(data.terminal_reason) : null,
          ]) || "",
        );
        break;
      case "failure":
        item.append(label("Failed"), body(data.error));
        break;
      case "closed":
        item.append(label("Ended"), body(data.status ? `Status: ${text(data.status)}` : ""));
        break;
      default:
        item.append(label(kind), json(entry.data));
    }
    return item;
  }

  /** Adds an entry to the open timeline, once per seq, in seq order. */
  function addEntry(entry) {
    const current = state.current;
    if (!current || !entry || typeof entry !== "object") return;
    if (entry.external_id !== undefined && entry.external_id !== current.id) return;
    const seq = Number(entry.seq);
    if (!Number.isFinite(seq) || current.seen.has(seq)) return;
    current.seen.add(seq);
    current.maxSeq = Math.max(current.maxSeq, seq);
    current.minSeq = Math.min(current.minSeq, seq);
    const list = $("timeline");
    const item = entryItem(entry);
    let before = null;
    for (let node = list.lastElementChild; node; node = node.previousElementSibling) {
      if (Number(node.dataset.seq) < seq) break;
      before = node;
    }
    list.insertBefore(item, before);
    $("timeline-empty").classList.add("hidden");
    if (entry.kind === "approval_decided" && entry.data) current.waiting.delete(text(entry.data.tool_use_id));
    if (entry.kind === "approval_requested" || entry.kind === "approval_decided") syncInlineApprovals();
  }

  /** The status line, and which of the timeline's controls apply. */
  function showSummary(c) {
    const line = $("timeline-status");
    line.textContent = "";
    line.dataset.status = text(c.status);
    const parts = [
      c.provider ? text(c.provider) : null,
      c.model ? text(c.model) : null,
      typeof c.requests === "number" ? `${c.requests} request${c.requests === 1 ? "" : "s"}` : null,
      isTime(c.updated_at_ms) ? `updated ${when(c.updated_at_ms)}` : null,
    ].filter(Boolean);
    line.append(statusChip(c.status));
    if (parts.length) line.append(el("span", { class: "details" }, parts.join(" · ")));
    if (c.last_error) line.append(el("span", { class: "last-error" }, text(c.last_error)));
    const closed = isClosed(c.status);
    $("message-form").classList.toggle("hidden", state.readOnly || !state.inbox || closed);
    $("terminate").classList.toggle("hidden", state.readOnly || closed);
  }

  function closeFeed() {
    const current = state.current;
    if (current && current.source) {
      current.source.close();
      current.source = null;
    }
    $("timeline-view").dataset.feed = "closed";
  }

  /** Follows the open conversation's live feed (entries after the newest one shown, and its record). */
  function openFeed(current) {
    const view = $("timeline-view");
    const source = new EventSource(`/api/conversations/${enc(current.id)}/events?after=${current.maxSeq}`);
    current.source = source;
    view.dataset.feed = "connecting";
    const live = () => state.current === current && current.source === source;
    source.addEventListener("open", () => {
      if (live()) view.dataset.feed = "open";
    });
    source.addEventListener("entry", (event) => {
      if (live()) addEntry(parse(event.data));
    });
    source.addEventListener("conversation", (event) => {
      const summary = parse(event.data);
      if (!live() || !summary || typeof summary !== "object") return;
      const changed = summary.status !== current.status;
      current.status = summary.status;
      showSummary(summary);
      updateRow(summary);
      if (changed) refreshApprovals().catch(fail);
    });
    // Both the server's `event: error` (with data) and the browser's own connection errors (without).
    source.addEventListener("error", (event) => {
      if (!live()) return;
      if (typeof event.data === "string" && event.data) {
        const problem = parse(event.data);
        notify(`Live feed: ${problem && problem.message ? problem.message : event.data}`, "error");
      } else if (source.readyState === EventSource.CLOSED) {
        view.dataset.feed = "closed";
        notify("The live feed stopped; open the conversation again to resume it.", "error");
      } else {
        view.dataset.feed = "connecting";
      }
    });
  }

  /** Opens a conversation's timeline (closing the last one's feed). */
  async function openConversation(id) {
    closeFeed();
    const mine = ++state.opening;
    let data;
    try {
      data = await api("GET", `/api/conversations/${enc(id)}`);
    } catch (error) {
      if (mine === state.opening) {
        closeTimeline();
        fail(error);
      }
      return;
    }
    if (mine !== state.opening) return;
    const summary = data.conversation || { external_id: id };
    const current = {
      id,
      status: summary.status,
      source: null,
      seen: new Set(),
      waiting: new Map(),
      minSeq: Infinity,
      maxSeq: 0,
    };
    for (const a of data.approvals || []) {
      if (a.decision === null || a.decision === undefined) current.waiting.set(a.tool_use_id, a);
    }
    state.current = current;
    const view = $("timeline-view");
    view.dataset.id = id;
    $("timeline").textContent = "";
    $("timeline-title").textContent = id;
    showSummary(summary);
    const journal = Array.isArray(data.journal) ? data.journal : [];
    for (const entry of journal) addEntry(entry);
    $("timeline-empty").textContent = state.journal ? "Nothing recorded yet." : "This store keeps no journal.";
    $("timeline-empty").classList.toggle("hidden", journal.length > 0);
    $("earlier-entries").classList.toggle("hidden", journal.length < ENTRY_PAGE);
    view.classList.remove("hidden");
    markSelectedRow();
    if (location.hash !== `#conversation=${enc(id)}`) history.replaceState(null, "", `#conversation=${enc(id)}`);
    openFeed(current);
    view.scrollIntoView({ block: "start" });
  }
  /** Opens a conversation from a click (its errors go to the notice). */
  const openLater = (id) => {
    openConversation(id).catch(fail);
  };

  function closeTimeline() {
    state.opening += 1;
    closeFeed();
    state.current = null;
    const view = $("timeline-view");
    view.classList.add("hidden");
    delete view.dataset.id;
    $("timeline").textContent = "";
    $("timeline-title").textContent = "";
    $("timeline-status").textContent = "";
    if (location.hash.startsWith("#conversation=")) history.replaceState(null, "", location.pathname + location.search);
    markSelectedRow();
  }

  /** Loads the page of entries before the oldest one shown. */
  async function loadEarlier() {
    const current = state.current;
    if (!current || !Number.isFinite(current.minSeq)) return;
    const data = await api("GET", `/api/conversations/${enc(current.id)}/journal?before=${current.minSeq}&limit=${ENTRY_PAGE}`);
    if (state.current !== current) return;
    const entries = Array.isArray(data.entries) ? data.entries : [];
    for (const entry of entries) addEntry(entry);
    $("earlier-entries").classList.toggle("hidden", entries.length < ENTRY_PAGE);
  }

  async function sendMessage(event) {
    event.preventDefault();
    const current = state.current;
    if (!current || state.readOnly) return;
    const area = $("message-text");
    const message = area.value;
    if (!message.trim()) {
      notify("Write a message first.", "error");
      return;
    }
    const button = $("send-message");
    button.disabled = true;
    try {
      const data = await api("POST", `/api/conversations/${enc(current.id)}/messages`, { text: message });
      if (state.current === current) area.value = "";
      const queued = data.message && data.message.id !== undefined ? ` (${text(data.message.id)})` : "";
      notify(`Message queued${queued}; a worker delivers it.`);
    } catch (error) {
      fail(error);
    } finally {
      button.disabled = false;
    }
  }

  async function terminate() {
    const current = state.current;
    if (!current || state.readOnly) return;
    const button = $("terminate");
    button.disabled = true;
    try {
      const data = await api("POST", `/api/conversations/${enc(current.id)}/terminate`);
      if (data.conversation) {
        updateRow(data.conversation);
        if (state.current === current) {
          current.status = data.conversation.status;
          showSummary(data.conversation);
        }
      }
      notify(`Ended ${current.id}.`);
      refreshApprovals().catch(fail);
    } catch (error) {
      fail(error);
    } finally {
      button.disabled = false;
    }
  }

  // ---------------------------------------------------------------------------------------------------------
  // Tabs, the address's hash, signing out.

  function showTab(name) {
    const approvals = name === "approvals";
    $("conversations").classList.toggle("hidden", approvals);
    $("approvals").classList.toggle("hidden", !approvals);
    for (const [id, active] of [["tab-conversations", !approvals], ["tab-approvals", approvals]]) {
      $(id).classList.toggle("active", active);
      $(id).setAttribute("aria-selected", String(active));
    }
    refreshApprovals().catch(fail);
  }

  /** `#approvals` opens the approvals tab; `#conversation=<encoded id>` opens that conversation. */
  async function route() {
    const hash = location.hash;
    if (hash === "#approvals") {
      showTab("approvals");
    } else if (hash.startsWith("#conversation=")) {
      let id = null;
      try {
        id = decodeURIComponent(hash.slice("#conversation=".length));
      } catch (_) {
        id = null;
      }
      if (id && (!state.current || state.current.id !== id)) await openConversation(id);
    }
  }

  async function signOut(event) {
    event.preventDefault();
    try {
      await fetch("/logout", {
        method: "POST",
        credentials: "same-origin",
        headers: { "X-CSRF-Token": CSRF, "Content-Type": "application/json" },
        body: "{}",
      });
    } catch (_) {
      // Signed out or not, the sign-in page is where to go.
    }
    location.assign("/login");
  }

  function applyReadOnly() {
    document.body.classList.toggle("read-only", state.readOnly);
    $("read-only").classList.toggle("hidden", !state.readOnly);
    if (state.readOnly) {
      $("message-form").classList.add("hidden");
      $("terminate").classList.add("hidden");
      for (const button of document.querySelectorAll("button.approve, button.deny, input.deny-message")) button.remove();
    }
  }

  function wire() {
    $("tab-conversations").addEventListener("click", () => {
      if (location.hash === "#approvals") history.replaceState(null, "", location.pathname + location.search);
      showTab("conversations");
    });
    $("tab-approvals").addEventListener("click", () => {
      if (!state.current) history.replaceState(null, "", "#approvals");
      showTab("approvals");
    });
    $("sign-out-form").addEventListener("submit", signOut);
    $("filter-form").addEventListener("submit", (event) => {
      event.preventDefault();
      loadConversations(false).catch(fail);
    });
    $("filter-status").addEventListener("change", () => loadConversations(false).catch(fail));
    $("filter-provider").addEventListener("change", () => loadConversations(false).catch(fail));
    $("more-conversations").addEventListener("click", async (event) => {
      const button = event.currentTarget;
      button.disabled = true;
      try {
        await loadConversations(true);
      } catch (error) {
        fail(error);
      } finally {
        button.disabled = false;
      }
    });
    $("close-timeline").addEventListener("click", closeTimeline);
    $("earlier-entries").addEventListener("click", () => loadEarlier().catch(fail));
    $("message-form").addEventListener("submit", sendMessage);
    $("message-text").addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        $("message-form").requestSubmit();
      }
    });
    $("terminate").addEventListener("click", terminate);
    $("notice").addEventListener("click", (event) => {
      if (!(event.target instanceof HTMLAnchorElement)) notify("");
    });
    window.addEventListener("hashchange", () => route().catch(fail));
    window.addEventListener("pagehide", closeFeed);
  }

  // ---------------------------------------------------------------------------------------------------------
  // Start: the console's info, the lists, the hash; then `body[data-ready=true]`.

  async function start() {
    wire();
    applyReadOnly();
    try {
      const info = await api("GET", "/api/info");
      state.readOnly = state.readOnly || info.read_only === true;
      state.inbox = info.inbox !== false;
      state.journal = info.journal !== false;
      if (info.version) $("version").textContent = `managed-agents-console ${text(info.version)}`;
      applyReadOnly();
    } catch (error) {
      fail(error);
    }
    const loaded = await Promise.allSettled([loadConversations(false), refreshApprovals()]);
    for (const result of loaded) if (result.status === "rejected") fail(result.reason);
    try {
      await route();
    } catch (error) {
      fail(error);
    }
    setInterval(() => refreshApprovals().catch(fail), 5000);
    document.body.dataset.ready = "true";
  }

  start();
})();
