//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
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
decision: {hold_down: 2s}
clusters:
  - {name: east, region: r1}
  - {name: west, region: r2, heartbeat: {url: "http://127.0.0.92:%[2]d/healthz", interval: 1s, grace: 4s}}
services:
  - name: app.page.example.test
    health_check: {kind: http, port: %[2]d, path: /healthz}
    endpoints:
      - {address: 127.0.0.91, cluster: east, weight: 100}
      - {address: 127.0.0.92, cluster: west, weight: 100}
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
		chromedp.WindowSize(1280, 1100),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(bctx, 90*time.Second)
	defer cancel()

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

	waitFor("both endpoints decided up, their bars visible at about 50% over a live stream", 15*time.Second, func(st pageState) bool {
		a, okA := st.Bars[victim]
		b, okB := st.Bars[other]
		return st.Mode == "live" && okA && okB && a.Visible && b.Visible && st.States[victim] == "up" && st.States[other] == "up" &&
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
	require.Contains(t, hb.Text, "averaged over the services it serves", "the hub's percentages are labelled: a mean share per service, not parts of 100%")
	require.Empty(t, hb.Wrapped, "service names in the cluster cards break only between labels")
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

	dir := os.Getenv("E2E_ARTIFACTS")
	if dir == "" {
		dir = "artifacts" // go test runs in the package directory: e2e/artifacts
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100: PNG
	require.NoError(t, err)
	path, err := filepath.Abs(filepath.Join(dir, "status-page.png"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)
}
