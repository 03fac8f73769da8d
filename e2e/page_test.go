//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

const chromiumPath = "/usr/bin/chromium"

const pageConfig = `
zones:
  - apex: page.example.test
    nameservers: [{name: ns1.page.example.test, ipv4: [127.0.0.1]}]
health: {interval: 1s, timeout: 500ms, fall: 3, rise: 2}
ring: {enabled: true, node_name: solo, region: r1, bind: "127.0.0.1:%[1]d"}
decision: {hold_down: 2s, brake: 0.3} # the brake holds each removal one interval: the timeline shows it
clusters:
  - {name: east, region: r1}
  - {name: west, region: r2, heartbeat: {url: "http://127.0.0.92:%[2]d/healthz", interval: 1s, grace: 4s}}
  - {name: eu-central-frankfurt-production-02, region: europe-central-frankfurt-zone-b}
services:
  - name: app.page.example.test
    health_check: {kind: http, port: %[2]d, path: /healthz}
    endpoints:
      - {address: 127.0.0.91, cluster: east, weight: 100}
      - {address: 127.0.0.92, cluster: west, weight: 100}
      - {address: "::1", cluster: east, weight: 100}
  - name: geo.page.example.test
    strategy: geo
    geo: {default: [east]}
    endpoints:
      - {address: 127.0.0.93, cluster: east}
      - {address: 127.0.0.94, cluster: eu-central-frankfurt-production-02}
`

// pageState is what the browser shows: every share bar by endpoint, the
// timeline rows, how the page is connected, and a marker that a reload
// would lose.
type pageState struct {
	Bars map[string]struct {
		Share   float64 `json:"share"`   // data-share
		Width   float64 `json:"width"`   // drawn width, percent of the track
		Visible bool    `json:"visible"` // the track is laid out
	} `json:"bars"`
	Rows []struct {
		Service string `json:"service"`
		Target  string `json:"target"`
		To      string `json:"to"`
		Reason  string `json:"reason"`
	} `json:"rows"`
	States map[string]string `json:"states"` // decided state by endpoint
	Mode   string            `json:"mode"`
	Marker string            `json:"marker"`
	Cards  map[string]string `json:"cards"` // the text of each cluster card, as rendered
	Text   string            `json:"text"`  // the text of the whole page, as rendered
	// Wrapped lists the DNS labels of service names in the cluster cards
	// that the layout breaks across lines ("name: label").
	Wrapped []string `json:"wrapped"`
}

const readPage = `(() => {
  const bars = {};
  for (const b of document.querySelectorAll('[data-testid="share-bar"]')) {
    const r = b.getBoundingClientRect(), tr = b.parentElement.getBoundingClientRect();
    bars[b.dataset.target] = {share: parseFloat(b.dataset.share), width: tr.width ? 100 * r.width / tr.width : -1, visible: tr.width > 0 && tr.height > 0};
  }
  const states = {};
  for (const r of document.querySelectorAll('[data-testid="endpoint-row"]')) states[r.dataset.target] = r.dataset.state;
  const rows = [...document.querySelectorAll('[data-testid="timeline-row"]')].map((r) => ({service: r.dataset.service, target: r.dataset.target, to: r.dataset.to, reason: r.dataset.reason}));
  const cards = {};
  for (const c of document.querySelectorAll('[data-testid="cluster"]')) cards[c.dataset.cluster] = c.innerText;
  const wrapped = [];
  for (const el of document.querySelectorAll('[data-testid="endpoint-service"]')) {
    const nodes = [], w = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = w.nextNode(); n; n = w.nextNode()) nodes.push(n);
    const at = (i) => { for (const t of nodes) { if (i <= t.length) return [t, i]; i -= t.length; } };
    const text = nodes.map((t) => t.data).join("");
    let start = 0;
    for (const label of text.split(".")) {
      if (label) {
        const r = document.createRange();
        r.setStart(...at(start)); r.setEnd(...at(start + label.length));
        const lines = new Set([...r.getClientRects()].filter((x) => x.width > 0).map((x) => Math.round(x.bottom)));
        if (lines.size > 1) wrapped.push(text + ": " + label);
      }
      start += label.length + 1;
    }
  }
  return {bars, rows, states, mode: document.getElementById("conn").dataset.mode || "", marker: String(window.__e2eMarker || ""),
    cards, text: document.body.innerText, wrapped};
})()`

