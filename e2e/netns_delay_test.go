//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A per-destination delay line without netem or fq. Delaying packets in
// the kernel needs sch_netem, or an eBPF classifier setting EDT
// timestamps (skb->tstamp) under sch_fq, which honours them; this
// project's CI kernel has neither (CONFIG_NET_SCH_NETEM and
// CONFIG_NET_SCH_FQ are off), so the delay is done in user space:
//
//   - a TUN device (dly0) in the host, with a /32 route per delayed
//     address (`ip route replace ADDR/32 dev dly0 src HOST_IP`): what the
//     host sends there (probes, pings) is read by the helper;
//   - each packet waits its destination's delay in a FIFO per destination
//     (order kept, like a link), then goes out again, unchanged, through a
//     raw IPPROTO_RAW socket marked 0x4d44; `ip rule fwmark 0x4d44 lookup
//     78 pref 900` sends marked packets by table 78 (10.77.0.0/16 dev eth0),
//     around the dly0 routes;
//   - replies come back directly on eth0 (rp_filter is off in the host, as
//     the reverse path of a delayed address is dly0): one-way delay d adds d
//     to every round trip from this host to that address; other hosts and
//     other addresses are untouched.
//
// The delays are read from a control file the test rewrites (`ADDR DELAY`
// lines and a `gen N` line); the helper says `applied gen=N.` once it uses
// them. Marked packets skip table 77, so Partition and Isolate do not cut
// delayed flows from this host.

const (
	delayMark  = 0x4d44
	delayTable = "78"
	delayPref  = "900"
	delayTun   = "dly0"
	delayQueue = 4096 // packets waiting per destination; more are dropped
)

// netnsHelperDelay runs the delay line in the current namespace until
// killed: tun is the device name, control the delays file, src the host's
// address, addrs the delayed destinations (comma-separated).
func netnsHelperDelay(tun, control, src, addrs string) error {
	dsts, err := parseAddrList(addrs)
	if err != nil {
		return err
	}
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(tun)
	if err != nil {
		return err
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		return fmt.Errorf("TUNSETIFF %s: %w", tun, err)
	}
	cmds := [][]string{{"link", "set", tun, "up"},
		{"route", "replace", "10.77.0.0/16", "dev", "eth0", "src", src, "table", delayTable},
		{"rule", "add", "fwmark", fmt.Sprint(delayMark), "lookup", delayTable, "pref", delayPref}}
	for _, d := range dsts {
		cmds = append(cmds, []string{"route", "replace", d.String() + "/32", "dev", tun, "src", src})
	}
	for _, c := range cmds {
		if out, err := exec.Command("ip", c...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(c, " "), err, out)
		}
	}
	for _, dev := range []string{"all", "default", "eth0", tun} {
		if err := os.WriteFile("/proc/sys/net/ipv4/conf/"+dev+"/rp_filter", []byte("0"), 0o644); err != nil {
			return fmt.Errorf("rp_filter %s: %w", dev, err)
		}
	}
	raw, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return fmt.Errorf("raw socket: %w", err)
	}
	if err := unix.SetsockoptInt(raw, unix.SOL_SOCKET, unix.SO_MARK, delayMark); err != nil {
		return fmt.Errorf("SO_MARK: %w", err)
	}
	dl := &delayLine{raw: raw, queues: map[netip.Addr]chan delayed{}}
	dl.delays.Store(&map[netip.Addr]time.Duration{})
	if err := dl.load(control); err != nil {
		return err
	}
	go dl.watch(control)
	fmt.Println("delay line up")
	tunFile := os.NewFile(uintptr(fd), tun)
	buf := make([]byte, 65536)
	for {
		n, err := tunFile.Read(buf)
		if err != nil {
			return fmt.Errorf("read %s: %w", tun, err)
		}
		if n < 20 || buf[0]>>4 != 4 {
			continue // IPv4 only, like the lab
		}
		dl.enqueue(append([]byte(nil), buf[:n]...))
	}
}

type delayed struct {
	due time.Time
	pkt []byte
}

type delayLine struct {
	raw    int
	delays atomic.Pointer[map[netip.Addr]time.Duration]
	gen    string
	mu     sync.Mutex
	queues map[netip.Addr]chan delayed
}

// enqueue puts pkt in its destination's FIFO, due after that
// destination's delay now.
func (d *delayLine) enqueue(pkt []byte) {
	dst := netip.AddrFrom4([4]byte(pkt[16:20]))
	due := time.Now().Add((*d.delays.Load())[dst])
	d.mu.Lock()
	q, ok := d.queues[dst]
	if !ok {
		q = make(chan delayed, delayQueue)
		d.queues[dst] = q
		go d.send(dst, q)
	}
	d.mu.Unlock()
	select {
	case q <- delayed{due: due, pkt: pkt}:
	default: // a full queue drops, like a full link
	}
}

// send writes out each packet of q once it is due.
func (d *delayLine) send(dst netip.Addr, q chan delayed) {
	to := &unix.SockaddrInet4{Addr: dst.As4()}
	for p := range q {
		if w := time.Until(p.due); w > 0 {
			time.Sleep(w)
		}
		_ = unix.Sendto(d.raw, p.pkt, 0, to)
	}
}

