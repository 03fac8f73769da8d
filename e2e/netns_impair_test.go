//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Impairments. Partitions and isolations are policy rules in the hosts
// that route the blocked flows to the sink (see labSinkIP); loss is a
// small eBPF classifier on both ends of the host's link (netns_bpf_test.go);
// delay is netem on both ends. NETNS.md has the details.

// labBlock is one flow a host must not send: packets to To, from From
// (any source when From is the zero Addr).
type labBlock struct {
	From netip.Addr
	To   netip.Addr
}

// String is the block as the selector of an `ip rule`.
func (b labBlock) String() string {
	if b.From.IsValid() {
		return "from " + b.From.String() + "/32 to " + b.To.String() + "/32"
	}
	return "to " + b.To.String() + "/32"
}

// labRules is what the test asked for, by host index: pairs cut from each
// other, and addresses each host is isolated from.
type labRules struct {
	cuts     map[[2]int]bool             // lower index first
	isolated map[int]map[netip.Addr]bool // host → targets
}

func newLabRules() labRules {
	return labRules{cuts: map[[2]int]bool{}, isolated: map[int]map[netip.Addr]bool{}}
}

// cut records that hosts x and y cannot reach each other.
func (r labRules) cut(x, y int) {
	r.cuts[[2]int{min(x, y), max(x, y)}] = true
}

// isolate records that host h and the targets cannot reach each other.
func (r labRules) isolate(h int, targets ...netip.Addr) {
	if r.isolated[h] == nil {
		r.isolated[h] = map[netip.Addr]bool{}
	}
	for _, a := range targets {
		r.isolated[h][a] = true
	}
}

// blocks turns the rules into the flows each host must drop, given every
// host's addresses. It is pure: the lab installs its result.
//
//   - A cut pair drops, in each host, everything sent to any address of
//     the other.
//   - An isolated host drops what it sends to each target; the host that
//     owns a target (if any) drops what it sends from that target to the
//     isolated host, so replies and connections from the target fail too
//     while the owner's other addresses stay reachable.
func (r labRules) blocks(addrs map[int][]netip.Addr) map[int]map[labBlock]bool {
	out := map[int]map[labBlock]bool{}
	add := func(h int, b labBlock) {
		if out[h] == nil {
			out[h] = map[labBlock]bool{}
		}
		out[h][b] = true
	}
	owner := map[netip.Addr]int{}
	for h, as := range addrs {
		for _, a := range as {
			owner[a] = h
		}
	}
	for pair := range r.cuts {
		x, y := pair[0], pair[1]
		for _, a := range addrs[y] {
			add(x, labBlock{To: a})
		}
		for _, a := range addrs[x] {
			add(y, labBlock{To: a})
		}
	}
	for h, targets := range r.isolated {
		for target := range targets {
			o, owned := owner[target]
			if owned && o == h {
				continue // its own address: never leaves the host
			}
			add(h, labBlock{To: target})
			if owned {
				for _, a := range addrs[h] {
					add(o, labBlock{From: target, To: a})
				}
			}
		}
	}
	return out
}

// Partition cuts every host of a from every host of b, both ways, on all
// their addresses (including ones added later). Other flows, including
// those within a and within b, are unaffected. Partitions accumulate
// until Heal. Blocked packets are dropped silently.
func (l *Lab) Partition(t testing.TB, a, b []*Host) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkOpen(t)
	for _, h := range slices.Concat(a, b) {
		l.checkHost(t, h)
	}
	for _, x := range a {
		for _, y := range b {
			if x == y {
				t.Fatalf("netns lab: Partition: %s is on both sides", x.Name)
			}
			l.rules.cut(x.index, y.index)
		}
	}
	l.syncBlocks(t)
}

// Isolate makes h unable to reach targets, and the targets unable to
// reach h: h drops what it sends to them, and a lab host that owns a
// target drops what it sends from that address to h. Other addresses of
// that host are unaffected. Targets must be IPv4.
func (l *Lab) Isolate(t testing.TB, h *Host, targets []netip.Addr) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkOpen(t)
	l.checkHost(t, h)
	for _, a := range targets {
		if !a.Is4() {
			t.Fatalf("netns lab: Isolate: %s is not IPv4", a)
		}
	}
	l.rules.isolate(h.index, targets...)
	l.syncBlocks(t)
}

// Heal removes every partition and isolation. Loss, delay and
// disconnections stay.
func (l *Lab) Heal(t testing.TB) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkOpen(t)
	l.rules = newLabRules()
	l.syncBlocks(t)
}

func (l *Lab) checkHost(t testing.TB, h *Host) {
	t.Helper()
	if h == nil || h.lab != l {
		t.Fatalf("netns lab %q: host %v is not in this lab", l.Name, h)
	}
}