// pageLayout is how the page is laid out, measured in the browser: text
// that leaves its box, labels cut with an ellipsis (and their tooltips),
// where the timeline and the prober ring are, and what the service tables
// show per address family and per group of clients.
type pageLayout struct {
	Overflow  []string `json:"overflow"` // elements or texts outside their box
	Truncated []struct {
		Text  string `json:"text"`
		Title string `json:"title"`
	} `json:"truncated"`
	ViewportH     float64           `json:"viewportH"`
	ViewportW     float64           `json:"viewportW"`
	PageW         float64           `json:"pageW"`
	TimelineTop   float64           `json:"timelineTop"`
	TimelineFirst float64           `json:"timelineFirst"` // bottom of the first timeline row
	ProberFirst   float64           `json:"proberFirst"`   // bottom of the first prober row
	Families      []string          `json:"families"`      // "service family" of each family heading
	Groups        []string          `json:"groups"`        // "service|unlocated|text" of each client group row
	States        map[string]string `json:"states"`        // the state text of each endpoint row
	Alerts        []string          `json:"alerts"`        // "service: alert" lines
	Held          []string          `json:"held"`          // the text of timeline rows of held decisions
	Hub           []string          `json:"hub"`           // the hub's labels
	Summary       []string          `json:"summary"`       // the lines at the top of the page
}

const readLayout = `(() => {
  const describe = (el) => el.tagName.toLowerCase() + (el.dataset.testid ? "[" + el.dataset.testid + "]" : "") + (el.className && typeof el.className === "string" ? "." + el.className.trim().replace(/\s+/g, ".") : "") + " «" + (el.textContent || "").trim().slice(0, 60) + "»";
  const overflow = [], truncated = [];
  const skip = new Set(["inline", "none", "contents", "table-row", "table-row-group", "table-header-group", "table-column", "table-column-group"]);
  for (const el of document.body.querySelectorAll("*")) {
    if (el.closest("svg") || !el.getClientRects().length) continue;
    const cs = getComputedStyle(el);
    if (skip.has(cs.display)) continue;
    if (el.scrollWidth > el.clientWidth + 1) {
      if (cs.overflowX === "hidden" && cs.textOverflow === "ellipsis") truncated.push({text: el.textContent, title: el.getAttribute("title") || ""});
      else overflow.push(describe(el) + ": content " + el.scrollWidth + " px wide in a " + el.clientWidth + " px box");
    }
    if (cs.overflowY === "visible" && el.scrollHeight > el.clientHeight + 2) overflow.push(describe(el) + ": content " + el.scrollHeight + " px high in a " + el.clientHeight + " px box");
  }
  // Every text inside the box of its nearest block (unless that block clips it with an ellipsis, counted above).
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    if (!n.data.trim() || n.parentElement.closest("svg, script, style, noscript, title")) continue;
    let box = n.parentElement;
    while (box && getComputedStyle(box).display === "inline") box = box.parentElement;
    if (!box || !box.getClientRects().length) continue;
    const bs = getComputedStyle(box);
    if (bs.overflowX === "hidden" && bs.textOverflow === "ellipsis") continue;
    const b = box.getBoundingClientRect(), r = document.createRange();
    r.selectNodeContents(n);
    for (const x of r.getClientRects()) {
      if (x.width === 0) continue;
      if (x.left < b.left - 1 || x.right > b.right + 1 || x.top < b.top - 1 || x.bottom > b.bottom + 1) {
        overflow.push("text «" + n.data.trim().slice(0, 60) + "» outside " + describe(box));
        break;
      }
    }
  }
  // The hub: labels inside their circle or their gap (data-fit), inside the
  // drawing, and no two clusters' labels on top of each other.
  const svg = document.getElementById("hub"), vb = svg.viewBox.baseVal, boxes = [];
  for (const t of svg.querySelectorAll("text")) {
    const bb = t.getBBox(), fit = parseFloat(t.dataset.fit || "Infinity");
    if (bb.width > fit + 0.5) overflow.push("hub label «" + t.textContent + "» " + bb.width.toFixed(1) + " wide, room " + fit);
    if (bb.x < vb.x - 0.5 || bb.y < vb.y - 0.5 || bb.x + bb.width > vb.x + vb.width + 0.5 || bb.y + bb.height > vb.y + vb.height + 0.5) overflow.push("hub label «" + t.textContent + "» outside the drawing");
    if (t.textContent.endsWith("…")) {
      const title = t.closest("g") && t.closest("g").querySelector("title");
      truncated.push({text: t.textContent, title: title ? title.textContent : ""});
    }
    boxes.push({t, bb, c: t.dataset.cluster || ""});
  }
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i], b = boxes[j];
    if (a.c === b.c || !a.bb.width || !b.bb.width) continue;
    if (a.bb.x < b.bb.x + b.bb.width && b.bb.x < a.bb.x + a.bb.width && a.bb.y < b.bb.y + b.bb.height && b.bb.y < a.bb.y + a.bb.height) overflow.push("hub labels overlap: «" + a.t.textContent + "» and «" + b.t.textContent + "»");
  }
  const bottom = (sel) => { const el = document.querySelector(sel); return el ? el.getBoundingClientRect().bottom : -1; };
  const states = {};
  for (const r of document.querySelectorAll('[data-testid="endpoint-row"]')) states[r.dataset.target] = r.querySelector('[data-testid="endpoint-state"]').textContent;
  return {overflow, truncated, viewportH: innerHeight, viewportW: innerWidth, pageW: document.documentElement.scrollWidth,
    timelineTop: document.getElementById("h-timeline").getBoundingClientRect().top,
    timelineFirst: bottom("#timeline > li"), proberFirst: bottom("#probers > tr"),
    families: [...document.querySelectorAll('[data-testid="family-head"]')].map((e) => e.dataset.service + " " + e.dataset.family),
    groups: [...document.querySelectorAll('[data-testid="client-group"]')].map((e) => e.dataset.service + "|" + e.dataset.unlocated + "|" + e.innerText.replace(/\s+/g, " ").trim()),
    states, alerts: [...document.querySelectorAll('[data-testid="service-alert"]')].map((e) => e.closest('[data-testid="service"]').dataset.service + ": " + e.textContent),
    hub: [...document.querySelectorAll('#hub text')].map((e) => e.textContent),
    summary: [...document.querySelectorAll('[data-testid="summary-item"]')].map((e) => e.textContent),
    held: [...document.querySelectorAll('[data-testid="timeline-row"][data-held="true"]')].map((e) => e.innerText.replace(/\s+/g, " "))};
})()`

