//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

const (
	// labPrefix starts the name of every namespace a lab creates; the rest
	// is the creating process's pid and a sequence number, both base 36
	// ("mrdl1k3f-2-sw"), so stale labs of crashed runs can be recognised.
	labPrefix = "mrdl"
	// labSinkIP is the next hop of every blocked flow; each host maps it to
	// labSinkMAC, the switch's own bridge address. The switch namespace has
	// no IP address and does not forward, so what reaches it is dropped
	// without an ICMP error, as on a cut link.
	labSinkIP  = "10.77.255.254"
	labSinkMAC = "02:77:ff:ff:ff:fe"
	// labSinkTable is the routing table whose only route leads to the sink;
	// labRulePref is the priority of the rules that send flows to it.
	labSinkTable = "77"
	labRulePref  = "1000"
	// labCmdTimeout bounds every ip and tc command the lab runs.
	labCmdTimeout = 20 * time.Second
	// labMaxHosts is the number of hosts a lab can hold: host N is 10.77.N.1.
	labMaxHosts = 254
)

var (
	labNet      = netip.MustParsePrefix("10.77.0.0/16")
	labSink     = netip.MustParseAddr(labSinkIP)
	labSeq      atomic.Uint32
	labHostName = regexp.MustCompile(`^[a-z][a-z0-9]{0,7}$`)
	// labNetnsMu serialises `ip netns add` and `ip netns del` within this
	// process: the first add after boot makes /run/netns a shared mount, and
	// two of them at once can race on it.
	labNetnsMu sync.Mutex
	// labStaleOnce removes the namespaces of dead labs once per process.
	labStaleOnce sync.Once
)

// Lab is one test's private network: a "switch" namespace holding a
// bridge, and one namespace per host joined to it by a veth pair; nothing
// is created in the root namespace. NETNS.md describes the topology, the
// addressing and how impairments are built and removed.
//
// Methods fail the test passed to them (AddHost: the lab's), so call them
// from that test's goroutine. The lab's state is under a mutex: parallel
// subtests may share a lab.
type Lab struct {
	Name   string // as given to NewLab, for logs
	Prefix string // every namespace of the lab starts with it, e.g. "mrdl1k3f-2"

	t  testing.TB
	sw string // switch namespace

	mu         sync.Mutex
	closed     bool
	namespaces []string // created, in order
	hosts      []*Host  // hosts[i].index == i+1
	owner      map[netip.Addr]*Host
	procs      []*Proc
	rules      labRules
	installed  map[int]map[labBlock]bool // blocks present in each host, by host index
	loss       map[int]float64           // percent, by host index
	delay      map[int]time.Duration     // by host index
}

// Host is one network namespace of a lab with one interface, eth0, on
// the lab's switch.
type Host struct {
	Name string     // as given to AddHost
	IP   netip.Addr // primary address, 10.77.<index>.1/16
	NS   string     // network namespace, for `ip netns exec`

	lab   *Lab
	index int    // 1-based
	port  string // the switch's side of the link, in the switch namespace
	addrs []netip.Addr
}

// NewLab creates an empty lab and registers a cleanup that kills every
// process started in it and deletes every namespace (and with them every
// link) it created, whether the test passed or not. It skips the test
// only when `ip netns add` is not permitted (no root, no CAP_SYS_ADMIN);
// any other failure is fatal.
func NewLab(t testing.TB, name string) *Lab {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatalf("netns lab: ip (iproute2) not found: %v", err)
	}
	labStaleOnce.Do(func() { removeStaleLabs(t) })
	l := &Lab{
		Name:      name,
		Prefix:    labPrefix + strconv.FormatInt(int64(os.Getpid()), 36) + "-" + strconv.FormatUint(uint64(labSeq.Add(1)), 36),
		t:         t,
		owner:     map[netip.Addr]*Host{},
		rules:     newLabRules(),
		installed: map[int]map[labBlock]bool{},
		loss:      map[int]float64{},
		delay:     map[int]time.Duration{},
	}
	l.sw = l.Prefix + "-sw"
	if out, err := l.addNetns(l.sw); err != nil {
		if os.Geteuid() != 0 || strings.Contains(out, "not permitted") || strings.Contains(out, "Permission denied") {
			t.Skipf("netns lab: `ip netns add` is not permitted here (needs root or CAP_SYS_ADMIN+CAP_NET_ADMIN): %s", strings.TrimSpace(out))
		}
		t.Fatalf("netns lab: ip netns add %s: %v\n%s", l.sw, err, out)
	}
	t.Cleanup(l.close)
	l.ipBatch(t, l.sw,
		"link add br0 address "+labSinkMAC+" type bridge",
		"link set br0 up")
	t.Logf("netns lab %q: namespaces %s-*", name, l.Prefix)
	return l
}

