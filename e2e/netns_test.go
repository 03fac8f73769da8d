//go:build e2e

package e2e

import (
	"context"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Self-tests of the netns lab (netns_lab_test.go). Each builds its own
// lab, so they run in parallel.

func TestNetnsLabHostsTalk(t *testing.T) {
	t.Parallel()
	lab := NewLab(t, "talk")
	a, b := lab.AddHost("a"), lab.AddHost("b")
	assert.Equal(t, netip.MustParseAddr("10.77.1.1"), a.IP)
	assert.Equal(t, netip.MustParseAddr("10.77.2.1"), b.IP)

	require.Equal(t, 3, a.Ping(t, b.IP, 3), "a pings b")
	require.Equal(t, 3, b.Ping(t, a.IP, 3), "b pings a")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := a.Exec(t, ctx, "ip", "-4", "-o", "addr", "show", "dev", "eth0")
	require.NoError(t, err)
	assert.Contains(t, out, a.IP.String()+"/16")

	srv := b.StartHTTP(t, netip.AddrPortFrom(b.IP, 8080), "/healthz")
	code, body, err := a.HTTPGet(t, ctx, "http://10.77.2.1:8080/healthz")
	require.NoError(t, err)
	assert.Equal(t, 200, code)
	assert.Equal(t, "ok", body)
	code, _, err = a.HTTPGet(t, ctx, "http://10.77.2.1:8080/elsewhere")
	require.NoError(t, err)
	assert.Equal(t, 404, code)

	extra := b.Addr(2)
	b.AddAddr(t, extra)
	assert.Equal(t, []netip.Addr{b.IP, extra}, b.Addrs())
	assert.Equal(t, 3, a.Ping(t, extra, 3), "a pings b's extra address")

	require.NoError(t, srv.Stop(), "the HTTP helper exits 0 on SIGTERM")
	_, _, err = a.HTTPGet(t, ctx, "http://10.77.2.1:8080/healthz")
	assert.ErrorContains(t, err, "connection refused")

	p := a.Start(t, "sleeper", "sh", "-c", "echo hello from $(ip -4 -o addr show dev eth0 | wc -l) address; exec sleep 60")
	assert.Equal(t, "hello from 1 address", p.WaitFor(t, "hello", 5*time.Second))
	p.Kill()
	select {
	case <-p.Exited():
	default:
		t.Fatal("Kill returned before the process exited")
	}
	assert.ErrorContains(t, p.Err(), "killed")
}

// netnsFlow is pings from a host to an address.
type netnsFlow struct {
	from *Host
	to   netip.Addr
}

// netnsReach reports which flows get at least one of two pings answered; a
// blocked flow costs a second.
func netnsReach(t *testing.T, flows map[string]netnsFlow) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	for name, f := range flows {
		got[name] = f.from.Ping(t, f.to, 2) > 0
	}
	return got
}