// syncBlocks brings the rules installed in each host to what l.rules
// asks for, with one `ip -batch` per host that changes. l.mu is held.
func (l *Lab) syncBlocks(t testing.TB) {
	t.Helper()
	addrs := map[int][]netip.Addr{}
	for _, h := range l.hosts {
		addrs[h.index] = h.addrs
	}
	want := l.rules.blocks(addrs)
	for _, h := range l.hosts {
		have := l.installed[h.index]
		var cmds []string
		for _, b := range labSortedBlocks(have) {
			if !want[h.index][b] {
				cmds = append(cmds, "rule del "+b.String()+" pref "+labRulePref+" table "+labSinkTable)
			}
		}
		for _, b := range labSortedBlocks(want[h.index]) {
			if !have[b] {
				cmds = append(cmds, "rule add "+b.String()+" pref "+labRulePref+" table "+labSinkTable)
			}
		}
		if len(cmds) == 0 {
			continue
		}
		// Record before running: a batch that fails halfway leaves the
		// host in between, and the namespace is deleted at cleanup anyway.
		l.installed[h.index] = want[h.index]
		l.ipBatch(t, h.NS, cmds...)
	}
}

func labSortedBlocks(set map[labBlock]bool) []labBlock {
	var bs []labBlock
	for b := range set {
		bs = append(bs, b)
	}
	slices.SortFunc(bs, func(x, y labBlock) int {
		return cmp.Or(x.To.Compare(y.To), x.From.Compare(y.From))
	})
	return bs
}

// labLinkEnd is one end of a host's link: the host's eth0, or the
// switch's port.
type labLinkEnd struct{ ns, dev string }

func (l *Lab) linkEnds(h *Host) []labLinkEnd {
	return []labLinkEnd{{h.NS, "eth0"}, {l.sw, h.port}}
}

// SetLoss drops percent (0-100) of the IP packets h sends and of those
// sent to it, each direction independently; ARP is spared so neighbours
// keep resolving. 0 removes the loss. It runs an eBPF classifier on both
// ends of h's link (no netem needed).
func (l *Lab) SetLoss(t testing.TB, h *Host, percent float64) {
	t.Helper()
	if percent < 0 || percent > 100 {
		t.Fatalf("netns lab: SetLoss %v%%: want 0-100", percent)
	}
	l.needTC(t)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkOpen(t)
	l.checkHost(t, h)
	if percent == 0 && l.loss[h.index] == 0 {
		return
	}
	for _, end := range l.linkEnds(h) {
		if percent == 0 {
			l.tc(t, end.ns, "qdisc", "del", "dev", end.dev, "clsact")
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), labCmdTimeout)
		out, err := runNetnsHelper(ctx, end.ns, "bpfloss", end.dev, strconv.FormatFloat(percent, 'f', -1, 64))
		cancel()
		if err != nil {
			t.Fatalf("netns lab: SetLoss %s %v%% on %s/%s: %v\n%s", h.Name, percent, end.ns, end.dev, err, out)
		}
	}
	l.loss[h.index] = percent
}

// SetDelay delays every packet h sends, and every packet sent to it, by
// d (so a round trip to an undelayed host takes 2d longer), with netem
// on both ends of h's link. 0 removes the delay. It skips the test if the
// kernel has no netem (CONFIG_NET_SCH_NETEM).
func (l *Lab) SetDelay(t testing.TB, h *Host, d time.Duration) {
	t.Helper()
	if d < 0 {
		t.Fatalf("netns lab: SetDelay %s: negative", d)
	}
	l.needTC(t)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkOpen(t)
	l.checkHost(t, h)
	if d == 0 && l.delay[h.index] == 0 {
		return
	}
	for _, end := range l.linkEnds(h) {
		if d == 0 {
			l.tc(t, end.ns, "qdisc", "del", "dev", end.dev, "root")
			continue
		}
		args := []string{"-n", end.ns, "qdisc", "replace", "dev", end.dev, "root", "netem",
			"delay", fmt.Sprintf("%dus", d.Microseconds()), "limit", "10000"}
		out, err := labRun(context.Background(), "", "tc", args...)
		if err != nil && strings.Contains(out, "qdisc kind is unknown") {
			t.Skipf("netns lab: SetDelay needs netem, which this kernel lacks (CONFIG_NET_SCH_NETEM): %s", strings.TrimSpace(out))
		}
		if err != nil {
			t.Fatalf("netns lab: tc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	l.delay[h.index] = d
}

// tc runs `tc -n ns args...` and fails the test on error.
func (l *Lab) tc(t testing.TB, ns string, args ...string) {
	t.Helper()
	args = append([]string{"-n", ns}, args...)
	if out, err := labRun(context.Background(), "", "tc", args...); err != nil {
		t.Fatalf("netns lab: tc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (l *Lab) needTC(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("tc"); err != nil {
		t.Fatalf("netns lab: tc (iproute2) not found: %v", err)
	}
}