// TestPageShowsAFailoverLive opens the status page in headless Chromium,
// kills one of two equally weighted endpoints and waits, without reloading
// the page, for its bar to drop to 0 and its "down" row in the timeline.
func TestPageShowsAFailoverLive(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s not found and CI is set: install Debian's chromium (`make e2e` does: E2E_DEPS chromium=chromium)", chromiumPath)
		}
		t.Skipf("%s not found: install it with `apt-get install -y chromium` (or run `make e2e`) to run the browser test", chromiumPath)
	}
	port := freePort(t)
	victim, other := "127.0.0.91", "127.0.0.92"
	backends := map[string]*backend{}
	for _, a := range []string{victim, other} {
		backends[a] = startBackend(t, fmt.Sprintf("%s:%d", a, port))
	}
	startBackend(t, fmt.Sprintf("[::1]:%d", port)) // app's AAAA endpoint
	m := startMeridian(t, fmt.Sprintf(pageConfig, freePort(t), port))
	resp, err := http.Get(m.http + "/v1/overview")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, "GET /v1/overview: the live page is wired (api.Options.Overview)")

	opts := append([]chromedp.ExecAllocatorOption{}, chromedp.DefaultExecAllocatorOptions[:]...)
	opts = append(opts,
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 900), // a laptop screen
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(bctx, 90*time.Second)
	defer cancel()

	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1400, 900)), "a laptop screen's viewport")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(m.http+"/")), "open the page")
	read := func() pageState {
		st, err := chromedp.Run(ctx, chromedp.Evaluate[pageState](readPage))
		require.NoError(t, err)
		return st
	}
	// waitFor polls the page until ok or the timeout; it returns the last state.
	waitFor := func(what string, timeout time.Duration, ok func(pageState) bool) pageState {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for {
			st := read()
			if ok(st) {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %s; the page shows %+v\nmeridian log:\n%s", what, timeout, st, m.log())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	near := func(got, want float64) bool { return got >= want-2 && got <= want+2 }
	dir := os.Getenv("E2E_ARTIFACTS")
	if dir == "" {
		dir = "artifacts" // go test runs in the package directory: e2e/artifacts
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	// checkLayout measures the page in the browser (pageLayout), checks that
	// no text leaves its box, that cut labels carry their whole text as a
	// tooltip, and that the timeline and the prober ring are in the first
	// 1400×900 viewport, then saves a screenshot of that viewport.
	checkLayout := func(state string) pageLayout {
		t.Helper()
		require.NoError(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)))
		l, err := chromedp.Run(ctx, chromedp.Evaluate[pageLayout](readLayout))
		require.NoError(t, err)
		require.Empty(t, l.Overflow, "%s: no text outside its box", state)
		for _, tr := range l.Truncated {
			full := strings.TrimSuffix(tr.Text, "…")
			require.Contains(t, tr.Title, full, "%s: the cut label %q has its whole text as a tooltip", state, tr.Text)
		}
		require.LessOrEqual(t, l.PageW, l.ViewportW, "%s: no sideways scrolling", state)
		require.Equal(t, 900.0, l.ViewportH, "the viewport is a laptop screen's")
		require.Greater(t, l.TimelineFirst, 0.0, "%s: a timeline row", state)
		require.LessOrEqual(t, l.TimelineFirst, l.ViewportH, "%s: the timeline's latest row is visible without scrolling", state)
		require.Greater(t, l.ProberFirst, 0.0, "%s: a prober row", state)
		require.LessOrEqual(t, l.ProberFirst, l.ViewportH, "%s: the prober ring is visible without scrolling", state)
		require.Subset(t, l.Families, []string{"app.page.example.test. A", "app.page.example.test. AAAA"}, "%s: app's shares per address family", state)
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		require.NoError(t, err)
		path, err := filepath.Abs(filepath.Join(dir, "status-page-"+state+".png"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, png, 0o644))
		t.Logf("screenshot of the %s state (1400×900, the first viewport): %s", state, path)
		return l
	}

	waitFor("both endpoints (and the AAAA one) decided up, their bars visible at about 50% over a live stream", 15*time.Second, func(st pageState) bool {
		a, okA := st.Bars[victim]
		b, okB := st.Bars[other]
		return st.Mode == "live" && okA && okB && a.Visible && b.Visible && st.States[victim] == "up" && st.States[other] == "up" && st.States["::1"] == "up" &&
			near(a.Share, 50) && near(b.Share, 50) && near(a.Width, 50) && near(b.Width, 50)
	})
	// What a reader sees: the heartbeat's age in words, no stringified
	// objects, and service names that wrap only between labels.
	hb := waitFor("west's card shows its last heartbeat", 15*time.Second, func(st pageState) bool {
		return regexp.MustCompile(`last beat \d+ s ago`).MatchString(st.Cards["west"])
	})
	require.NotContains(t, hb.Text, "[object", "no element is rendered as text")
	require.NotContains(t, hb.Text, "NaN")
	require.Contains(t, hb.Cards["west"], "heartbeat: beating · last beat ")
	require.Contains(t, hb.Cards["east"], "heartbeat: no agent configured", "a cluster without a heartbeat says so plainly")
	require.NotContains(t, hb.Cards["east"], "no heartbeat configured", "and carries no no-heartbeat reason line")
	require.Contains(t, hb.Text, "averaged over the services (and address families) it serves", "the hub's percentages are labelled: a mean share per service, not parts of 100%")
	require.Empty(t, hb.Wrapped, "service names in the cluster cards break only between labels")
	normal := checkLayout("normal")
	require.Equal(t, []string{
		"geo.page.example.test.|true|clients we cannot locate (and any location without a rule); clients in region r1 127.0.0.93 A 100%",
		"geo.page.example.test.|false|clients in region europe-central-frankfurt-zone-b 127.0.0.94 A 100%",
	}, normal.Groups, "the geo service's shares per group of clients, the clients we cannot locate included")
	require.Equal(t, "not probed", normal.States["127.0.0.93"], "an endpoint without a health check reads 'not probed', not 'unknown / new'")
	require.Equal(t, "up", normal.States["::1"])
	require.Equal(t, []string{"every service answers from healthy endpoints"}, normal.Summary, "the top of the page says all is well")
	require.Contains(t, normal.Hub, "ready · 83% mean share", "east: app's A 50%%, app's AAAA 100%%, geo's A 100%% (clients we cannot locate): each family counts once: %q", normal.Hub)
	cut := map[string]bool{}
	for _, tr := range normal.Truncated {
		cut[tr.Title] = true
	}
	require.True(t, cut["eu-central-frankfurt-production-02"], "the long cluster name is cut in its card, whole in its tooltip: %+v", normal.Truncated)
	hubCut := false
	for _, tr := range normal.Truncated {
		hubCut = hubCut || strings.HasPrefix(tr.Title, "eu-central-frankfurt-production-02 (") && strings.HasSuffix(tr.Text, "…")
	}
	require.True(t, hubCut, "and cut inside its circle in the hub: %+v", normal.Truncated)
	// A reload would lose this marker.
	require.NoError(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.__e2eMarker = "kept"`)))

	require.NoError(t, backends[victim].srv.Close())
	killed := time.Now()
	var barAt, rowAt time.Time
	st := waitFor(victim+"'s bar at 0 and its down row in the timeline", 20*time.Second, func(st pageState) bool {
		if bar := st.Bars[victim]; barAt.IsZero() && bar.Share == 0 && bar.Width < 1 {
			barAt = time.Now()
		}
		if rowAt.IsZero() {
			for _, r := range st.Rows {
				if r.Target == victim && r.Service == "app.page.example.test." && r.To == "down" {
					rowAt = time.Now()
				}
			}
		}
		return !barAt.IsZero() && !rowAt.IsZero()
	})
	require.Equal(t, "kept", st.Marker, "the page updated itself, no reload")
	require.Equal(t, "live", st.Mode)
	require.InDelta(t, 100, st.Bars[other].Share, 0.01, "the survivor takes every answer")
	t.Logf("FIGURE status page: backend killed → bar at 0%% in the browser after %s, timeline row after %s (interval 1s × fall 3, SSE checked every 500ms)",
		barAt.Sub(killed).Round(10*time.Millisecond), rowAt.Sub(killed).Round(10*time.Millisecond))
	failover := checkLayout("failover")
	require.Empty(t, failover.Alerts, "one endpoint left: no alert")
	require.Equal(t, []string{"app.page.example.test.: 1 of 3 endpoints down"}, failover.Summary, "the top of the page says where")
	require.NotEmpty(t, failover.Held, "the brake's hold is in the timeline")
	require.Contains(t, failover.Held[0], "127.0.0.91 of app.page.example.test. up brake down votes held by the brake: still answered",
		"a held removal is said in words, not as 'up → up (brake)'")
	for _, h := range failover.Held {
		require.NotContains(t, h, "→", "a hold is no change of state")
	}

	// All down: the other A endpoint dies too; the A family fails open (the
	// AAAA endpoint still answers AAAA queries).
	require.NoError(t, backends[other].srv.Close())
	waitFor("app's A family failing open", 20*time.Second, func(st pageState) bool {
		return st.States[victim] == "down" && st.States[other] == "down" && near(st.Bars[victim].Share, 50) && near(st.Bars[other].Share, 50)
	})
	allDown := checkLayout("all-down")
	require.Equal(t, []string{"app.page.example.test.: no A endpoint available: failing open"}, allDown.Alerts, "the family that fails open, named")
	require.Equal(t, "up", allDown.States["::1"], "the AAAA family is its own")
	require.Equal(t, []string{"app.page.example.test.: no A endpoint available, failing open"}, allDown.Summary, "the top of the page says what and why")

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100: PNG
	require.NoError(t, err)
	path, err := filepath.Abs(filepath.Join(dir, "status-page.png"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)
}