// watch reloads the control file when it changes.
func (d *delayLine) watch(control string) {
	for range time.Tick(20 * time.Millisecond) {
		if err := d.load(control); err != nil {
			fmt.Fprintln(os.Stderr, "delay line:", err)
		}
	}
}

// load reads the control file: `gen N`, then `ADDR DELAY` lines.
func (d *delayLine) load(control string) error {
	f, err := os.Open(control)
	if err != nil {
		return err
	}
	defer f.Close()
	delays := map[netip.Addr]time.Duration{}
	gen := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) == 0:
		case len(fields) == 2 && fields[0] == "gen":
			gen = fields[1]
		case len(fields) == 2:
			a, err := netip.ParseAddr(fields[0])
			if err != nil {
				return err
			}
			v, err := time.ParseDuration(fields[1])
			if err != nil {
				return err
			}
			delays[a] = v
		default:
			return fmt.Errorf("control line %q", sc.Text())
		}
	}
	if gen == d.gen {
		return nil
	}
	d.delays.Store(&delays)
	d.gen = gen
	fmt.Printf("applied gen=%s.\n", gen)
	return nil
}

func parseAddrList(s string) ([]netip.Addr, error) {
	var out []netip.Addr
	for item := range strings.SplitSeq(s, ",") {
		a, err := netip.ParseAddr(strings.TrimSpace(item))
		if err != nil || !a.Is4() {
			return nil, fmt.Errorf("delayed address %q: not an IPv4 address", item)
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, errors.New("no delayed address")
	}
	return out, nil
}

// DelayLine delays what one host sends to some addresses (see above).
type DelayLine struct {
	h      *Host
	proc   *Proc
	file   string
	gen    int
	delays map[netip.Addr]time.Duration
}

// StartDelayLine starts the delay line of h for addrs, every delay 0.
func (h *Host) StartDelayLine(t testing.TB, addrs ...netip.Addr) *DelayLine {
	t.Helper()
	d := &DelayLine{h: h, file: filepath.Join(t.TempDir(), "delays-"+h.Name), delays: map[netip.Addr]time.Duration{}}
	var list []string
	for _, a := range addrs {
		d.delays[a] = 0
		list = append(list, a.String())
	}
	d.write(t)
	d.proc = h.startHelper(t, "delay "+h.Name, "delay", delayTun, d.file, h.IP.String(), strings.Join(list, ","))
	d.proc.WaitFor(t, "delay line up", 10*time.Second)
	return d
}

// Set makes h's packets to addr wait delay (0: none) and returns once the
// delay line uses it.
func (d *DelayLine) Set(t testing.TB, addr netip.Addr, delay time.Duration) {
	t.Helper()
	d.SetMany(t, map[netip.Addr]time.Duration{addr: delay})
}

// SetMany sets several delays at once.
func (d *DelayLine) SetMany(t testing.TB, delays map[netip.Addr]time.Duration) {
	t.Helper()
	for a, v := range delays {
		_, ok := d.delays[a]
		require.True(t, ok, "delay line of %s: %s is not a delayed address", d.h.Name, a)
		d.delays[a] = v
	}
	d.gen++
	d.write(t)
	d.proc.WaitFor(t, fmt.Sprintf("applied gen=%d.", d.gen), 5*time.Second)
}

func (d *DelayLine) write(t testing.TB) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "gen %d\n", d.gen)
	for a, v := range d.delays {
		fmt.Fprintf(&b, "%s %s\n", a, v)
	}
	tmp := d.file + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(b.String()), 0o644))
	require.NoError(t, os.Rename(tmp, d.file))
}

// TestNetnsDelayLine: a delayed address's round trips grow by the delay,
// an undelayed one's do not, TCP works through it, and 0 takes it away.
func TestNetnsDelayLine(t *testing.T) {
	lab := NewLab(t, "delay")
	a, b := lab.AddHost("a"), lab.AddHost("b")
	far := b.Addr(2)
	b.AddAddr(t, far)
	b.StartHTTP(t, netip.AddrPortFrom(far, 8080), "/ok")
	dl := a.StartDelayLine(t, far)

	base := a.RTT(t, far)
	t.Logf("RTT a → %s without delay: %s", far, base)
	dl.Set(t, far, 30*time.Millisecond)
	delayed := a.RTT(t, far)
	t.Logf("RTT a → %s with 30ms: %s; a → %s: %s", far, delayed, b.IP, a.RTT(t, b.IP))
	assert.GreaterOrEqual(t, delayed, 30*time.Millisecond)
	assert.Less(t, delayed, 80*time.Millisecond)
	assert.Less(t, a.RTT(t, b.IP), 15*time.Millisecond, "another address of the same host is not delayed")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	code, _, err := a.HTTPGet(t, ctx, fmt.Sprintf("http://%s:8080/ok", far))
	require.NoError(t, err)
	assert.Equal(t, 200, code)
	t.Logf("HTTP GET through the delay line: %s", time.Since(start))

	dl.Set(t, far, 0)
	assert.Less(t, a.RTT(t, far), 15*time.Millisecond)
}