func TestNetnsLabPartitionAndHeal(t *testing.T) {
	t.Parallel()
	lab := NewLab(t, "partition")
	a, b, c := lab.AddHost("a"), lab.AddHost("b"), lab.AddHost("c")
	b2 := b.Addr(2)
	b.AddAddr(t, b2)
	b.StartHTTP(t, netip.AddrPortFrom(b.IP, 8080), "/")

	lab.Partition(t, []*Host{a}, []*Host{b})
	b3 := b.Addr(3)
	b.AddAddr(t, b3) // added after the partition: covered too
	flows := map[string]netnsFlow{
		"a→b": {a, b.IP}, "a→b2": {a, b2}, "a→b3": {a, b3}, "b→a": {b, a.IP},
		"a→c": {a, c.IP}, "c→a": {c, a.IP}, "b→c": {b, c.IP}, "c→b2": {c, b2},
	}
	assert.Equal(t, map[string]bool{
		"a→b": false, "a→b2": false, "a→b3": false, "b→a": false,
		"a→c": true, "c→a": true, "b→c": true, "c→b2": true,
	}, netnsReach(t, flows))

	// A partition drops silently: a connection times out, it is not refused.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _, err := a.HTTPGet(t, ctx, "http://10.77.2.1:8080/")
	require.Error(t, err)
	assert.Regexp(t, `(?i)timeout|deadline`, err.Error(), "a blocked connection hangs until the client gives up")

	lab.Heal(t)
	for name, ok := range netnsReach(t, flows) {
		assert.True(t, ok, "%s after Heal", name)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	code, _, err := a.HTTPGet(t, ctx, "http://10.77.2.1:8080/")
	require.NoError(t, err)
	assert.Equal(t, 200, code)
}

func TestNetnsLabIsolateBlocksOnlyTheTargets(t *testing.T) {
	t.Parallel()
	lab := NewLab(t, "isolate")
	a, b, c := lab.AddHost("a"), lab.AddHost("b"), lab.AddHost("c")
	b2 := b.Addr(2)
	b.AddAddr(t, b2)

	lab.Isolate(t, a, []netip.Addr{b.IP})
	assert.Equal(t, map[string]bool{
		"a→b":  false, // the target
		"b→a":  false, // from the target (b's default source is b.IP)
		"a→b2": true,  // b's other address
		"a→c":  true,
		"c→a":  true,
		"c→b":  true,
	}, netnsReach(t, map[string]netnsFlow{
		"a→b": {a, b.IP}, "b→a": {b, a.IP}, "a→b2": {a, b2},
		"a→c": {a, c.IP}, "c→a": {c, a.IP}, "c→b": {c, b.IP},
	}))

	lab.Heal(t)
	assert.Equal(t, 2, a.Ping(t, b.IP, 2), "a→b after Heal")
	assert.Equal(t, 2, b.Ping(t, a.IP, 2), "b→a after Heal")
}

func TestNetnsLabLossBothWaysAndRemoval(t *testing.T) {
	t.Parallel()
	lab := NewLab(t, "loss")
	a, b := lab.AddHost("a"), lab.AddHost("b")

	lab.SetLoss(t, a, 30)
	out := lab.MeasureLoss(t, a, b, 200)
	in := lab.MeasureLoss(t, b, a, 200)
	t.Logf("30%% loss on a: measured %.1f%% a→b, %.1f%% b→a", out*100, in*100)
	assert.InDelta(t, 0.30, out, 0.15, "loss of what a sends")
	assert.InDelta(t, 0.30, in, 0.15, "loss of what a receives")

	lab.SetLoss(t, a, 0)
	assert.Zero(t, lab.MeasureLoss(t, a, b, 200), "a→b after removal")
	assert.Zero(t, lab.MeasureLoss(t, b, a, 200), "b→a after removal")
}

func TestNetnsLabDisconnectAndReconnect(t *testing.T) {
	t.Parallel()
	lab := NewLab(t, "cable")
	a, b := lab.AddHost("a"), lab.AddHost("b")
	lab.Disconnect(t, a)
	assert.Zero(t, a.Ping(t, b.IP, 2), "a→b while disconnected")
	assert.Zero(t, b.Ping(t, a.IP, 2), "b→a while disconnected")
	lab.Reconnect(t, a)
	assert.Eventually(t, func() bool { return a.Ping(t, b.IP, 2) == 2 }, 10*time.Second, 100*time.Millisecond)
}

func TestNetnsLabDelay(t *testing.T) {
	t.Parallel()
	lab := NewLab(t, "delay")
	a, b := lab.AddHost("a"), lab.AddHost("b")
	lab.SetDelay(t, a, 50*time.Millisecond) // skips without netem
	rtt := a.RTT(t, b.IP)
	assert.GreaterOrEqual(t, rtt, 100*time.Millisecond, "50ms each way")
	assert.Less(t, rtt, 500*time.Millisecond)
	lab.SetDelay(t, a, 0)
	assert.Less(t, a.RTT(t, b.IP), 50*time.Millisecond)
}

func TestNetnsLabCleanupLeavesNothing(t *testing.T) {
	t.Parallel()
	var prefix string
	var pid int
	t.Run("lab", func(t *testing.T) {
		lab := NewLab(t, "cleanup")
		prefix = lab.Prefix
		a, b := lab.AddHost("a"), lab.AddHost("b")
		a.AddAddr(t, a.Addr(9))
		lab.Partition(t, []*Host{a}, []*Host{b})
		lab.SetLoss(t, b, 10)
		pid = a.Start(t, "sleeper", "sleep", "600").Pid()
		// A process that leaves its group must die with the namespace.
		a.Start(t, "escapee", "sh", "-c", "setsid sleep 600 & wait")
		out := runNoFail("ip", "netns", "list")
		require.Contains(t, out, prefix+"-sw")
		require.Contains(t, out, prefix+"-a")
	})
	if prefix == "" {
		return // skipped: namespaces not permitted
	}
	assert.NotContains(t, runNoFail("ip", "netns", "list"), prefix, "namespaces left behind")
	assert.NotContains(t, runNoFail("ip", "-o", "link", "show"), prefix, "links left behind in the root namespace")
	assert.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "process left behind")
	pids, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range pids {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		assert.NotEqual(t, "sleep\x00600\x00", string(cmdline), "pid %s escaped the cleanup", e.Name())
	}
}

