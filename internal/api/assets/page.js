// Meridian live status page: renders GET /v1/overview, kept current by
// Server-Sent Events (GET /v1/events) or, when those fail, by polling.
"use strict";
(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const REASONS = {
    "threshold": "a majority of fresh votes agreed",
    "confirmation": "down votes confirmed from two or more regions",
    "heartbeat-lost": "the cluster's heartbeat was lost by a quorum",
    "unconfirmed": "heartbeat missed by some probers, below quorum",
    "hold-down": "held down after recovery, or released when the hold-down ended",
    "brake": "a removal held by the brake, or applied one interval later",
    "outlier-ignored": "down votes of an outlier prober ignored",
    "no-heartbeat": "no heartbeat configured",
    "new": "first seen",
    "drained": "drained by an administrator",
    "config": "set in the configuration",
  };
  let received = Date.now(), serverNow = Date.now();

  // h builds an element: h("td", {class: "x", "data-testid": "y"}, child...).
  function h(tag, attrs, ...kids) {
    const el = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      el.setAttribute(k, v === true ? "" : String(v));
    }
    for (const k of kids.flat(Infinity)) { // nested arrays of children, e.g. an optional ["text", element] pair
      if (k === undefined || k === null || k === false) continue;
      el.append(k instanceof Node ? k : document.createTextNode(String(k)));
    }
    return el;
  }
  const $ = (id) => document.getElementById(id);

  // Ages: relative to the server's clock when the overview was built, moved
  // on by the local clock since it arrived.
  function ageSeconds(iso) { return (serverNow - Date.parse(iso)) / 1000 + (Date.now() - received) / 1000; }
  function fmtAge(s) {
    if (!isFinite(s)) return "–";
    s = Math.max(0, s);
    if (s < 90) return Math.round(s) + " s";
    if (s < 5400) return Math.round(s / 60) + " min";
    if (s < 172800) return Math.round(s / 3600) + " h";
    return Math.round(s / 86400) + " d";
  }
  // age returns an element whose text the ticker keeps current.
  function age(iso, suffix) {
    if (!iso) return h("span", { class: "muted" }, "–");
    return h("span", { class: "age", "data-since": iso, "data-suffix": suffix || "" }, fmtAge(ageSeconds(iso)) + (suffix || ""));
  }
  function ageFrom(seconds, suffix) {
    if (seconds === undefined || seconds === null) return h("span", { class: "muted" }, "never");
    const iso = new Date(serverNow - seconds * 1000).toISOString();
    return age(iso, suffix);
  }
  function tick() {
    for (const el of document.querySelectorAll(".age")) el.textContent = fmtAge(ageSeconds(el.dataset.since)) + el.dataset.suffix;
  }

  function bar(share, extra, small) {
    const b = h("div", Object.assign({ class: "bar", "data-share": share }, extra));
    b.style.width = share + "%";
    return h("div", { class: "track" + (small ? " small" : ""), role: "img", "aria-label": share + "% of answers" }, b);
  }
  function reason(r) { return r ? h("span", { class: "reason", title: REASONS[r] || r }, r) : null; }
  function note(n) { return n ? h("span", { class: "note" }, "⚑ " + n) : null; }
  // dnsName lays a name out so that it wraps only between labels: each
  // label (with its dot) does not break, and <wbr> allows a break after it.
  function dnsName(name) {
    const labels = name.replace(/\.$/, "").split("."), dot = name.endsWith(".") ? "." : "";
    return labels.map((l, i) => i < labels.length - 1 ? [h("span", { class: "label" }, l + "."), h("wbr")] : h("span", { class: "label" }, l + dot));
  }
  function clusterClass(c) { return c.drained ? "drained" : c.admin_down ? "failed-over" : c.state; }
  // trunc is a label cut with an ellipsis when it does not fit; its title
  // (the tooltip) holds the whole text.
  function trunc(tag, text, attrs) {
    return h(tag, Object.assign({ class: "trunc", title: text }, attrs || {}), text);
  }
  // fitText shortens an SVG text until it is at most max wide, ending it
  // with "…" (the group's <title> holds the whole text).
  function fitText(el, max) {
    el.dataset.fit = max;
    const full = el.textContent;
    if (el.getComputedTextLength() <= max) return;
    let n = full.length;
    while (n > 1) {
      n--;
      el.textContent = full.slice(0, n) + "…";
      if (el.getComputedTextLength() <= max) return;
    }
  }
  const FAMILIES = { "A": "A (IPv4) answers", "AAAA": "AAAA (IPv6) answers", "CNAME": "CNAME answers" };
  // stateText is an endpoint's state as a reader wants it: what an
  // operator did first, then whether it is probed at all.
  function stateText(e) {
    if (e.drained) return "drained";
    if (e.forced_down) return "down (forced)";
    if (!e.probed && e.state === "unknown") return "not probed";
    if (e.state === "unknown" && e.reason === "new") return "waiting for probes";
    return e.state;
  }
  function stateReason(e) { return !e.probed && e.reason === "new" ? null : e.reason; }

  function render(o) {
    received = Date.now();
    serverNow = Date.parse(o.now);
    const meta = ["generation " + o.generation, "built " + new Date(o.built).toLocaleTimeString()];
    if (o.node) meta.push("node " + o.node + (o.region ? " (" + o.region + ")" : ""));
    meta.push(o.probing ? "health decided by the prober ring" : "health from the config only (no probing)");
    if (o.config_path) meta.push("config " + o.config_path);
    $("meta").textContent = meta.join(" · ");
    const re = $("reload-error");
    re.hidden = !o.last_reload_error;
    re.textContent = o.last_reload_error ? "Last reload failed, the previous snapshot keeps serving: " + o.last_reload_error : "";
    renderSummary(o);
    renderHub(o);
    renderClusters(o);
    renderServices(o);
    renderProbers(o);
    renderProviders(o);
    renderTimeline(o);
  }

  // clusterShare is the mean share of answers a cluster gets over the services.
  // (shares are per address family: each family of a service counts once).
  function clusterShare(o, name) {
    let sum = 0, n = 0;
    for (const s of o.services) {
      const fams = {};
      for (const e of s.endpoints) if (e.cluster === name) fams[e.family] = (fams[e.family] || 0) + e.share;
      for (const v of Object.values(fams)) { sum += v; n++; }
    }
    return n ? sum / n : 0;
  }

  // renderSummary answers "is my traffic OK, and if not where and why" in
  // a few lines at the top: what fails open or answers nothing, clusters
  // that are not ready, services with endpoints down.
  function renderSummary(o) {
    const items = [];
    for (const s of o.services) {
      for (const f of s.fail_open_families || []) items.push(["bad", s.name + ": no " + f + " endpoint available, failing open"]);
      for (const f of s.no_data_families || []) items.push(["bad", s.name + ": nothing to answer for " + f + " (NODATA)"]);
    }
    for (const c of o.clusters) {
      if (c.state === "failed-over") items.push(["bad", "cluster " + c.name + ": failed over" + (c.heartbeat ? " (heartbeat lost)" : "")]);
      else if (c.state === "unreachable") items.push(["warn", "cluster " + c.name + ": heartbeat missed by some probers"]);
    }
    for (const s of o.services) {
      if ((s.fail_open_families || []).length) continue;
      const down = s.endpoints.filter((e) => e.state === "down" && !e.drained).length;
      if (down) items.push(["warn", s.name + ": " + down + " of " + s.endpoints.length + " endpoints down"]);
    }
    if (!items.length) items.push(["ok", o.services.length ? "every service answers from healthy endpoints" : "no services"]);
    const shown = items.slice(0, 6).map(([cls, text]) => h("li", { class: cls, "data-testid": "summary-item" }, text));
    if (items.length > 6) shown.push(h("li", { class: "warn" }, "and " + (items.length - 6) + " more below"));
    $("summary").replaceChildren(...shown);
  }

  function renderHub(o) {
    const svg = $("hub");
    for (const el of [...svg.children]) if (el.tagName !== "title" && el.tagName !== "desc") el.remove();
    const cx = 320, cy = 168, rx = 230, ry = 118, r = 32, n = o.clusters.length;
    const spokes = h("svg:g", {}), nodes = h("svg:g", {});
    svg.append(spokes, nodes);
    const at = (i) => { const a = -Math.PI / 2 + (2 * Math.PI * i) / Math.max(n, 1); return [cx + rx * Math.cos(a), cy + ry * Math.sin(a)]; };
    // A label under a circle may be as wide as the gap to its neighbours.
    let labelMax = 170;
    if (n > 1) { const [x0, y0] = at(0), [x1, y1] = at(1); labelMax = Math.min(labelMax, Math.hypot(x1 - x0, y1 - y0) - 12); }
    o.clusters.forEach((c, i) => {
      const [x, y] = at(i);
      const share = clusterShare(o, c.name);
      const cls = clusterClass(c);
      spokes.append(h("svg:line", { x1: cx, y1: cy, x2: x, y2: y, class: "spoke " + (share > 0 ? cls : "idle"),
        "stroke-width": (2 + share / 10).toFixed(1) }));
      const name = h("svg:text", { x: x, y: y - 1, "text-anchor": "middle", "font-weight": 600, "data-cluster": c.name, "data-testid": "hub-label" }, c.name);
      const region = h("svg:text", { x: x, y: y + 13, "text-anchor": "middle", "font-size": 10, "data-cluster": c.name, "data-testid": "hub-label" }, c.region || "");
      const label = h("svg:text", { x: x, y: y < cy - 1 ? y - r - 7 : y + r + 14, "text-anchor": "middle", "font-size": 11, "data-cluster": c.name, "data-testid": "hub-label" },
        c.state + " · " + share.toFixed(0) + "% mean share");
      const g = h("svg:g", { "data-testid": "hub-cluster", "data-cluster": c.name, "data-state": c.state },
        h("svg:title", {}, c.name + " (" + (c.region || "?") + "): " + c.state + ", " + share.toFixed(0) + "% of its services' answers (mean over the services it serves)"),
        h("svg:circle", { cx: x, cy: y, r: r, class: "cluster " + cls }), name, region, label);
      nodes.append(g);
      fitText(name, 2 * r - 8);
      fitText(region, 2 * r - 12);
      fitText(label, labelMax);
    });
    // Probers as small diamonds around the hub.
    o.probers.forEach((p, i) => {
      const a = (2 * Math.PI * i) / Math.max(o.probers.length, 1);
      const x = cx + 52 * Math.cos(a), y = cy + 52 * Math.sin(a);
      nodes.append(h("svg:rect", { x: x - 5, y: y - 5, width: 10, height: 10, transform: `rotate(45 ${x} ${y})`, class: "prober" },
        h("svg:title", {}, "prober " + p.name + " (" + p.region + ")")));
    });
    const hubText = h("svg:text", { x: cx, y: cy + 4, "text-anchor": "middle", class: "hubtext", "data-testid": "hub-label" }, o.node || "meridian");
    nodes.append(h("svg:g", {}, h("svg:title", {}, "this node: " + (o.node || "meridian")), h("svg:circle", { cx, cy, r: 34, class: "hubnode" }), hubText));
    fitText(hubText, 60);
  }

  function renderClusters(o) {
    const box = $("clusters");
    box.replaceChildren(...o.clusters.map((c) => {
      const items = [];
      for (const s of o.services) for (const e of s.endpoints) {
        if (e.cluster !== c.name) continue;
        items.push(h("li", { "data-testid": "cluster-endpoint", "data-service": s.name, "data-target": e.target },
          h("span", { class: "target" }, trunc("code", e.target, { class: "trunc" }), note(e.note)),
          trunc("span", stateText(e), { class: "trunc state " + e.state }),
          bar(e.share, {}, true),
          h("span", { class: "svcname muted", "data-testid": "endpoint-service" }, dnsName(s.name))));
      }
      // The heartbeat named plainly: none configured, beating, missed by
      // some probers (below quorum), or lost (the cluster failed over).
      const beat = { "ready": "beating", "unreachable": "missed by some probers", "failed-over": "lost" }[c.state] || c.state;
      const hb = c.heartbeat || c.monitored
        ? ["heartbeat: ", h("span", { class: "state " + c.state, "data-testid": "heartbeat" }, beat),
          c.heartbeat_age_seconds !== undefined ? [" · last beat ", ageFrom(c.heartbeat_age_seconds, " ago")] : null]
        : ["heartbeat: ", h("span", { class: "muted", "data-testid": "heartbeat" }, "no agent configured")];
      return h("article", { class: "card " + clusterClass(c), "data-testid": "cluster", "data-cluster": c.name, "data-state": c.state },
        h("h3", {}, trunc("span", c.name), trunc("span", c.region || "no region", { class: "trunc tag" }),
          c.drained ? h("span", { class: "tag" }, "drained") : null,
          c.admin_down ? h("span", { class: "tag" }, "down in config") : null),
        h("div", {}, hb),
        c.since && c.reason !== "no-heartbeat" && c.reason !== "new" ? h("div", { class: "muted" }, "since ", age(c.since, " ago"), " ", reason(c.reason),
          c.voters && c.voters.length ? " by " + c.voters.join(", ") : "") : null,
        note(c.note),
        items.length ? h("ul", { "aria-label": "endpoints in " + c.name }, items) : h("p", { class: "muted" }, "no endpoints"));
    }));
  }

  function endpointRow(s, e) {
    return h("tr", { "data-testid": "endpoint-row", "data-service": s.name, "data-target": e.target, "data-state": e.state, "data-family": e.family },
      h("td", {}, trunc("code", e.target), note(e.note)),
      h("td", {}, trunc("span", e.cluster)),
      h("td", { class: "pct" }, e.weight, e.capacity ? h("div", { class: "muted", "data-testid": "capacity", title: e.capacity.why },
        "× ready " + e.capacity.percent + "% (" + e.capacity.source + ") = " + e.effective_weight) : null),
      h("td", {}, h("span", { class: "state " + e.state, "data-testid": "endpoint-state" }, stateText(e)),
        stateReason(e) ? [" ", reason(stateReason(e))] : null, e.since && e.probed ? [" ", age(e.since, " ago")] : null,
        e.held_until ? h("div", { class: "muted" }, "held until " + new Date(e.held_until).toLocaleTimeString()) : null,
        e.braked ? h("div", { class: "muted" }, "braked") : null),
      h("td", { class: "sharecell" },
        bar(e.share, { "data-testid": "share-bar", "data-service": s.name, "data-target": e.target, class: "bar" + ((s.fail_open_families || []).includes(e.family) ? " failopen" : "") }),
        h("span", { class: "pct", "data-testid": "share-pct" }, e.share + "%")));
  }

  // clientGroups lists what each group of clients of a geo or latency
  // service gets: one row per group, the shares as chips.
  function clientGroups(s) {
    if (!s.clients || !s.clients.length) return null;
    const fam = Object.fromEntries(s.endpoints.map((e) => [e.target, e.family]));
    return h("table", { class: "clients fixed", "data-testid": "client-groups" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "clients"), h("th", { scope: "col" }, "share of their answers, per address family"))),
      h("tbody", {}, s.clients.map((g) => h("tr", { "data-testid": "client-group", "data-service": s.name, "data-unlocated": g.unlocated ? "true" : "false" },
        h("td", { class: "who" }, g.clients,
          g.fail_open ? [" ", h("span", { class: "warn" }, "failing open")] : null,
          g.no_data && g.no_data.length ? [" ", h("span", { class: "warn" }, "no " + g.no_data.join(", ") + " answer")] : null),
        h("td", {}, h("div", { class: "chips" }, Object.entries(g.shares).sort((a, b) => b[1] - a[1]).map(([t, v]) =>
          h("span", { class: "chip", "data-testid": "client-share", "data-target": t, "data-share": v },
            trunc("code", t), h("span", { class: "muted" }, fam[t] || ""), h("span", { class: "pct" }, v + "%")))))))));
  }

  function renderServices(o) {
    $("services").replaceChildren(...o.services.map((s) => {
      const byLoc = s.share_mode === "by location";
      const mode = byLoc ? "by location (see each group of clients below)" : s.share_mode;
      const families = [...new Set(s.endpoints.map((e) => e.family))];
      return h("article", { class: "svc", "data-testid": "service", "data-service": s.name },
        h("h3", {}, h("code", {}, s.name), " ", h("span", { class: "tag" }, s.strategy), " ", h("span", { class: "muted" }, "share: " + mode),
          s.failover_order ? h("span", { class: "muted" }, " · order " + s.failover_order.join(" → ")) : null,
          (s.fail_open_families || []).map((f) => [" ", h("span", { class: "warn", "data-testid": "service-alert" }, "no " + f + " endpoint available: failing open")]),
          (s.no_data_families || []).map((f) => [" ", h("span", { class: "warn", "data-testid": "service-alert" }, "no " + f + " endpoint to answer: NODATA")])),
        h("table", {},
          h("colgroup", {}, ["c-target", "c-cluster", "c-weight", "c-state", "c-share"].map((c) => h("col", { class: c }))),
          h("thead", {}, h("tr", {}, ["endpoint", "cluster", "weight", "state", byLoc ? "share (clients we cannot locate)" : "share of its family's answers"].map((t) => h("th", { scope: "col" }, t)))),
          families.map((f) => h("tbody", { "data-family": f },
            h("tr", { class: "family" }, h("th", { colspan: 5, scope: "rowgroup", "data-testid": "family-head", "data-service": s.name, "data-family": f }, FAMILIES[f] || f)),
            s.endpoints.filter((e) => e.family === f).map((e) => endpointRow(s, e))))),
        clientGroups(s));
    }));
    if (!o.services.length) $("services").append(h("p", { class: "muted" }, "No services."));
  }

  function renderProbers(o) {
    const rows = o.probers.map((p) => h("tr", { "data-testid": "prober", "data-prober": p.name },
      h("td", {}, trunc("span", p.name + (p.self ? " (this node)" : "")), p.outlier ? h("span", { class: "warn" }, "outlier") : null),
      h("td", {}, trunc("span", p.region)), h("td", {}, trunc("span", p.role || "")), h("td", {}, ageFrom(p.last_vote_age_seconds, " ago"))));
    if (!rows.length) rows.push(h("tr", {}, h("td", { colspan: 4, class: "muted" }, o.probing ? "no members" : "probing is off")));
    $("probers").replaceChildren(...rows);
  }

  function renderProviders(o) {
    const zones = o.providers || [];
    $("providers-section").hidden = !zones.length;
    const rows = zones.map((z) => h("tr", { "data-testid": "provider-zone", "data-provider": z.provider, "data-zone": z.zone },
      h("td", {}, z.provider), h("td", {}, z.zone),
      h("td", {}, z.last_sync ? age(z.last_sync, " ago") : "never"),
      h("td", {}, z.error ? h("span", { class: "warn" }, "failing: " + z.error) : "ok",
        z.notice ? [" ", h("span", { class: "warn", "data-testid": "provider-notice" }, z.notice)] : null)));
    $("providers").replaceChildren(...rows);
  }

  function renderTimeline(o) {
    const rows = o.changes.map((c) => h("li", { "data-testid": "timeline-row", "data-kind": c.kind, "data-service": c.service || "",
      "data-target": c.target, "data-from": c.from, "data-to": c.to, "data-reason": c.reason, "data-held": c.held ? "true" : "false",
      class: c.held ? "held" : "to-" + c.to },
      h("time", { datetime: c.at, title: c.at }, new Date(c.at).toLocaleTimeString()),
      c.kind === "cluster" ? ["cluster ", h("b", {}, c.target)] : [h("b", {}, h("code", {}, c.target)), " of ", h("code", {}, c.service)],
      " ", c.held
        ? [h("span", { class: "state " + c.to }, c.to), " ", reason(c.reason), h("span", { class: "heldwhy" }, c.held)]
        : [h("span", { class: "state " + c.from }, c.from), " → ", h("span", { class: "state " + c.to }, c.to), " ", reason(c.reason)],
      c.voters && c.voters.length ? h("span", { class: "muted" }, " voted by " + c.voters.join(", ")) : null));
    if (!rows.length) rows.push(h("li", { class: "muted" }, "No state change decided yet."));
    $("timeline").replaceChildren(...rows);
  }

  // Transport: Server-Sent Events, falling back to polling every 2 s.
  let pollTimer = null;
  function setConn(mode, text) {
    const el = $("conn");
    el.className = "conn " + mode;
    el.dataset.mode = mode;
    el.textContent = text;
  }
  async function poll() {
    try {
      const r = await fetch("/v1/overview", { cache: "no-store" });
      if (!r.ok) throw new Error(r.status);
      render(await r.json());
      setConn("polling", "polling every 2 s");
    } catch (e) {
      setConn("offline", "disconnected, retrying");
    }
  }
  function startPolling() {
    if (pollTimer) return;
    poll();
    pollTimer = setInterval(poll, 2000);
  }
  function stopPolling() { clearInterval(pollTimer); pollTimer = null; }
  function startEvents() {
    if (!("EventSource" in window)) return startPolling();
    const es = new EventSource("/v1/events");
    let failed = false;
    const fail = () => {
      if (failed) return;
      failed = true;
      es.close();
      startPolling();
      setTimeout(startEvents, 15000); // try the stream again later
    };
    const watchdog = setTimeout(fail, 5000); // no first event: give up on the stream
    es.addEventListener("overview", (ev) => {
      clearTimeout(watchdog);
      stopPolling();
      setConn("live", "live");
      render(JSON.parse(ev.data));
    });
    es.onerror = () => { clearTimeout(watchdog); fail(); };
  }
  setInterval(tick, 1000);
  startEvents();
})();
