// Sluice's web dashboard: one page, routed by the URL's fragment, that reads
// the JobManager's REST API (Flink's) with URLs relative to the page.
"use strict";

(function () {
  const main = document.getElementById("main");
  const MIN_WATERMARK = -9.2e18; // Long.MIN_VALUE: no watermark yet
  const HISTORY = 60; // samples kept for the plots
  let refreshMs = 3000;
  let timers = [];
  let routeSeq = 0;

  // ---------------------------------------------------------------------
  // REST

  class APIError extends Error {
    constructor(status, msg) { super(msg); this.status = status; }
  }

  async function api(path, opts) {
    const res = await fetch(path, Object.assign({ headers: { "Accept": "application/json" } }, opts || {}));
    const text = await res.text();
    let body = null;
    if (text) {
      try { body = JSON.parse(text); } catch (e) { body = text; }
    }
    if (!res.ok) {
      const msg = body && body.errors ? body.errors.join("; ") : res.status + " " + res.statusText;
      throw new APIError(res.status, msg);
    }
    return body;
  }

  function post(path, body, method) {
    return api(path, { method: method || "POST", headers: { "Content-Type": "application/json", "Accept": "application/json" }, body: JSON.stringify(body || {}) });
  }

  // ---------------------------------------------------------------------
  // Formatting

  function esc(s) {
    return String(s === undefined || s === null ? "" : s).replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  }
  function pad(n) { return String(n).padStart(2, "0"); }
  function fmtTime(ms) {
    if (!ms || ms <= 0) return "–";
    const d = new Date(ms);
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " + pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
  }
  function fmtClock(ms) { return ms > 0 ? fmtTime(ms).slice(11) : "–"; }
  function fmtDuration(ms) {
    if (ms === undefined || ms === null || ms < 0) return "–";
    if (ms < 1000) return Math.round(ms) + " ms";
    let s = Math.floor(ms / 1000);
    const d = Math.floor(s / 86400); s -= d * 86400;
    const h = Math.floor(s / 3600); s -= h * 3600;
    const m = Math.floor(s / 60); s -= m * 60;
    if (d) return d + "d " + h + "h " + m + "m";
    if (h) return h + "h " + m + "m " + s + "s";
    if (m) return m + "m " + s + "s";
    return (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + " s";
  }
  function fmtBytes(b) {
    if (b === undefined || b === null || b < 0) return "–";
    const u = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
    return (i ? b.toFixed(1) : b) + " " + u[i];
  }
  function fmtNum(n) {
    if (n === undefined || n === null || isNaN(n)) return "–";
    if (Math.abs(n) >= 1e9) return (n / 1e9).toFixed(2) + " G";
    if (Math.abs(n) >= 1e6) return (n / 1e6).toFixed(2) + " M";
    if (Math.abs(n) >= 1e4) return (n / 1e3).toFixed(1) + " k";
    return Number.isInteger(n) ? String(n) : n.toFixed(1);
  }
  function fmtRate(r) { return r === null || r === undefined ? "–" : fmtNum(r) + "/s"; }
  function fmtPct(p) { return p === null || p === undefined ? "–" : Math.round(p) + " %"; }
  function fmtWatermark(v) {
    const n = Number(v);
    if (v === undefined || v === null || isNaN(n) || n <= MIN_WATERMARK) return "none";
    if (n >= 9.2e18) return "end of time";
    return fmtTime(n);
  }
  // shortPath keeps the last segment of a checkpoint's path (the whole
  // path is the cell's title).
  function shortPath(p) {
    if (!p) return "";
    const parts = p.replace(/\/+$/, "").split("/");
    return parts.length > 2 ? "…/" + parts[parts.length - 1] : p;
  }
  function badge(s) { return '<span class="badge ' + esc(s) + '">' + esc(s) + "</span>"; }
  function terminal(s) { return s === "FINISHED" || s === "CANCELED" || s === "FAILED"; }
  function empty(msg) { return '<div class="empty">' + esc(msg) + "</div>"; }

  // ---------------------------------------------------------------------
  // Pages, timers and notices

  function every(fn) {
    const seq = routeSeq;
    const run = async () => {
      if (seq !== routeSeq) return;
      try { await fn(); } catch (e) { showError(e); }
      if (seq === routeSeq) timers.push(setTimeout(run, refreshMs));
    };
    run();
  }

  function toast(msg, bad) {
    const t = document.getElementById("toast");
    t.textContent = msg;
    t.className = "toast" + (bad ? " bad" : "");
    t.hidden = false;
    clearTimeout(toast.timer);
    toast.timer = setTimeout(() => { t.hidden = true; }, bad ? 12000 : 6000);
  }

  function showError(e) {
    const box = document.getElementById("page-error");
    const msg = e instanceof APIError ? e.message : "The JobManager could not be reached: " + e.message;
    if (box) box.innerHTML = '<div class="panel error">' + esc(msg) + "</div>";
  }

  function clearError() {
    const box = document.getElementById("page-error");
    if (box) box.innerHTML = "";
  }

  function confirmModal(title, bodyHTML, okLabel) {
    return new Promise(resolve => {
      const m = document.getElementById("modal");
      document.getElementById("modal-title").textContent = title;
      document.getElementById("modal-body").innerHTML = bodyHTML;
      const ok = document.getElementById("modal-ok");
      const back = document.getElementById("modal-cancel");
      ok.textContent = okLabel;
      m.hidden = false;
      const done = v => {
        m.hidden = true;
        ok.onclick = back.onclick = null;
        resolve(v);
      };
      ok.onclick = () => {
        const vals = {};
        m.querySelectorAll("input").forEach(i => { vals[i.name] = i.type === "checkbox" ? i.checked : i.value.trim(); });
        done(vals);
      };
      back.onclick = () => done(null);
    });
  }

  function setNav(name) {
    document.querySelectorAll("#nav a").forEach(a => a.classList.toggle("active", a.dataset.nav === name));
  }

  // ---------------------------------------------------------------------
  // Router

  const routes = [
    [/^#?\/?$/, () => pageOverview()],
    [/^#\/overview$/, () => pageOverview()],
    [/^#\/jobs\/(running|completed)$/, m => pageJobs(m[1])],
    [/^#\/job\/([0-9a-f]{32})\/vertex\/([0-9a-f]{32})$/, m => pageVertex(m[1], m[2])],
    [/^#\/job\/([0-9a-f]{32})\/vertex\/([0-9a-f]{32})\/flamegraph$/, m => pageVertexFlameGraph(m[1], m[2])],
    [/^#\/job\/([0-9a-f]{32})(?:\/(overview|exceptions|checkpoints|configuration|kafka))?$/, m => pageJob(m[1], m[2] || "overview")],
    [/^#\/taskmanagers$/, () => pageTaskManagers()],
    [/^#\/taskmanager\/([^/]+)\/(log|stdout|goroutines)$/, m => pageFileView("taskmanager", decodeURIComponent(m[1]), m[2], "")],
    [/^#\/taskmanager\/([^/]+)\/file\/([^/]+)$/, m => pageFileView("taskmanager", decodeURIComponent(m[1]), "file", decodeURIComponent(m[2]))],
    [/^#\/taskmanager\/(.+)$/, m => pageTaskManager(decodeURIComponent(m[1]))],
    [/^#\/jobmanager$/, () => pageJobManager()],
    [/^#\/submit$/, () => pageSubmit()],
    [/^#\/jobmanager\/(log|stdout|goroutines)$/, m => pageFileView("jobmanager", "", m[1], "")],
    [/^#\/jobmanager\/file\/([^/]+)$/, m => pageFileView("jobmanager", "", "file", decodeURIComponent(m[1]))],
  ];

  function route() {
    routeSeq++;
    timers.forEach(clearTimeout);
    timers = [];
    const h = location.hash || "";
    for (const [re, page] of routes) {
      const m = h.match(re);
      if (m) { page(m); return; }
    }
    setNav("");
    main.innerHTML = '<h1>Not found</h1><p class="muted">There is no page ' + esc(h) + '. <a href="#/overview">Overview</a></p>';
  }

  // ---------------------------------------------------------------------
  // Overview and job lists

  function jobsTable(jobs, now) {
    if (!jobs.length) return empty("No jobs.");
    let h = '<table class="jobs"><thead><tr><th>Name</th><th>Job ID</th><th>Status</th><th>Start</th><th>End</th><th class="num">Duration</th><th class="num">Tasks</th></tr></thead><tbody>';
    for (const j of jobs) {
      const dur = j["end-time"] > 0 ? j.duration : (now || Date.now()) - j["start-time"];
      const t = j.tasks || {};
      h += '<tr class="link" data-href="#/job/' + esc(j.jid) + '"><td><a href="#/job/' + esc(j.jid) + '">' + esc(j.name) + "</a></td>" +
        '<td class="mono">' + esc(j.jid) + "</td><td>" + badge(j.state) + "</td><td>" + fmtTime(j["start-time"]) + "</td><td>" +
        fmtTime(j["end-time"]) + '</td><td class="num">' + fmtDuration(dur) + '</td><td class="num">' + esc(t.running || 0) + " / " + esc(t.total || 0) + "</td></tr>";
    }
    return h + "</tbody></table>";
  }

  function linkRows(root) {
    root.querySelectorAll("tr.link").forEach(tr => {
      tr.onclick = ev => { if (ev.target.tagName !== "A") location.hash = tr.dataset.href; };
    });
  }

  function sortJobs(jobs) {
    return jobs.slice().sort((a, b) => b["start-time"] - a["start-time"]);
  }

  function pageOverview() {
    setNav("overview");
    main.innerHTML = '<h1>Cluster overview</h1><div id="page-error"></div><div id="cards" class="cards"></div>' +
      '<h2>Running jobs</h2><div class="panel" id="running"></div><h2>Completed jobs</h2><div class="panel" id="completed"></div>' +
      '<h2>Kerberos and delegation tokens</h2><div class="panel" id="security"></div>';
    every(async () => {
      const [o, jobs, sec] = await Promise.all([api("overview"), api("jobs/overview"), security()]);
      clearError();
      const card = (label, v, id) => '<div class="card" id="' + id + '"><div class="label">' + esc(label) + '</div><div class="value">' + esc(v) + "</div></div>";
      document.getElementById("cards").innerHTML =
        card("TaskManagers", o.taskmanagers, "c-tms") + card("Slots total", o["slots-total"], "c-slots") +
        card("Slots available", o["slots-available"], "c-free") + card("Jobs running", o["jobs-running"], "c-running") +
        card("Jobs finished", o["jobs-finished"], "c-finished") + card("Jobs failed", o["jobs-failed"], "c-failed") +
        card("Jobs cancelled", o["jobs-cancelled"], "c-cancelled");
      const all = sortJobs(jobs.jobs || []);
      const r = document.getElementById("running"), c = document.getElementById("completed");
      r.innerHTML = jobsTable(all.filter(j => !terminal(j.state)));
      c.innerHTML = jobsTable(all.filter(j => terminal(j.state)));
      linkRows(r); linkRows(c);
      document.getElementById("security").innerHTML = securityHTML(sec, {});
    });
  }

  function pageJobs(which) {
    setNav(which);
    main.innerHTML = "<h1>" + (which === "running" ? "Running jobs" : "Completed jobs") + '</h1><div id="page-error"></div><div class="panel" id="list"></div>';
    every(async () => {
      const jobs = await api("jobs/overview");
      clearError();
      const all = sortJobs(jobs.jobs || []).filter(j => terminal(j.state) === (which === "completed"));
      const l = document.getElementById("list");
      l.innerHTML = jobsTable(all);
      linkRows(l);
    });
  }

  // ---------------------------------------------------------------------
  // Kerberos logins and delegation tokens, from the Prometheus metrics

  function parseProm(text) {
    const out = [];
    for (const line of text.split("\n")) {
      if (!line.startsWith("sluice_kerberos_") && !line.startsWith("sluice_delegation_token_")) continue;
      const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/);
      if (!m) continue;
      const labels = {};
      (m[2] || "").replace(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g, (_, k, v) => { labels[k] = v.replace(/\\(.)/g, "$1"); });
      out.push({ name: m[1], labels: labels, value: Number(m[3]) });
    }
    return out;
  }

  async function security() {
    const res = await fetch("metrics");
    if (!res.ok) throw new APIError(res.status, "GET metrics: " + res.status);
    const samples = parseProm(await res.text());
    const logins = new Map();
    let tokens = null;
    const tmTokens = []; // the tokens each TaskManager was launched with
    for (const s of samples) {
      if (s.name.startsWith("sluice_kerberos_")) {
        const l = s.labels;
        const key = [l.component, l.tm_id, l.host, l.job_id, l.principal].join("|");
        if (!logins.has(key)) logins.set(key, { labels: l });
        const e = logins.get(key);
        e[s.name.replace("sluice_kerberos_", "")] = s.value;
      } else if (s.labels.component === "taskmanager") {
        tmTokens.push({ tm: s.labels.tm_id, expiry: s.value });
      } else {
        tokens = tokens || { component: s.labels.component };
        tokens[s.name.replace("sluice_delegation_token_", "")] = s.value;
      }
    }
    tmTokens.sort((a, b) => (a.tm < b.tm ? -1 : a.tm > b.tm ? 1 : 0));
    return { logins: Array.from(logins.values()), tokens: tokens, tmTokens: tmTokens };
  }

  function expiry(sec) {
    if (!sec) return "–";
    const left = sec * 1000 - Date.now();
    return fmtTime(sec * 1000) + ' <span class="' + (left < 3600e3 ? "error" : "muted") + '">(' + (left < 0 ? "expired " + fmtDuration(-left) + " ago" : "in " + fmtDuration(left)) + ")</span>";
  }

  function securityHTML(sec, filter) {
    const logins = sec.logins.filter(l => (!filter.tm || l.labels.tm_id === filter.tm) && (!filter.component || l.labels.component === filter.component));
    let h = "";
    if (!logins.length) {
      h += empty("Kerberos logins: not reported by this cluster (no process" + (filter.tm ? " of this TaskManager" : "") + " has a Kerberos login).");
    } else {
      h += '<table id="kerberos"><thead><tr><th>Process</th><th>TaskManager</th><th>Host</th><th>Job</th><th>Principal</th><th>TGT expires</th><th>Renewable until</th><th class="num">Re-logins</th><th class="num">Failures</th></tr></thead><tbody>';
      for (const l of logins) {
        const b = l.labels;
        h += "<tr><td>" + esc(b.component) + '</td><td class="mono">' + esc(b.tm_id || "–") + "</td><td>" + esc(b.host || "–") + '</td><td class="mono">' + esc(b.job_id || "–") +
          "</td><td>" + esc(b.principal) + "</td><td>" + expiry(l.tgt_expiry_timestamp_seconds) + "</td><td>" + (l.tgt_renew_till_timestamp_seconds ? expiry(l.tgt_renew_till_timestamp_seconds) : "not renewable") +
          '</td><td class="num">' + fmtNum(l.relogins_total) + '</td><td class="num">' + fmtNum(l.relogin_failures_total) + "</td></tr>";
      }
      h += "</tbody></table>";
    }
    const held = sec.tmTokens.filter(x => !filter.tm || x.tm === filter.tm);
    if (held.length) {
      h += '<h3>Delegation tokens held by TaskManagers</h3><table id="tm-tokens"><thead><tr><th>TaskManager</th><th>Launched with tokens expiring</th></tr></thead><tbody>';
      for (const x of held) h += '<tr><td class="mono">' + esc(x.tm) + "</td><td>" + expiry(x.expiry) + "</td></tr>";
      h += "</tbody></table>";
    }
    if (filter.tm) return h;
    const t = sec.tokens;
    if (!t) {
      h += empty("HDFS delegation tokens: not reported by this cluster (its JobManager obtains none).");
    } else {
      h += '<h3>HDFS delegation tokens</h3><div class="kv"><div>Obtained by</div><div>' + esc(t.component) + "</div><div>Earliest expiry</div><div>" +
        (t.expiry_timestamp_seconds ? expiry(t.expiry_timestamp_seconds) : "not obtained yet") + "</div><div>Rounds obtained</div><div>" + fmtNum(t.obtains_total) +
        "</div><div>Rounds failed</div><div>" + fmtNum(t.obtain_failures_total) + "</div></div>";
    }
    return h;
  }

  // ---------------------------------------------------------------------
  // Job

  // The REST API reports accumulated counters, which the workers' reports
  // move in steps: a rate is taken over a window of the last samples (at
  // least RATE_SPAN ms, at most RATE_WINDOW ms), not between two polls.
  const RATE_SPAN = 2000, RATE_WINDOW = 10000;
  const samples = new Map();

  function rate(key, value, now) {
    let s = samples.get(key);
    if (!s || (s.length && (value < s[s.length - 1].v || now < s[s.length - 1].t))) s = []; // restarted
    if (!s.length || now > s[s.length - 1].t) s.push({ v: value, t: now });
    while (s.length > 2 && now - s[1].t >= RATE_WINDOW) s.shift();
    samples.set(key, s);
    const first = s[0], last = s[s.length - 1];
    if (last.t - first.t < RATE_SPAN) return null;
    return (last.v - first.v) / ((last.t - first.t) / 1000);
  }

  function vertexRates(jid, job) {
    const out = {};
    for (const v of job.vertices || []) {
      const m = v.metrics || {};
      const k = jid + "/" + v.id + "/";
      if (terminal(v.status) || terminal(job.state)) { // nothing moves any more
        out[v.id] = { in: null, out: null, busy: null, bp: null };
        continue;
      }
      const busy = rate(k + "busy", m["accumulated-busy-time"] || 0, job.now);
      const bp = rate(k + "bp", m["accumulated-backpressured-time"] || 0, job.now);
      out[v.id] = {
        in: rate(k + "in", m["read-records"] || 0, job.now),
        out: rate(k + "out", m["write-records"] || 0, job.now),
        busy: busy === null ? null : Math.min(100, busy / 10),
        bp: bp === null ? null : Math.min(100, bp / 10),
      };
    }
    return out;
  }

  function jobHeader(job) {
    const running = !terminal(job.state);
    return '<div class="jobhead"><h1 id="job-name">' + esc(job.name) + "</h1>" + badge(job.state) + '<span class="spacer"></span>' +
      (running ? '<button type="button" class="btn" id="btn-savepoint">Savepoint</button><button type="button" class="btn" id="btn-stop"' + (job.isStoppable ? "" : ' title="the job does not checkpoint"') + '>Stop</button><button type="button" class="btn danger" id="btn-cancel">Cancel job</button>' : "") +
      '</div><div class="jobmeta"><span class="mono">' + esc(job.jid) + "</span><span>" + esc(job["job-type"] || "") + "</span><span>Start: " + fmtTime(job["start-time"]) +
      "</span><span>End: " + fmtTime(job["end-time"]) + "</span><span>Duration: <span id=\"job-duration\">" + fmtDuration(job.duration) + "</span></span></div>";
  }

  // proxyHint explains a POST refused by YARN's web proxy, which forwards
  // GET requests only.
  function proxyHint(e) {
    if (e.status === 405 || e.status === 501) return e.message + " (the page is served through a proxy that forwards no POST, as YARN's web proxy does: use the JobManager's REST endpoint directly, or sluice savepoint / sluice stop)";
    return e.message;
  }

  async function pollOperation(jid, trigger, what) {
    for (let i = 0; i < 600; i++) {
      const st = await api("jobs/" + jid + "/savepoints/" + trigger);
      if (st.status && st.status.id === "COMPLETED") {
        const op = st.operation || {};
        if (op["failure-cause"]) toast(what + " failed: " + (op["failure-cause"]["stack-trace"] || op["failure-cause"].class), true);
        else toast(what + " completed: " + op.location);
        return;
      }
      await new Promise(r => setTimeout(r, 500));
    }
    toast(what + " is still in progress (trigger " + trigger + ")", true);
  }

  function wireButtons(job) {
    const jid = job.jid;
    const cancel = document.getElementById("btn-cancel");
    if (cancel) cancel.onclick = async () => {
      const ok = await confirmModal("Cancel job", "<p>Cancel <b>" + esc(job.name) + "</b>? Its tasks are stopped without a savepoint.</p>", "Cancel job");
      if (!ok) return;
      try {
        try {
          await api("jobs/" + jid + "?mode=cancel", { method: "PATCH" });
        } catch (e) {
          // YARN's web proxy forwards GET only (PATCH: 501): Flink's
          // GET path for cancelling through it.
          if (e.status !== 501 && e.status !== 405) throw e;
          await api("jobs/" + jid + "/yarn-cancel");
        }
        toast("Cancelling job " + jid);
      } catch (e) { toast("Cancelling failed: " + e.message, true); }
    };
    const sp = document.getElementById("btn-savepoint");
    if (sp) sp.onclick = async () => {
      const v = await confirmModal("Trigger a savepoint", '<label>Target directory (empty: the job\'s execution.checkpointing.savepoint-dir)<input type="text" name="dir" placeholder="file:///savepoints"></label>', "Trigger savepoint");
      if (!v) return;
      try {
        const r = await post("jobs/" + jid + "/savepoints", v.dir ? { "target-directory": v.dir } : {});
        toast("Savepoint triggered: " + r["request-id"]);
        await pollOperation(jid, r["request-id"], "Savepoint");
      } catch (e) { toast("Savepoint failed: " + proxyHint(e), true); }
    };
    const stop = document.getElementById("btn-stop");
    if (stop) stop.onclick = async () => {
      const v = await confirmModal("Stop with a savepoint", '<label>Target directory (empty: the job\'s execution.checkpointing.savepoint-dir)<input type="text" name="dir" placeholder="file:///savepoints"></label>' +
        '<label><input type="checkbox" name="drain"> Drain: end event time first (fire every window and timer)</label>', "Stop job");
      if (!v) return;
      try {
        const body = {};
        if (v.dir) body.targetDirectory = v.dir;
        if (v.drain) body.drain = true;
        const r = await post("jobs/" + jid + "/stop", body);
        toast("Stop triggered: " + r["request-id"]);
        await pollOperation(jid, r["request-id"], "Stop");
      } catch (e) { toast("Stop failed: " + proxyHint(e), true); }
    };
  }

  function pageJob(jid, tab) {
    setNav("");
    main.innerHTML = '<div id="head"></div><div class="tabs" id="tabs">' +
      ["overview", "exceptions", "checkpoints", "configuration", "kafka"].map(t => '<a href="#/job/' + jid + "/" + t + '" id="tab-' + t + '" data-tab="' + t + '"' + (t === tab ? ' class="active"' : "") + ">" + t[0].toUpperCase() + t.slice(1) + "</a>").join("") +
      '</div><div id="page-error"></div><div id="tab"></div>';
    let headState = null;
    const head = job => {
      const key = job.state + "|" + job.isStoppable;
      if (key === headState) {
        const d = document.getElementById("job-duration");
        if (d) d.textContent = fmtDuration(job.duration);
        return;
      }
      headState = key;
      document.getElementById("head").innerHTML = jobHeader(job);
      wireButtons(job);
    };
    if (tab === "overview") return tabJobOverview(jid, head);
    if (tab === "exceptions") return tabExceptions(jid, head);
    if (tab === "checkpoints") return tabCheckpoints(jid, head);
    if (tab === "kafka") return tabKafka(jid, head);
    return tabConfiguration(jid, head);
  }

  // The gauges a Kafka source publishes per partition and an exactly-once
  // Kafka sink per transaction, as GET .../vertices/:vid/metrics names
  // them ("<subtask>.<name>").
  const KAFKA_PARTITION = /^(\d+)\.KafkaSourceReader\.topic\.(.+)\.partition\.(\d+)\.(currentOffset|committedOffset|endOffset|lag)$/;
  const KAFKA_TXN = /^(\d+)\.KafkaSink\.transaction\.(.+)\.(openSince|precommitted)$/;

  // The job's Kafka connectors: each source partition's position, end
  // and lag, and each exactly-once sink's transactions with their age.
  function tabKafka(jid, head) {
    every(async () => {
      const job = await api("jobs/" + jid);
      const per = await Promise.all((job.vertices || []).map(async v => {
        const path = "jobs/" + jid + "/vertices/" + v.id + "/metrics";
        const names = (await api(path)).map(m => m.id).filter(id => KAFKA_PARTITION.test(id) || KAFKA_TXN.test(id));
        return { v: v, vals: names.length ? await api(path + "?get=" + encodeURIComponent(names.join(","))) : [] };
      }));
      clearError();
      head(job);
      const parts = new Map(), txns = new Map();
      for (const { v, vals } of per) {
        for (const m of vals) {
          let x = m.id.match(KAFKA_PARTITION);
          if (x) {
            const key = v.id + "|" + x[1] + "|" + x[2] + "|" + x[3];
            if (!parts.has(key)) parts.set(key, { vertex: v.name, subtask: Number(x[1]), topic: x[2], partition: Number(x[3]) });
            parts.get(key)[x[4]] = Number(m.value);
            continue;
          }
          x = m.id.match(KAFKA_TXN);
          if (x) {
            const key = v.id + "|" + x[1] + "|" + x[2];
            if (!txns.has(key)) txns.set(key, { vertex: v.name, subtask: Number(x[1]), id: x[2] });
            txns.get(key)[x[3]] = Number(m.value);
          }
        }
      }
      const ps = Array.from(parts.values()).sort((a, b) => a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition);
      let h = '<h2>Consumer lag per partition</h2><div class="panel">';
      if (!ps.length) h += empty("No Kafka source of this job reads a partition now (a finished partition is no longer listed).");
      else {
        const total = ps.reduce((s, p) => s + (p.lag || 0), 0);
        h += '<table id="kafka-partitions"><thead><tr><th>Source</th><th class="num">Subtask</th><th>Topic</th><th class="num">Partition</th><th class="num">Position</th><th class="num">End offset</th><th class="num">Lag (records)</th><th class="num">Committed offset</th></tr></thead><tbody>';
        for (const p of ps) {
          h += "<tr><td>" + esc(p.vertex) + '</td><td class="num">' + esc(p.subtask) + '</td><td class="mono">' + esc(p.topic) + '</td><td class="num">' + esc(p.partition) +
            '</td><td class="num">' + esc(p.currentOffset ?? "–") + '</td><td class="num">' + esc(p.endOffset ?? "–") + '</td><td class="num' + (p.lag > 0 ? " lagging" : "") + '">' + esc(p.lag ?? "–") +
            '</td><td class="num">' + esc(p.committedOffset ?? "–") + "</td></tr>";
        }
        h += '</tbody><tfoot><tr><td colspan="6">Total lag</td><td class="num" id="kafka-total-lag">' + esc(total) + "</td><td></td></tr></tfoot></table>";
      }
      h += '</div><h2>Exactly-once sink transactions</h2><div class="panel">';
      const ts = Array.from(txns.values()).sort((a, b) => (a.openSince || 0) - (b.openSince || 0));
      if (!ts.length) h += empty("No transaction of an exactly-once Kafka sink is open or awaiting its commit.");
      else {
        h += '<table id="kafka-transactions"><thead><tr><th>Sink</th><th class="num">Subtask</th><th>Transactional ID</th><th>State</th><th>Began</th><th class="num">Age</th></tr></thead><tbody>';
        for (const t of ts) {
          h += "<tr><td>" + esc(t.vertex) + '</td><td class="num">' + esc(t.subtask) + '</td><td class="mono">' + esc(t.id) + "</td><td>" +
            (t.precommitted ? "pre-committed, awaiting its checkpoint" : "open, taking records") + "</td><td>" + fmtTime(t.openSince) + '</td><td class="num">' + fmtDuration(job.now - t.openSince) + "</td></tr>";
        }
        h += "</tbody></table>";
      }
      document.getElementById("tab").innerHTML = h + '</div><p class="muted">Lag: the records between a partition\'s position and its end (its high watermark, or its last stable offset under read_committed) as the reader last fetched it or asked the brokers for it (every 5 s). ' +
        "A transaction is open while its records go in and pre-committed from the checkpoint's barrier until the checkpoint completes and the transaction is committed.</p>";
    });
  }

  function tabJobOverview(jid, head) {
    const tabEl = document.getElementById("tab");
    tabEl.innerHTML = '<div class="graph" id="graph"></div><h2>Vertices</h2><div class="panel" id="vertices"></div>';
    let plan = null;
    every(async () => {
      const job = await api("jobs/" + jid);
      if (!plan) plan = (await api("jobs/" + jid + "/plan")).plan;
      const wms = {};
      await Promise.all((job.vertices || []).map(async v => {
        const w = await api("jobs/" + jid + "/vertices/" + v.id + "/watermarks");
        wms[v.id] = w.length ? Math.min(...w.map(x => Number(x.value))) : null;
      }));
      clearError();
      head(job);
      const rates = vertexRates(jid, job);
      document.getElementById("graph").innerHTML = dagSVG(jid, plan, job, rates, wms);
      document.querySelectorAll("#graph .node").forEach(g => { g.onclick = () => { location.hash = "#/job/" + jid + "/vertex/" + g.dataset.vertex; }; });
      let h = '<table id="vertex-table"><thead><tr><th>Name</th><th>Status</th><th class="num">Parallelism</th><th class="num">Records in</th><th class="num">Records out</th><th class="num">In/s</th><th class="num">Out/s</th><th class="num">Bytes in</th><th class="num">Bytes out</th><th>Busy (max)</th><th>Backpressured (max)</th><th>Watermark (min)</th><th class="num">Duration</th></tr></thead><tbody>';
      for (const v of job.vertices || []) {
        const m = v.metrics || {}, r = rates[v.id] || {};
        h += '<tr class="link" data-href="#/job/' + jid + "/vertex/" + esc(v.id) + '"><td><a href="#/job/' + jid + "/vertex/" + esc(v.id) + '">' + esc(v.name) + "</a></td><td>" + badge(v.status) +
          '</td><td class="num">' + esc(v.parallelism) + '</td><td class="num">' + fmtNum(m["read-records"]) + '</td><td class="num">' + fmtNum(m["write-records"]) +
          '</td><td class="num">' + fmtRate(r.in) + '</td><td class="num">' + fmtRate(r.out) + '</td><td class="num">' + fmtBytes(m["read-bytes"]) + '</td><td class="num">' + fmtBytes(m["write-bytes"]) +
          "</td><td>" + pctBar(r.busy, "#cf222e") + "</td><td>" + pctBar(r.bp, "#444c56") + "</td><td>" + fmtWatermark(wms[v.id]) + '</td><td class="num">' + fmtDuration(v.duration) + "</td></tr>";
      }
      const vt = document.getElementById("vertices");
      vt.innerHTML = h + "</tbody></table>";
      linkRows(vt);
    });
  }

  function pctBar(p, color) {
    if (p === null || p === undefined) return '<span class="muted">–</span>';
    return '<div style="display:flex;align-items:center;gap:6px"><div class="bar" style="flex:1"><span style="width:' + Math.max(0, Math.min(100, p)) + "%;background:" + color + '"></span></div><span class="mono nowrap">' + fmtPct(p) + "</span></div>";
  }

  // dagSVG lays the plan out as a DAG, left to right: a vertex's column is
  // the length of the longest path from a source to it; within a column
  // vertices are ordered by the mean row of their inputs.
  function dagSVG(jid, plan, job, rates, wms) {
    const nodes = plan.nodes || [];
    const byId = new Map(nodes.map(n => [n.id, n]));
    const vertices = new Map((job.vertices || []).map(v => [v.id, v]));
    const layer = new Map();
    const depth = (n, seen) => {
      if (layer.has(n.id)) return layer.get(n.id);
      if (seen.has(n.id)) return 0; // a cycle: not in a job graph
      seen.add(n.id);
      let d = 0;
      for (const i of n.inputs || []) {
        const up = byId.get(i.id);
        if (up) d = Math.max(d, depth(up, seen) + 1);
      }
      layer.set(n.id, d);
      return d;
    };
    nodes.forEach(n => depth(n, new Set()));
    const cols = [];
    nodes.forEach(n => { const d = layer.get(n.id); (cols[d] = cols[d] || []).push(n); });
    const row = new Map();
    cols.forEach((col, c) => {
      if (c > 0) {
        const key = n => { const ins = (n.inputs || []).map(i => row.get(i.id)).filter(x => x !== undefined); return ins.length ? ins.reduce((a, b) => a + b, 0) / ins.length : 0; };
        col.sort((a, b) => key(a) - key(b));
      }
      col.forEach((n, r) => row.set(n.id, r));
    });
    const W = 250, H = 104, GX = 110, GY = 28, M = 16;
    const rowsMax = Math.max(1, ...cols.map(c => c.length));
    const height = M * 2 + rowsMax * H + (rowsMax - 1) * GY;
    const width = M * 2 + cols.length * W + Math.max(0, cols.length - 1) * GX;
    const pos = new Map();
    cols.forEach((col, c) => {
      const colH = col.length * H + (col.length - 1) * GY;
      const top = M + (height - 2 * M - colH) / 2;
      col.forEach((n, r) => pos.set(n.id, { x: M + c * (W + GX), y: top + r * (H + GY) }));
    });
    let s = '<svg id="job-graph" xmlns="http://www.w3.org/2000/svg" width="' + width + '" height="' + height + '" viewBox="0 0 ' + width + " " + height + '">' +
      '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#8c959f"/></marker></defs>';
    for (const n of nodes) {
      const to = pos.get(n.id);
      (n.inputs || []).forEach((i, k) => {
        const from = pos.get(i.id);
        if (!from) return;
        const x1 = from.x + W, y1 = from.y + H / 2, x2 = to.x, y2 = to.y + H / 2 + (k - ((n.inputs.length - 1) / 2)) * 12;
        const mx = (x1 + x2) / 2;
        s += '<path class="edge" marker-end="url(#arrow)" d="M ' + x1 + " " + y1 + " C " + mx + " " + y1 + ", " + mx + " " + y2 + ", " + x2 + " " + y2 + '"/>' +
          '<text class="edge-label" x="' + mx + '" y="' + ((y1 + y2) / 2 - 4) + '" text-anchor="middle">' + esc(i.ship_strategy || "") + "</text>";
      });
    }
    for (const n of nodes) {
      const p = pos.get(n.id), v = vertices.get(n.id) || {}, r = rates[n.id] || {};
      const busy = r.busy || 0, bp = r.bp || 0;
      // Flink's colouring: busy in red, back-pressured in grey, idle in blue.
      const fill = bp > busy ? "hsl(215, 10%, " + (96 - bp * 0.45) + "%)" : busy > 0 ? "hsl(0, " + (40 + busy * 0.5) + "%, " + (96 - busy * 0.35) + "%)" : "#eef4ff";
      const name = n.description || v.name || n.id;
      const short = name.length > 38 ? name.slice(0, 36) + "…" : name;
      s += '<g class="node" data-vertex="' + esc(n.id) + '" transform="translate(' + p.x + "," + p.y + ')"><title>' + esc(name) + "</title>" +
        '<rect width="' + W + '" height="' + H + '" fill="' + fill + '"/>' +
        '<text class="title" x="10" y="18">' + esc(short) + "</text>" +
        '<text x="10" y="36">Parallelism ' + esc(n.parallelism) + " · " + esc(v.status || "") + "</text>" +
        '<text x="10" y="53">In ' + esc(fmtRate(r.in)) + " · Out " + esc(fmtRate(r.out)) + "</text>" +
        '<text x="10" y="70">Busy ' + esc(fmtPct(r.busy)) + " · Backpressured " + esc(fmtPct(r.bp)) + "</text>" +
        '<text x="10" y="87">Watermark ' + esc(fmtWatermark(wms[n.id])) + "</text></g>";
    }
    return s + "</svg>";
  }

  function tabExceptions(jid, head) {
    every(async () => {
      const [job, ex] = await Promise.all([api("jobs/" + jid), api("jobs/" + jid + "/exceptions?maxExceptions=20")]);
      clearError();
      head(job);
      const entries = (ex.exceptionHistory && ex.exceptionHistory.entries) || [];
      let h = "";
      if (!entries.length) h = '<div class="panel">' + empty("No exceptions: the job has not failed.") + "</div>";
      for (const e of entries) {
        h += '<div class="panel exception"><div class="jobmeta"><span>' + fmtTime(e.timestamp) + "</span><b>" + esc(e.exceptionName) + "</b><span>" + esc(e.taskName || "global failure") +
          "</span><span>" + esc(e.endpoint || "") + '</span><span class="mono">' + esc(e.taskManagerId || "") + "</span></div><pre>" + esc(e.stacktrace) + "</pre>";
        for (const c of e.concurrentExceptions || []) {
          h += '<div class="jobmeta"><span>concurrent: ' + esc(c.exceptionName) + "</span><span>" + esc(c.taskName || "") + "</span></div><pre>" + esc(c.stacktrace) + "</pre>";
        }
        h += "</div>";
      }
      if (ex.exceptionHistory && ex.exceptionHistory.truncated) h += '<p class="muted">Older exceptions are not shown.</p>';
      document.getElementById("tab").innerHTML = h;
    });
  }

  function tabCheckpoints(jid, head) {
    every(async () => {
      const job = await api("jobs/" + jid);
      head(job);
      let cp;
      try {
        cp = await api("jobs/" + jid + "/checkpoints");
      } catch (e) {
        if (e.status === 404) {
          clearError();
          document.getElementById("tab").innerHTML = '<div class="panel">' + empty(e.message) + "</div>";
          return;
        }
        throw e;
      }
      clearError();
      const c = cp.counts || {}, s = cp.summary || {};
      const card = (l, v) => '<div class="card"><div class="label">' + esc(l) + '</div><div class="value">' + esc(v) + "</div></div>";
      let h = '<div class="cards" id="cp-counts">' + card("Triggered", c.total) + card("In progress", c.in_progress) + card("Completed", c.completed) + card("Failed", c.failed) + card("Restored", c.restored) + "</div>";
      const hist = (cp.history || []).slice().reverse(); // oldest first
      const done = hist.filter(x => x.status === "COMPLETED");
      h += '<div class="plots">' +
        plot("Duration of completed checkpoints", [{ name: "end-to-end", points: done.map(x => [x.id, x.end_to_end_duration]) }], fmtDuration, "id") +
        plot("Size of completed checkpoints", [{ name: "checkpointed", points: done.map(x => [x.id, x.checkpointed_size]) }, { name: "full state", points: done.map(x => [x.id, x.state_size]) }], fmtBytes, "id") +
        "</div>";
      const row = (name, st, f) => "<tr><td>" + name + '</td><td class="num">' + f(st.min) + '</td><td class="num">' + f(st.avg) + '</td><td class="num">' + f(st.p50) + '</td><td class="num">' + f(st.p99) + '</td><td class="num">' + f(st.max) + "</td></tr>";
      h += '<h2>Summary of completed checkpoints</h2><div class="panel"><table><thead><tr><th></th><th class="num">Min</th><th class="num">Average</th><th class="num">Median</th><th class="num">p99</th><th class="num">Max</th></tr></thead><tbody>' +
        row("End-to-end duration", s.end_to_end_duration || {}, fmtDuration) + row("Checkpointed size", s.checkpointed_size || {}, fmtBytes) + row("Full state size", s.state_size || {}, fmtBytes) +
        row("Buffered during alignment", s.alignment_buffered || {}, fmtBytes) + row("Processed in-flight data", s.processed_data || {}, fmtBytes) + row("Persisted in-flight data", s.persisted_data || {}, fmtBytes) + "</tbody></table></div>";
      const l = cp.latest || {};
      h += '<h2>Latest</h2><div class="panel kv">' +
        "<div>Completed checkpoint</div><div>" + (l.completed ? "#" + esc(l.completed.id) + " at " + fmtTime(l.completed.latest_ack_timestamp) + ' <span class="mono">' + esc(l.completed.external_path || "") + "</span>" : "none") + "</div>" +
        "<div>Savepoint</div><div>" + (l.savepoint ? "#" + esc(l.savepoint.id) + " at " + fmtTime(l.savepoint.latest_ack_timestamp) + ' <span class="mono">' + esc(l.savepoint.external_path || "") + "</span>" : "none") + "</div>" +
        "<div>Failed</div><div>" + (l.failed ? "#" + esc(l.failed.id) + " at " + fmtTime(l.failed.failure_timestamp) + ": " + esc(l.failed.failure_message) : "none") + "</div>" +
        "<div>Restored</div><div>" + (l.restored ? "#" + esc(l.restored.id) + " at " + fmtTime(l.restored.restore_timestamp) + ' <span class="mono">' + esc(l.restored.external_path || "") + "</span>" : "none") + "</div></div>";
      h += '<h2>History</h2><div class="panel"><table id="cp-history"><thead><tr><th class="num">ID</th><th>Status</th><th>Type</th><th>Triggered</th><th>Acknowledged</th><th class="num">Subtasks</th><th class="num">Duration</th><th class="num">Checkpointed size</th><th class="num">Full size</th><th class="num">Alignment buffered</th><th class="num">Processed</th><th class="num">Persisted</th><th>Path or failure</th></tr></thead><tbody>';
      for (const x of cp.history || []) {
        h += '<tr><td class="num">' + esc(x.id) + "</td><td>" + badge(x.status) + "</td><td>" + esc(x.checkpoint_type) + '</td><td class="nowrap" title="' + fmtTime(x.trigger_timestamp) + '">' + fmtClock(x.trigger_timestamp) + '</td><td class="nowrap" title="' + fmtTime(x.latest_ack_timestamp) + '">' + fmtClock(x.latest_ack_timestamp) +
          '</td><td class="num">' + (x.num_subtasks ? esc(x.num_acknowledged_subtasks) + "/" + esc(x.num_subtasks) : "–") + '</td><td class="num">' + (x.status === "COMPLETED" ? fmtDuration(x.end_to_end_duration) : "–") +
          '</td><td class="num">' + fmtBytes(x.checkpointed_size) + '</td><td class="num">' + fmtBytes(x.state_size) + '</td><td class="num">' + fmtBytes(x.alignment_buffered) +
          '</td><td class="num">' + fmtBytes(x.processed_data) + '</td><td class="num">' + fmtBytes(x.persisted_data) + '</td>' + (x.failure_message ? '<td class="path error">' + esc(x.failure_message) : '<td class="mono" title="' + esc(x.external_path || "") + '">' + esc(shortPath(x.external_path))) + "</td></tr>";
      }
      if (!(cp.history || []).length) h += '<tr><td colspan="13">' + empty("No checkpoint yet.") + "</td></tr>";
      document.getElementById("tab").innerHTML = h + "</tbody></table></div>";
    });
  }

  function tabConfiguration(jid, head) {
    every(async () => {
      const [job, cfg, entries] = await Promise.all([api("jobs/" + jid), api("jobs/" + jid + "/config"), api("jobs/" + jid + "/jobmanager/config")]);
      clearError();
      head(job);
      const ec = cfg["execution-config"];
      let h = '<h2>Execution configuration</h2><div class="panel">';
      h += ec ? '<div class="kv" id="exec-config"><div>Restart strategy</div><div>' + esc(ec["restart-strategy"]) + "</div><div>Parallelism</div><div>" + esc(ec["job-parallelism"]) +
        "</div><div>Object reuse</div><div>" + esc(ec["object-reuse-mode"]) + "</div></div>" : empty("Not reported.");
      h += '</div><h2>Job configuration</h2><div class="panel">' + configTable(entries, "job-config") + "</div>";
      document.getElementById("tab").innerHTML = h;
    });
  }

  function configTable(entries, id) {
    if (!entries || !entries.length) return empty("No configuration is set.");
    return '<table id="' + id + '"><thead><tr><th>Key</th><th>Value</th></tr></thead><tbody>' +
      entries.map(e => '<tr><td class="mono">' + esc(e.key) + '</td><td class="mono">' + esc(e.value) + "</td></tr>").join("") + "</tbody></table>";
  }

  // ---------------------------------------------------------------------
  // Vertex: its subtasks and their metrics over time

  const PALETTE = ["#1f6feb", "#cf222e", "#1a7f37", "#bf8700", "#8250df", "#0a7e8c", "#e16f24", "#57606a"];

  // plot draws series of [x, y] points as lines in a small SVG.
  function plot(title, series, fmt, xkind, emptyMsg) {
    const W = 360, H = 120, L = 64, R = 8, T = 8, B = 18;
    const pts = series.flatMap(s => s.points).filter(p => p[1] !== null && !isNaN(p[1]));
    let h = '<div class="plot"><div class="ptitle">' + esc(title) + "</div>";
    if (pts.length < 1) return h + '<svg class="plot-svg" width="' + W + '" height="' + H + '"><text x="' + W / 2 + '" y="' + H / 2 + '" text-anchor="middle">' + esc(emptyMsg || "waiting for data") + '</text></svg></div>';
    const xs = pts.map(p => p[0]), ys = pts.map(p => p[1]);
    let x0 = Math.min(...xs), x1 = Math.max(...xs), y0 = Math.min(0, ...ys), y1 = Math.max(...ys);
    if (x1 === x0) x1 = x0 + 1;
    if (y1 === y0) y1 = y0 + 1;
    const sx = x => L + (x - x0) / (x1 - x0) * (W - L - R), sy = y => T + (1 - (y - y0) / (y1 - y0)) * (H - T - B);
    h += '<svg class="plot-svg" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + " " + H + '">' +
      '<line x1="' + L + '" y1="' + (H - B) + '" x2="' + (W - R) + '" y2="' + (H - B) + '" stroke="#dde1e8"/><line x1="' + L + '" y1="' + T + '" x2="' + L + '" y2="' + (H - B) + '" stroke="#dde1e8"/>' +
      '<text x="' + (L - 4) + '" y="' + (T + 8) + '" text-anchor="end">' + esc(fmt(y1)) + '</text><text x="' + (L - 4) + '" y="' + (H - B) + '" text-anchor="end">' + esc(fmt(y0)) + "</text>" +
      '<text x="' + L + '" y="' + (H - 4) + '">' + esc(xkind === "id" ? "#" + x0 : fmtTime(x0).slice(11)) + '</text><text x="' + (W - R) + '" y="' + (H - 4) + '" text-anchor="end">' + esc(xkind === "id" ? "#" + x1 : fmtTime(x1).slice(11)) + "</text>";
    series.forEach((s, i) => {
      const p = s.points.filter(q => q[1] !== null && !isNaN(q[1]));
      if (!p.length) return;
      const c = PALETTE[i % PALETTE.length];
      if (p.length === 1) h += '<circle cx="' + sx(p[0][0]) + '" cy="' + sy(p[0][1]) + '" r="2.5" fill="' + c + '"/>';
      else h += '<polyline fill="none" stroke="' + c + '" stroke-width="1.5" points="' + p.map(q => sx(q[0]).toFixed(1) + "," + sy(q[1]).toFixed(1)).join(" ") + '"/>';
    });
    h += "</svg>";
    if (series.length > 1) h += '<div class="legend">' + series.map((s, i) => '<span><i style="background:' + PALETTE[i % PALETTE.length] + '"></i>' + esc(s.name) + "</span>").join("") + "</div>";
    return h + "</div>";
  }

  const vertexHistory = new Map();

  function pageVertex(jid, vid) {
    setNav("");
    main.innerHTML = '<div id="head"></div>' + vertexTabs(jid, vid, "overview") + '<div id="page-error"></div><h1 id="vertex-name"></h1><div id="vertex-summary" class="muted"></div>' +
      '<h2>Metrics over time</h2><div class="plots" id="plots"></div><h2>Subtasks</h2><div class="panel" id="subtasks"></div>';
    const key = jid + "/" + vid;
    if (!vertexHistory.has(key)) vertexHistory.set(key, { series: new Map() });
    const hist = vertexHistory.get(key);
    let headState = null;
    every(async () => {
      const [job, v, wm, bp] = await Promise.all([api("jobs/" + jid), api("jobs/" + jid + "/vertices/" + vid), api("jobs/" + jid + "/vertices/" + vid + "/watermarks"),
        api("jobs/" + jid + "/vertices/" + vid + "/backpressure")]);
      const bpBy = new Map((bp.subtasks || []).map(x => [x.subtask, x]));
      clearError();
      if (headState !== job.state) {
        headState = job.state;
        document.getElementById("head").innerHTML = jobHeader(job);
        wireButtons(job);
      } else {
        document.getElementById("job-duration").textContent = fmtDuration(job.duration);
      }
      document.getElementById("vertex-name").textContent = v.name;
      document.getElementById("vertex-summary").textContent = "Parallelism " + v.parallelism + " · max parallelism " + v.maxParallelism + " · " + v.subtasks.length + " subtasks reported";
      const wmBy = new Map(wm.map(x => [Number(x.id.split(".")[0]), x.value]));
      for (const st of v.subtasks) {
        const m = st.metrics || {};
        if (!hist.series.has(st.subtask)) hist.series.set(st.subtask, { in: [], out: [], busy: [], bp: [], wm: [] });
        const s = hist.series.get(st.subtask);
        const w = Number(wmBy.get(st.subtask));
        if (!isNaN(w) && w > MIN_WATERMARK && w < 9.2e18) s.wm.push([v.now, w]);
        const k = key + "/" + st.subtask + "/";
        const rin = rate(k + "in", m["read-records"] || 0, v.now), rout = rate(k + "out", m["write-records"] || 0, v.now);
        const rbusy = rate(k + "busy", m["accumulated-busy-time"] || 0, v.now), rbp = rate(k + "bp", m["accumulated-backpressured-time"] || 0, v.now);
        if (rin !== null) s.in.push([v.now, rin]);
        if (rout !== null) s.out.push([v.now, rout]);
        if (rbusy !== null) s.busy.push([v.now, Math.min(1000, rbusy)]);
        if (rbp !== null) s.bp.push([v.now, Math.min(1000, rbp)]);
        for (const x of Object.keys(s)) if (s[x].length > HISTORY) s[x].splice(0, s[x].length - HISTORY);
      }
      const subs = Array.from(hist.series.keys()).sort((a, b) => a - b);
      const ser = k => subs.map(i => ({ name: "subtask " + i, points: hist.series.get(i)[k] }));
      const msps = x => Math.round(x) + " ms/s";
      document.getElementById("plots").innerHTML =
        plot("Records in per second", ser("in"), fmtNum) + plot("Records out per second", ser("out"), fmtNum) +
        plot("Busy time (ms per second)", ser("busy"), msps) + plot("Backpressured time (ms per second)", ser("bp"), msps) +
        plot("Input watermark", ser("wm"), x => fmtTime(x).slice(11), "", "no watermark reported");
      let h = '<table id="subtask-table"><thead><tr><th class="num">Subtask</th><th>Status</th><th class="num">Attempt</th><th>TaskManager</th><th class="num">Records in</th><th class="num">Records out</th><th class="num">Bytes in</th><th class="num">Bytes out</th><th class="num">Busy</th><th class="num">Backpressured</th><th class="num">Idle</th><th>Back pressure now</th><th>Watermark</th><th>Start</th><th class="num">Duration</th></tr></thead><tbody>';
      for (const st of v.subtasks) {
        const m = st.metrics || {};
        h += '<tr><td class="num">' + esc(st.subtask) + "</td><td>" + badge(st.status) + '</td><td class="num">' + esc(st.attempt) + '</td><td class="mono">' +
          (st["taskmanager-id"] ? '<a href="#/taskmanager/' + encodeURIComponent(st["taskmanager-id"]) + '">' + esc(st["taskmanager-id"]) + "</a>" : esc(st.endpoint || "–")) +
          '</td><td class="num">' + fmtNum(m["read-records"]) + '</td><td class="num">' + fmtNum(m["write-records"]) + '</td><td class="num">' + fmtBytes(m["read-bytes"]) + '</td><td class="num">' + fmtBytes(m["write-bytes"]) +
          '</td><td class="num">' + fmtDuration(m["accumulated-busy-time"]) + '</td><td class="num">' + fmtDuration(m["accumulated-backpressured-time"]) + '</td><td class="num">' + fmtDuration(m["accumulated-idle-time"]) +
          '</td><td class="bp-level">' + bpLevel(bpBy.get(st.subtask)) + "</td><td>" + fmtWatermark(wmBy.get(st.subtask)) + "</td><td>" + fmtTime(st["start-time"]) + '</td><td class="num">' + fmtDuration(st.duration) + "</td></tr>";
      }
      if (!v.subtasks.length) h += '<tr><td colspan="15">' + empty("No subtask has reported yet.") + "</td></tr>";
      document.getElementById("subtasks").innerHTML = h + "</tbody></table>";
    });
  }

  // bpLevel is a subtask's back-pressure level as the REST API grades it
  // (Flink's: the share of the last seconds it waited for output buffers,
  // ok up to 10 %, low up to 50 %, high above).
  function bpLevel(x) {
    if (!x) return '<span class="muted">–</span>';
    const cls = { ok: "bp-ok", low: "bp-low", high: "bp-high" }[x.backpressureLevel] || "";
    return '<span class="' + cls + '">' + esc(x.backpressureLevel) + "</span> " + '<span class="muted">' + fmtPct(100 * x.ratio) + "</span>";
  }

  function vertexTabs(jid, vid, tab) {
    const base = "#/job/" + jid + "/vertex/" + vid;
    const a = (href, id, label, name) => '<a id="' + id + '" href="' + href + '"' + (tab === name ? ' class="active"' : "") + ">" + label + "</a>";
    return '<div class="tabs"><a href="#/job/' + jid + '/overview">← Job</a>' + a(base, "tab-vertex", "Subtasks and metrics", "overview") +
      a(base + "/flamegraph", "tab-flamegraph", "Flame graph", "flamegraph") + "</div>";
  }

  // The flame graph of a vertex (GET .../flamegraph, Flink's shape): the
  // JobManager samples the vertex's goroutines in the workers when asked
  // and answers from its cache (endTimestamp -3 while it samples, -2 when
  // rest.flamegraph.enabled is off, -1 once the vertex has ended). Drawn
  // as nested horizontal bars, root on top, each frame as wide as its
  // share of the samples; a click zooms into a frame.
  const flameState = { type: "ON_CPU", subtask: "", zoom: [] };
  const FLAME_TYPES = [["ON_CPU", "On-CPU"], ["OFF_CPU", "Off-CPU"], ["FULL", "Mixed"]];

  function pageVertexFlameGraph(jid, vid) {
    setNav("");
    main.innerHTML = '<div id="head"></div>' + vertexTabs(jid, vid, "flamegraph") + '<div id="page-error"></div><h1 id="vertex-name"></h1>' +
      '<div class="fg-controls"><span class="fg-types">' +
      FLAME_TYPES.map(([t, label]) => '<label><input type="radio" name="fg-type" id="fg-type-' + t + '" value="' + t + '"' + (flameState.type === t ? " checked" : "") + "> " + label + "</label>").join("") +
      '</span><label>Subtask <select id="fg-subtask"><option value="">all</option></select></label>' +
      '<button class="btn" id="fg-reset" hidden>Reset zoom</button><span id="fg-status" class="muted"></span></div>' +
      '<div class="panel" id="flamegraph"></div><p class="muted">On-CPU: a CPU profile of the subtasks\' goroutines; off-CPU: their goroutines that were parked ' +
      "(waiting on a channel, lock, timer or I/O) when sampled; mixed: every goroutine sample. Frames are <span class=\"mono\">function (file:line)</span>, callers above callees.</p>";
    let headState = null, parallelism = -1, shown = "", data = null, seq = 0;
    const query = () => "?type=" + flameState.type + (flameState.subtask !== "" ? "&subtaskindex=" + flameState.subtask : "");
    const draw = () => {
      const el = document.getElementById("flamegraph");
      document.getElementById("fg-reset").hidden = !flameState.zoom.length;
      if (!data) return;
      if (!data.value) { el.innerHTML = empty("No samples of this vertex's goroutines of this kind: it spent no time there while sampled."); return; }
      el.innerHTML = flameSVG(data, flameState.zoom);
      el.querySelectorAll("g.frame").forEach(g => { g.onclick = () => { flameState.zoom = JSON.parse(g.dataset.path); draw(); }; });
    };
    const load = async () => {
      const mine = ++seq, q = query();
      const fg = await api("jobs/" + jid + "/vertices/" + vid + "/flamegraph" + q);
      if (mine !== seq || q !== query()) return; // the choice changed meanwhile
      const status = document.getElementById("fg-status"), el = document.getElementById("flamegraph");
      if (fg.endTimestamp === -2) { status.textContent = ""; el.innerHTML = empty("Flame graphs are disabled: set rest.flamegraph.enabled: true in the JobManager's configuration."); data = null; shown = ""; return; }
      if (fg.endTimestamp === -1) { status.textContent = ""; el.innerHTML = empty("The vertex (or subtask) has ended: there is nothing to sample."); data = null; shown = ""; return; }
      if (fg.endTimestamp === -3 || !fg.data) {
        status.textContent = "Sampling…";
        if (!data) el.innerHTML = empty("Sampling the vertex's goroutines in the workers; the flame graph appears when it is done.");
        return;
      }
      status.textContent = fmtNum(fg.data.value) + " samples, taken " + fmtClock(fg.endTimestamp);
      if (shown !== q + "@" + fg.endTimestamp) { shown = q + "@" + fg.endTimestamp; data = fg.data; draw(); }
    };
    const changed = () => { flameState.zoom = []; data = null; shown = ""; document.getElementById("flamegraph").innerHTML = empty("Loading…"); load().catch(showError); };
    document.querySelectorAll('input[name="fg-type"]').forEach(i => { i.onchange = () => { flameState.type = i.value; changed(); }; });
    document.getElementById("fg-subtask").onchange = e => { flameState.subtask = e.target.value; changed(); };
    document.getElementById("fg-reset").onclick = () => { flameState.zoom = []; draw(); };
    every(async () => {
      const [job, v] = await Promise.all([api("jobs/" + jid), api("jobs/" + jid + "/vertices/" + vid)]);
      clearError();
      if (headState !== job.state) {
        headState = job.state;
        document.getElementById("head").innerHTML = jobHeader(job);
        wireButtons(job);
      } else {
        document.getElementById("job-duration").textContent = fmtDuration(job.duration);
      }
      document.getElementById("vertex-name").textContent = v.name;
      if (parallelism !== v.parallelism) {
        parallelism = v.parallelism;
        if (flameState.subtask !== "" && Number(flameState.subtask) >= parallelism) flameState.subtask = "";
        const sel = document.getElementById("fg-subtask");
        let o = '<option value="">all</option>';
        for (let i = 0; i < parallelism; i++) o += '<option value="' + i + '"' + (String(i) === flameState.subtask ? " selected" : "") + ">" + i + "</option>";
        sel.innerHTML = o;
      }
      await load();
    });
  }

  // flameColor colours a frame by where its code lives: the Go runtime and
  // standard library blue-grey, Sluice's engine orange, everything else
  // (the job's own code and its libraries) red to yellow.
  function flameColor(name) {
    let h = 0;
    for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    const f = (h % 1000) / 1000;
    const fn = name.split(" (")[0];
    const pkg = fn.replace(/\.[^./]*(\.[^./]*)*$/, "");
    if (name === "root") return "#c9d1dc";
    if (!fn.includes(".") || !pkg.includes(".") && !pkg.startsWith("main")) return "hsl(" + (205 + 20 * f) + ",30%," + (72 + 8 * f) + "%)";
    if (fn.startsWith("github.com/sluice/sluice/")) return "hsl(" + (28 + 12 * f) + ",85%," + (62 + 8 * f) + "%)";
    return "hsl(" + (4 + 48 * f) + ",88%," + (58 + 10 * f) + "%)";
  }

  function flameSVG(root, zoom) {
    const W = 1200, H = 18;
    // The frames zoomed into, from the root, drawn across the width.
    const trail = [root];
    for (const name of zoom) {
      const c = (trail[trail.length - 1].children || []).find(x => x.name === name);
      if (!c) break;
      trail.push(c);
    }
    const top = trail[trail.length - 1], total = top.value || 1, all = root.value || 1;
    let s = "", depth = 0;
    const frame = (n, x, w, d, path, dim) => {
      const pct = (100 * n.value / all).toFixed(n.value * 1000 < all ? 2 : 1);
      s += '<g class="frame' + (dim ? " dim" : "") + '" data-path="' + esc(JSON.stringify(path)) + '"><title>' + esc(n.name + " — " + n.value + " samples (" + pct + " %)") + "</title>" +
        '<svg x="' + x.toFixed(2) + '" y="' + d * H + '" width="' + w.toFixed(2) + '" height="' + (H - 1) + '"><rect width="100%" height="100%" fill="' + flameColor(n.name) + '"></rect>' +
        (w > 28 ? '<text x="3" y="12.5">' + esc(n.name) + "</text>" : "") + "</svg></g>";
      depth = Math.max(depth, d + 1);
    };
    trail.forEach((n, i) => frame(n, 0, W, i, zoom.slice(0, i), i < trail.length - 1));
    const walk = (n, x, d, path) => {
      let cx = x;
      for (const c of n.children || []) {
        const w = c.value / total * W;
        if (w >= 0.5) {
          const p = path.concat([c.name]);
          frame(c, cx, w, d, p, false);
          walk(c, cx, d + 1, p);
        }
        cx += w;
      }
    };
    walk(top, 0, trail.length, zoom.slice(0, trail.length - 1));
    return '<svg class="flamegraph" viewBox="0 0 ' + W + " " + depth * H + '" width="100%" preserveAspectRatio="xMinYMin meet">' + s + "</svg>";
  }

  // ---------------------------------------------------------------------
  // TaskManagers and the JobManager

  function pageTaskManagers() {
    setNav("taskmanagers");
    main.innerHTML = '<h1>TaskManagers</h1><div id="page-error"></div><div class="panel" id="tms"></div>';
    every(async () => {
      const r = await api("taskmanagers");
      clearError();
      const tms = r.taskmanagers || [];
      let h = "";
      if (!tms.length) h = empty("No TaskManager is registered.");
      else {
        h = '<table id="tm-table"><thead><tr><th>ID</th><th>Address</th><th class="num">Data port</th><th class="num">Slots</th><th class="num">Free slots</th><th class="num">CPU cores</th><th class="num">Physical memory</th><th class="num">Free memory</th><th>Last heartbeat</th></tr></thead><tbody>';
        for (const tm of tms) {
          const hw = tm.hardware || {};
          const href = "#/taskmanager/" + encodeURIComponent(tm.id);
          h += '<tr class="link" data-href="' + href + '"><td class="mono"><a href="' + href + '">' + esc(tm.id) + '</a></td><td class="mono">' + esc(tm.path) + '</td><td class="num">' + (tm.dataPort >= 0 ? esc(tm.dataPort) : "–") +
            '</td><td class="num">' + esc(tm.slotsNumber) + '</td><td class="num">' + esc(tm.freeSlots) + '</td><td class="num">' + esc(hw.cpuCores) + '</td><td class="num">' + fmtBytes(hw.physicalMemory) +
            '</td><td class="num">' + fmtBytes(hw.freeMemory) + "</td><td>" + fmtTime(tm.timeSinceLastHeartbeat) + "</td></tr>";
        }
        h += "</tbody></table>";
      }
      const el = document.getElementById("tms");
      el.innerHTML = h;
      linkRows(el);
    });
  }

  function pageTaskManager(id) {
    setNav("taskmanagers");
    main.innerHTML = '<div class="tabs"><a href="#/taskmanagers">← TaskManagers</a></div><h1 class="mono" id="tm-id">' + esc(id) + '</h1><div id="page-error"></div><div id="tm"></div>';
    every(async () => {
      let tm;
      try {
        tm = await api("taskmanagers/" + encodeURIComponent(id));
      } catch (e) {
        if (e.status === 404) { document.getElementById("tm").innerHTML = '<div class="panel">' + empty(e.message) + "</div>"; return; }
        throw e;
      }
      const tmPath = "taskmanagers/" + encodeURIComponent(id);
      const [sec, logs, ms] = await Promise.all([security(), api(tmPath + "/logs"), api(tmPath + "/metrics?get=Status.JVM.Threads.Count")]);
      clearError();
      const hw = tm.hardware || {}, tr = tm.totalResource || {}, fr = tm.freeResource || {}, mem = tm.metrics || {};
      const files = logs.logs || [], base = "#/taskmanager/" + encodeURIComponent(id);
      const goroutines = (ms.find(m => m.id === "Status.JVM.Threads.Count") || {}).value;
      const kv = rows => '<div class="kv">' + rows.map(r => "<div>" + esc(r[0]) + "</div><div>" + r[1] + "</div>").join("") + "</div>";
      document.getElementById("tm").innerHTML =
        '<div class="panel" id="tm-details">' + kv([["Address", esc(tm.path)], ["Data port", (tm.dataPort >= 0 ? esc(tm.dataPort) : "–")], ["Last heartbeat", fmtTime(tm.timeSinceLastHeartbeat)],
          ["Slots", esc(tm.slotsNumber) + " (" + esc(tm.freeSlots) + " free)"], ["CPU cores", esc(hw.cpuCores)], ["Physical memory", fmtBytes(hw.physicalMemory)], ["Free memory (last heartbeat)", fmtBytes(hw.freeMemory)]]) + "</div>" +
        '<h2>Resources</h2><div class="panel"><table><thead><tr><th></th><th class="num">CPU cores</th><th class="num">Task heap</th><th class="num">Task off-heap</th><th class="num">Managed</th><th class="num">Network</th></tr></thead><tbody>' +
        ["Total", "Free"].map((n, i) => { const r = i ? fr : tr; return "<tr><td>" + n + '</td><td class="num">' + esc(r.cpuCores) + '</td><td class="num">' + esc(r.taskHeapMemory) + ' MiB</td><td class="num">' + esc(r.taskOffHeapMemory) + ' MiB</td><td class="num">' + esc(r.managedMemory) + ' MiB</td><td class="num">' + esc(r.networkMemory) + " MiB</td></tr>"; }).join("") +
        '</tbody></table></div>' +
        '<h2>Memory (Go runtime)</h2><div class="panel" id="tm-memory">' + kv([["Heap used", fmtBytes(mem.heapUsed)], ["Heap committed", fmtBytes(mem.heapCommitted)],
          ["Heap limit (GOMEMLIMIT)", mem.heapMax > 0 ? fmtBytes(mem.heapMax) : "none"], ["Non-heap used", fmtBytes(mem.nonHeapUsed)], ["Non-heap committed", fmtBytes(mem.nonHeapCommitted)],
          ["Goroutines", esc(goroutines)]].concat((mem.garbageCollectors || []).map(g => ["GC " + g.name, esc(g.count) + " cycles, " + fmtDuration(g.time) + " paused"]))) + "</div>" +
        '<h2>Logs</h2><div class="panel" id="tm-logs"><div class="tabs">' +
        '<a href="' + base + '/log">Log</a> <a href="' + base + '/stdout">Stdout</a> <a href="' + base + '/goroutines">Goroutine dump</a></div>' +
        (files.length ? '<table id="tm-log-table"><thead><tr><th>File</th><th class="num">Size</th><th>Modified</th></tr></thead><tbody>' +
          files.map(f => '<tr><td class="mono"><a href="' + base + "/file/" + encodeURIComponent(f.name) + '">' + esc(f.name) + '</a></td><td class="num">' + fmtBytes(f.size) + "</td><td>" + fmtTime(f.mtime) + "</td></tr>").join("") +
          "</tbody></table>" : empty("The log directory holds no files.")) + "</div>" +
        '<h2>Kerberos</h2><div class="panel">' + securityHTML(sec, { tm: tm.id }) + "</div>";
    });
  }

  // A log file, stdout, a file of the log directory or the goroutines of
  // the JobManager (process "jobmanager") or of a TaskManager (process
  // "taskmanager", id), asked of the TaskManager through the JobManager.
  // Loaded once: a log does not refresh under the reader.
  async function pageFileView(process, id, what, name) {
    setNav(process === "jobmanager" ? "jobmanager" : "taskmanagers");
    const base = process === "jobmanager" ? "#/jobmanager" : "#/taskmanager/" + encodeURIComponent(id);
    const back = process === "jobmanager" ? "← JobManager" : "← TaskManager " + id;
    const title = { log: "Log", stdout: "Stdout", goroutines: "Goroutine dump", file: name }[what];
    main.innerHTML = '<div class="tabs"><a href="' + base + '">' + esc(back) + '</a></div><h1 class="mono">' + esc(title) + '</h1><div id="page-error"></div><div class="panel" id="tm-file"></div>';
    const seq = routeSeq;
    const path = (process === "jobmanager" ? "jobmanager" : "taskmanagers/" + encodeURIComponent(id)) +
      { log: "/log", stdout: "/stdout", goroutines: "/thread-dump", file: "/logs/" + encodeURIComponent(name) }[what];
    let html;
    try {
      if (what === "goroutines") {
        const d = await api(path);
        const infos = d.threadInfos || [];
        html = '<p class="muted">' + infos.length + " goroutines</p>" + infos.map(t => "<pre>" + esc(t.stringifiedThreadInfo) + "</pre>").join("");
      } else {
        const res = await fetch(path, { headers: { "Accept": "text/plain" } });
        const text = await res.text();
        if (!res.ok) {
          let msg = res.status + " " + res.statusText;
          try { msg = JSON.parse(text).errors.join("; "); } catch (e) { /* not Flink's error shape */ }
          throw new APIError(res.status, msg);
        }
        const offset = res.headers.get("Sluice-Log-Offset");
        html = (offset ? '<p class="muted">The file is long: its last ' + fmtBytes(text.length) + " are shown (from byte " + esc(offset) + ").</p>" : "") +
          (text ? "<pre>" + esc(text) + "</pre>" : empty("The file is empty."));
      }
    } catch (e) {
      if (seq !== routeSeq) return;
      if (e.status === 404) { document.getElementById("tm-file").innerHTML = empty(e.message); return; }
      showError(e);
      return;
    }
    if (seq !== routeSeq) return;
    document.getElementById("tm-file").innerHTML = html;
  }

  function pageJobManager() {
    setNav("jobmanager");
    main.innerHTML = '<h1>JobManager</h1><div id="page-error"></div><h2>Logs</h2><div class="panel" id="jm-logs"></div>' +
      '<h2>YARN application</h2><div class="panel" id="yarn"></div>' +
      '<h2>Kerberos and delegation tokens</h2><div class="panel" id="security"></div><h2>Configuration</h2><div class="panel" id="jm-config"></div>';
    every(async () => {
      const [cfg, sec, logs, yarn] = await Promise.all([api("jobmanager/config"), security(), api("jobmanager/logs"), api("jobmanager/yarn")]);
      clearError();
      document.getElementById("yarn").innerHTML = yarnHTML(yarn);
      const files = logs.logs || [];
      document.getElementById("jm-logs").innerHTML = '<div class="tabs">' + (files.length ? '<a href="#/jobmanager/log">Log</a> <a href="#/jobmanager/stdout">Stdout</a> ' : "") +
        '<a href="#/jobmanager/goroutines">Goroutine dump</a></div>' +
        (files.length ? '<table id="jm-log-table"><thead><tr><th>File</th><th class="num">Size</th><th>Modified</th></tr></thead><tbody>' +
          files.map(f => '<tr><td class="mono"><a href="#/jobmanager/file/' + encodeURIComponent(f.name) + '">' + esc(f.name) + '</a></td><td class="num">' + fmtBytes(f.size) + "</td><td>" + fmtTime(f.mtime) + "</td></tr>").join("") +
          "</tbody></table>" : empty("No log files: this JobManager logs to its standard error and keeps no log directory (env.log.dir)."));
      document.getElementById("security").innerHTML = securityHTML(sec, { component: "jobmanager" });
      document.getElementById("jm-config").innerHTML = configTable(cfg, "jm-config-table");
    });
  }

  // The YARN application's containers: the ApplicationMaster's and the
  // TaskManagers', held and lately ended, with their nodes and states.
  function yarnHTML(app) {
    if (!app || !app.enabled) return empty("Not on YARN: this JobManager runs as a standalone process.");
    const cs = app.containers || [];
    const running = cs.filter(c => c.state === "RUNNING").length;
    return '<div class="kv"><div>Application</div><div class="mono">' + esc(app.applicationId) + '</div><div>Attempt</div><div class="mono">' +
      esc(app.attemptId) + "</div><div>Containers running</div><div>" + running + " of " + cs.length + " listed</div></div>" +
      '<table id="yarn-containers"><thead><tr><th>Container</th><th>Role</th><th>Node</th><th>State</th><th class="num">Exit</th>' +
      '<th class="num">Memory</th><th class="num">vCores</th><th>Since</th><th>Diagnostics</th></tr></thead><tbody>' +
      cs.map(c => '<tr><td class="mono">' + esc(c.id) + "</td><td>" + esc(c.role) + '</td><td class="mono">' + esc(c.node) + "</td><td>" +
        badge(c.state) + '</td><td class="num">' + (c.exitStatus === undefined ? "–" : esc(c.exitStatus)) + '</td><td class="num">' +
        (c.memoryMB ? fmtBytes(c.memoryMB * 1048576) : "–") + '</td><td class="num">' + (c.vcores || "–") + "</td><td>" + fmtTime(c.since) +
        "</td><td>" + esc(c.diagnostics || "") + "</td></tr>").join("") + "</tbody></table>";
  }

  // ---------------------------------------------------------------------
  // Submit: job binaries (Flink's "jars") uploaded, run and deleted

  function pageSubmit() {
    setNav("submit");
    main.innerHTML = '<h1>Submit a job</h1><div id="page-error"></div>' +
      '<div class="panel"><label>Job binary (a Go program built with Sluice) <input type="file" id="jar-file"></label> ' +
      '<button type="button" class="btn" id="jar-upload">Upload</button></div>' +
      '<h2>Uploaded job binaries</h2><div class="panel" id="jars"></div>' +
      '<p class="muted">Run starts the binary once on the JobManager to learn its job graph (with the arguments given), then submits the job with the binary. ' +
      "Arguments are split at spaces.</p>";
    const seq = routeSeq;
    const load = async () => {
      const r = await api("jars");
      if (seq !== routeSeq) return;
      clearError();
      const files = (r.files || []).slice().sort((a, b) => b.uploaded - a.uploaded);
      const el = document.getElementById("jars");
      if (!files.length) { el.innerHTML = empty("No job binary is uploaded."); return; }
      el.innerHTML = '<table id="jar-table"><thead><tr><th>Name</th><th>Uploaded</th><th>Program arguments</th><th class="num">Parallelism</th><th>Restore from savepoint</th><th></th></tr></thead><tbody>' +
        files.map(f => '<tr data-jar="' + esc(f.id) + '"><td class="mono" title="' + esc(f.id) + '">' + esc(f.name) + "</td><td>" + fmtTime(f.uploaded) +
          '</td><td><input type="text" class="jar-args" placeholder="-input file:///data -n 1000"></td><td class="num"><input type="number" class="jar-par" min="1" placeholder="default"></td>' +
          '<td><input type="text" class="jar-sp" placeholder="none"></td><td class="nowrap"><button type="button" class="btn jar-run">Run</button> <button type="button" class="btn danger jar-delete">Delete</button></td></tr>').join("") +
        "</tbody></table>";
      el.querySelectorAll("tr[data-jar]").forEach(tr => {
        const id = tr.dataset.jar;
        tr.querySelector(".jar-run").onclick = async () => {
          const body = {};
          const args = tr.querySelector(".jar-args").value.trim();
          if (args) body.programArgsList = args.split(/\s+/);
          const par = tr.querySelector(".jar-par").value.trim();
          if (par) body.parallelism = Number(par);
          const sp = tr.querySelector(".jar-sp").value.trim();
          if (sp) body.savepointPath = sp;
          try {
            const res = await post("jars/" + encodeURIComponent(id) + "/run", body);
            toast("Submitted job " + res.jobid);
            location.hash = "#/job/" + res.jobid;
          } catch (e) { toast("Running " + tr.cells[0].textContent + " failed: " + proxyHint(e), true); }
        };
        tr.querySelector(".jar-delete").onclick = async () => {
          try {
            await api("jars/" + encodeURIComponent(id), { method: "DELETE" });
            await load();
          } catch (e) { toast("Deleting failed: " + proxyHint(e), true); }
        };
      });
    };
    document.getElementById("jar-upload").onclick = async () => {
      const f = document.getElementById("jar-file").files[0];
      if (!f) { toast("Choose a job binary first", true); return; }
      const form = new FormData();
      form.append("jarfile", f, f.name);
      try {
        await api("jars/upload", { method: "POST", body: form });
        toast("Uploaded " + f.name);
        await load();
      } catch (e) { toast("Uploading failed: " + proxyHint(e), true); }
    };
    load().catch(showError);
  }

  // ---------------------------------------------------------------------

  async function start() {
    try {
      const c = await api("config");
      if (c["refresh-interval"] > 0) refreshMs = c["refresh-interval"];
      const known = v => v && v !== "unknown";
      document.getElementById("version").textContent = known(c["flink-version"]) ? "Sluice " + c["flink-version"] + (known(c["flink-revision"]) ? " (" + c["flink-revision"] + ")" : "") : "";
    } catch (e) { /* the page shows the error on its first poll */ }
    const q = new URLSearchParams(location.search);
    if (Number(q.get("refresh")) > 0) refreshMs = Number(q.get("refresh"));
    window.addEventListener("hashchange", route);
    route();
  }
  start();
})();