// AddHost creates a host namespace, links it to the switch and gives it
// the next address 10.77.N.1/16 (N = 1, 2, ...). Names are 1 to 8
// characters of [a-z0-9], starting with a letter, unique in the lab, and
// not "sw" (the switch's). It fails the lab's test, so call it from that
// test's goroutine.
func (l *Lab) AddHost(name string) *Host {
	t := l.t
	t.Helper()
	if !labHostName.MatchString(name) || name == "sw" {
		t.Fatalf("netns lab: host name %q: want 1-8 of [a-z0-9], starting with a letter, not \"sw\"", name)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkOpen(t)
	for _, h := range l.hosts {
		if h.Name == name {
			t.Fatalf("netns lab: host %q added twice", name)
		}
	}
	index := len(l.hosts) + 1
	if index > labMaxHosts {
		t.Fatalf("netns lab: more than %d hosts", labMaxHosts)
	}
	h := &Host{
		Name:  name,
		IP:    labHostAddr(index, 1),
		NS:    l.Prefix + "-" + name,
		lab:   l,
		index: index,
		port:  "p" + strconv.Itoa(index),
	}
	h.addrs = []netip.Addr{h.IP}
	if out, err := l.addNetns(h.NS); err != nil {
		t.Fatalf("netns lab: ip netns add %s: %v\n%s", h.NS, err, out)
	}
	// Both ends are created directly in their namespaces: no name ever
	// exists in the root namespace, so labs cannot clash there.
	l.ip(t, "", "link", "add", "eth0", "netns", h.NS, "type", "veth", "peer", "name", h.port, "netns", l.sw)
	l.ipBatch(t, l.sw,
		"link set "+h.port+" master br0",
		"link set "+h.port+" up")
	l.ipBatch(t, h.NS,
		"link set lo up",
		"link set eth0 up",
		"addr add "+h.IP.String()+"/16 dev eth0",
		"neigh replace "+labSinkIP+" dev eth0 lladdr "+labSinkMAC+" nud permanent",
		"route add default via "+labSinkIP+" dev eth0 onlink table "+labSinkTable)
	l.hosts = append(l.hosts, h)
	l.owner[h.IP] = h
	l.syncBlocks(t) // isolations may already name the new address
	t.Logf("netns lab %q: host %s is %s in netns %s", l.Name, name, h.IP, h.NS)
	return h
}

// labHostAddr is the i-th address of host index: 10.77.index.i.
func labHostAddr(index, i int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, 77, byte(index), byte(i)})
}

// Addr returns 10.77.N.i, the conventional i-th address (1..254) of host
// N; Addr(1) is IP. It only names the address: AddAddr assigns it.
func (h *Host) Addr(i int) netip.Addr {
	if i < 1 || i > 254 {
		panic(fmt.Sprintf("netns lab: host address %d out of 1..254", i))
	}
	return labHostAddr(h.index, i)
}

// Addrs returns every address of the host, the primary one first.
func (h *Host) Addrs() []netip.Addr {
	h.lab.mu.Lock()
	defer h.lab.mu.Unlock()
	return slices.Clone(h.addrs)
}

// AddAddr assigns ip, which must be a free address of 10.77.0.0/16, to
// the host's interface as a /32. Partitions and isolations already in
// place cover it at once.
func (h *Host) AddAddr(t testing.TB, ip netip.Addr) {
	t.Helper()
	l := h.lab
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkOpen(t)
	if !labNet.Contains(ip) || ip == labSink || ip.As4()[3] == 0 || ip.As4()[3] == 255 {
		t.Fatalf("netns lab: %s: address %s is not a host address of %s", h.Name, ip, labNet)
	}
	if o, ok := l.owner[ip]; ok {
		t.Fatalf("netns lab: %s: address %s already belongs to %s", h.Name, ip, o.Name)
	}
	l.ip(t, "", "-n", h.NS, "addr", "add", ip.String()+"/32", "dev", "eth0")
	h.addrs = append(h.addrs, ip)
	l.owner[ip] = h
	l.syncBlocks(t)
}

// Exec runs a command in the host's namespace and returns its combined
// output. Without a deadline on ctx it is bounded by 20s; the command and
// anything it started are killed when ctx ends.
func (h *Host) Exec(t testing.TB, ctx context.Context, name string, args ...string) (string, error) {
	t.Helper()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, labCmdTimeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.NS, name}, args...)...)
	labKillGroupOnCancel(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %s: %w", h.Name, name, err)
	}
	return string(out), nil
}

// Disconnect takes the switch's side of the host's link down, as if its
// cable were pulled: the host keeps its addresses and routes, sees no
// carrier, and everything it sends or is sent is dropped silently.
func (l *Lab) Disconnect(t testing.TB, h *Host) {
	t.Helper()
	l.setPort(t, h, "down")
}