func TestNetnsLabRemovesStaleNamespaces(t *testing.T) {
	t.Parallel()
	NewLab(t, "stale") // skips where namespaces are not permitted
	// A pid above the kernel's limit (2^22) is never alive.
	dead := labPrefix + strconv.FormatInt(1<<23, 36) + "-1-sw"
	live := labPrefix + strconv.FormatInt(int64(os.Getpid()), 36) + "-zz-sw"
	for _, ns := range []string{dead, live} {
		run(t, "ip", "netns", "add", ns)
		t.Cleanup(func() { runNoFail("ip", "netns", "del", ns) })
	}
	removeStaleLabs(t)
	out := runNoFail("ip", "netns", "list")
	assert.NotContains(t, out, dead, "a dead run's namespace is removed")
	assert.Contains(t, out, live, "a live run's namespace is kept")
}

func TestNetnsLabStaleNamespacesArePickedByPid(t *testing.T) {
	alive := func(pid int) bool { return pid == 4242 }
	p36 := func(pid int) string { return strconv.FormatInt(int64(pid), 36) }
	list := strings.Join([]string{
		"mrdl" + p36(4242) + "-1-sw (id: 3)", // alive
		"mrdl" + p36(100) + "-1-sw (id: 2)",  // this process
		"mrdl" + p36(7) + "-2-a",             // dead
		"mrdlnot_base36-1-a",                 // not ours
		"mrdlnodash",                         // not ours
		"other" + p36(7) + "-1-sw",           // not ours
	}, "\n")
	assert.Equal(t, []string{"mrdl" + p36(7) + "-2-a"}, labStaleNamespaces(list, 100, alive))
}

func TestNetnsLabBlocks(t *testing.T) {
	ip := netip.MustParseAddr
	addrs := map[int][]netip.Addr{
		1: {ip("10.77.1.1")},
		2: {ip("10.77.2.1"), ip("10.77.2.2")},
		3: {ip("10.77.3.1")},
	}
	to := func(a string) labBlock { return labBlock{To: ip(a)} }
	from := func(f, a string) labBlock { return labBlock{From: ip(f), To: ip(a)} }
	set := func(bs ...labBlock) map[labBlock]bool {
		m := map[labBlock]bool{}
		for _, b := range bs {
			m[b] = true
		}
		return m
	}
	tests := []struct {
		name  string
		rules func(r labRules)
		want  map[int]map[labBlock]bool
	}{
		{"no rules block nothing", func(labRules) {}, map[int]map[labBlock]bool{}},
		{"a cut pair blocks every address of the other, both ways", func(r labRules) { r.cut(2, 1) },
			map[int]map[labBlock]bool{
				1: set(to("10.77.2.1"), to("10.77.2.2")),
				2: set(to("10.77.1.1")),
			}},
		{"isolating a host from one address spares the owner's others", func(r labRules) { r.isolate(1, ip("10.77.2.2")) },
			map[int]map[labBlock]bool{
				1: set(to("10.77.2.2")),
				2: set(from("10.77.2.2", "10.77.1.1")),
			}},
		{"an address outside the lab is blocked on the isolated host only", func(r labRules) { r.isolate(3, ip("10.77.9.9")) },
			map[int]map[labBlock]bool{3: set(to("10.77.9.9"))}},
		{"isolating a host from its own address does nothing", func(r labRules) { r.isolate(1, ip("10.77.1.1")) },
			map[int]map[labBlock]bool{}},
		{"cuts and isolations add up", func(r labRules) { r.cut(1, 3); r.isolate(3, ip("10.77.2.1")) },
			map[int]map[labBlock]bool{
				1: set(to("10.77.3.1")),
				2: set(from("10.77.2.1", "10.77.3.1")),
				3: set(to("10.77.1.1"), to("10.77.2.1")),
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newLabRules()
			tt.rules(r)
			assert.Equal(t, tt.want, r.blocks(addrs))
		})
	}
}

func TestNetnsLabLossProgramThreshold(t *testing.T) {
	for _, tt := range []struct {
		percent float64
		want    uint32
	}{{0, 0}, {25, 1 << 30}, {50, 1 << 31}, {100, 1<<32 - 1}} {
		prog := lossProgram(tt.percent)
		assert.Equal(t, tt.want, uint32(prog[5].Imm), "threshold for %v%%", tt.percent)
	}
}