// Reconnect undoes Disconnect.
func (l *Lab) Reconnect(t testing.TB, h *Host) {
	t.Helper()
	l.setPort(t, h, "up")
}

func (l *Lab) setPort(t testing.TB, h *Host, state string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkOpen(t)
	l.checkHost(t, h)
	l.ip(t, "", "-n", l.sw, "link", "set", h.port, state)
}

// checkOpen fails the test when the lab has been cleaned up. l.mu is held.
func (l *Lab) checkOpen(t testing.TB) {
	t.Helper()
	if l.closed {
		t.Fatalf("netns lab %q: used after its cleanup", l.Name)
	}
}

// addNetns creates a namespace and records it for cleanup.
func (l *Lab) addNetns(name string) (string, error) {
	labNetnsMu.Lock()
	defer labNetnsMu.Unlock()
	out, err := labRun(context.Background(), "", "ip", "netns", "add", name)
	if err == nil {
		l.namespaces = append(l.namespaces, name)
	}
	return out, err
}

// ip runs `ip args...` in the root namespace (use "-n ns" to aim it),
// feeding stdin, and fails the test on error.
func (l *Lab) ip(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := labRun(context.Background(), stdin, "ip", args...)
	if err != nil {
		t.Fatalf("netns lab %q: ip %s: %v\n%s%s", l.Name, strings.Join(args, " "), err, stdin, out)
	}
	return out
}

// ipBatch runs ip commands in namespace ns with one `ip -batch`.
func (l *Lab) ipBatch(t testing.TB, ns string, cmds ...string) {
	t.Helper()
	if len(cmds) > 0 {
		l.ip(t, strings.Join(cmds, "\n")+"\n", "-n", ns, "-batch", "-")
	}
}

// close is the lab's cleanup: it kills the lab's processes, then deletes
// its namespaces, newest first. Deleting a namespace destroys its links.
func (l *Lab) close() {
	l.mu.Lock()
	l.closed = true
	procs, namespaces := l.procs, l.namespaces
	l.mu.Unlock()
	for _, p := range procs {
		p.Kill()
	}
	for _, ns := range slices.Backward(namespaces) {
		if err := deleteLabNetns(ns); err != nil {
			l.t.Errorf("netns lab %q: cleanup: %v", l.Name, err)
		}
	}
}

// deleteLabNetns kills whatever still runs in a lab namespace (processes
// that escaped their group, leftovers of a crashed run) and deletes it.
func deleteLabNetns(ns string) error {
	out, err := labRun(context.Background(), "", "ip", "netns", "pids", ns)
	if err != nil {
		return fmt.Errorf("ip netns pids %s: %w: %s", ns, err, out)
	}
	for _, f := range strings.Fields(out) {
		if pid, err := strconv.Atoi(f); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	labNetnsMu.Lock()
	defer labNetnsMu.Unlock()
	if out, err := labRun(context.Background(), "", "ip", "netns", "del", ns); err != nil {
		return fmt.Errorf("ip netns del %s: %w: %s", ns, err, out)
	}
	return nil
}

// removeStaleLabs deletes the namespaces of labs whose process is gone,
// left by runs that crashed or were killed before their cleanup. A lab
// whose pid is alive (this process's, or another test run's) is kept.
func removeStaleLabs(t testing.TB) {
	out, err := labRun(context.Background(), "", "ip", "netns", "list")
	if err != nil {
		t.Logf("netns lab: listing namespaces: %v: %s", err, out)
		return
	}
	for _, ns := range labStaleNamespaces(out, os.Getpid(), labPidAlive) {
		if err := deleteLabNetns(ns); err != nil {
			t.Logf("netns lab: removing stale %s: %v", ns, err)
			continue
		}
		t.Logf("netns lab: removed stale namespace %s", ns)
	}
}

// labStaleNamespaces picks, from `ip netns list` output, the lab
// namespaces whose creating process is neither self nor alive.
func labStaleNamespaces(list string, self int, alive func(pid int) bool) []string {
	var stale []string
	for _, line := range strings.Split(list, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], labPrefix) {
			continue
		}
		ns := fields[0]
		pid36, _, ok := strings.Cut(strings.TrimPrefix(ns, labPrefix), "-")
		if !ok {
			continue
		}
		pid, err := strconv.ParseInt(pid36, 36, 64)
		if err != nil || int(pid) == self || alive(int(pid)) {
			continue
		}
		stale = append(stale, ns)
	}
	return stale
}

func labPidAlive(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

// labRun runs a command in the root namespace, bounded by labCmdTimeout,
// and returns its combined output.
func labRun(ctx context.Context, stdin, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, labCmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		err = errors.Join(err, ctx.Err())
	}
	return out.String(), err
}

// labKillGroupOnCancel puts cmd in its own process group, killed as a
// whole when cmd's context ends, and stops waiting for its output 2s
// after it exits even if a child still holds the pipe.
func labKillGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
}
